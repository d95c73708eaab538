// GPT-2 (Radford et al. 2019) read from a Hugging Face folder, as a decoder (decoder.hpp runs it):
// LayerNorm, learned positions, one fused c_attn per layer, a GELU MLP, every projection biased.
//
// A folder holds config.json, model.safetensors (or shards named by
// model.safetensors.index.json), and the tokenizer as vocab.json + merges.txt or as
// tokenizer.json. Tensor names are Hugging Face's GPT2LMHeadModel's, with or without the
// "transformer." prefix; the causal-mask buffers (h.N.attn.bias, h.N.attn.masked_bias) are
// ignored; lm_head.weight, when present, must equal wte (GPT-2 ties them) unless
// tie_word_embeddings is false. Its weights ([in, out]: Conv1D) per block l, d = n_embd:
//   h.l.ln_1.{weight,bias} [d]   h.l.attn.c_attn.{weight [d, 3d], bias [3d]}
//   h.l.attn.c_proj.{weight [d, d], bias [d]}   h.l.ln_2.{weight,bias} [d]
//   h.l.mlp.c_fc.{weight [d, n_inner], bias}     h.l.mlp.c_proj.{weight [n_inner, d], bias [d]}
// and wte [vocab, d], wpe [n_positions, d], ln_f.{weight,bias} [d].
#pragma once

#include "core/base/progress.hpp"
#include "core/models/decoder/decoder.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace attnviz::core::gpt2 {

// config.json's text (GPT2Config's keys; older files name n_ctx too); `name` stands for the file
// in messages. Throws InputError naming the field ("config.json: n_head: 5 does not divide
// n_embd 768").
decoder::Config parseConfig(std::string_view json, const std::string& name);

// Opens a folder; errors name the file and the tensor or field. `progress` counts the bytes
// read and checked, and may stop the opening (Cancelled).
std::shared_ptr<const decoder::Checkpoint> open(const std::string& folder, Progress* progress = nullptr);

}  // namespace attnviz::core::gpt2
