// BERT (Devlin et al. 2019) and the encoders that share its layout, RoBERTa (Liu et al. 2019) and
// DistilBERT (Sanh et al. 2019), and ModernBERT (Warner et al. 2024), read from a Hugging Face folder as an encoder (decoder.hpp runs it
// with Config::causal false): learned absolute positions, token types, an embedding LayerNorm,
// post-LayerNorm blocks, a GELU MLP, every projection biased, attention in both directions; the
// masked-LM head when the checkpoint has one.
//
// config.json's model_type is "bert" (BertConfig's keys). The weights, nn.Linear's [out, in],
// d = hidden_size, with the prefix "bert." (BertForMaskedLM, BertForPreTraining) or none
// (BertModel); a LayerNorm's gain and bias named weight and bias, or gamma and beta as in files
// converted from the first checkpoints (bert-base-uncased's):
//   embeddings.word_embeddings.weight [vocab, d], embeddings.position_embeddings.weight
//   [max_position_embeddings, d], embeddings.token_type_embeddings.weight [type_vocab_size, d],
//   embeddings.LayerNorm [d]
//   encoder.layer.l.attention.self.{query,key,value}.{weight [d, d], bias [d]}
//   encoder.layer.l.attention.output.dense.{weight [d, d], bias}, attention.output.LayerNorm [d]
//   encoder.layer.l.intermediate.dense.{weight [inner, d], bias}, output.dense.{weight [d, inner], bias},
//   output.LayerNorm [d]
// and the head, without the prefix: cls.predictions.transform.dense.{weight [d, d], bias},
// cls.predictions.transform.LayerNorm, cls.predictions.bias [vocab] (or cls.predictions.decoder.bias),
// and cls.predictions.decoder.weight [vocab, d] when tie_word_embeddings is false (tied: the word
// embeddings, as transformers ties them). The pooler and the next-sentence head are not read. The
// tokenizer is tokenizer.json, or vocab.txt with tokenizer_config.json's switches.
//
// RoBERTa ("roberta", RobertaConfig = BertConfig's keys): the prefix "roberta.", one token type,
// position i at row pad_token_id + 1 + i, the head lm_head.dense, lm_head.layer_norm, lm_head.bias
// (or lm_head.decoder.bias), lm_head.decoder.weight when untied, GELU whatever hidden_act says;
// the tokenizer byte-level BPE with <s> A </s>: tokenizer.json (RobertaProcessing) or vocab.json
// and merges.txt.
// DistilBERT ("distilbert": dim, n_layers, n_heads, hidden_dim, activation): the prefix
// "distilbert.", no token types, transformer.layer.l.attention.{q_lin,k_lin,v_lin,out_lin},
// sa_layer_norm, ffn.lin1, ffn.lin2, output_layer_norm, the head vocab_transform,
// vocab_layer_norm, vocab_projector (its bias; its weight when untied); WordPiece as BERT's.
// ModernBERT ("modernbert"): pre-norm, rotary, global and local layers, GeGLU (modernbert.cpp),
// its BPE tokenizer.json with [CLS] A [SEP] and [MASK].
#pragma once

#include "core/base/progress.hpp"
#include "core/models/decoder/decoder.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace attnviz::core::bert {

// Whether `modelType` (config.json's model_type) is one of this room's encoders.
bool readsModelType(std::string_view modelType);

// config.json's text, read by its model_type; `name` stands for the file in messages. Throws
// InputError naming the field ("config.json: position_embedding_type: \"relative_key\" is not …").
decoder::Config parseConfig(std::string_view json, const std::string& name);

// tokenizer_config.json's switches for a vocab.txt (do_lower_case, tokenize_chinese_chars,
// strip_accents; BertTokenizer's defaults when absent).
WordPieceOptions parseTokenizerConfig(std::string_view json, const std::string& name);

// Opens a folder; errors name the file and the tensor or field. `progress` counts the bytes read
// and checked, and may stop the opening (Cancelled).
std::shared_ptr<const decoder::Checkpoint> open(const std::string& folder, Progress* progress = nullptr);

}  // namespace attnviz::core::bert
