// --compare and --export-compare on the command line, in-process: the request the window gets,
// the figure's difference cells against the two passes made here independently, cells without a
// partner hatched, the model view sorted by "moved", and misuse as one error line with exit 2.
#include "cli_harness.hpp"
#include "core/attention/colormap.hpp"
#include "core/base/files.hpp"
#include "core/scenario/model.hpp"
#include "core/scenario/presets.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

#include <regex>

using namespace attnviz;
using namespace attnviz::app;
using namespace attnviz::app::clitest;

namespace {

class CliCompare : public testfs::TestFolder {};

// The fills of the rects in the SVG group `id`, in document order.
std::vector<std::string> groupFills(const std::string& svg, const std::string& id) {
    const std::size_t start = svg.find("<g id=\"" + id + "\"");
    const std::size_t end = svg.find("</g>", start);
    EXPECT_NE(start, std::string::npos) << id;
    std::vector<std::string> fills;
    const std::string group = svg.substr(start, end - start);
    const std::regex fill("fill=\"([^\"]+)\"");
    for (auto it = std::sregex_iterator(group.begin(), group.end(), fill); it != std::sregex_iterator(); ++it) fills.push_back((*it)[1]);
    return fills;
}

std::string hexOf(core::Rgb c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
    return buf;
}

TEST_F(CliCompare, AsksTheWindowForTheCompareView) {
    const CliRun run = runCli({"--sentence", "the cat sat", "--compare", "the dog sat"});
    ASSERT_EQ(run.code, 0) << run.err;
    ASSERT_EQ(run.guiCalls, 1);
    EXPECT_EQ(requestedView(run.request, ViewState{}).compareText, "the dog sat");
}

TEST_F(CliCompare, TheFiguresDifferenceIsBMinusAOnTheLinedUpCells) {
    const std::string out = (m_dir / "c.svg").string();
    const CliRun run =
        runCli({"--sentence", "the cat sat on the mat", "--compare", "the dog sat on the mat", "--head", "1", "--export-compare", out});
    ASSERT_EQ(run.code, 0) << run.err;
    const std::string svg = core::readTextFile(out);
    // The two passes, made here as the state makes a scenario's.
    const auto pass = [](const std::string& sentence) {
        core::Scenario s = core::loadPreset("default");
        s.sentence = sentence;
        const core::Model m = core::buildModel(s);
        return core::runForward(m, core::buildSettings(s, m)).heads[1].weights;
    };
    const core::Mat a = pass("the cat sat on the mat"), b = pass("the dog sat on the mat");
    const core::Mat d = b - a;
    const float range = d.cwiseAbs().maxCoeff();
    const std::vector<std::string> fills = groupFills(svg, "difference");
    ASSERT_EQ(fills.size(), 36U);
    for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j)
            EXPECT_EQ(fills[static_cast<std::size_t>(i * 6 + j)],
                      hexOf(core::colormapColor(core::ColormapKind::Diverging, d(i, j), -range, range)))
                << i << "," << j;
    // A and B share one scale: the top is 1 here (a weight above ¼), so a cell's colour is its weight's.
    ASSERT_GE(std::max(a.maxCoeff(), b.maxCoeff()), core::kAutoStretchBelow);
    const std::vector<std::string> bFills = groupFills(svg, "b");
    ASSERT_EQ(bFills.size(), 36U);
    EXPECT_EQ(bFills[7], hexOf(core::colormapColor(core::ColormapKind::Viridis, b(1, 1), 0.0f, 1.0f)));
    EXPECT_NE(svg.find("one token changed: position 2"), std::string::npos);
}

TEST_F(CliCompare, AnInsertedWordHasNoPartnerAndIsHatched) {
    const std::string out = (m_dir / "c.svg").string();
    const CliRun run = runCli({"--sentence", "the cat sat", "--compare", "the big cat sat", "--export-compare", out});
    ASSERT_EQ(run.code, 0) << run.err;
    const std::vector<std::string> fills = groupFills(core::readTextFile(out), "difference");
    ASSERT_EQ(fills.size(), 9U);  // A's grid: every A token has a partner (the, cat, sat)
    for (const std::string& f : fills) EXPECT_NE(f, "url(#masked)");
    const std::string back = (m_dir / "d.svg").string();
    ASSERT_EQ(runCli({"--sentence", "the big cat sat", "--compare", "the cat sat", "--export-compare", back}).code, 0);
    const std::vector<std::string> backFills = groupFills(core::readTextFile(back), "difference");
    ASSERT_EQ(backFills.size(), 16U);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            EXPECT_EQ(backFills[static_cast<std::size_t>(i * 4 + j)] == "url(#masked)", i == 1 || j == 1) << i << "," << j;
}

TEST_F(CliCompare, TheModelViewSortsByHowFarEachHeadMoved) {
    const std::string out = (m_dir / "mv.svg").string();
    const CliRun run = runCli(
        {"--preset", "random-heads", "--compare", "the dog sat on the mat", "--export-model-view", out, "--model-view-sort", "moved"});
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_NE(core::readTextFile(out).find("how far the map moved"), std::string::npos);
}

TEST_F(CliCompare, MisuseIsOneLineAndExitTwo) {
    EXPECT_EQ(expectError(runCli({"--export-compare", (m_dir / "c.png").string()})),
              "--export-compare: needs --compare TEXT (the other sentence)");
    EXPECT_EQ(expectError(runCli({"--preset", "seed002-the-cat-sat", "--compare", "x", "--export-compare", (m_dir / "c.png").string()})),
              "--compare: this scenario gives its vectors (X or Q, K, V), not a sentence to replace");
    EXPECT_EQ(expectError(runCli({"--export-model-view", (m_dir / "m.png").string(), "--model-view-sort", "moved"})),
              "--model-view-sort: \"moved\" is how far each head moved against another sentence: give --compare TEXT");
    EXPECT_NE(expectError(runCli({"--compare", "x", "--export-compare", (m_dir / "c.txt").string()})).find("c.txt"), std::string::npos);
    EXPECT_EQ(expectError(runCli({"--compare", "x", "--bench"})).rfind("--compare: ", 0), 0U);
}

// What goes wrong with the other sentence is said of it, never of the shown sentence's fields.
TEST_F(CliCompare, TheOtherSentencesErrorsNameIt) {
    std::filesystem::create_directories(m_dir / "gpt2");
    tinygpt2::writeCheckpoint(m_dir / "gpt2", tinygpt2::weights(5));
    const std::string model = (m_dir / "gpt2").string(), out = (m_dir / "c.png").string();
    const std::string line =
        expectError(runCli({"--model", model, "--sentence", "a b", "--compare", std::string(40, 'x'), "--export-compare", out}));
    EXPECT_EQ(line.rfind("the compared sentence: ", 0), 0U) << line;
    EXPECT_EQ(line.find("sentence: sentence"), std::string::npos) << line;
    const std::string hidden = expectError(
        runCli({"--model", model, "--sentence", "abcdefghijkl", "--hide-token", "10", "--compare", "hi", "--export-compare", out}));
    EXPECT_EQ(hidden.rfind("the compared sentence: hide_tokens[0]: ", 0), 0U) << hidden;
}

}  // namespace
