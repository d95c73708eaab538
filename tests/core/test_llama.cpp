// Llama, Mistral, Qwen2 and Qwen3 folders (core/models/llama/) on the shared decoder: the config in
// both of transformers' forms, RoPE's frequency scaling against Hugging Face's definition
// evaluated by numpy, the pass against the layer's own scenario forward, grouped-query heads,
// sliding windows, prefix reuse, shards and half-width weights, and broken folders. The pass
// against an independent float64 numpy forward with real vocabularies: tests/oracle/test_llama_model.py.
#include "core/base/error.hpp"
#include "core/models/llama/llama.hpp"
#include "core/models/loaded_model.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_llama.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <map>

namespace attnviz::core {
namespace {

using namespace tinyllama;
using nlohmann::json;

std::string configError(const json& c) {
    try {
        llama::parseConfig(c.dump(), "config.json");
    } catch (const InputError& e) {
        return e.message();
    }
    return "(read)";
}

TEST(LlamaConfig, ReadsTheSizesAndHuggingFacesDefaults) {
    const decoder::Config c =
        llama::parseConfig(config("llama", {{"num_key_value_heads", nullptr}, {"rms_norm_eps", nullptr}}).dump(), "c");
    EXPECT_EQ(c.family, "llama");
    EXPECT_EQ(c.nLayer, kLayers);
    EXPECT_EQ(c.nHead, kHeads);
    EXPECT_EQ(c.nKvHead, kHeads);  // none given: one per query head
    EXPECT_EQ(c.headDim, kEmbd / kHeads);
    EXPECT_EQ(c.nInner, kInner);
    EXPECT_FLOAT_EQ(c.normEpsilon, 1e-6f);
    EXPECT_EQ(c.norm, decoder::Norm::RmsNorm);
    EXPECT_TRUE(c.rotary && c.gatedMlp && !c.qkNorm && !c.qkvBias && !c.outBias && !c.mlpBias && !c.tieWordEmbeddings);
    EXPECT_EQ(c.activation, decoder::Activation::Silu);
    EXPECT_EQ(c.qkvWidth(), (kHeads + 2 * kHeads) * (kEmbd / kHeads));
    // Qwen3: head_dim apart from hidden / heads, q/k norms; Qwen2: q, k and v biased.
    const decoder::Config q3 = llama::parseConfig(config("qwen3").dump(), "c");
    EXPECT_EQ(q3.headDim, 2 * kHeadDim);
    EXPECT_TRUE(q3.qkNorm);
    EXPECT_EQ(q3.qWidth(), kHeads * 2 * kHeadDim);
    const decoder::Config q2 = llama::parseConfig(config("qwen2").dump(), "c");
    EXPECT_TRUE(q2.qkvBias && !q2.outBias);
    const decoder::Config biased = llama::parseConfig(config("llama", {{"attention_bias", true}, {"mlp_bias", true}}).dump(), "c");
    EXPECT_TRUE(biased.qkvBias && biased.outBias && biased.mlpBias);
    EXPECT_EQ(c.kvHeadOf(0), 0);
    const decoder::Config grouped = llama::parseConfig(config().dump(), "c");
    EXPECT_EQ(grouped.kvHeadOf(1), 0);
    EXPECT_EQ(grouped.kvHeadOf(2), 1);
    EXPECT_EQ(grouped.kvHeadOf(3), 1);
}

TEST(LlamaConfig, ReadsRopeScalingInBothForms) {
    const json v4 = config("llama", {{"rope_theta", 500000.0},
                                     {"rope_scaling",
                                      {{"rope_type", "llama3"},
                                       {"factor", 8.0},
                                       {"low_freq_factor", 1.0},
                                       {"high_freq_factor", 4.0},
                                       {"original_max_position_embeddings", 8192}}}});
    json v5 = config("llama", {{"rope_theta", nullptr}, {"torch_dtype", nullptr}, {"dtype", "bfloat16"}});
    v5["rope_parameters"] = {{"rope_type", "llama3"},  {"rope_theta", 500000.0},  {"factor", 8.0},
                             {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
    for (const json& form : {v4, v5}) {
        const decoder::Config c = llama::parseConfig(form.dump(), "c");
        EXPECT_EQ(c.rope.scaling, decoder::RopeScaling::Llama3);
        EXPECT_EQ(c.rope.theta, 500000.0);
        EXPECT_EQ(c.rope.factor, 8.0);
        EXPECT_EQ(c.rope.originalPositions, 8192);
    }
    json linear = config("llama", {{"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}}});
    EXPECT_EQ(llama::parseConfig(linear.dump(), "c").rope.scaling, decoder::RopeScaling::Linear);
    json plain = config("llama", {{"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 1e6}}}});
    EXPECT_EQ(llama::parseConfig(plain.dump(), "c").rope.scaling, decoder::RopeScaling::None);
    EXPECT_EQ(llama::parseConfig(plain.dump(), "c").rope.theta, 1e6);
}

TEST(LlamaConfig, RefusesWhatItCannotComputeByName) {
    EXPECT_EQ(
        configError(config("llama", {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}}})),
        "config.json: rope_scaling: rope_type: 'yarn' is not a scaling attnviz computes (default, linear, llama3, longrope); it would change "
        "every position");
    EXPECT_EQ(configError(config("llama", {{"rope_parameters", {{"rope_type", "dynamic"}, {"factor", 4.0}}}})).substr(0, 43),
              "config.json: rope_parameters: rope_type: 'd");
    EXPECT_EQ(configError(config("llama", {{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}}}})),
              "config.json: rope_scaling: low_freq_factor: missing (llama3 scaling needs it)");
    EXPECT_EQ(configError(config("llama", {{"num_key_value_heads", 3}})),
              "config.json: num_key_value_heads: 3 does not divide num_attention_heads 4");
    EXPECT_EQ(configError(config("llama", {{"head_dim", 5}})),
              "config.json: head_dim: 5 is odd: rotary positions turn pairs of dimensions");
    EXPECT_EQ(configError(config("llama", {{"hidden_size", nullptr}})), "config.json: hidden_size: missing (a llama config.json names it)");
    EXPECT_EQ(configError(config("bert")),
              "config.json: model_type: 'bert' is not a family this reader knows (llama, mistral, qwen2, qwen3, phi3)");
    EXPECT_EQ(configError(config("llama", {{"hidden_act", "relu2"}})),
              "config.json: hidden_act: 'relu2' is not one attnviz computes (gelu, gelu_new, gelu_fast, gelu_pytorch_tanh, relu, silu)");
}

TEST(LlamaConfig, SlidingWindowsAsEachFamilyPlacesThem) {
    const auto windows = [](const json& c) { return llama::parseConfig(c.dump(), "c").windows; };
    // Mistral: every layer; Qwen2 and Qwen3: only with use_sliding_window, from max_window_layers on.
    EXPECT_EQ(windows(config("mistral", {{"sliding_window", 5}})), std::vector<int>({5, 5}));
    EXPECT_EQ(windows(config("mistral", {{"sliding_window", nullptr}})), std::vector<int>({0, 0}));
    EXPECT_EQ(windows(config("qwen2", {{"sliding_window", 5}, {"max_window_layers", 1}})), std::vector<int>({0, 0}));
    EXPECT_EQ(windows(config("qwen2", {{"sliding_window", 5}, {"use_sliding_window", true}, {"max_window_layers", 1}})),
              std::vector<int>({0, 5}));
    EXPECT_EQ(windows(config("qwen3", {{"sliding_window", 5}, {"use_sliding_window", true}, {"max_window_layers", 0}})),
              std::vector<int>({5, 5}));
    // transformers 5's layer_types.
    EXPECT_EQ(windows(config("mistral", {{"sliding_window", 5}, {"layer_types", {"sliding_attention", "full_attention"}}})),
              std::vector<int>({5, 0}));
    EXPECT_EQ(windows(config("llama", {{"sliding_window", 5}})), std::vector<int>({0, 0}));  // Llama has none
}

TEST(RopeFrequencies, Llama3ScalingMatchesHuggingFacesDefinition) {
    // Llama 3.1's settings; the expected values are modeling_rope_utils' _compute_llama3_parameters
    // evaluated by numpy in float64: low frequencies (wavelength over 8192) divided by 8, high
    // ones (under 2048) kept, those between blended.
    decoder::Config c = llama::parseConfig(config("llama", {{"num_attention_heads", 1},
                                                            {"num_key_value_heads", 1},
                                                            {"hidden_size", 128},
                                                            {"rope_theta", 500000.0},
                                                            {"rope_scaling",
                                                             {{"rope_type", "llama3"},
                                                              {"factor", 8.0},
                                                              {"low_freq_factor", 1.0},
                                                              {"high_freq_factor", 4.0},
                                                              {"original_max_position_embeddings", 8192}}}})
                                               .dump(),
                                           "c");
    const std::vector<double> f = decoder::ropeFrequencies(c);
    ASSERT_EQ(f.size(), 64u);
    const std::map<int, double> expected = {{0, 1.0},
                                            {20, 0.016560440080994446},
                                            {28, 0.0032114459947525913},
                                            {29, 0.002166570763503359},
                                            {32, 0.0005248461609929549},
                                            {34, 0.00017850781276799638},
                                            {35, 9.556212353964683e-05},
                                            {63, 3.068925988914511e-07}};
    for (const auto& [i, want] : expected) EXPECT_NEAR(f[static_cast<std::size_t>(i)], want, want * 1e-12) << "θ_" << i;
    c.rope.scaling = decoder::RopeScaling::Linear;
    c.rope.factor = 4;
    EXPECT_NEAR(decoder::ropeFrequencies(c)[63], 2.455140791131609e-06 / 4, 1e-18);
}

class Llama : public testfs::TestFolder {
protected:
    std::shared_ptr<const decoder::Checkpoint> write(const json& c, int shards = 1, const std::string& dtype = "F32") {
        auto w = weights(c, 7);
        for (auto& [name, t] : w) t.dtype = dtype;
        writeCheckpoint(m_dir, c, w, shards);
        return openCheckpoint(m_dir.string());
    }
    std::string openError() {
        try {
            openCheckpoint(m_dir.string());
        } catch (const InputError& e) {
            return e.message();
        }
        return "(opened)";
    }
    const std::vector<int> m_ids = {259, 10, 84, 104, 101, 32, 99, 97, 116, 32, 115, 97, 116, 46, 256, 257, 258, 33, 40, 41};
};

// Every head's kept weights, and the same layer's attention computed again by the scenario
// engine from the layer's normed input and weights (layerModel): RoPE, q/k norms, biases, the
// kv head each query head reads and the window all go through a second path.
void expectLayersAreTheirScenarios(const decoder::Checkpoint& model, const decoder::Run& run) {
    const std::vector<std::string> labels = decoder::tokenLabels(model, run.ids);
    for (int l = 0; l < model.config().nLayer; ++l) {
        const Model m = decoder::layerModel(model, run, l, labels);
        Settings s;
        s.causal = true;
        s.window = model.config().window(l);
        const Forward f = runForward(m, s);
        for (int h = 0; h < model.config().nHead; ++h) {
            const double err = (f.heads[static_cast<std::size_t>(h)].weights - run.weights(l, h)).cwiseAbs().maxCoeff();
            EXPECT_LT(err, 1e-6) << "layer " << l << " head " << h;
            EXPECT_GT(run.weights(l, h).maxCoeff(), 0.0f);
        }
    }
}

TEST_F(Llama, EachFamilyPassIsItsLayersScenarios) {
    for (const json& c : {config("llama"), config("qwen2"), config("qwen3"), config("mistral", {{"sliding_window", 6}}),
                          config("llama", {{"tie_word_embeddings", true}, {"attention_bias", true}, {"mlp_bias", true}})}) {
        SCOPED_TRACE(c.dump());
        const auto model = write(c);
        const decoder::Run run = decoder::forward(*model, m_ids);
        EXPECT_TRUE(run.logits.allFinite());
        EXPECT_EQ(run.qkv(0).cols(), model->config().qkvWidth());
        expectLayersAreTheirScenarios(*model, run);
        // Each row a distribution over the keys it may read.
        for (int l = 0; l < kLayers; ++l)
            for (int h = 0; h < kHeads; ++h)
                for (Eigen::Index i = 0; i < run.tokens(); ++i) EXPECT_NEAR(run.weights(l, h).row(i).sum(), 1.0f, 1e-5f);
    }
}

// The formulas the views write come from what each layer has, not from the kind of source:
// Llama has no bias, Qwen2 biases q, k and v, Qwen3 norms q and k; all turn them by RoPE.
TEST_F(Llama, TheFormulasFollowWhatTheLayerHas) {
    const std::vector<std::pair<json, std::array<const char*, 3>>> cases = {
        {config("llama"), {"Q = RoPE(X W_Q)", "K = RoPE(X W_K)", "V = X W_V"}},
        {config("qwen2"), {"Q = RoPE(X W_Q + b_Q)", "K = RoPE(X W_K + b_K)", "V = X W_V + b_V"}},
        {config("qwen3"), {"Q = RoPE(RMSNorm(X W_Q))", "K = RoPE(RMSNorm(X W_K))", "V = X W_V"}}};
    for (const auto& [c, formulas] : cases) {
        SCOPED_TRACE(c.dump());
        const auto model = write(c);
        const decoder::Run run = decoder::forward(*model, m_ids);
        const Model m = decoder::layerModel(*model, run, 1, decoder::tokenLabels(*model, run.ids));
        EXPECT_EQ(projectionFormula(m, 'Q'), formulas[0]);
        EXPECT_EQ(projectionFormula(m, 'K'), formulas[1]);
        EXPECT_EQ(projectionFormula(m, 'V'), formulas[2]);
    }
}

TEST_F(Llama, SlidingWindowHidesTheKeysBehindIt) {
    const auto model = write(config("mistral", {{"sliding_window", 4}}));
    const decoder::Run run = decoder::forward(*model, m_ids);
    for (int h = 0; h < kHeads; ++h)
        for (Eigen::Index i = 0; i < run.tokens(); ++i)
            for (Eigen::Index j = 0; j < run.tokens(); ++j)
                if (j > i || j <= i - 4) EXPECT_EQ(run.weights(1, h)(i, j), 0.0f) << i << ", " << j;
                else EXPECT_GT(run.weights(1, h)(i, j), 0.0f) << i << ", " << j;
}

TEST_F(Llama, QueryHeadsReadTheirOwnKvHead) {
    // Changing kv head 1's keys (k_proj's rows d_h … 2 d_h) moves query heads 2 and 3 only.
    const json c = config("llama");
    auto w = weights(c, 7);
    writeCheckpoint(m_dir, c, w);
    const decoder::Run before = decoder::forward(*openCheckpoint(m_dir.string()), m_ids);
    auto& k = w["model.layers.0.self_attn.k_proj.weight"].values;
    for (int r = kHeadDim; r < 2 * kHeadDim; ++r)
        for (int col = 0; col < kEmbd; ++col) k[static_cast<std::size_t>(r * kEmbd + col)] *= 1.7f;
    writeCheckpoint(m_dir, c, w);
    const decoder::Run after = decoder::forward(*openCheckpoint(m_dir.string()), m_ids);
    for (int h = 0; h < kHeads; ++h) {
        const float moved = (before.weights(0, h) - after.weights(0, h)).cwiseAbs().maxCoeff();
        if (h < 2) EXPECT_EQ(moved, 0.0f) << "head " << h;
        else EXPECT_GT(moved, 1e-3f) << "head " << h;
    }
}

TEST_F(Llama, TypingAtTheEndGivesTheWholePassExactly) {
    // RoPE's angles of the new positions are those of a whole pass, and a pass over fewer rows
    // gives each row the same bits (the activations too, wherever their buffer lies).
    for (const json& c : {config("qwen3"), config("llama", {{"head_dim", 8}}),
                          config("qwen2", {{"sliding_window", 5}, {"use_sliding_window", true}, {"max_window_layers", 1}})}) {
        SCOPED_TRACE(c.dump());
        const auto model = write(c);
        const std::vector<int> shorter(m_ids.begin(), m_ids.end() - 6);
        const decoder::Run prefix = decoder::forward(*model, shorter);
        const decoder::Run appended = decoder::forwardAppend(*model, m_ids, prefix);
        const decoder::Run whole = decoder::forward(*model, m_ids);
        // A pass over the shorter text after a longer one: its buffers were grown and moved.
        const decoder::Run again = decoder::forward(*model, shorter);
        for (int l = 0; l < kLayers; ++l) {
            EXPECT_EQ(appended.qkv(l), whole.qkv(l));
            EXPECT_EQ(again.qkv(l), prefix.qkv(l));
            for (int h = 0; h < kHeads; ++h) EXPECT_EQ(appended.weights(l, h), whole.weights(l, h)) << l << ", " << h;
        }
        EXPECT_EQ(appended.logits, whole.logits);
    }
}

TEST_F(Llama, ShardsAndHalfWidthWeightsGiveTheSamePass) {
    const json c = config("qwen2");
    const decoder::Run one = decoder::forward(*write(c), m_ids);
    const decoder::Run sharded = decoder::forward(*write(c, 3), m_ids);
    EXPECT_EQ(one.logits, sharded.logits);
    EXPECT_EQ(one.weights(1, 3), sharded.weights(1, 3));
    // BF16 and F16 files: the pass of F32 weights holding the same rounded values, exactly.
    for (const std::string dtype : {"BF16", "F16"}) {
        std::filesystem::remove_all(m_dir);
        std::filesystem::create_directories(m_dir);
        const decoder::Run half = decoder::forward(*write(c, 1, dtype), m_ids);
        auto w = weights(c, 7);
        for (auto& [name, t] : w)
            for (float& v : t.values) v = tinygpt2::stored(v, dtype);
        std::filesystem::remove_all(m_dir);
        std::filesystem::create_directories(m_dir);
        writeCheckpoint(m_dir, c, w);
        const decoder::Run widened = decoder::forward(*openCheckpoint(m_dir.string()), m_ids);
        EXPECT_EQ(half.logits, widened.logits) << dtype;
        EXPECT_EQ(half.weights(1, 2), widened.weights(1, 2)) << dtype;
        EXPECT_NE(half.logits, one.logits) << dtype;
    }
}

TEST_F(Llama, BrokenFoldersNameTheFileAndTheTensor) {
    const json c = config("qwen3");
    const std::string file = (m_dir / "model.safetensors").string();
    auto w = weights(c, 7);
    w["model.layers.1.self_attn.q_proj.weight"].shape = {kHeads * 2 * kHeadDim - 1, kEmbd};
    w["model.layers.1.self_attn.q_proj.weight"].values.resize(static_cast<std::size_t>((kHeads * 2 * kHeadDim - 1) * kEmbd));
    writeCheckpoint(m_dir, c, w);
    EXPECT_EQ(openError(),
              file + ": model.layers.1.self_attn.q_proj.weight: shape [31, 16] disagrees with config.json (expected [32, 16])");
    w = weights(c, 7);
    w.erase("model.layers.0.self_attn.k_norm.weight");
    writeCheckpoint(m_dir, c, w);
    EXPECT_EQ(openError(), file + ": model.layers.0.self_attn.k_norm.weight: missing (a qwen3 checkpoint of 2 layers holds it)");
    w = weights(c, 7);
    w["model.layers.2.mlp.up_proj.weight"] = w["model.layers.1.mlp.up_proj.weight"];
    writeCheckpoint(m_dir, c, w);
    EXPECT_EQ(openError(), file + ": model.layers.2.mlp.up_proj.weight: layer 2 is beyond config.json's num_hidden_layers 2");
    // Untied without lm_head.
    w = weights(c, 7);
    w.erase("lm_head.weight");
    writeCheckpoint(m_dir, c, w);
    EXPECT_EQ(openError(), file + ": lm_head.weight: missing, and config.json says tie_word_embeddings is false");
    // No tokenizer.json.
    writeCheckpoint(m_dir, c, weights(c, 7));
    std::filesystem::remove(m_dir / "tokenizer.json");
    EXPECT_EQ(openError(), m_dir.string() + ": no tokenizer: expected tokenizer.json, vocab.json and merges.txt, or vocab.txt");
}

TEST_F(Llama, AConfigOfMegabytesIsNotParsed) {
    // A config.json is kilobytes; one of 5 MiB (valid JSON, padded) is refused before it is parsed.
    const json c = config("llama");
    writeCheckpoint(m_dir, c, weights(c, 7));
    testfs::writeFile(m_dir / "config.json", c.dump() + std::string(5 << 20, ' '));
    const std::string error = openError();
    EXPECT_EQ(error.rfind((m_dir / "config.json").string() + ": larger than 4 MiB", 0), 0u) << error;
}

TEST_F(Llama, ShardsAreCheckedAgainstTheirIndex) {
    const json c = config("llama");
    writeCheckpoint(m_dir, c, weights(c, 7), 3);
    const std::string index = (m_dir / "model.safetensors.index.json").string();
    std::filesystem::remove(m_dir / "model-00002-of-00003.safetensors");
    EXPECT_EQ(openError(), (m_dir / "model-00002-of-00003.safetensors").string() + ": missing (model.safetensors.index.json names it)");
    // A tensor in two shards.
    auto w = weights(c, 7);
    writeCheckpoint(m_dir, c, w, 3);
    std::map<std::string, StoredTensor> extra = {{"model.norm.weight", w["model.norm.weight"]}};
    testfs::writeFile(m_dir / "model-00001-of-00003.safetensors", tinygpt2::safetensors([&] {
                          std::map<std::string, StoredTensor> first;
                          std::size_t i = 0;
                          for (const auto& [name, t] : w)
                              if (i++ * 3 / w.size() == 0) first[name] = t;
                          first["model.norm.weight"] = w["model.norm.weight"];
                          return first;
                      }()));
    const std::string twice = openError();
    EXPECT_NE(twice.find(": model.norm.weight: also in model-0000"), std::string::npos) << twice;
    EXPECT_NE(twice.find(": a tensor must be in one shard only"), std::string::npos) << twice;
    // An index naming a file outside the folder.
    writeCheckpoint(m_dir, c, w, 3);
    testfs::writeFile(index, json{{"weight_map", {{"model.norm.weight", "../x.safetensors"}}}}.dump());
    EXPECT_EQ(openError(), index +
                               ": weight_map: model.norm.weight: '../x.safetensors' is not a file name in the folder (an index names "
                               "its shards beside it)");
}

TEST_F(Llama, NonFiniteWeightsNameTheTensorAndTheIndexAsStored) {
    const json c = config("llama");
    auto w = weights(c, 7);
    // up_proj is [inner, d] in the file: [5, 3] there.
    w["model.layers.1.mlp.up_proj.weight"].values[5 * kEmbd + 3] = std::nanf("");
    writeCheckpoint(m_dir, c, w);
    const auto model = openCheckpoint(m_dir.string());
    try {
        decoder::forward(*model, m_ids);
        ADD_FAILURE() << "ran";
    } catch (const InputError& e) {
        EXPECT_EQ(e.message(),
                  (m_dir / "model.safetensors").string() +
                      ": model.layers.1.mlp.up_proj.weight: holds NaN at [5, 3]: the checkpoint's weights must be finite (is the "
                      "file damaged?)");
    }
}

}  // namespace
}  // namespace attnviz::core
