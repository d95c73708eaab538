// Every view with a figure makes one file whichever front end asks: the window's Export ("Save
// figure", App::saveFigure) and the command line's --export-… flag give the same bytes, for a
// scenario, a GPT-2 and a Llama checkpoint and an imported file. The window's state is opened as
// the window opens it (launchState), from the same flags.
#include "app/app.hpp"
#include "app/cli.hpp"
#include "app/state/session.hpp"
#include "app/views/view_table.hpp"
#include "core/base/error.hpp"
#include "core/io/npy.hpp"
#include "tests/gui/panel_test.hpp"
#include "tests/tiny_gpt2.hpp"
#include "tests/tiny_llama.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <thread>

namespace attnviz::app {
namespace {

namespace fs = std::filesystem;

class FigureParity : public headless::PanelTest {
protected:
    // runMain in-process; returns its exit code, and the request it would open the window on.
    static int run(const std::vector<std::string>& args, GuiRequest* request, std::string* err) {
        std::vector<const char*> argv{"attnviz"};
        for (const std::string& a : args) argv.push_back(a.c_str());
        std::ostringstream out, errors;
        const int code = runMain(
            static_cast<int>(argv.size()), argv.data(),
            [&](const GuiRequest& r) {
                if (request) *request = r;
                return 0;
            },
            out, errors);
        if (err) *err = errors.str();
        return code;
    }

    // For each view with a figure: the window's file and the command line's, the same bytes; with
    // `mayRefuse` (an import: no model behind its maps), a view may instead be refused by both.
    void expectSameFigures(const std::vector<std::string>& source, bool mayRefuse = false) {
        std::vector<std::string> args = source;
        for (const char* flag : {"--fresh", "--head", "1", "--query", "2"}) args.emplace_back(flag);
        GuiRequest request;
        ASSERT_EQ(run(args, &request, nullptr), 0);
        std::string notice;
        App app(launchState(request, RestoredSession{}, "", notice));
        frames(app, 1);
        for (int i = 0; i < 2000 && app.state().imported && !app.state().imported->checkedAll(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        int compared = 0;
        for (const ViewInfo& view : viewTable()) {
            if (!view.figure) continue;
            SCOPED_TRACE(std::string(view.id));
            const fs::path window = path("window-" + std::string(view.id) + ".svg");
            const fs::path cli = path("cli-" + std::string(view.id) + ".svg");
            std::vector<std::string> cliArgs = args;
            cliArgs.erase(cliArgs.begin() + static_cast<std::ptrdiff_t>(source.size()));  // --fresh: the window's own flag
            if (view.id == panel_id::kHeadView) cliArgs.resize(cliArgs.size() - 2);       // the window's head view isolates no query
            cliArgs.insert(cliArgs.end(), {view.figure.flag, cli.string()});
            std::string err;
            const int code = run(cliArgs, nullptr, &err);
            // a view the source does not feed (the logit lens of a scenario) is refused by both
            if ((mayRefuse || !feedsView(app.state(), view.id)) && code == 2) {
                EXPECT_THROW(app.saveFigure(view.id, window.string()), core::InputError);
                continue;
            }
            ASSERT_EQ(code, 0) << err;
            ASSERT_NO_THROW(app.saveFigure(view.id, window.string()));
            const std::string a = testfs::readFile(window), b = testfs::readFile(cli);
            EXPECT_GT(a.size(), 1000u);
            EXPECT_TRUE(a == b) << window << " and " << cli << " differ";
            ++compared;
        }
        EXPECT_GE(compared, 5);
    }
};

TEST_F(FigureParity, AScenariosFiguresAreTheSameFromTheWindowAndTheCommandLine) {
    expectSameFigures({"--preset", "default", "--compare", "the dog sat on the mat"});
    expectSameFigures({"--preset", "seed001-sliding-window", "--temperature", "0.5", "--compare", "a cat sat"});
}

TEST_F(FigureParity, AGpt2CheckpointsFiguresAreTheSame) {
    fs::create_directories(path("gpt2"));
    tinygpt2::writeCheckpoint(path("gpt2"), tinygpt2::weights(7));
    expectSameFigures({"--model", path("gpt2").string(), "--sentence", " the cat sat on the", "--layer", "1", "--compare", " the cat sat"});
}

TEST_F(FigureParity, ALlamaCheckpointsFiguresAreTheSame) {
    const nlohmann::json config = tinyllama::config("llama");
    fs::create_directories(path("llama"));
    tinyllama::writeCheckpoint(path("llama"), config, tinyllama::weights(config, 7));
    expectSameFigures({"--model", path("llama").string(), "--sentence", " the cat sat on the mat", "--compare", " the cat ran"});
}

TEST_F(FigureParity, AnImportsFiguresAreTheSame) {
    const int layers = 3, heads = 4, t = 12;
    std::string f = core::npyHeader({layers, heads, t, t});
    for (int m = 0; m < layers * heads; ++m)
        for (int i = 0; i < t; ++i)
            for (int j = 0; j < t; ++j) {
                const float v = j <= i ? static_cast<float>(1 + (i + j + m) % 3) : 0.0f;
                float sum = 0;
                for (int k = 0; k <= i; ++k) sum += static_cast<float>(1 + (i + k + m) % 3);
                const float w = v / sum;
                f.append(reinterpret_cast<const char*>(&w), 4);
            }
    testfs::writeFile(path("a.npy"), f);
    expectSameFigures({"--attention", path("a.npy").string(), "--layer", "2"}, true);
}

}  // namespace
}  // namespace attnviz::app
