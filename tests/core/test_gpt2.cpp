// GPT-2 read from a tiny checkpoint written here in Hugging Face's layout: the config's checks,
// the checkpoint's, the forward pass's invariants (causal rows, the kept prefix, one layer as a
// scenario model). Its numbers against an independent float64 GPT-2: tests/oracle/test_gpt2_model.py.
#include "core/base/error.hpp"
#include "core/models/gpt2/gpt2.hpp"
#include "core/models/loaded_model.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <optional>

namespace attnviz::core {
namespace {

using namespace tinygpt2;
using testfs::writeFile;

class Gpt2 : public testfs::TestFolder {
protected:
    std::filesystem::path write(const std::map<std::string, StoredTensor>& w, const std::string& config = configText()) {
        writeCheckpoint(m_dir, w, config);
        return m_dir;
    }
    std::string openError(const std::map<std::string, StoredTensor>& w, const std::string& config = configText()) {
        write(w, config);
        try {
            gpt2::open(m_dir.string());
        } catch (const InputError& e) {
            return e.message();
        }
        return "(opened)";
    }
};

TEST(Gpt2Config, ReadsHuggingFacesKeys) {
    const decoder::Config c = gpt2::parseConfig(configText(), "config.json");
    EXPECT_EQ(c.nLayer, kLayers);
    EXPECT_EQ(c.nHead, kHeads);
    EXPECT_EQ(c.nEmbd, kEmbd);
    EXPECT_EQ(c.nInner, 4 * kEmbd);  // null: 4 n_embd
    EXPECT_EQ(c.headWidth(), kEmbd / kHeads);
    EXPECT_EQ(c.activation, decoder::Activation::GeluTanh);
    EXPECT_EQ(gpt2::parseConfig(configText({{"activation_function", "relu"}}), "c").activation, decoder::Activation::Relu);
    EXPECT_EQ(gpt2::parseConfig(configText({{"n_inner", 20}}), "c").nInner, 20);
}

TEST(Gpt2Config, NamesTheFieldAtFault) {
    const auto error = [](const std::string& text) {
        try {
            gpt2::parseConfig(text, "dir/config.json");
        } catch (const InputError& e) {
            return e.message();
        }
        return std::string("(parsed)");
    };
    EXPECT_EQ(error("{"), "dir/config.json: not valid JSON");
    EXPECT_EQ(error("[1]"), "dir/config.json: expected a JSON object, got an array of 1 item");
    EXPECT_EQ(error(configText({{"model_type", "llama"}})),
              "dir/config.json: model_type: 'llama' is not a GPT-2 model (attnviz reads \"gpt2\" folders)");
    EXPECT_EQ(error(configText({{"n_head", 3}})), "dir/config.json: n_head: 3 does not divide n_embd 8");
    EXPECT_EQ(error(configText({{"n_layer", nullptr}})), "dir/config.json: n_layer: missing (a GPT-2 config.json names it)");
    EXPECT_EQ(error(configText({{"n_layer", 0}})), "dir/config.json: n_layer: 0 is outside 1 … 1024");
    EXPECT_EQ(error(configText({{"n_embd", "8"}})), "dir/config.json: n_embd: expected a whole number, got the text '8'");
    EXPECT_NE(error(configText({{"activation_function", "swish"}})).find("activation_function: 'swish' is not one attnviz computes"),
              std::string::npos);
    EXPECT_NE(error(configText({{"scale_attn_by_inverse_layer_idx", true}})).find("scale_attn_by_inverse_layer_idx: true is not supported"),
              std::string::npos);
    EXPECT_LT(error(configText({{"model_type", std::string(100000, 'x')}})).size(), 300u);
}

TEST_F(Gpt2, ForwardKeepsEveryHeadCausalAndNormalised) {
    const auto model = gpt2::open(write(weights(1)).string());
    const std::vector<int> ids = model->tokenizer().encode(" the then the");
    ASSERT_EQ(ids, (std::vector<int>{258, 258, 110, 258}));  // "Ġthe" "Ġthe" "n" "Ġthe": the merges by rank
    const decoder::Run run = decoder::forward(*model, ids);
    ASSERT_EQ(run.layerCount(), kLayers);
    ASSERT_EQ(run.headCount(), kHeads);
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kHeads; ++h) {
            const decoder::KeptView w = run.weights(l, h);
            ASSERT_EQ(w.rows(), 4);
            for (Eigen::Index i = 0; i < 4; ++i) {
                EXPECT_NEAR(w.row(i).sum(), 1.0f, 1e-6f);
                for (Eigen::Index j = i + 1; j < 4; ++j) EXPECT_EQ(w(i, j), 0.0f);
            }
            EXPECT_EQ(w(0, 0), 1.0f);  // the first token reads only itself
        }
    EXPECT_EQ(run.logits.size(), kVocab);
    const auto next = decoder::topNext(run.logits, 1.0f, 10);
    ASSERT_EQ(next.size(), 10u);
    for (std::size_t i = 1; i < next.size(); ++i) EXPECT_GE(next[i - 1].prob, next[i].prob);
    double total = 0;
    for (const auto& n : decoder::topNext(run.logits, 1.0f, kVocab)) total += n.prob;
    EXPECT_NEAR(total, 1.0, 1e-5);
    // A low temperature puts almost everything on the most likely token.
    EXPECT_GT(decoder::topNext(run.logits, 0.01f, 1)[0].prob, 0.99f);
    // The same probabilities for chosen tokens, at any temperature.
    const auto cold = decoder::topNext(run.logits, 0.5f, 10);
    const std::vector<float> p = decoder::probabilities(run.logits, next, 0.5f);
    for (std::size_t i = 0; i < next.size(); ++i) {
        EXPECT_EQ(cold[i].id, next[i].id);
        EXPECT_NEAR(p[i], cold[i].prob, 1e-7f);
    }
    // An id past the tokenizer's tokens (a padded vocabulary) still has a label.
    EXPECT_EQ(decoder::tokenLabel(*model, 258), "␣the");
    EXPECT_EQ(decoder::tokenLabel(*model, 100000), "⟨id 100000⟩");
}

// Every kept matrix of two passes, bit for bit.
void expectSamePass(const decoder::Run& a, const decoder::Run& b) {
    ASSERT_EQ(a.ids, b.ids);
    ASSERT_EQ(a.layerCount(), b.layerCount());
    for (int l = 0; l < a.layerCount(); ++l) {
        for (int h = 0; h < a.headCount(); ++h) EXPECT_EQ(a.weights(l, h), b.weights(l, h)) << l << " " << h;
        EXPECT_EQ(a.input(l), b.input(l));
        EXPECT_EQ(a.normed(l), b.normed(l));
        EXPECT_EQ(a.qkv(l), b.qkv(l));
    }
    EXPECT_EQ(a.final(), b.final());
    EXPECT_EQ(a.logits, b.logits);
}

TEST_F(Gpt2, AppendingReusesThePrefixAndGivesTheSameNumbers) {
    const auto model = gpt2::open(write(weights(2)).string());
    const std::vector<int> shortIds = {5, 77, 258, 9}, longIds = {5, 77, 258, 9, 31, 200};
    const decoder::Run whole = decoder::forward(*model, longIds);
    EXPECT_EQ(whole.capacity(), 6);  // a whole pass keeps no spare room
    expectSamePass(decoder::forwardAppend(*model, longIds, decoder::forward(*model, shortIds)), whole);
    EXPECT_EQ(decoder::commonPrefix(shortIds, longIds), 4u);
    // An edit in the middle keeps only the positions before it, and leaves the pass it read alone.
    const std::vector<int> edited = {5, 78, 258, 9, 31, 200};
    expectSamePass(decoder::forwardAppend(*model, edited, whole), decoder::forward(*model, edited));
    expectSamePass(whole, decoder::forward(*model, longIds));
}

TEST_F(Gpt2, TypingAtTheEndWritesIntoTheKeptStoreWithoutDisturbingLivePasses) {
    const auto model = gpt2::open(write(weights(2)).string());
    const std::vector<int> a = {5, 77, 258, 9}, b = {5, 77, 258, 9, 31}, c = {5, 77, 258, 9, 31, 200}, d = {5, 77, 258, 9, 31, 7};
    // The first append copies the prefix into a store with room; the next ones write into it.
    const decoder::Run first = decoder::forward(*model, a);
    const decoder::Run typed = decoder::forwardAppend(*model, b, first);
    EXPECT_EQ(typed.capacity(), decoder::grownCapacity(model->config(), 5));
    EXPECT_NE(typed.weights(0, 0).data(), first.weights(0, 0).data());
    std::optional<decoder::Run> more = decoder::forwardAppend(*model, c, typed);
    EXPECT_EQ(more->weights(1, 1).data(), typed.weights(1, 1).data());  // the same store: nothing moved
    expectSamePass(*more, decoder::forward(*model, c));
    expectSamePass(typed, decoder::forward(*model, b));  // the pass it extended reads as before
    // While `more` lives, another continuation of `typed` may not write over its positions.
    const decoder::Run other = decoder::forwardAppend(*model, d, typed);
    EXPECT_NE(other.weights(1, 1).data(), typed.weights(1, 1).data());
    expectSamePass(other, decoder::forward(*model, d));
    expectSamePass(*more, decoder::forward(*model, c));
    // Once it is gone, the store is free past `typed` again.
    more.reset();
    const decoder::Run again = decoder::forwardAppend(*model, d, typed);
    EXPECT_EQ(again.weights(1, 1).data(), typed.weights(1, 1).data());
    expectSamePass(again, decoder::forward(*model, d));
    // A shorter text recomputes its last position (its logits) in a store of its own.
    const decoder::Run shorter = decoder::forwardAppend(*model, a, again);
    expectSamePass(shorter, decoder::forward(*model, a));
    expectSamePass(again, decoder::forward(*model, d));
}

TEST_F(Gpt2, AStoreOnPagesThatHeldAnotherLayoutGivesTheSameNumbers) {
    // The pages a pass over 340 positions gave back (rows 340 floats apart) serve the next store
    // of about their size, one of 333 (grownCapacity(301)): what the earlier rows' new columns
    // read is set by the pass, not left from the pages' last use.
    constexpr int kLong = 512;
    auto w = weights(4);
    StoredTensor wpe;
    wpe.shape = {kLong, kEmbd};
    for (int i = 0; i < kLong * kEmbd; ++i) wpe.values.push_back(0.3f * std::sin(0.37f * static_cast<float>(i)));
    w["wpe.weight"] = wpe;
    const auto model = gpt2::open(write(w, configText({{"n_positions", kLong}})).string());
    const auto ids = [](int n) {
        std::vector<int> out(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = (i * 37 + 5) % 256;
        return out;
    };
    const decoder::Run first = decoder::forward(*model, ids(300));
    const float* bigStore = nullptr;
    {
        const decoder::Run big = decoder::forward(*model, ids(340));
        bigStore = big.input(0).data();
    }
    const decoder::Run typed = decoder::forwardAppend(*model, ids(301), first);
    ASSERT_EQ(typed.capacity(), 333);
    EXPECT_EQ(typed.input(0).data(), bigStore);  // the same pages
    expectSamePass(typed, decoder::forward(*model, ids(301)));
    const decoder::Run more = decoder::forwardAppend(*model, ids(320), typed);
    ASSERT_EQ(more.weights(0, 0).data(), typed.weights(0, 0).data());
    expectSamePass(more, decoder::forward(*model, ids(320)));
}

TEST_F(Gpt2, OneLayerAsAScenarioModelGivesTheKeptWeights) {
    const auto model = gpt2::open(write(weights(3)).string());
    const std::vector<int> ids = {1, 2, 258, 3, 4, 5, 6, 7};
    const decoder::Run run = decoder::forward(*model, ids);
    for (int l = 0; l < kLayers; ++l) {
        const Model m = decoder::layerModel(*model, run, l, decoder::tokenLabels(*model, ids));
        Settings settings;
        settings.causal = true;
        const Forward f = runForward(m, settings);
        for (int h = 0; h < kHeads; ++h) EXPECT_EQ(f.heads[static_cast<std::size_t>(h)].weights, run.weights(l, h)) << l << " " << h;
    }
}

TEST_F(Gpt2, HalfPrecisionAndThePrefixedNamesOpenToo) {
    // F16 weights give exactly what F32 weights holding the same halves give.
    auto halves = weights(4), rounded = weights(4);
    for (auto& [name, t] : halves) t.dtype = "F16";
    for (auto& [name, t] : rounded)
        for (float& v : t.values) v = halfToFloat(toHalf(v));
    const std::vector<int> ids = {10, 20, 30, 258};
    const decoder::Run f32 = decoder::forward(*gpt2::open(write(rounded).string()), ids);
    const decoder::Run f16 = decoder::forward(*gpt2::open(write(halves).string()), ids);
    EXPECT_EQ(f16.logits, f32.logits);
    EXPECT_EQ(f16.weights(1, 1), f32.weights(1, 1));
    // "transformer." in front of every name, and lm_head.weight tied to wte: the same model.
    std::map<std::string, StoredTensor> prefixed;
    for (auto& [name, t] : rounded) prefixed["transformer." + name] = t;
    prefixed["lm_head.weight"] = rounded["wte.weight"];
    EXPECT_EQ(decoder::forward(*gpt2::open(write(prefixed).string()), ids).logits, f32.logits);
}

TEST_F(Gpt2, OpeningCountsItsProgressAndStopsWhenCancelled) {
    write(weights(4));
    Progress progress;
    const auto model = gpt2::open(m_dir.string(), &progress);
    EXPECT_EQ(progress.fraction(), 1.0);  // every byte read in, every tensor taken
    // Asked to stop before it starts, an opening and a pass stop at their first step, and a pass
    // without a Progress runs as before.
    Progress stopped;
    stopped.cancel();
    EXPECT_THROW(gpt2::open(m_dir.string(), &stopped), Cancelled);
    EXPECT_THROW(decoder::forward(*model, {10, 20}, &stopped), Cancelled);
    EXPECT_EQ(decoder::forward(*model, {10, 20}).tokens(), 2);
    // A folder without its files says so before anything is read.
    EXPECT_NO_THROW(checkModelFolder(m_dir.string()));
    std::filesystem::remove(m_dir / "model.safetensors");
    try {
        checkModelFolder(m_dir.string());
        ADD_FAILURE() << "located";
    } catch (const InputError& e) {
        EXPECT_EQ(e.message(), (m_dir / "model.safetensors").string() +
                                   ": missing (a Hugging Face model folder holds model.safetensors, or shards named by "
                                   "model.safetensors.index.json)");
    }
}

TEST_F(Gpt2, EveryBrokenCheckpointNamesTheFileAndTheTensor) {
    const std::string file = (m_dir / "model.safetensors").string();
    auto missing = weights(5);
    missing.erase("h.1.mlp.c_fc.bias");
    EXPECT_EQ(openError(missing), file +
                                      ": h.1.mlp.c_fc.bias: missing (a GPT-2 checkpoint of 2 layers holds it, with or without the "
                                      "\"transformer.\" prefix)");
    auto shape = weights(5);
    shape["h.0.attn.c_attn.weight"].shape = {24, 8};
    EXPECT_EQ(openError(shape), file + ": h.0.attn.c_attn.weight: shape [24, 8] disagrees with config.json (expected [8, 24])");
    auto ints = weights(5);
    ints["ln_f.bias"].dtype = "I64";
    ints["ln_f.bias"].values.resize(8);
    EXPECT_EQ(openError(ints), file + ": ln_f.bias: dtype I64 is not a float type");
    auto extra = weights(5);
    extra["h.2.ln_1.weight"] = extra["h.0.ln_1.weight"];
    EXPECT_EQ(openError(extra), file + ": h.2.ln_1.weight: layer 2 is beyond config.json's n_layer 2");
    EXPECT_EQ(openError(weights(5), configText({{"n_embd", 16}})),
              file + ": wte.weight: shape [260, 8] disagrees with config.json (expected [260, 16])");
    EXPECT_EQ(openError(weights(5), configText({{"vocab_size", 200}})),
              file + ": wte.weight: shape [260, 8] disagrees with config.json (expected [200, 8])");
    // A pipe where the weights should be is named as such, and never waited on.
    std::filesystem::remove(m_dir / "model.safetensors");
    ASSERT_EQ(::mkfifo((m_dir / "model.safetensors").c_str(), 0600), 0);
    try {
        gpt2::open(m_dir.string());
        ADD_FAILURE() << "opened a pipe";
    } catch (const InputError& e) {
        EXPECT_EQ(e.message(), file + ": is not a regular file (a pipe or a device cannot be read)");
    }
    std::filesystem::remove(m_dir / "model.safetensors");
    writeFile(m_dir / "pytorch_model.bin", "PK");
    try {
        gpt2::open(m_dir.string());
        ADD_FAILURE() << "opened without weights";
    } catch (const InputError& e) {
        EXPECT_NE(e.message().find("only pytorch_model.bin"), std::string::npos) << e.message();
    }
    std::filesystem::remove(m_dir / "vocab.json");
    writeFile(m_dir / "model.safetensors", safetensors(weights(5)));
    try {
        gpt2::open(m_dir.string());
        ADD_FAILURE() << "opened without a tokenizer";
    } catch (const InputError& e) {
        EXPECT_EQ(e.message(), m_dir.string() + ": no tokenizer: expected tokenizer.json, vocab.json and merges.txt, or vocab.txt");
    }
    // a pipe named tokenizer.json is named as such, as config.json's is, not as a missing tokenizer
    ASSERT_EQ(::mkfifo((m_dir / "tokenizer.json").c_str(), 0600), 0);
    try {
        gpt2::open(m_dir.string());
        ADD_FAILURE() << "opened a pipe";
    } catch (const InputError& e) {
        EXPECT_EQ(e.message(), (m_dir / "tokenizer.json").string() + ": is not a regular file (a pipe or a device cannot be read)");
    }
}

TEST_F(Gpt2, AScenarioNamingTheModelShowsItsLayer) {
    write(weights(6));
    Scenario s;
    s.model = m_dir.string();
    s.sentence = " the the";
    s.causal = true;
    s.layer = 1;
    const LoadedModel loaded = loadModel(s);
    ASSERT_TRUE(loaded);
    EXPECT_EQ(loaded.labels, (std::vector<std::string>{"␣the", "␣the"}));
    const Model m = buildModel(s, loaded, true);
    EXPECT_EQ(m.heads, kHeads);
    EXPECT_EQ(projectionFormula(m, 'Q'), "Q = X W_Q + b_Q");  // GPT-2's c_attn has a bias, and no RoPE
    EXPECT_EQ(projectionFormula(m, 'V'), "V = X W_V + b_V");
    EXPECT_EQ(m.x, loaded.run->normed(1));
    // The same sentence again: the pass is kept. A longer one: only the new positions run.
    const LoadedModel again = loadModel(s, &loaded);
    EXPECT_EQ(again.run, loaded.run);
    s.sentence = " the the he";
    const LoadedModel longer = loadModel(s, &again);
    EXPECT_EQ(longer.checkpoint, loaded.checkpoint);
    EXPECT_EQ(longer.appendedPasses, 1);
    EXPECT_EQ(longer.forwardPasses, 1);
    s.layer = 2;
    try {
        loadModel(s, &longer);
        ADD_FAILURE();
    } catch (const InputError& e) {
        EXPECT_EQ(e.message(), "layer: 2 is outside this model's layers 0 … 1");
    }
    s.layer = 0;
    s.heads = 4;
    try {
        loadModel(s, &longer);
        ADD_FAILURE();
    } catch (const InputError& e) {
        EXPECT_EQ(e.message(), "heads: not with a model: the checkpoint fixes the tokens, sizes and weights");
    }
}

TEST(Gpt2Scenario, TheModelKeysReadAndWriteBack) {
    const Scenario s = parseScenario(R"({"model": "models/gpt2", "sentence": "hi", "layer": 3})", "s.json");
    ASSERT_TRUE(s.model);
    EXPECT_EQ(*s.model, "models/gpt2");
    EXPECT_EQ(s.layer, 3);
    EXPECT_TRUE(s.causal);  // what the model computes
    const Scenario back = scenarioFromJson(scenarioToJson(s));
    EXPECT_EQ(back.model, s.model);
    EXPECT_EQ(back.layer, 3);
    EXPECT_EQ(back.sentence, s.sentence);
    const auto error = [](const std::string& text) {
        try {
            parseScenario(text, "s.json");
        } catch (const InputError& e) {
            return e.message();
        }
        return std::string("(parsed)");
    };
    EXPECT_EQ(error(R"({"model": "m", "heads": 2})"),
              "s.json: heads: not with \"model\": the checkpoint fixes the tokens, sizes and weights (remove heads)");
    EXPECT_EQ(error(R"({"layer": 2})"), "s.json: layer: only with \"model\" (a scenario's own attention has one layer)");
    EXPECT_EQ(error(R"({"model": ""})"), "s.json: model: expected a model folder, got an empty text");
    EXPECT_FALSE(parseScenario(R"({"model": "m", "causal": false})", "s.json").causal);
}

}  // namespace
}  // namespace attnviz::core
