// Llama and the families that share its layout (Touvron et al. 2023; Mistral 7B, Jiang et al.
// 2023; Qwen2 and Qwen3), read from a Hugging Face folder as a decoder (decoder.hpp runs it):
// RMSNorm, rotary positions (rotate-half, with linear or Llama 3 frequency scaling), grouped-query
// heads, a SiLU-gated MLP, no biases but Qwen2's q/k/v (and those a config asks for), Qwen3's
// per-head q and k norms, a sliding window where the config sets one.
//
// config.json's model_type is "llama", "mistral", "qwen2" or "qwen3"; both the form transformers 4
// writes (rope_theta, rope_scaling, torch_dtype) and transformers 5's (rope_parameters, dtype)
// are read. The weights, nn.Linear's [out, in], d = hidden_size, h and g query and key/value
// heads of width d_h, per layer l:
//   model.layers.l.input_layernorm.weight [d]
//   model.layers.l.self_attn.q_proj.weight [h·d_h, d], k_proj and v_proj [g·d_h, d] (+ .bias: Qwen2)
//   model.layers.l.self_attn.q_norm.weight, k_norm.weight [d_h] (Qwen3)
//   model.layers.l.self_attn.o_proj.weight [d, h·d_h]
//   model.layers.l.post_attention_layernorm.weight [d]
//   model.layers.l.mlp.gate_proj.weight, up_proj.weight [inner, d], down_proj.weight [d, inner]
// and model.embed_tokens.weight [vocab, d], model.norm.weight [d], lm_head.weight [vocab, d]
// (absent when tie_word_embeddings). The tokenizer is tokenizer.json.
#pragma once

#include "core/base/progress.hpp"
#include "core/models/decoder/decoder.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace attnviz::core::llama {

// Whether `modelType` (config.json's model_type) is one of this room's families.
bool readsModelType(std::string_view modelType);

// config.json's text; `name` stands for the file in messages. Throws InputError naming the
// field ("config.json: num_key_value_heads: 3 does not divide num_attention_heads 8").
decoder::Config parseConfig(std::string_view json, const std::string& name);

// Opens a folder; errors name the file and the tensor or field. `progress` counts the bytes
// read and checked, and may stop the opening (Cancelled).
std::shared_ptr<const decoder::Checkpoint> open(const std::string& folder, Progress* progress = nullptr);

}  // namespace attnviz::core::llama
