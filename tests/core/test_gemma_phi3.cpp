// Gemma 2, Gemma 3 and Phi-3 (core/models/gemma/, core/models/llama/): their config.json as
// transformers 4 and 5 write it, with the defaults transformers fills in; LongRoPE and a partial
// rotary; Gemma 2's soft-capped scores through every path that makes a weight (the pass's row
// blocks, maps made on demand row by row and tile by tile, the layer as a scenario); typing at
// the end; the image-text layout of Gemma 3 and Phi-3's fused projections. Whole passes are held
// to a float64 forward written from transformers' code in tests/oracle/test_gemma_model.py.
#include "core/attention/qk_tiles.hpp"
#include "core/base/error.hpp"
#include "core/models/decoder/attribution.hpp"
#include "core/models/decoder/decoder.hpp"
#include "core/models/decoder/logit_lens.hpp"
#include "core/models/gemma/gemma.hpp"
#include "core/models/llama/llama.hpp"
#include "core/models/loaded_model.hpp"
#include "core/scenario/model.hpp"
#include "tests/core/lens_reference.hpp"
#include "tests/input_errors.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_llama.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

using namespace attnviz;
using namespace attnviz::core;
using nlohmann::json;

namespace {

constexpr int kLayers = 3, kHeads = 4, kKvHeads = 2, kEmbd = 16, kHeadDim = 8, kInner = 24;

json withChanges(json c, const json& changes) {
    for (const auto& [key, value] : changes.items()) {
        if (value.is_null()) c.erase(key);
        else c[key] = value;
    }
    return c;
}

// A tiny Gemma config.json as transformers 4 writes it (`changes`: fields set, or removed by null).
json gemmaConfig(const std::string& type, const json& changes = json::object()) {
    json c = {{"model_type", type},
              {"num_hidden_layers", kLayers},
              {"num_attention_heads", kHeads},
              {"num_key_value_heads", kKvHeads},
              {"hidden_size", kEmbd},
              {"intermediate_size", kInner},
              {"head_dim", kHeadDim},
              {"max_position_embeddings", 64},
              {"vocab_size", tinyllama::kVocab},
              {"rms_norm_eps", 1e-6},
              {"hidden_activation", "gelu_pytorch_tanh"},
              {"query_pre_attn_scalar", 12},
              {"sliding_window", 4},
              {"rope_theta", 10000.0},
              {"torch_dtype", "float32"}};
    if (type == "gemma2") c["attn_logit_softcapping"] = 1.5, c["final_logit_softcapping"] = 2.0;
    if (type == "gemma3_text") c["sliding_window_pattern"] = 3, c["rope_local_base_freq"] = 100.0;
    return withChanges(c, changes);
}

json phi3Config(const json& changes = json::object()) {
    const json c = {{"model_type", "phi3"},
                    {"num_hidden_layers", kLayers},
                    {"num_attention_heads", kHeads},
                    {"num_key_value_heads", kKvHeads},
                    {"hidden_size", kEmbd * 2},
                    {"head_dim", kHeadDim},
                    {"intermediate_size", kInner},
                    {"max_position_embeddings", 64},
                    {"vocab_size", tinyllama::kVocab},
                    {"rms_norm_eps", 1e-5},
                    {"hidden_act", "silu"},
                    {"rope_theta", 10000.0},
                    {"tie_word_embeddings", false},
                    {"torch_dtype", "float32"}};
    return withChanges(c, changes);
}

using Tensors = std::map<std::string, tinygpt2::StoredTensor>;

// Llama-shaped random weights of the same sizes (tinyllama::weights), given Gemma's extra norms.
Tensors gemmaWeights(const json& c, std::uint64_t seed) {
    json shape = c;
    shape["model_type"] = c["model_type"] == "gemma3_text" ? "qwen3" : "llama";  // qwen3: q and k norms
    shape["tie_word_embeddings"] = c.value("tie_word_embeddings", true);
    Tensors w = tinyllama::weights(shape, seed);
    Prng rng(seed + 1);
    for (int l = 0; l < c["num_hidden_layers"].get<int>(); ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        w[p + "pre_feedforward_layernorm.weight"] = tinygpt2::randomTensor(rng, {c["hidden_size"].get<std::int64_t>()}, 0.2);
        w[p + "post_feedforward_layernorm.weight"] = tinygpt2::randomTensor(rng, {c["hidden_size"].get<std::int64_t>()}, 0.2);
    }
    return w;
}

// The same weights as a Phi-3 folder holds them: q, k, v in one qkv_proj, gate and up in one
// gate_up_proj, rows one above the other.
Tensors fused(Tensors w, int layers) {
    const auto stack = [&](std::initializer_list<std::string> names) {
        tinygpt2::StoredTensor out;
        out.shape = {0, w.at(*names.begin()).shape[1]};
        for (const std::string& n : names) {
            out.shape[0] += w.at(n).shape[0];
            out.values.insert(out.values.end(), w.at(n).values.begin(), w.at(n).values.end());
            w.erase(n);
        }
        return out;
    };
    for (int l = 0; l < layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        w[p + "self_attn.qkv_proj.weight"] =
            stack({p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight"});
        w[p + "mlp.gate_up_proj.weight"] = stack({p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"});
    }
    return w;
}

decoder::Config parsedGemma(const json& c) { return gemma::parseConfig(c.dump(), "config.json"); }

std::string gemmaError(const json& c) {
    return testfs::errorOf([&] { parsedGemma(c); });
}

TEST(GemmaConfig, FillsInTransformersDefaults) {
    // A Gemma 2 config that leaves the caps, the window and the scalar out: Gemma2Config's.
    const decoder::Config c = parsedGemma(gemmaConfig("gemma2", {{"attn_logit_softcapping", nullptr},
                                                                 {"final_logit_softcapping", nullptr},
                                                                 {"query_pre_attn_scalar", nullptr},
                                                                 {"sliding_window", nullptr}}));
    EXPECT_EQ(c.family, "gemma2");
    EXPECT_EQ(c.attnSoftcap, 50.0f);
    EXPECT_EQ(c.logitSoftcap, 30.0f);
    EXPECT_EQ(c.scoreDim, 256);
    EXPECT_FLOAT_EQ(c.scoreScale(), 1.0f / 16.0f);
    EXPECT_FLOAT_EQ(c.embedScale, 4.0f);  // √16
    EXPECT_EQ(c.windows, (std::vector<int>{4096, 0, 4096}));
    EXPECT_TRUE(c.tieWordEmbeddings && c.gatedMlp && c.rotary && !c.qkNorm && !c.qkvBias && !c.outBias);
    EXPECT_EQ(c.activation, decoder::Activation::GeluTanh);
    // Written as null, a cap is off.
    const decoder::Config off = parsedGemma(gemmaConfig("gemma2", {{"attn_logit_softcapping", json()}}));
    EXPECT_EQ(off.logitSoftcap, 2.0f);
    EXPECT_EQ(parsedGemma(gemmaConfig("gemma2", {{"final_logit_softcapping", json::value_t::null}})).attnSoftcap, 1.5f);
    json nulls = gemmaConfig("gemma2");
    nulls["attn_logit_softcapping"] = json();
    nulls["final_logit_softcapping"] = json();
    EXPECT_EQ(parsedGemma(nulls).attnSoftcap, 0.0f);
    EXPECT_EQ(parsedGemma(nulls).logitSoftcap, 0.0f);
    // Gemma 3: no caps by default, and its attention none even when the config names one (its
    // attention passes none to the softmax); q and k normed; the pattern's every third layer global.
    const decoder::Config g3 = parsedGemma(gemmaConfig("gemma3_text", {{"num_hidden_layers", 6}, {"attn_logit_softcapping", 50.0}}));
    EXPECT_EQ(g3.attnSoftcap, 0.0f);
    EXPECT_EQ(g3.logitSoftcap, 0.0f);
    EXPECT_TRUE(g3.qkNorm);
    EXPECT_EQ(g3.windows, (std::vector<int>{4, 4, 0, 4, 4, 0}));
    EXPECT_FLOAT_EQ(g3.scoreScale(), static_cast<float>(1.0 / std::sqrt(12.0)));
}

// Gemma 3's two kinds of layer, each with its rotary settings, as transformers 4 writes them
// (rope_theta and rope_scaling for the global layers, rope_local_base_freq for the local ones,
// sliding_window_pattern) and as 5 does (layer_types, rope_parameters per kind): the same Config.
TEST(GemmaConfig, ReadsBothFormsOfGemma3sLayers) {
    const json v4 = gemmaConfig("gemma3_text", {{"num_hidden_layers", 6},
                                                {"rope_theta", 1000000.0},
                                                {"rope_local_base_freq", 10000.0},
                                                {"rope_scaling", {{"rope_type", "linear"}, {"factor", 8.0}}}});
    json v5 = withChanges(
        v4, {{"rope_theta", nullptr}, {"rope_local_base_freq", nullptr}, {"rope_scaling", nullptr}, {"sliding_window_pattern", nullptr}});
    v5["layer_types"] = {"sliding_attention", "sliding_attention", "full_attention",
                         "sliding_attention", "sliding_attention", "full_attention"};
    v5["rope_parameters"] = {{"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1000000.0}}},
                             {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}};
    json wrapped = {{"model_type", "gemma3"}, {"text_config", withChanges(v4, {{"model_type", "gemma3_text"}})}};
    for (const json& c : {v4, v5, wrapped}) {
        SCOPED_TRACE(c.dump());
        const decoder::Config g = parsedGemma(c);
        EXPECT_EQ(g.windows, (std::vector<int>{4, 4, 0, 4, 4, 0}));
        ASSERT_EQ(g.layerRopes.size(), 6U);
        for (int l = 0; l < 6; ++l) {
            const decoder::Rope& r = g.ropeOf(l);
            const bool global = l % 3 == 2;
            EXPECT_EQ(r.theta, global ? 1e6 : 1e4) << l;
            EXPECT_EQ(r.scaling, global ? decoder::RopeScaling::Linear : decoder::RopeScaling::None) << l;
            if (global) {
                EXPECT_EQ(r.factor, 8.0);
            }
        }
        // The global layers' frequencies: 1e6^(−2i/8) / 8; the local ones' 1e4^(−2i/8).
        EXPECT_DOUBLE_EQ(decoder::ropeFrequencies(g, 2)[1], std::pow(1e6, -0.25) / 8);
        EXPECT_DOUBLE_EQ(decoder::ropeFrequencies(g, 1)[1], std::pow(1e4, -0.25));
    }
}

TEST(GemmaConfig, RefusesWhatItCannotComputeByName) {
    EXPECT_EQ(gemmaError(gemmaConfig("gemma3_text", {{"layer_types", {"full_attention"}}})),
              "config.json: layer_types: expected one entry per layer (3), got an array of 1 item");
    EXPECT_EQ(gemmaError(gemmaConfig("gemma2", {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}}})),
              "config.json: rope_scaling: rope_type: 'yarn' is not a scaling attnviz computes (default, linear, llama3, longrope); it "
              "would change every position");
    EXPECT_EQ(gemmaError({{"model_type", "gemma3"}}), "config.json: text_config: missing (a gemma3 config.json's language model)");
    EXPECT_EQ(gemmaError(gemmaConfig("gemma3_text", {{"use_bidirectional_attention", true}})),
              "config.json: use_bidirectional_attention: true is not read (attnviz reads Gemma 3 as the causal model)");
    EXPECT_EQ(gemmaError(gemmaConfig("gemma2", {{"num_key_value_heads", 3}})),
              "config.json: num_key_value_heads: 3 does not divide num_attention_heads 4");
    EXPECT_EQ(gemmaError(gemmaConfig("gemma2", {{"head_dim", 7}})),
              "config.json: head_dim: 7 is odd: rotary positions turn pairs of dimensions");
    EXPECT_EQ(
        gemmaError(gemmaConfig("gemma2", {{"hidden_activation", "tanh"}})),
        "config.json: hidden_activation: 'tanh' is not one attnviz computes (gelu, gelu_new, gelu_fast, gelu_pytorch_tanh, relu, silu)");
    EXPECT_EQ(gemmaError(gemmaConfig("gemma2", {{"attn_logit_softcapping", -1}})),
              "config.json: attn_logit_softcapping: -1 is outside 0 … 1e+06");
}

TEST(Phi3Config, ReadsPartialRotaryAndLongRope) {
    std::vector<double> shortFactors, longFactors;
    for (int i = 0; i < 6; ++i) shortFactors.push_back(1.0 + 0.1 * i), longFactors.push_back(2.0 + i);
    const json c = phi3Config({{"partial_rotary_factor", 0.75},
                               {"head_dim", 16},
                               {"max_position_embeddings", 131072},
                               {"original_max_position_embeddings", 4096},
                               {"rope_scaling", {{"type", "longrope"}, {"short_factor", shortFactors}, {"long_factor", longFactors}}}});
    const decoder::Config p = llama::parseConfig(c.dump(), "config.json");
    EXPECT_EQ(p.family, "phi3");
    EXPECT_EQ(p.rotaryDim, 12);
    EXPECT_EQ(p.rotaryWidth(), 12);
    EXPECT_EQ(p.rope.scaling, decoder::RopeScaling::LongRope);
    EXPECT_EQ(p.rope.originalPositions, 4096);
    // √(1 + ln 32 / ln 4096) = √(1 + 5/12)
    EXPECT_NEAR(p.rope.attentionFactor, std::sqrt(17.0 / 12.0), 1e-15);
    // 4,096 tokens or fewer: the short factors; more: the long ones, for every position.
    for (int i = 0; i < 6; ++i) {
        const double plain = std::pow(10000.0, -2.0 * i / 12);
        EXPECT_DOUBLE_EQ(decoder::ropeFrequencies(p, 0, 4096)[static_cast<std::size_t>(i)],
                         plain / shortFactors[static_cast<std::size_t>(i)]);
        EXPECT_DOUBLE_EQ(decoder::ropeFrequencies(p, 0, 4097)[static_cast<std::size_t>(i)],
                         plain / longFactors[static_cast<std::size_t>(i)]);
    }
    Mat cosines, sines;
    decoder::ropeTables(p, 0, 1, cosines, sines);
    EXPECT_EQ(cosines.cols(), 6);
    EXPECT_NEAR(cosines(0, 0), std::sqrt(17.0 / 12.0), 1e-6);  // position 0: cos 0 times the attention factor
    // Phi-3 slides every layer with its window; and the errors name the field.
    EXPECT_EQ(llama::parseConfig(phi3Config({{"sliding_window", 5}}).dump(), "c").windows, (std::vector<int>{5, 5, 5}));
    const auto error = [](const json& bad) { return testfs::errorOf([&] { llama::parseConfig(bad.dump(), "config.json"); }); };
    json shortList = c;
    shortList["rope_scaling"]["short_factor"] = {1.0, 1.0};
    EXPECT_EQ(error(shortList),
              "config.json: rope_scaling: short_factor: expected a list of 6 numbers (one for each pair of the "
              "turned dimensions), got an array of 2 items");
    json zero = c;
    zero["rope_scaling"]["long_factor"][3] = 0;
    EXPECT_EQ(error(zero), "config.json: rope_scaling: long_factor: expected positive numbers, got 0");
    // Phi3Config's old names for LongRoPE; any other scaling refused
    json su = c;
    su["rope_scaling"]["type"] = "su";
    EXPECT_EQ(llama::parseConfig(su.dump(), "c").rope.scaling, decoder::RopeScaling::LongRope);
    EXPECT_EQ(error(phi3Config({{"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}}})),
              "config.json: rope_scaling: type: 'linear' is not a scaling Phi-3 reads (longrope, or su and yarn by their old names)");
    EXPECT_EQ(error(phi3Config({{"partial_rotary_factor", 0.1}, {"head_dim", 16}})),
              "config.json: partial_rotary_factor: 0.1 of head_dim 16 turns 1 dimensions: not a positive even number");
}

class SmallModels : public testfs::TestFolder {
protected:
    std::shared_ptr<const decoder::Checkpoint> write(const json& c, const Tensors& w) {
        std::filesystem::remove_all(m_dir);
        std::filesystem::create_directories(m_dir);
        tinyllama::writeCheckpoint(m_dir, c, w);
        return openCheckpoint(m_dir.string());
    }
    std::shared_ptr<const decoder::Checkpoint> writeGemma(const json& c) { return write(c, gemmaWeights(c, 11)); }
    const std::vector<int> m_ids = {259, 10, 84, 104, 101, 32, 99, 97, 116, 32, 115, 97, 116, 46, 256, 257, 258, 33, 40, 41};
};

// softmax over the keys query i reads of cap · tanh(c · q·k / cap) (no cap: c · q·k), in double
// from the pass's kept q and k.
Eigen::MatrixXd referenceWeights(const decoder::Run& run, const decoder::Config& c, int layer, int head, double cap) {
    const Eigen::Index t = run.tokens(), dh = c.headDim;
    const auto qkv = run.qkv(layer);
    const double scale = c.scoreScale();
    Eigen::MatrixXd a = Eigen::MatrixXd::Zero(t, t);
    for (Eigen::Index i = 0; i < t; ++i) {
        const Eigen::VectorXd q = qkv.block(i, head * dh, 1, dh).transpose().cast<double>();
        double top = -1e300;
        for (Eigen::Index j = 0; j <= i; ++j) {
            if (c.window(layer) > 0 && i - j >= c.window(layer)) continue;
            const Eigen::VectorXd k = qkv.block(j, c.qWidth() + c.kvHeadOf(head) * dh, 1, dh).transpose().cast<double>();
            const double logit = scale * q.dot(k);
            a(i, j) = cap > 0 ? cap * std::tanh(logit / cap) : logit;
            top = std::max(top, a(i, j));
        }
        double sum = 0;
        for (Eigen::Index j = 0; j <= i; ++j) {
            if (c.window(layer) > 0 && i - j >= c.window(layer)) continue;
            a(i, j) = std::exp(a(i, j) - top);
            sum += a(i, j);
        }
        a.row(i) /= sum;
    }
    return a;
}

TEST_F(SmallModels, GemmaTwosWeightsAreSoftmaxesOfCappedLogits) {
    const json c = gemmaConfig("gemma2");
    const auto model = writeGemma(c);
    const decoder::Run run = decoder::forward(*model, m_ids);
    double moved = 0;
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kHeads; ++h) {
            SCOPED_TRACE("layer " + std::to_string(l) + " head " + std::to_string(h));
            const Eigen::MatrixXd want = referenceWeights(run, model->config(), l, h, 1.5);
            EXPECT_LT((run.weights(l, h).cast<double>() - want).cwiseAbs().maxCoeff(), 1e-6);
            moved = std::max(moved, (referenceWeights(run, model->config(), l, h, 0) - want).cwiseAbs().maxCoeff());
        }
    EXPECT_GT(moved, 0.05);  // the cap of 1.5 acts on these logits
    // Sliding layers (0 and 2) read 4 keys; layer 1 reads every earlier one.
    EXPECT_EQ(run.weights(0, 0)(10, 6), 0.0f);
    EXPECT_GT(run.weights(0, 0)(10, 7), 0.0f);
    EXPECT_GT(run.weights(1, 0)(10, 0), 0.0f);
    // The final logits capped at 2: cap · tanh(raw / cap) of the uncapped pass's.
    json uncapped = c;
    uncapped["final_logit_softcapping"] = json();
    const decoder::Run raw = decoder::forward(*writeGemma(uncapped), m_ids);
    EXPECT_LT(run.logits.cwiseAbs().maxCoeff(), 2.0f);
    EXPECT_GT(raw.logits.cwiseAbs().maxCoeff(), 2.0f);
    EXPECT_LT((run.logits - ((raw.logits.array() / 2.0f).tanh() * 2.0f).matrix()).cwiseAbs().maxCoeff(), 1e-6f);
}

// The logit lens of Gemma 2 reads every layer as the model reads its last: the (1 + w) final norm,
// the tied unembedding and the final soft-capping at 2, every logit of every cell.
TEST_F(SmallModels, GemmaTwosLensIsCappedAsItsLogits) {
    const auto model = writeGemma(gemmaConfig("gemma2"));
    const decoder::Run run = decoder::forward(*model, m_ids);
    const decoder::LogitLens lens = decoder::logitLens(*model, run, 0, static_cast<Eigen::Index>(m_ids.size()), 5);
    ASSERT_EQ(lens.layers, kLayers + 1);
    attnviz::testing::expectLensIsTheWholeSoftmax(*model, run, lens);
    // capped: no cell's top token is likelier than a logit of 2 over the rest's allows
    for (const decoder::LensToken& t : lens.top) EXPECT_LT(t.prob, 1.0f);
    // a window of positions and given targets
    const std::vector<int> targets = {5, -1, 40};
    const decoder::LogitLens part = decoder::logitLens(*model, run, 4, 3, 2, targets);
    EXPECT_EQ(part.targetRank[part.at(1, 1)], 0);
    EXPECT_EQ(part.targetProb[part.at(1, 1)], 0.0f);
    EXPECT_EQ(part.cell(2, 0)[0].id, lens.cell(2, 4)[0].id);
    EXPECT_NEAR(part.cell(2, 0)[0].prob, lens.cell(2, 4)[0].prob, 1e-7);
    EXPECT_GE(part.targetRank[part.at(0, 2)], 1);
    EXPECT_EQ(testfs::errorOf([&] { (void)decoder::logitLens(*model, run, 18, 3, 5); }),
              "logit lens: positions 18 … 20 are outside the 20 tokens");
    EXPECT_EQ(testfs::errorOf([&] {
                  (void)decoder::logitLens(*model, run, 0, 2, 5, {1, 999});
              }),
              "logit lens: target token 999 is outside the vocabulary of 260");
    EXPECT_EQ(testfs::errorOf([&] { (void)decoder::logitLens(*model, run, 0, 2, 21); }), "logit lens: keeps 1 to 20 tokens a cell");
}

// Direct logit attribution adds up to the pass's logit (difference) with the final norm's divisor
// frozen: Llama's RMSNorm, and Gemma's sandwich norms (each output's divisor frozen too) before its
// capped logits; an ablated head writes nothing, and the edited pass's logit is still the sum.
TEST_F(SmallModels, AttributionAddsUpToTheLogit) {
    for (const json& c : {tinyllama::config("llama"), gemmaConfig("gemma2"), gemmaConfig("gemma3_text")}) {
        SCOPED_TRACE(c["model_type"].get<std::string>());
        const auto model = c["model_type"] == "llama" ? write(c, tinyllama::weights(c, 5)) : writeGemma(c);
        const decoder::Run run = decoder::forward(*model, m_ids);
        const Eigen::Index last = run.tokens() - 1;
        const core::Vec logits = decoder::positionLogits(*model, run, last);
        Eigen::Index top = 0;
        logits.maxCoeff(&top);
        const decoder::LogitAttribution a = decoder::logitAttribution(*model, run, last, static_cast<int>(top), 7);
        EXPECT_NEAR(a.total(), a.logit, 1e-4 * std::max(1.0, std::abs(a.logit)));
        // the logit before the cap: the pass's capped logits are cap · tanh(it / cap)
        const decoder::LogitAttribution one = decoder::logitAttribution(*model, run, last, static_cast<int>(top));
        const float cap = model->config().logitSoftcap;
        EXPECT_NEAR(cap > 0 ? cap * std::tanh(one.logit / cap) : one.logit, logits[top], 1e-5);
        EXPECT_NEAR(one.head(1, 0) - a.head(1, 0), decoder::logitAttribution(*model, run, last, 7).head(1, 0), 1e-9);
        double heads = 0;
        for (const double v : a.headTerms) heads += std::abs(v);
        EXPECT_GT(heads, 1e-3);
        // at another position, another target, no difference
        const decoder::LogitAttribution b = decoder::logitAttribution(*model, run, 5, 40);
        EXPECT_NEAR(b.total(), b.logit, 1e-4 * std::max(1.0, std::abs(b.logit)));
        // an ablated head writes nothing; the edited pass still adds up
        const decoder::Run edited = decoder::forwardEdited(
            *model, run, {decoder::Intervention{.kind = decoder::Intervention::Kind::ZeroHead, .layer = 1, .head = 2}});
        const decoder::LogitAttribution e = decoder::logitAttribution(*model, edited, last, static_cast<int>(top), 7);
        EXPECT_EQ(e.head(1, 2), 0.0);
        EXPECT_NEAR(e.total(), e.logit, 1e-4 * std::max(1.0, std::abs(e.logit)));
        const decoder::Run averaged = decoder::forwardEdited(
            *model, run, {decoder::Intervention{.kind = decoder::Intervention::Kind::MeanHead, .layer = 0, .head = 1}});
        const decoder::LogitAttribution m = decoder::logitAttribution(*model, averaged, last, static_cast<int>(top), 7);
        EXPECT_NEAR(m.total(), m.logit, 1e-4 * std::max(1.0, std::abs(m.logit)));
        EXPECT_NE(m.head(0, 1), a.head(0, 1));
        EXPECT_EQ(testfs::errorOf([&] { (void)decoder::logitAttribution(*model, run, 20, 5); }),
                  "attribution: position 20 is outside the 20 tokens");
        EXPECT_EQ(testfs::errorOf([&] { (void)decoder::logitAttribution(*model, run, 3, 999); }),
                  "attribution: token 999 is outside the vocabulary of 260");
    }
}

// A pass that keeps no map makes the same weights row by row and tile by tile, and the layer as a
// scenario (its own scale folded into q, the cap, a partial rotary) computes them again.
TEST_F(SmallModels, EveryPathMakesTheSameWeights) {
    const json phi3 = phi3Config({{"partial_rotary_factor", 0.5}, {"sliding_window", 6}});
    for (const auto& [c, w] : std::vector<std::pair<json, Tensors>>{
             {gemmaConfig("gemma2"), gemmaWeights(gemmaConfig("gemma2"), 11)},
             {gemmaConfig("gemma3_text"), gemmaWeights(gemmaConfig("gemma3_text"), 11)},
             {phi3, fused(tinyllama::weights(withChanges(phi3, {{"model_type", "llama"}}), 5), kLayers)}}) {
        SCOPED_TRACE(c.dump());
        const auto model = write(c, w);
        const decoder::Config& cfg = model->config();
        const decoder::Run kept = decoder::forward(*model, m_ids);
        const decoder::Run lazy = decoder::forward(*model, m_ids, nullptr, decoder::PassMaps::OnDemand);
        EXPECT_EQ(lazy.logits, kept.logits);
        const Eigen::Index t = kept.tokens();
        const std::vector<std::string> labels = decoder::tokenLabels(*model, kept.ids);
        for (int l = 0; l < cfg.nLayer; ++l) {
            const Model m = decoder::layerModel(*model, kept, l, labels);
            Settings s;
            s.causal = true;
            s.window = cfg.window(l);
            const Forward f = runForward(m, s);
            for (int h = 0; h < cfg.nHead; ++h) {
                SCOPED_TRACE("layer " + std::to_string(l) + " head " + std::to_string(h));
                Mat rows(t, t), tiles(t, t);
                decoder::mapWeightRows(lazy, cfg, l, h, 0, rows);
                RowsSink sink(tiles, 0);
                decoder::mapWeightTiles(lazy, cfg, l, h, 0, t, sink);
                EXPECT_LT((rows - kept.weights(l, h)).cwiseAbs().maxCoeff(), 2e-7f);
                EXPECT_LT((tiles - kept.weights(l, h)).cwiseAbs().maxCoeff(), 2e-7f);
                // the scenario's q carries the model's own scale folded in: rounded once more
                EXPECT_LT((f.heads[static_cast<std::size_t>(h)].weights - kept.weights(l, h)).cwiseAbs().maxCoeff(), 5e-6f);
            }
        }
    }
}

TEST_F(SmallModels, TypingAtTheEndGivesTheWholePassExactly) {
    std::vector<double> shortFactors, longFactors;
    for (int i = 0; i < 4; ++i) shortFactors.push_back(1.0 + 0.5 * i), longFactors.push_back(3.0 + i);
    const json phi3 = phi3Config({{"original_max_position_embeddings", 10},
                                  {"rope_scaling", {{"type", "longrope"}, {"short_factor", shortFactors}, {"long_factor", longFactors}}}});
    const Tensors phiWeights = fused(tinyllama::weights(withChanges(phi3, {{"model_type", "llama"}}), 5), kLayers);
    for (const auto& [c, w] : std::vector<std::pair<json, Tensors>>{
             {gemmaConfig("gemma3_text"), gemmaWeights(gemmaConfig("gemma3_text"), 11)}, {phi3, phiWeights}}) {
        SCOPED_TRACE(c.dump());
        const auto model = write(c, w);
        // 8 tokens then 20: Phi-3's pass turns from the short factors to the long ones.
        const std::vector<int> shorter(m_ids.begin(), m_ids.begin() + 8);
        const decoder::Run prefix = decoder::forward(*model, shorter);
        const decoder::Run appended = decoder::forwardAppend(*model, m_ids, prefix);
        const decoder::Run whole = decoder::forward(*model, m_ids);
        for (int l = 0; l < kLayers; ++l) {
            EXPECT_EQ(appended.qkv(l), whole.qkv(l));
            for (int h = 0; h < kHeads; ++h) EXPECT_EQ(appended.weights(l, h), whole.weights(l, h)) << l << ", " << h;
        }
        EXPECT_EQ(appended.logits, whole.logits);
    }
    // The long factors turn every position differently from the short ones.
    const auto model = write(phi3, phiWeights);
    const decoder::Run eight = decoder::forward(*model, std::vector<int>(m_ids.begin(), m_ids.begin() + 8));
    const decoder::Run twenty = decoder::forward(*model, m_ids);
    EXPECT_GT((twenty.qkv(0).topRows(8) - eight.qkv(0)).cwiseAbs().maxCoeff(), 1e-3f);
}

// The same weights in a Phi-3 folder (fused) and a Llama folder (apart) give the same pass; in
// Gemma 3's image-text layout (under language_model.model.) the same as in its text model's.
TEST_F(SmallModels, FusedAndWrappedLayoutsReadTheSameWeights) {
    const json llama = withChanges(phi3Config(), {{"model_type", "llama"}});
    const Tensors w = tinyllama::weights(llama, 5);
    const decoder::Run apart = decoder::forward(*write(llama, w), m_ids);
    const decoder::Run together = decoder::forward(*write(phi3Config(), fused(w, kLayers)), m_ids);
    EXPECT_EQ(apart.logits, together.logits);
    EXPECT_EQ(apart.weights(2, 3), together.weights(2, 3));

    const json text = gemmaConfig("gemma3_text");
    const Tensors g = gemmaWeights(text, 11);
    const decoder::Run plain = decoder::forward(*write(text, g), m_ids);
    Tensors prefixed;
    for (const auto& [name, t] : g) prefixed["language_model." + name] = t;
    prefixed["vision_tower.vision_model.embeddings.patch_embedding.weight"] = g.at("model.norm.weight");
    const decoder::Run wrapped = decoder::forward(*write({{"model_type", "gemma3"}, {"text_config", text}}, prefixed), m_ids);
    EXPECT_EQ(plain.logits, wrapped.logits);
    EXPECT_EQ(plain.weights(1, 2), wrapped.weights(1, 2));
}

// Gemma 3's tokenizer.json holds <image_soft_token> at 262,144, past the text model's 262,144
// embeddings: a special token past vocab_size is kept (and refused when a text holds it); a plain
// one means the vocabularies disagree.
TEST_F(SmallModels, SpecialTokensPastTheEmbeddingsAreKept) {
    json c = gemmaConfig("gemma3_text", {{"vocab_size", 259}});  // the tokenizer's <|begin_of_text|> is 259
    Tensors w = gemmaWeights(gemmaConfig("gemma3_text"), 11);
    w["model.embed_tokens.weight"].shape[0] = 259;
    w["model.embed_tokens.weight"].values.resize(std::size_t{259} * kEmbd);
    const auto model = write(c, w);
    EXPECT_EQ(decoder::forward(*model, {10, 84, 104}).logits.size(), 259);
    EXPECT_EQ(testfs::errorOf([&] { decoder::forward(*model, {259, 84}); }), "token ids: token id 259 is outside the vocabulary");
    c["vocab_size"] = 258;
    w["model.embed_tokens.weight"].shape[0] = 258;
    w["model.embed_tokens.weight"].values.resize(std::size_t{258} * kEmbd);
    EXPECT_EQ(testfs::errorOf([&] { write(c, w); }),
              m_dir.string() + ": the tokenizer has 260 tokens, more than config.json's vocab_size 258");
}

TEST_F(SmallModels, BrokenGemmaFoldersNameTheFileAndTheTensor) {
    const json c = gemmaConfig("gemma2");
    Tensors w = gemmaWeights(c, 11);
    w.erase("model.layers.1.post_feedforward_layernorm.weight");
    EXPECT_EQ(testfs::errorOf([&] { write(c, w); }), (m_dir / "model.safetensors").string() +
                                                         ": model.layers.1.post_feedforward_layernorm.weight: missing (a gemma2 "
                                                         "checkpoint of 3 layers holds it)");
    w = gemmaWeights(c, 11);
    w["model.layers.3.input_layernorm.weight"] = w.at("model.norm.weight");
    EXPECT_EQ(testfs::errorOf([&] { write(c, w); }), (m_dir / "model.safetensors").string() +
                                                         ": model.layers.3.input_layernorm.weight: layer 3 is beyond config.json's "
                                                         "num_hidden_layers 3");
}

}  // namespace
