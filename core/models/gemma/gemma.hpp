// Gemma 2 (Gemma Team 2024) and Gemma 3's text model (Gemma Team 2025), read from a Hugging Face
// folder as a decoder (decoder.hpp runs it): embeddings scaled by √d; RMSNorm scaling by (1 + w);
// sandwich norms (each block's attention and MLP outputs normed before their residual adds); a
// GELU (tanh)-gated MLP; scores divided by √query_pre_attn_scalar; sliding-window and global
// layers (Gemma 2 every other one, Gemma 3 five local to one global), Gemma 2's soft-capped
// attention and final logits, Gemma 3's per-head q and k norms and its two RoPE bases (local
// layers rope_local_base_freq, unscaled; global ones rope_theta with rope_scaling).
//
// config.json's model_type is "gemma2", "gemma3_text", or "gemma3" (the image-text model: its
// text_config is read, its vision tower ignored); transformers 4's fields (sliding_window_pattern,
// rope_local_base_freq, rope_scaling) and 5's (layer_types, rope_parameters per kind of layer)
// are read, and a field left out takes Gemma2Config's or Gemma3TextConfig's default. The weights,
// nn.Linear's [out, in], d = hidden_size, h and g query and key/value heads of width d_h, per
// layer l, under "model." ("language_model.model." or "model.language_model." in a gemma3 folder):
//   layers.l.input_layernorm.weight, post_attention_layernorm.weight,
//   pre_feedforward_layernorm.weight, post_feedforward_layernorm.weight [d]
//   layers.l.self_attn.q_proj.weight [h·d_h, d], k_proj and v_proj [g·d_h, d], o_proj [d, h·d_h]
//   layers.l.self_attn.q_norm.weight, k_norm.weight [d_h] (Gemma 3)
//   layers.l.mlp.gate_proj.weight, up_proj.weight [inner, d], down_proj.weight [d, inner]
// and embed_tokens.weight [vocab, d], norm.weight [d]; lm_head.weight only when untied. The
// tokenizer is tokenizer.json (SentencePiece-style BPE with byte fallback, <bos> first).
#pragma once

#include "core/base/progress.hpp"
#include "core/models/decoder/decoder.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace attnviz::core::gemma {

// Whether `modelType` (config.json's model_type) is one of this room's families.
bool readsModelType(std::string_view modelType);

// config.json's text; `name` stands for the file in messages. Throws InputError naming the field
// ("config.json: layer_types: expected one entry per layer (26), got …").
decoder::Config parseConfig(std::string_view json, const std::string& name);

// Opens a folder; errors name the file and the tensor or field. `progress` counts the bytes read
// and checked, and may stop the opening (Cancelled).
std::shared_ptr<const decoder::Checkpoint> open(const std::string& folder, Progress* progress = nullptr);

}  // namespace attnviz::core::gemma
