// What the bert room's readers share, private to it: an activation by its transformers name, and
// ModernBERT's config.json and tensors (bert.hpp describes them).
#pragma once

#include "core/models/decoder/decoder_files.hpp"

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace attnviz::core::bert {

// Throws InputError naming `heads` unless the config's heads divide its width (`width` the key).
void checkHeads(const decoder::Config& c, const char* heads, const char* width, const std::string& name);

// ModernBertConfig's keys, read into an encoder's Config (transformers 4's global_rope_theta,
// local_rope_theta and global_attn_every_n_layers, or 5's rope_parameters and layer_types);
// errors name `name` and the key.
decoder::Config modernBertConfig(const nlohmann::json& j, const std::string& name);
// Which of its tensors carry biases, as config.json says: norm_bias, decoder_bias, classifier_bias.
struct ModernBertBiases {
    bool norm = false, decoder = true, classifier = false;
};
ModernBertBiases modernBertBiases(const nlohmann::json& j, const std::string& name);
// Every tensor of a ModernBertForMaskedLM (or ModernBertModel) checkpoint, checked against the config.
void loadModernBert(decoder::Checkpoint::Parts& parts, const decoder::Tensors& tensors, const ModernBertBiases& biases);

}  // namespace attnviz::core::bert
