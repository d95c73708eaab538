// The command line: parse the flags, check them, then open the window or work without one.
#include "app/cli.hpp"
#include "app/cli_flags.hpp"

#include "core/base/error.hpp"
#include "core/scenario/presets.hpp"

#include <chrono>
#include <new>
#include <ostream>

namespace attnviz::app {

int runMain(int argc, const char* const* argv, const GuiLauncher& gui, std::ostream& out, std::ostream& err) {
    const auto started = std::chrono::steady_clock::now();
    CLI::App app{"attnviz: see self-attention work. With no export flag it opens the desktop app.", "attnviz"};
    cli::Flags f;
    cli::defineFlags(app, f);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        out << app.help();
        return 0;
    } catch (const CLI::ParseError& e) {
        err << errorLine(e.what()) << "\n";
        return 2;
    }
    if (f.version) {
        out << "attnviz " ATTNVIZ_VERSION "\n";  // the project's version (CMakeLists.txt)
        return 0;
    }
    if (f.listPresets) {
        for (const auto& id : core::presetIds()) out << id << "  " << core::loadPreset(id).name << "\n";
        return 0;
    }

    const char* doing = "reading the flags and the scenario";  // for an out-of-memory message
    try {
        cli::checkFlags(f, app);
        GuiRequest request = cli::requestFrom(f, app);
        request.started = started;
        if (!cli::exporting(f) && !f.bench) return gui(request);
        cli::checkExports(f, request);
        if (f.bench) cli::runBench(f, request, out, doing);
        else cli::runExports(f, app, request, out, doing);
        return 0;
    } catch (const core::InputError& e) {
        err << errorLine(e.message()) << "\n";
        return 2;
    } catch (const std::bad_alloc&) {
        // past the estimate --max-memory checks (a limit such as ulimit -v, or other processes):
        // nothing was written, and the message says what needed the memory
        err << errorLine(std::string("out of memory while ") + doing +
                         " (--max-memory checks the matrices before they are made; this machine or its limits had less)")
            << "\n";
        return 2;
    }
}

}  // namespace attnviz::app
