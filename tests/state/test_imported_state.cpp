// Attention computed elsewhere in state: the shown layer as a scenario's heads, layers stepped
// over one mapping, edits refused, the summary kept across layers, the session's round trip.
#include "app/state/actions.hpp"
#include "app/state/head_summary.hpp"
#include "app/state/source.hpp"
#include "core/base/error.hpp"
#include "core/io/npy.hpp"
#include "tests/test_folder.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <thread>

#include <unistd.h>

using namespace attnviz;
using namespace attnviz::app;

namespace {

// Waits for the background check of every map (at most 20 s).
bool everyMapChecked(const AppState& s) {
    for (int i = 0; i < 2000 && s.imported->checkStatus().running; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return s.imported->checkedAll();
}

// [layers, heads, t, t]: layer l's head h puts weight on the previous token (h odd) or spreads
// evenly over every key it may read (h even); causal.
std::vector<float> maps(int layers, int heads, int t) {
    std::vector<float> v;
    for (int l = 0; l < layers; ++l)
        for (int h = 0; h < heads; ++h)
            for (int i = 0; i < t; ++i)
                for (int j = 0; j < t; ++j) {
                    if (h % 2 == 1) v.push_back(j == std::max(0, i - 1) ? 1.0f : 0.0f);
                    else v.push_back(j <= i ? 1.0f / static_cast<float>(i + 1) : 0.0f);
                }
    return v;
}

class ImportedState : public testfs::TestFolder {
protected:
    std::string write(int layers, int heads, int t, const std::vector<std::string>& tokens = {}) {
        std::string f = core::npyHeader({layers, heads, t, t});
        const std::vector<float> v = maps(layers, heads, t);
        f.append(reinterpret_cast<const char*>(v.data()), v.size() * 4);
        testfs::writeFile(path("attentions.npy"), f);
        if (!tokens.empty()) {
            std::string text;
            for (const auto& s : tokens) text += s + "\n";
            testfs::writeFile(path("tokens.txt"), text);
        }
        return path("attentions.npy").string();
    }
    core::Scenario scenario(const std::string& file, int layer = 0) {
        core::Scenario s;
        s.name = "imported";
        s.attention = file;
        s.layer = layer;
        return s;
    }
};

TEST_F(ImportedState, ShownLayerIsTheFilesMapsWithNothingToRecompute) {
    AppState s = makeState(scenario(write(3, 4, 5, {"the", "cat", " ", "the", "cat"}), 1));
    ASSERT_TRUE(s.imported);
    EXPECT_EQ(layerCount(s), 3);
    EXPECT_EQ(s.model.heads, 4);
    EXPECT_EQ(s.keyLabels[2], "␣");  // drawn as labels are
    EXPECT_TRUE(isFresh(s));
    EXPECT_TRUE(s.settings.causal);
    EXPECT_TRUE(s.scenario.causal);
    EXPECT_EQ(s.forward.heads[1].weights(3, 2), 1.0f);
    EXPECT_FLOAT_EQ(s.forward.heads[0].weights(3, 2), 0.25f);
    recompute(s);  // nothing to do: the weights stay the file's
    EXPECT_EQ(s.work.projections, 0);
    EXPECT_EQ(s.forward.heads[1].weights(3, 2), 1.0f);
    // every map as the views of many heads read it, once the background check is done
    ASSERT_TRUE(everyMapChecked(s));
    const core::AttentionMaps m = attentionMaps(s);
    EXPECT_EQ(m.layers, 3);
    EXPECT_EQ(m.ids, (std::vector<int>{0, 1, 2, 0, 1}));  // equal tokens, equal ids
    EXPECT_EQ(m.weights(2, 1)(4, 3), 1.0f);
    ASSERT_TRUE(summarizeHeads(s));
    EXPECT_EQ(s.headSummary.stats.size(), 12u);
    EXPECT_NEAR(s.headSummary.stats[5].previous, 1.0, 1e-6);  // layer 1 · head 1
}

TEST_F(ImportedState, LayersStepOverOneMappingAndKeepTheSummary) {
    AppState s = makeState(scenario(write(3, 2, 4)));
    const core::ImportedAttention* mapping = s.imported.get();
    ASSERT_TRUE(everyMapChecked(s));
    ASSERT_TRUE(summarizeHeads(s));
    const core::HeadStats* stats = s.headSummary.stats.data();
    ASSERT_TRUE(apply(s, action::StepLayer{1}));
    EXPECT_EQ(s.scenario.layer, 1);
    EXPECT_EQ(s.imported.get(), mapping);  // the same mapping, not opened again
    EXPECT_EQ(s.headSummary.stats.data(), stats);
    ASSERT_TRUE(apply(s, action::SelectLayer{2}));
    EXPECT_EQ(s.scenario.layer, 2);
    EXPECT_FALSE(apply(s, action::SelectLayer{3}));
    EXPECT_EQ(s.error, "layer: 3 is outside 0 … 2");
    ASSERT_TRUE(apply(s, action::StepLayer{5}));  // clamped to the last layer
    EXPECT_EQ(s.scenario.layer, 2);
}

TEST_F(ImportedState, EditsOfTheMapsAreRefusedAndLeaveTheState) {
    AppState s = makeState(scenario(write(1, 2, 4)));
    const std::uint64_t version = s.dataVersion;
    for (const Action& a : std::vector<Action>{action::SetSentence{"a b"}, action::SetTemperature{2.0f}, action::SetCausal{false},
                                               action::SwapTokens{0, 1}, action::SetHeads{3}}) {
        EXPECT_FALSE(apply(s, a));
        EXPECT_EQ(s.error, std::string("imported attention: ") + kImportedMapsFixed);
    }
    EXPECT_EQ(s.dataVersion, version);
    EXPECT_EQ(s.scenario.temperature, 1.0f);
    EXPECT_EQ(s.model.heads, 2);
    EXPECT_TRUE(apply(s, action::SelectHead{1}));  // views still work
}

TEST_F(ImportedState, SessionSavesAndRestoresTheImport) {
    core::Scenario sc = scenario(write(2, 2, 3, {"a", "b", "c"}), 1);
    sc.tokensFile = path("tokens.txt").string();
    const nlohmann::json j = core::scenarioToJson(sc);
    EXPECT_EQ(j.at("attention"), path("attentions.npy").string());
    EXPECT_EQ(j.at("layer"), 1);
    EXPECT_FALSE(j.contains("causal"));
    const core::Scenario back = core::parseScenario(j.dump(), "session");
    EXPECT_EQ(back.attention, sc.attention);
    EXPECT_EQ(back.tokensFile, sc.tokensFile);
    EXPECT_EQ(back.layer, 1);
    EXPECT_EQ(makeState(back).forward.heads[1].weights(2, 1), 1.0f);
    // the maps fix everything else
    EXPECT_THROW(core::parseScenario(R"({"attention": "a.npy", "sentence": "x"})", "s"), core::InputError);
    EXPECT_THROW(core::parseScenario(R"({"attention": "a.npy", "X": [[1]]})", "s"), core::InputError);
    EXPECT_THROW(core::parseScenario(R"({"tokens_file": "t.txt"})", "s"), core::InputError);
    try {
        core::parseScenario(R"({"attention": "a.npy", "tokens_file": ""})", "s");
        ADD_FAILURE() << "an empty tokens_file was accepted";
    } catch (const core::InputError& e) {
        EXPECT_EQ(e.message(), "s: tokens_file: the empty string: name a file, or leave the key out for tokens.txt beside the maps");
    }
}

TEST_F(ImportedState, BadValuesAreFoundWithTheirPlace) {
    std::string f = core::npyHeader({2, 1, 2, 2});
    const float v[] = {1, 0, 0.5f, 0.5f, 1, 0, 0.5f, 0.6f};
    f.append(reinterpret_cast<const char*>(v), sizeof v);
    testfs::writeFile(path("bad.npy"), f);
    const std::string line =
        path("bad.npy").string() + ": layer 1 · head 0 · row 1: weights sum to 1.1000, not 1 (±1e-3; a row of zeros is allowed)";
    // the bad layer shown: refused at once
    try {
        makeState(scenario(path("bad.npy").string(), 1));
        FAIL();
    } catch (const core::InputError& e) {
        EXPECT_EQ(e.message(), line);
    }
    // another layer shown: the background check finds it, and the views of every layer stay empty
    AppState s = makeState(scenario(path("bad.npy").string(), 0));
    EXPECT_FALSE(everyMapChecked(s));
    EXPECT_EQ(s.imported->checkStatus().error, line);
    EXPECT_FALSE(attentionMaps(s));
    EXPECT_FALSE(summarizeHeads(s));
    EXPECT_FALSE(apply(s, action::SelectLayer{1}));
    EXPECT_EQ(s.error, line);
    EXPECT_EQ(s.scenario.layer, 0);
}

// A file truncated after it was checked is read as zeros from then on: the window keeps the maps
// and the summary it made before, says the file changed, and refuses to read a layer from it.
TEST_F(ImportedState, AFileThatChangesKeepsTheLastGoodMapsAndSaysSo) {
    const std::string file = write(3, 2, 4, {"a", "b", "c", "d"});  // tokens.txt beside it, as usual
    AppState s = makeState(scenario(file));
    ASSERT_TRUE(everyMapChecked(s));
    ASSERT_TRUE(summarizeHeads(s));
    const core::HeadStats* stats = s.headSummary.stats.data();
    ASSERT_EQ(s.forward.heads[0].weights(3, 0), 0.25f);
    ASSERT_EQ(::truncate(file.c_str(), 0), 0);
    EXPECT_TRUE(s.imported->changed());
    EXPECT_EQ(s.imported->checkStatus().error, file + ": changed while it was read; open it again");
    EXPECT_FALSE(attentionMaps(s));  // nothing more is made from it
    EXPECT_TRUE(headSummaryCurrent(s));
    EXPECT_EQ(s.headSummary.stats.data(), stats);
    EXPECT_FALSE(apply(s, action::StepLayer{1}));
    EXPECT_EQ(s.error, file + ": changed while it was read; open it again");
    EXPECT_EQ(s.scenario.layer, 0);
    EXPECT_EQ(s.forward.heads[0].weights(3, 0), 0.25f);  // the last good maps
}

// The window's exports never write over the import or its tokens, whatever the name they are given.
TEST_F(ImportedState, TheWindowsExportsLeaveTheInputsAlone) {
    const std::string file = write(1, 2, 4, {"a", "b", "c", "d"});
    const AppState s = makeState(scenario(file));
    const std::string bytes = testfs::readFile(file);
    for (const std::string& name : {file, path("sub/../attentions.npy").string(), path("tokens.txt").string()}) {
        std::filesystem::create_directories(path("sub"));
        try {
            writeExport(s, name, "png bytes");
            ADD_FAILURE() << name << " was written";
        } catch (const core::InputError& e) {
            EXPECT_NE(e.message().find("an input of this run; write elsewhere"), std::string::npos) << e.message();
        }
    }
    EXPECT_EQ(testfs::readFile(file), bytes);
    writeExport(s, path("figure.png").string(), "png bytes");
    EXPECT_EQ(testfs::readFile(path("figure.png")), "png bytes");
}

// What each kind of source can do, asked in one place.
TEST_F(ImportedState, CapabilitiesOfEachKindOfSource) {
    const Capabilities imported = capabilities(makeState(scenario(write(2, 2, 4))));
    EXPECT_TRUE(imported.manyLayers);
    EXPECT_FALSE(imported.weights || imported.rerun || imported.editable);
    const Capabilities own = capabilities(makeState(core::Scenario{}));
    EXPECT_FALSE(own.manyLayers || own.rerun);
    EXPECT_TRUE(own.weights && own.editable);
}

// The layer step over an import with tokens.txt beside it reuses the open file (the tokens option
// is what it was opened with, not the file it found).
TEST_F(ImportedState, StepsOverAnImportWithTokensBesideIt) {
    AppState s = makeState(scenario(write(3, 2, 4, {"a", "b", "c", "d"})));
    const core::ImportedAttention* mapping = s.imported.get();
    ASSERT_TRUE(apply(s, action::StepLayer{1}));
    EXPECT_EQ(s.imported.get(), mapping);
    EXPECT_EQ(s.keyLabels.back(), "d");
}

}  // namespace
