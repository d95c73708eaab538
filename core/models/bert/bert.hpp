// BERT (Devlin et al. 2019) read from a Hugging Face folder as an encoder (decoder.hpp runs it with
// Config::causal false): learned absolute positions, token types, an embedding LayerNorm,
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
#pragma once

#include "core/base/progress.hpp"
#include "core/models/decoder/decoder.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace attnviz::core::bert {

// config.json's text; `name` stands for the file in messages. Throws InputError naming the field
// ("config.json: position_embedding_type: \"relative_key\" is not …").
decoder::Config parseConfig(std::string_view json, const std::string& name);

// tokenizer_config.json's switches for a vocab.txt (do_lower_case, tokenize_chinese_chars,
// strip_accents; BertTokenizer's defaults when absent).
WordPieceOptions parseTokenizerConfig(std::string_view json, const std::string& name);

// Opens a folder; errors name the file and the tensor or field. `progress` counts the bytes read
// and checked, and may stop the opening (Cancelled).
std::shared_ptr<const decoder::Checkpoint> open(const std::string& folder, Progress* progress = nullptr);

}  // namespace attnviz::core::bert
