// BERT read from a tiny checkpoint written here in Hugging Face's layout: the config's checks, the
// folder's (vocab.txt and tokenizer_config.json, the "bert." prefix or none, gamma and beta), and
// the encoder's pass against a double-precision BERT written in this file (embeddings with token
// types and their norm, post-norm blocks, attention in both directions, the masked-LM head), the
// maps made on demand and a tile at a time, one layer as a scenario model, and the what-ifs. Its
// numbers against an independent float64 numpy BERT: tests/oracle/test_bert_model.py.
#include "core/attention/head_stats.hpp"
#include "core/attention/qk_tiles.hpp"
#include "core/base/error.hpp"
#include "core/models/bert/bert.hpp"
#include "core/models/decoder/logit_lens.hpp"
#include "core/models/induction.hpp"
#include "core/models/loaded_model.hpp"
#include "core/models/run_maps.hpp"
#include "tests/core/lens_reference.hpp"
#include "tests/input_errors.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_bert.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <map>

namespace attnviz::core {
namespace {

using namespace tinybert;
using Md = Eigen::MatrixXd;
using Vd = Eigen::RowVectorXd;

// A tensor of the file as doubles: [rows, cols] as stored (a vector: one row).
Md tensor(const std::map<std::string, StoredTensor>& w, const std::string& name) {
    const StoredTensor& t = w.at(name);
    const Eigen::Index rows = t.shape.size() == 2 ? t.shape[0] : 1, cols = t.shape.back();
    Md m(rows, cols);
    for (Eigen::Index r = 0; r < rows; ++r)
        for (Eigen::Index c = 0; c < cols; ++c) m(r, c) = tinygpt2::stored(t.values[static_cast<std::size_t>(r * cols + c)], t.dtype);
    return m;
}

Md layerNorm(const Md& x, const Md& gain, const Md& bias, double eps) {
    Md out(x.rows(), x.cols());
    for (Eigen::Index r = 0; r < x.rows(); ++r) {
        const double mean = x.row(r).mean();
        const double var = (x.row(r).array() - mean).square().mean();
        out.row(r) = ((x.row(r).array() - mean) / std::sqrt(var + eps)).matrix().cwiseProduct(gain.row(0)) + bias.row(0);
    }
    return out;
}

Md gelu(Md x) {
    return x.unaryExpr([](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); });
}

// x · Wᵀ + b (nn.Linear).
Md linear(const Md& x, const Md& w, const Md& b) { return (x * w.transpose()).rowwise() + b.row(0); }

struct Reference {
    std::vector<Md> maps;  // layer-major, then head: [T, T]
    Md final;              // [T, d]
    Eigen::VectorXd logitsAt(const std::map<std::string, StoredTensor>& w, Eigen::Index position) const {
        const Md t = layerNorm(gelu(linear(final.row(position), tensor(w, "cls.predictions.transform.dense.weight"),
                                           tensor(w, "cls.predictions.transform.dense.bias"))),
                               tensor(w, "cls.predictions.transform.LayerNorm.weight"),
                               tensor(w, "cls.predictions.transform.LayerNorm.bias"), 1e-12);
        return (tensor(w, "bert.embeddings.word_embeddings.weight") * t.transpose()).col(0) +
               tensor(w, "cls.predictions.bias").row(0).transpose();
    }
};

// BERT's encoder in double, as modeling_bert computes it; `hidden`: keys no query reads.
Reference referenceBert(const std::map<std::string, StoredTensor>& w, const std::vector<int>& ids, const std::vector<int>& types,
                        const std::vector<int>& hidden = {}) {
    const auto t = static_cast<Eigen::Index>(ids.size());
    const int dh = kEmbd / kHeads;
    const Md words = tensor(w, "bert.embeddings.word_embeddings.weight"),
             positions = tensor(w, "bert.embeddings.position_embeddings.weight"),
             typeRows = tensor(w, "bert.embeddings.token_type_embeddings.weight");
    Md x(t, kEmbd);
    for (Eigen::Index i = 0; i < t; ++i)
        x.row(i) = words.row(ids[static_cast<std::size_t>(i)]) + positions.row(i) +
                   typeRows.row(types.empty() ? 0 : types[static_cast<std::size_t>(i)]);
    x = layerNorm(x, tensor(w, "bert.embeddings.LayerNorm.weight"), tensor(w, "bert.embeddings.LayerNorm.bias"), 1e-12);
    Reference out;
    for (int l = 0; l < kLayers; ++l) {
        const std::string p = "bert.encoder.layer." + std::to_string(l) + ".";
        const auto proj = [&](const char* part) {
            return linear(x, tensor(w, p + "attention.self." + part + ".weight"), tensor(w, p + "attention.self." + part + ".bias"));
        };
        const Md q = proj("query"), k = proj("key"), v = proj("value");
        Md context(t, kEmbd);
        for (int h = 0; h < kHeads; ++h) {
            Md scores = q.middleCols(h * dh, dh) * k.middleCols(h * dh, dh).transpose() / std::sqrt(static_cast<double>(dh));
            Md a(t, t);
            for (Eigen::Index i = 0; i < t; ++i) {
                for (const int j : hidden) scores(i, j) = -INFINITY;
                const double top = scores.row(i).maxCoeff();
                a.row(i) = (scores.row(i).array() - top).exp().matrix();
                a.row(i) /= a.row(i).sum();
            }
            context.middleCols(h * dh, dh) = a * v.middleCols(h * dh, dh);
            out.maps.push_back(a);
        }
        x = layerNorm(linear(context, tensor(w, p + "attention.output.dense.weight"), tensor(w, p + "attention.output.dense.bias")) + x,
                      tensor(w, p + "attention.output.LayerNorm.weight"), tensor(w, p + "attention.output.LayerNorm.bias"), 1e-12);
        const Md inner = gelu(linear(x, tensor(w, p + "intermediate.dense.weight"), tensor(w, p + "intermediate.dense.bias")));
        x = layerNorm(linear(inner, tensor(w, p + "output.dense.weight"), tensor(w, p + "output.dense.bias")) + x,
                      tensor(w, p + "output.LayerNorm.weight"), tensor(w, p + "output.LayerNorm.bias"), 1e-12);
    }
    out.final = x;
    return out;
}

class Bert : public testfs::TestFolder {
protected:
    std::shared_ptr<const decoder::Checkpoint> open(const std::map<std::string, StoredTensor>& w, const std::string& config = configText(),
                                                    const std::string& tokenizerConfig = R"({"do_lower_case": true})") {
        writeCheckpoint(m_dir, w, config, tokenizerConfig);
        return openCheckpoint(m_dir.string());
    }
    std::string openError(const std::map<std::string, StoredTensor>& w, const std::string& config = configText()) {
        try {
            open(w, config);
        } catch (const InputError& e) {
            return e.message();
        }
        return "(opened)";
    }
};

std::string configError(const std::string& text) {
    try {
        bert::parseConfig(text, "config.json");
    } catch (const InputError& e) {
        return e.message();
    }
    return "(parsed)";
}

TEST(BertConfig, ReadsBertConfigsKeys) {
    const decoder::Config c = bert::parseConfig(configText(), "config.json");
    EXPECT_EQ(c.family, "bert");
    EXPECT_FALSE(c.causal);
    EXPECT_TRUE(c.postNorm);
    EXPECT_EQ(c.nHead, kHeads);
    EXPECT_EQ(c.nKvHead, kHeads);
    EXPECT_EQ(c.headDim, kEmbd / kHeads);
    EXPECT_EQ(c.nInner, kInner);
    EXPECT_EQ(c.typeVocab, kTypes);
    EXPECT_EQ(c.activation, decoder::Activation::GeluErf);
    EXPECT_FLOAT_EQ(c.normEpsilon, 1e-12f);
    EXPECT_EQ(bert::parseConfig(configText({{"hidden_act", "gelu_new"}}), "c").activation, decoder::Activation::GeluTanh);
    EXPECT_EQ(bert::parseConfig(configText({{"max_position_embeddings", nullptr}, {"type_vocab_size", nullptr}}), "c").nPositions, 512);
}

TEST(BertConfig, NamesTheFieldAtFault) {
    EXPECT_EQ(configError(configText({{"num_attention_heads", 3}})), "config.json: num_attention_heads: 3 does not divide hidden_size 8");
    EXPECT_EQ(configError(configText({{"position_embedding_type", "relative_key"}})),
              "config.json: position_embedding_type: 'relative_key' is not read (attnviz reads learned \"absolute\" positions)");
    EXPECT_EQ(configError(configText({{"hidden_act", "mish"}})),
              "config.json: hidden_act: 'mish' is not one attnviz computes (gelu, gelu_new, gelu_fast, gelu_pytorch_tanh, relu, silu)");
    EXPECT_EQ(configError(configText({{"is_decoder", true}})),
              "config.json: is_decoder: true is not read (attnviz reads bert as the encoder it was trained as)");
    EXPECT_EQ(configError(configText({{"hidden_size", nullptr}})), "config.json: hidden_size: missing (a BERT config.json names it)");
    EXPECT_EQ(configError(configText({{"model_type", "t5"}})),
              "config.json: model_type: 't5' is not an encoder this reader knows (bert, roberta, distilbert, modernbert)");
    EXPECT_EQ(configError(configText({{"model_type", "roberta"}, {"pad_token_id", 20}})),
              "config.json: pad_token_id: 20 leaves no position of max_position_embeddings 16 (positions start at pad_token_id + 1)");
    EXPECT_EQ(configError(R"({"model_type": "distilbert", "n_layers": 2, "n_heads": 3, "dim": 8, "hidden_dim": 12, "vocab_size": 20})"),
              "config.json: n_heads: 3 does not divide dim 8");
}

TEST(BertConfig, TokenizerConfigsSwitches) {
    const WordPieceOptions o = bert::parseTokenizerConfig(R"({"do_lower_case": false, "strip_accents": true})", "t");
    EXPECT_FALSE(o.lowercase);
    EXPECT_TRUE(o.chineseChars);
    EXPECT_EQ(o.stripAccents, std::optional<bool>(true));
    EXPECT_EQ(bert::parseTokenizerConfig("{}", "t").stripAccents, std::nullopt);
}

TEST_F(Bert, ThePassIsADoubleBertsInBothDirections) {
    const auto w = weights(1);
    const auto model = open(w);
    const std::vector<int> ids = model->tokenizer().encode("The cat sat on the [MASK].");
    ASSERT_EQ(ids, (std::vector<int>{2, 5, 6, 7, 8, 5, 4, 12, 3}));  // [CLS] the cat sat on the [MASK] . [SEP]: lower-cased
    const decoder::Run run = decoder::forward(*model, ids);
    const Reference want = referenceBert(w, ids, {});
    const auto t = static_cast<Eigen::Index>(ids.size());
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kHeads; ++h) {
            const Md got = run.weights(l, h).cast<double>();
            EXPECT_LT((got - want.maps[static_cast<std::size_t>(l * kHeads + h)]).cwiseAbs().maxCoeff(), 2e-6) << l << "." << h;
            EXPECT_GT(got(0, t - 1), 1e-4) << "the first query reads the last key";
        }
    EXPECT_LT((run.final().cast<double>() - want.final).cwiseAbs().maxCoeff(), 2e-5);
    // The masked-LM head at the first [MASK], position 6.
    ASSERT_EQ(run.predicted, 6);
    ASSERT_EQ(run.logits.size(), kVocabRows);
    EXPECT_LT((run.logits.cast<double>() - want.logitsAt(w, 6)).cwiseAbs().maxCoeff(), 1e-4);
    // Token types add their rows: the second segment's type changes every row.
    const std::vector<int> types = {0, 0, 0, 0, 1, 1, 1, 1, 1};
    const decoder::Run pair = decoder::forward(*model, ids, nullptr, decoder::PassMaps::Kept, types);
    const Reference wantPair = referenceBert(w, ids, types);
    EXPECT_LT((pair.final().cast<double>() - wantPair.final).cwiseAbs().maxCoeff(), 2e-5);
    EXPECT_GT((pair.final() - run.final()).cwiseAbs().minCoeff(), 0.0f);
    // Without a [MASK] an encoder predicts nothing.
    const decoder::Run plain = decoder::forward(*model, model->tokenizer().encode("the cat"));
    EXPECT_EQ(plain.predicted, -1);
    EXPECT_EQ(plain.logits.size(), 0);
}

TEST_F(Bert, MapsOnDemandAndTilesAreTheKeptOnes) {
    const auto model = open(weights(2));
    const decoder::Config& cfg = model->config();
    const std::vector<int> ids = model->tokenizer().encode("the dog ran , the cat is on a mat . dogs");
    const auto t = static_cast<Eigen::Index>(ids.size());
    const decoder::Run kept = decoder::forward(*model, ids);
    const decoder::Run lazy = decoder::forward(*model, ids, nullptr, decoder::PassMaps::OnDemand);
    const decoder::Run lean = decoder::forward(*model, ids, nullptr, decoder::PassMaps::Lean);
    Mat rows(t - 3, t), tiles(t - 3, t);
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kHeads; ++h) {
            decoder::mapWeightRows(lazy, cfg, l, h, 3, rows);
            EXPECT_LT((rows - kept.weights(l, h).bottomRows(t - 3)).cwiseAbs().maxCoeff(), 1e-6f) << l << "." << h;
            RowsSink sink(tiles, 3);
            decoder::mapWeightTiles(lean, cfg, l, h, 3, t - 3, sink);
            EXPECT_LT((tiles - kept.weights(l, h).bottomRows(t - 3)).cwiseAbs().maxCoeff(), 1e-6f) << l << "." << h;
        }
    EXPECT_EQ(lazy.logits, kept.logits);
    // The views' maps: every layer read in both directions.
    const AttentionMaps maps = runMaps(lazy, cfg);
    for (int l = 0; l < kLayers; ++l) EXPECT_FALSE(maps.layerSettings(l).causal);
}

// The statistics after Clark et al. on a BERT's pass: [SEP] a separator ([CLS] first, [MASK]
// neither), "," and "." punctuation; each head's separator and punctuation mass and its next-token
// weight equal sums over its kept map.
TEST_F(Bert, SeparatorPunctuationAndNextTokenStatistics) {
    const auto model = open(weights(2));
    const std::vector<int> ids = model->tokenizer().encode("the dog ran , the [MASK] is on a mat .");
    const decoder::Run run = decoder::forward(*model, ids);
    const std::vector<std::uint8_t> kinds = tokenKinds(*model, ids);
    ASSERT_EQ(kinds.size(), ids.size());
    const auto t = static_cast<Eigen::Index>(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const std::string& word = kVocab[static_cast<std::size_t>(ids[i])];
        const std::uint8_t want = word == "[SEP]" ? kSeparatorToken : word == "," || word == "." ? kPunctuationToken : 0;
        EXPECT_EQ(kinds[i], want) << i << " " << word;
    }
    AttentionMaps maps = runMaps(run, model->config());
    maps.kinds = kinds;
    const std::vector<HeadStats> stats = allHeadStats(maps);
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kHeads; ++h) {
            const auto a = run.weights(l, h).cast<double>();
            double separator = 0, punctuation = 0, next = 0;
            for (Eigen::Index i = 0; i < t; ++i) {
                for (Eigen::Index j = 0; j < t; ++j) {
                    if (kinds[static_cast<std::size_t>(j)] == kSeparatorToken) separator += a(i, j);
                    if (kinds[static_cast<std::size_t>(j)] == kPunctuationToken) punctuation += a(i, j);
                }
                if (i + 1 < t) next += a(i, i + 1);
            }
            const HeadStats& s = stats[static_cast<std::size_t>(maps.index(l, h))];
            EXPECT_NEAR(s.separator, separator / static_cast<double>(t), 1e-6) << l << "." << h;
            EXPECT_NEAR(s.punctuation, punctuation / static_cast<double>(t), 1e-6) << l << "." << h;
            EXPECT_NEAR(s.next, next / static_cast<double>(t - 1), 1e-6) << l << "." << h;
            EXPECT_GT(s.next, 0.0);
        }
}

TEST_F(Bert, OneLayerAsAScenarioModelGivesTheKeptWeights) {
    const auto model = open(weights(3));
    const std::vector<int> ids = model->tokenizer().encode("the cat sat on the mat");
    const decoder::Run run = decoder::forward(*model, ids);
    for (int l = 0; l < kLayers; ++l) {
        const Model m = decoder::layerModel(*model, run, l, decoder::tokenLabels(*model, ids));
        const Forward f = runForward(m, Settings{});  // no mask
        for (int h = 0; h < kHeads; ++h)
            EXPECT_LT((f.heads[static_cast<std::size_t>(h)].weights - run.weights(l, h)).cwiseAbs().maxCoeff(), 1e-6f) << l << " " << h;
    }
}

// An encoder's lens reads each layer's (already normed) stream through its masked-LM transform
// (dense, GELU, LayerNorm) and the tied unembedding with its bias; at the [MASK] the last row is
// the prediction. Without a masked-LM head there is nothing to read through.
TEST_F(Bert, TheLensReadsEveryLayerThroughTheMaskedLmHead) {
    const auto model = open(weights(3));
    const std::vector<int> ids = {2, 5, 6, 4, 8, 5, 3};  // [CLS] the cat [MASK] on the [SEP]
    const decoder::Run run = decoder::forward(*model, ids);
    ASSERT_EQ(run.predicted, 3);
    const decoder::LogitLens lens = decoder::logitLens(*model, run, 0, 7, 5);
    attnviz::testing::expectLensIsTheWholeSoftmax(*model, run, lens);
    const auto headless = open(weights(3, "bert.", false));
    const decoder::Run bare = decoder::forward(*headless, ids);
    EXPECT_EQ(testfs::errorOf([&] { (void)decoder::logitLens(*headless, bare, 0, 7, 5); }),
              "logit lens: the checkpoint has no output head to read the residual stream through");
}

TEST_F(Bert, WhatIfsAndTypingAtTheEndRunTheWholeEncoder) {
    const auto w = weights(4);
    const auto model = open(w);
    const std::vector<int> ids = model->tokenizer().encode("the [MASK] sat on the mat");
    const decoder::Run base = decoder::forward(*model, ids);
    // Token 3 hidden: a key no query reads in any layer, as a double BERT with it masked.
    const decoder::Run hidden = decoder::forwardEdited(*model, base, {{decoder::Intervention::Kind::HideToken, 0, 0, 3}});
    const Reference want = referenceBert(w, ids, {}, {3});
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kHeads; ++h) {
            EXPECT_EQ(hidden.weights(l, h).col(3).cwiseAbs().maxCoeff(), 0.0f);
            EXPECT_LT((hidden.weights(l, h).cast<double>() - want.maps[static_cast<std::size_t>(l * kHeads + h)]).cwiseAbs().maxCoeff(),
                      2e-6);
        }
    EXPECT_LT((hidden.logits.cast<double>() - want.logitsAt(w, 2)).cwiseAbs().maxCoeff(), 1e-4);
    // A word typed at the end changes every earlier row: the pass is whole, not appended.
    std::vector<int> longer = ids;
    longer.insert(longer.end() - 1, 6);
    const decoder::Run typed = decoder::forwardAppend(*model, longer, base);
    const decoder::Run whole = decoder::forward(*model, longer);
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kHeads; ++h) EXPECT_EQ(typed.weights(l, h), whole.weights(l, h));
    EXPECT_NE(typed.weights(0, 0).topLeftCorner(2, 2), base.weights(0, 0).topLeftCorner(2, 2));
    // The tests that read a decoder's heads reading back are refused in one line.
    try {
        inductionSequences(*model, InductionSettings{});
        ADD_FAILURE() << "an encoder's induction test ran";
    } catch (const InputError& e) {
        EXPECT_EQ(e.message(),
                  "induction test: scores a decoder's heads reading back along the text; this bert model reads every key in "
                  "both directions");
    }
}

TEST_F(Bert, FoldersOfEveryLayout) {
    // BertModel: no "bert." prefix, no head; LayerNorm gain and bias named gamma and beta.
    auto plain = weights(5, "", false);
    std::map<std::string, StoredTensor> renamed;
    for (auto& [name, t] : plain) {
        std::string n = name;
        if (n.size() > 17 && n.compare(n.size() - 17, 17, ".LayerNorm.weight") == 0) n.replace(n.size() - 6, 6, "gamma");
        else if (n.size() > 15 && n.compare(n.size() - 15, 15, ".LayerNorm.bias") == 0) n.replace(n.size() - 4, 4, "beta");
        renamed[n] = t;
    }
    const auto model = open(renamed);
    EXPECT_FALSE(model->predicts());
    const decoder::Run run = decoder::forward(*model, model->tokenizer().encode("the [MASK]"));
    EXPECT_EQ(run.predicted, -1);
    // The same weights with the prefix and the usual names give the same maps.
    std::map<std::string, StoredTensor> prefixed;
    for (auto& [name, t] : plain) prefixed["bert." + name] = t;
    const auto same = open(prefixed);
    EXPECT_EQ(decoder::forward(*same, run.ids).weights(1, 1), run.weights(1, 1));
    // tokenizer_config.json's do_lower_case: false keeps "The" whole, an unknown word.
    const auto cased = open(weights(1), configText(), R"({"do_lower_case": false})");
    EXPECT_EQ(cased->tokenizer().encode("The cat"), (std::vector<int>{2, 1, 6, 3}));
    // Untied: the decoder's own rows are read.
    auto untied = weights(6);
    untied["cls.predictions.decoder.weight"] = untied.at("bert.embeddings.word_embeddings.weight");
    for (float& v : untied["cls.predictions.decoder.weight"].values) v *= 2.0f;
    const auto tiedModel = open(weights(6));
    const std::vector<int> masked = tiedModel->tokenizer().encode("the [MASK] sat");
    const Vec tiedLogits = decoder::forward(*tiedModel, masked).logits;
    const auto untiedModel = open(untied, configText({{"tie_word_embeddings", false}}));
    const Vec untiedLogits = decoder::forward(*untiedModel, masked).logits;
    const Vec bias = Eigen::Map<const Vec>(untied.at("cls.predictions.bias").values.data(), kVocabRows);
    EXPECT_LT(((untiedLogits - bias) - 2.0f * (tiedLogits - bias)).cwiseAbs().maxCoeff(), 1e-4f);
    // Both names of the output bias, apart (an untied head as transformers 5 saves it): untied reads
    // the decoder's, tied the head's.
    const auto withDecoderBias = [](std::map<std::string, StoredTensor> w) {
        w["cls.predictions.decoder.bias"] = w.at("cls.predictions.bias");
        for (float& v : w["cls.predictions.decoder.bias"].values) v += 1.5f;
        return w;
    };
    const Vec untiedBoth = decoder::forward(*open(withDecoderBias(untied), configText({{"tie_word_embeddings", false}})), masked).logits;
    EXPECT_LT((untiedBoth - untiedLogits - Vec::Constant(kVocabRows, 1.5f)).cwiseAbs().maxCoeff(), 1e-4f);
    const Vec tiedBoth = decoder::forward(*open(withDecoderBias(weights(6))), masked).logits;
    EXPECT_LT((tiedBoth - tiedLogits).cwiseAbs().maxCoeff(), 1e-4f);
}

// The same weights under another family's names: RoBERTa's (its head lm_head.*, one token type,
// positions from row pad_token_id + 1 = 2) and DistilBERT's (no token types).
std::map<std::string, StoredTensor> renamed(const std::map<std::string, StoredTensor>& bert, const std::string& family) {
    const std::vector<std::pair<std::string, std::string>> roberta = {{"cls.predictions.transform.dense", "lm_head.dense"},
                                                                      {"cls.predictions.transform.LayerNorm", "lm_head.layer_norm"},
                                                                      {"cls.predictions.bias", "lm_head.bias"}};
    const std::vector<std::pair<std::string, std::string>> distil = {{"encoder.layer.", "transformer.layer."},
                                                                     {"attention.self.query", "attention.q_lin"},
                                                                     {"attention.self.key", "attention.k_lin"},
                                                                     {"attention.self.value", "attention.v_lin"},
                                                                     {"attention.output.dense", "attention.out_lin"},
                                                                     {"attention.output.LayerNorm", "sa_layer_norm"},
                                                                     {"intermediate.dense", "ffn.lin1"},
                                                                     {"output.dense", "ffn.lin2"},
                                                                     {"output.LayerNorm", "output_layer_norm"},
                                                                     {"cls.predictions.transform.dense", "vocab_transform"},
                                                                     {"cls.predictions.transform.LayerNorm", "vocab_layer_norm"},
                                                                     {"cls.predictions.bias", "vocab_projector.bias"}};
    std::map<std::string, StoredTensor> out;
    for (const auto& [name, t] : bert) {
        if (family == "distilbert" && name.find("token_type") != std::string::npos) continue;
        std::string n = name.rfind("bert.", 0) == 0 ? family + "." + name.substr(5) : name;
        for (const auto& [from, to] : family == "roberta" ? roberta : distil)
            if (const auto at = n.find(from); at != std::string::npos) n.replace(at, from.size(), to);
        out[n] = t;
    }
    if (family == "roberta") {  // two rows before position 0's
        StoredTensor& p = out.at("roberta.embeddings.position_embeddings.weight");
        p.values.insert(p.values.begin(), 2 * kEmbd, 7.0f);
        p.shape[0] += 2;
        StoredTensor& types = out.at("roberta.embeddings.token_type_embeddings.weight");
        types.values.resize(kEmbd);
        types.shape[0] = 1;
    }
    return out;
}

TEST_F(Bert, RobertaAndDistilBertAreBertUnderOtherNames) {
    // RoBERTa: GPT-2's byte symbols, three merges and RoBERTa's five specials (tiny_gpt2's 260 ids, then 260 … 264).
    constexpr int kRobertaVocab = 265;
    auto bert = weights(7, "bert.", true, kRobertaVocab);
    bert.at("bert.embeddings.token_type_embeddings.weight").values.assign(kTypes * kEmbd, 0.0f);  // DistilBERT has none
    const auto bertModel = open(bert, configText({{"vocab_size", kRobertaVocab}}));
    const std::vector<int> ids = {2, 258, 4, 100, 264, 3, 1};  // BERT's [MASK] is 4, RoBERTa's <mask> 264
    const decoder::Run want = decoder::forward(*bertModel, ids);
    ASSERT_EQ(want.predicted, 2);

    tinygpt2::writeCheckpoint(m_dir, renamed(bert, "roberta"),
                              configText({{"model_type", "roberta"},
                                          {"vocab_size", kRobertaVocab},
                                          {"max_position_embeddings", kPositions + 2},
                                          {"type_vocab_size", 1},
                                          {"pad_token_id", 1}}));
    nlohmann::json vocab = nlohmann::json::parse(testfs::readFile(m_dir / "vocab.json"));
    int id = 260;
    for (const char* special : {"<s>", "<pad>", "</s>", "<unk>", "<mask>"}) vocab[special] = id++;
    testfs::writeFile(m_dir / "vocab.json", vocab.dump());
    const auto roberta = openCheckpoint(m_dir.string());
    EXPECT_EQ(roberta->config().family, "roberta");
    EXPECT_EQ(roberta->config().positionOffset, 2);
    EXPECT_EQ(roberta->config().longestInput(), kPositions);
    // <s> A </s>; <mask> takes the space before it; a pair is <s> A </s></s> B </s>.
    const ModelTokenizer& t = roberta->tokenizer();
    EXPECT_EQ(t.encode(" the <mask>"), (std::vector<int>{260, 258, 264, 262}));
    EXPECT_EQ(t.encodePair(" the", "a", "pair").ids, (std::vector<int>{260, 258, 262, 262, 97, 262}));
    EXPECT_EQ(t.maskId(), std::optional<int>(264));
    const decoder::Run got = decoder::forward(*roberta, ids);
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kHeads; ++h) EXPECT_EQ(got.weights(l, h), want.weights(l, h)) << l << "." << h;
    EXPECT_EQ(got.predicted, 4);  // the first <mask>
    // RoBERTa's head is GELU (erf) whatever hidden_act says; BERT's follows hidden_act.
    EXPECT_EQ(roberta->config().headActivation, decoder::Activation::GeluErf);
    EXPECT_EQ(bert::parseConfig(configText({{"model_type", "roberta"}, {"hidden_act", "relu"}}), "c").headActivation,
              decoder::Activation::GeluErf);

    std::filesystem::remove(m_dir / "vocab.json");
    std::filesystem::remove(m_dir / "merges.txt");
    const nlohmann::json distilConfig = {{"model_type", "distilbert"},
                                         {"n_layers", kLayers},
                                         {"n_heads", kHeads},
                                         {"dim", kEmbd},
                                         {"hidden_dim", kInner},
                                         {"vocab_size", kRobertaVocab},
                                         {"max_position_embeddings", kPositions},
                                         {"activation", "gelu"}};
    const auto distil = open(renamed(bert, "distilbert"), distilConfig.dump());
    EXPECT_EQ(distil->config().family, "distilbert");
    EXPECT_EQ(distil->config().typeVocab, 0);
    const decoder::Run fromDistil = decoder::forward(*distil, ids);
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kHeads; ++h) EXPECT_EQ(fromDistil.weights(l, h), want.weights(l, h)) << l << "." << h;
    EXPECT_EQ(fromDistil.predicted, 2);
    EXPECT_EQ(fromDistil.logits, want.logits);
}

// A tiny ModernBERT: GPT-2's byte symbols with three merges and [CLS] 259, [SEP] 260, [MASK] 261
// (taking the white space before it) in a tokenizer.json; 3 layers, the first global, the others
// reading 2 keys either side.
void writeModernBert(const std::filesystem::path& dir, std::uint64_t seed) {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b) {
        std::string symbol;
        core::appendUtf8(symbol, ByteBpe::byteToUnicode(static_cast<unsigned char>(b)));
        vocab[symbol] = b;
    }
    vocab["Ġt"] = 256, vocab["he"] = 257, vocab["Ġthe"] = 258, vocab["[CLS]"] = 259, vocab["[SEP]"] = 260, vocab["[MASK]"] = 261;
    const nlohmann::json special = {{"[CLS]", {{"id", "[CLS]"}, {"ids", {259}}, {"tokens", {"[CLS]"}}}},
                                    {"[SEP]", {{"id", "[SEP]"}, {"ids", {260}}, {"tokens", {"[SEP]"}}}}};
    const nlohmann::json cls = {{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}},
                         sep = {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}};
    const nlohmann::json tokenizer = {
        {"added_tokens",
         {{{"id", 259}, {"content", "[CLS]"}, {"special", true}},
          {{"id", 260}, {"content", "[SEP]"}, {"special", true}},
          {{"id", 261}, {"content", "[MASK]"}, {"lstrip", true}, {"special", true}}}},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"Ġ t", "h e", "Ġt he"}}}},
        {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
        {"post_processor",
         {{"type", "TemplateProcessing"},
          {"single", {cls, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, sep}},
          {"pair", {cls, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, sep, {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}, sep}},
          {"special_tokens", special}}}};
    testfs::writeFile(dir / "tokenizer.json", tokenizer.dump());
    const nlohmann::json config = {{"model_type", "modernbert"},      {"num_hidden_layers", 3},
                                   {"num_attention_heads", 2},        {"hidden_size", 8},
                                   {"intermediate_size", 12},         {"vocab_size", 262},
                                   {"max_position_embeddings", 32},   {"local_attention", 4},
                                   {"global_attn_every_n_layers", 3}, {"global_rope_theta", 160000.0},
                                   {"local_rope_theta", 10000.0},     {"norm_eps", 1e-5},
                                   {"hidden_activation", "gelu"},     {"classifier_activation", "gelu"}};
    testfs::writeFile(dir / "config.json", config.dump());
    core::Prng rng(seed);
    std::map<std::string, StoredTensor> w;
    const auto make = [&](std::vector<std::int64_t> shape, double scale, double offset = 0) {
        return tinygpt2::randomTensor(rng, std::move(shape), scale, offset);
    };
    w["model.embeddings.tok_embeddings.weight"] = make({262, 8}, 0.8);
    w["model.embeddings.norm.weight"] = make({8}, 0.1, 1.0);
    for (int l = 0; l < 3; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        if (l > 0) w[p + "attn_norm.weight"] = make({8}, 0.1, 1.0);
        w[p + "attn.Wqkv.weight"] = make({24, 8}, 0.7);
        w[p + "attn.Wo.weight"] = make({8, 8}, 0.4);
        w[p + "mlp_norm.weight"] = make({8}, 0.1, 1.0);
        w[p + "mlp.Wi.weight"] = make({24, 8}, 0.5);
        w[p + "mlp.Wo.weight"] = make({8, 12}, 0.4);
    }
    w["model.final_norm.weight"] = make({8}, 0.1, 1.0);
    w["head.dense.weight"] = make({8, 8}, 0.5);
    w["head.norm.weight"] = make({8}, 0.1, 1.0);
    w["decoder.bias"] = make({262}, 0.3);
    testfs::writeFile(dir / "model.safetensors", tinygpt2::safetensors(w));
}

TEST_F(Bert, ModernBertsGlobalAndLocalLayers) {
    writeModernBert(m_dir, 9);
    const auto model = openCheckpoint(m_dir.string());
    const decoder::Config& c = model->config();
    EXPECT_EQ(c.family, "modernbert");
    EXPECT_FALSE(c.postNorm);
    EXPECT_TRUE(c.gatedMlp);
    EXPECT_EQ(c.windows, (std::vector<int>{0, 3, 3}));  // local: |i − j| ≤ 2
    ASSERT_EQ(c.layerRopes.size(), 3U);
    EXPECT_EQ(c.layerRopes[0].theta, 160000.0);
    EXPECT_EQ(c.layerRopes[1].theta, 10000.0);
    EXPECT_EQ(c.layerRopes[2].theta, 10000.0);
    EXPECT_FALSE(model->layers()[0].norm1Gain);  // layer 0 reads the normed embeddings as they are
    const ModelTokenizer& t = model->tokenizer();
    const std::vector<int> ids = t.encode(" the the the the the the [MASK]");
    ASSERT_EQ(ids, (std::vector<int>{259, 258, 258, 258, 258, 258, 258, 261, 260}));
    EXPECT_EQ(t.encodePair(" the", " the", "pair").ids, (std::vector<int>{259, 258, 260, 258, 260}));
    const decoder::Run run = decoder::forward(*model, ids);
    EXPECT_EQ(run.predicted, 7);
    EXPECT_EQ(run.logits.size(), 262);
    for (int h = 0; h < 2; ++h) {
        EXPECT_GT(run.weights(0, h)(0, 8), 0.0f);  // global: [CLS] reads [SEP]
        EXPECT_EQ(run.weights(1, h)(0, 3), 0.0f);  // local: 3 keys away is outside
        EXPECT_GT(run.weights(1, h)(4, 6), 0.0f);  // 2 keys away is inside, either side
        EXPECT_GT(run.weights(1, h)(4, 2), 0.0f);
    }
    // Each layer as a scenario model (its own RoPE base, its window both ways) gives the pass's weights.
    for (int l = 0; l < 3; ++l) {
        const Model m = decoder::layerModel(*model, run, l, decoder::tokenLabels(*model, ids));
        Settings settings;
        settings.window = c.window(l);
        const Forward f = runForward(m, settings);
        for (int h = 0; h < 2; ++h)
            EXPECT_LT((f.heads[static_cast<std::size_t>(h)].weights - run.weights(l, h)).cwiseAbs().maxCoeff(), 1e-6f) << l << "." << h;
    }
    // Made on demand, the local layers' band is the pass's.
    const decoder::Run lazy = decoder::forward(*model, ids, nullptr, decoder::PassMaps::OnDemand);
    Mat rows(9, 9);
    decoder::mapWeightRows(lazy, c, 2, 1, 0, rows);
    EXPECT_LT((rows - run.weights(2, 1)).cwiseAbs().maxCoeff(), 1e-6f);
}

TEST_F(Bert, BrokenFoldersNameTheFileAndTheTensor) {
    auto missing = weights(1);
    missing.erase("bert.encoder.layer.1.output.LayerNorm.bias");
    EXPECT_EQ(openError(missing), (m_dir / "model.safetensors").string() +
                                      ": bert.encoder.layer.1.output.LayerNorm.bias: missing (a bert checkpoint of 2 layers holds it)");
    auto wrong = weights(1);
    wrong["bert.encoder.layer.0.intermediate.dense.weight"].shape = {kInner / 2, 2 * kEmbd};
    EXPECT_NE(openError(wrong).find("bert.encoder.layer.0.intermediate.dense.weight: shape [6, 16] disagrees with config.json"),
              std::string::npos);
    auto beyond = weights(1);
    beyond["bert.encoder.layer.2.output.dense.bias"] = beyond.at("bert.encoder.layer.1.output.dense.bias");
    EXPECT_EQ(openError(beyond), (m_dir / "model.safetensors").string() +
                                     ": bert.encoder.layer.2.output.dense.bias: layer 2 is beyond config.json's num_hidden_layers 2");
    auto untied = weights(1);
    EXPECT_EQ(openError(untied, configText({{"tie_word_embeddings", false}})),
              (m_dir / "model.safetensors").string() +
                  ": cls.predictions.decoder.weight: missing, and config.json says tie_word_embeddings is false");
    EXPECT_EQ(openError(weights(1), configText({{"vocab_size", 10}})),
              m_dir.string() + ": the tokenizer has 18 tokens, more than config.json's vocab_size 10");
    std::filesystem::remove(m_dir / "vocab.txt");
    testfs::writeFile(m_dir / "config.json", configText());
    try {
        openCheckpoint(m_dir.string());
        ADD_FAILURE() << "a folder without a tokenizer opened";
    } catch (const InputError& e) {
        EXPECT_EQ(e.message(), m_dir.string() + ": no tokenizer: expected tokenizer.json, vocab.json and merges.txt, or vocab.txt");
    }
}

}  // namespace
}  // namespace attnviz::core
