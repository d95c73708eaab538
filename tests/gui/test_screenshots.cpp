// The real binary: a window under a virtual X display (xvfb-run), and figures written without
// one; every assertion is on the pixels of the PNG.
#include "core/attention/colormap.hpp"

#include <gtest/gtest.h>
#include <stb_image.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;
using attnviz::core::Rgb;

namespace {

struct Image {
    int width = 0, height = 0;
    std::vector<unsigned char> rgb;
    Rgb at(int x, int y) const {
        const std::size_t i = (static_cast<std::size_t>(y) * width + x) * 3;
        return {rgb[i], rgb[i + 1], rgb[i + 2]};
    }
};

Image load(const std::string& path) {
    Image img;
    int channels = 0;
    unsigned char* data = stbi_load(path.c_str(), &img.width, &img.height, &channels, 3);
    if (!data) return img;
    img.rgb.assign(data, data + static_cast<std::size_t>(img.width) * img.height * 3);
    stbi_image_free(data);
    return img;
}

// One folder a process (ctest runs each test in its own), removed when the process ends.
fs::path tempDir() {
    struct Folder {
        fs::path path = fs::temp_directory_path() / ("attnviz-shots-" + std::to_string(::getpid()));
        Folder() = default;
        Folder(const Folder&) = delete;
        Folder& operator=(const Folder&) = delete;
        ~Folder() {
            std::error_code ec;
            fs::remove_all(path, ec);
        }
    };
    static const Folder folder;
    fs::create_directories(folder.path);
    return folder.path;
}

// The app's command line. Sanitizer builds preload Mesa's driver so that it stays mapped until
// the leak check at exit (see tests/CMakeLists.txt); the preload comes before the ASan runtime,
// hence verify_asan_link_order=0 (the driver defines no allocation functions).
//
// Under a display the app's own exit code is written to `status`: xvfb-run returns 5 instead
// when removing its temporary folder fails after the app has finished (seen now and then), and
// that must not pass for the app's result.
std::string appCommand(const std::string& args, bool display, const fs::path& status) {
    std::string app;
#ifdef ATTNVIZ_GL_DRIVER
    if (display) app += "env LD_PRELOAD=" ATTNVIZ_GL_DRIVER " ASAN_OPTIONS=\"$ASAN_OPTIONS:verify_asan_link_order=0\" ";
#endif
    app += std::string(ATTNVIZ_BINARY) + " " + args;
    if (!display) return app;
    return "xvfb-run -a -s '-screen 0 1280x1024x24' sh -c '" + app + "; echo $? > " + status.string() + "'";
}

// xvfb-run's own complaint about its temporary folder, which says nothing about the app.
bool isXvfbCleanupNoise(const std::string& line) {
    return line.rfind("xvfb-run: error: problem while cleaning up temporary directory", 0) == 0;
}

// The app's exit code: from the status file when it ran under a display, else `shellCode`.
int appExitCode(int shellCode, bool display, const fs::path& status) {
    if (!display) return shellCode;
    std::ifstream in(status);
    int code = -1;
    if (!(in >> code)) return shellCode;  // the app never finished: xvfb-run's code tells why
    in.close();
    fs::remove(status);
    return code;
}

fs::path statusFile() {
    static int counter = 0;
    return tempDir() / ("status-" + std::to_string(++counter));
}

// The exit code; the app's stderr (errors, sanitizer reports) goes to the test's output.
int run(const std::string& args, bool display) {
    const fs::path status = statusFile();
    const int shell = std::system((appCommand(args, display, status) + " > /dev/null").c_str()) >> 8;
    return appExitCode(shell, display, status);
}

struct Captured {
    int code = -1;
    std::string err;
};

// The exit code and the app's stderr.
Captured runCapturingErrors(const std::string& args, bool display) {
    Captured result;
    const fs::path status = statusFile();
    FILE* pipe = popen((appCommand(args, display, status) + " 2>&1 > /dev/null").c_str(), "r");
    if (!pipe) return result;
    char buf[512];
    while (fgets(buf, sizeof buf, pipe))
        if (!isXvfbCleanupNoise(buf)) result.err += buf;
    result.code = appExitCode(pclose(pipe) >> 8, display, status);
    return result;
}

bool isHatch(Rgb c) { return c == attnviz::core::kMaskedInk || c == attnviz::core::kMaskedPaper; }

// The bounding box of the largest 4-connected blob of exactly `colour`.
std::array<int, 4> largestBlob(const Image& img, Rgb colour) {
    std::vector<char> seen(static_cast<std::size_t>(img.width) * img.height, 0);
    std::array<int, 4> best{0, 0, -1, -1};
    long long bestArea = 0;
    for (int y0 = 0; y0 < img.height; ++y0)
        for (int x0 = 0; x0 < img.width; ++x0) {
            if (seen[static_cast<std::size_t>(y0) * img.width + x0] || !(img.at(x0, y0) == colour)) continue;
            std::vector<std::pair<int, int>> stack{{x0, y0}};
            seen[static_cast<std::size_t>(y0) * img.width + x0] = 1;
            std::array<int, 4> box{x0, y0, x0, y0};
            long long area = 0;
            while (!stack.empty()) {
                auto [x, y] = stack.back();
                stack.pop_back();
                ++area;
                box = {std::min(box[0], x), std::min(box[1], y), std::max(box[2], x), std::max(box[3], y)};
                for (auto [dx, dy] : {std::pair{1, 0}, {-1, 0}, {0, 1}, {0, -1}}) {
                    const int nx = x + dx, ny = y + dy;
                    if (nx < 0 || ny < 0 || nx >= img.width || ny >= img.height) continue;
                    char& s = seen[static_cast<std::size_t>(ny) * img.width + nx];
                    if (s || !(img.at(nx, ny) == colour)) continue;
                    s = 1;
                    stack.push_back({nx, ny});
                }
            }
            if (area > bestArea) bestArea = area, best = box;
        }
    return best;
}

// Causal 6 x 6 matrix whose cell (0, 0) has weight 1 (the brightest colour): find that cell,
// then check every cell: above the diagonal hatched, on and below it never.
void expectCausalCells(const Image& img, int n) {
    const Rgb top = attnviz::core::colormapColor(attnviz::core::ColormapKind::Viridis, 1.0f);
    const auto box = largestBlob(img, top);
    const int cell = box[2] - box[0] + 1;
    ASSERT_GT(cell, 20) << "cell (0, 0) not found";
    ASSERT_NEAR(box[3] - box[1] + 1, cell, 2);  // square
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            // Corners of the cell's interior (the centre may hold the printed value).
            int hatch = 0, total = 0;
            for (int fy : {2, 4, 6})
                for (int fx : {2, 4, 6}) {
                    if (fx == 4 && fy == 4) continue;
                    const int x = box[0] + j * cell + cell * fx / 8, y = box[1] + i * cell + cell * fy / 8;
                    hatch += isHatch(img.at(x, y)), ++total;
                }
            if (j > i) EXPECT_EQ(hatch, total) << "cell " << i << "," << j << " should be masked";
            else EXPECT_EQ(hatch, 0) << "cell " << i << "," << j << " should not be masked";
        }
}

long long countColour(const Image& img, Rgb c) {
    long long n = 0;
    for (int y = 0; y < img.height; ++y)
        for (int x = 0; x < img.width; ++x) n += img.at(x, y) == c;
    return n;
}

bool hasDisplayTools() { return std::system("command -v xvfb-run > /dev/null 2>&1") == 0; }

}  // namespace

TEST(Screenshot, DefaultDemoWholeWindow) {
    if (!hasDisplayTools()) GTEST_SKIP() << "xvfb-run is not installed";
    const fs::path out = tempDir() / "default.png";
    ASSERT_EQ(run("--preset default --screenshot " + out.string(), true), 0);
    const Image img = load(out.string());
    ASSERT_EQ(img.width, 1600);
    ASSERT_EQ(img.height, 1000);
    // The heatmap, thumbnails and colour bar draw viridis colours; the window is not blank.
    long long viridis = 0;
    for (int k = 0; k < 256; k += 5) viridis += countColour(img, attnviz::core::colormapTable(attnviz::core::ColormapKind::Viridis)[k]);
    EXPECT_GT(viridis, 50000);
    EXPECT_EQ(countColour(img, attnviz::core::kMaskedInk), 0);  // no mask in the default demo
}

TEST(Screenshot, CausalHeatmapPanelMasksTheUpperTriangle) {
    if (!hasDisplayTools()) GTEST_SKIP() << "xvfb-run is not installed";
    const fs::path out = tempDir() / "causal.png";
    ASSERT_EQ(run("--preset seed004-causal --screenshot " + out.string() + " --panel heatmap", true), 0);
    const Image img = load(out.string());
    ASSERT_GT(img.width, 300);
    ASSERT_LT(img.width, 1600);  // the panel alone
    expectCausalCells(img, 6);
}

// The shader and the exported figure colour the same weight the same way: every weight of
// seed 000's three-token example appears as a solid block of exactly core::colormapColor(weight)
// in the app's heatmap and in the PNG written without a window.
TEST(Screenshot, ShaderAndExportAgreeOnColours) {
    if (!hasDisplayTools()) GTEST_SKIP() << "xvfb-run is not installed";
    const fs::path shot = tempDir() / "three-app.png", figure = tempDir() / "three-figure.png";
    ASSERT_EQ(run("--preset seed000-three-tokens --colormap magma --screenshot " + shot.string() + " --panel heatmap", true), 0);
    ASSERT_EQ(run("--preset seed000-three-tokens --colormap magma --export-heatmap " + figure.string(), false), 0);
    const Image app = load(shot.string()), png = load(figure.string());
    ASSERT_GT(app.width, 0);
    ASSERT_GT(png.width, 0);
    // A = [[0.401 0.198 0.401] [0.198 0.401 0.401] [0.248 0.248 0.503]] (seed 000, printed)
    for (float w : {0.40111208f, 0.19777581f, 0.24825507f, 0.50348985f}) {
        const Rgb c = attnviz::core::colormapColor(attnviz::core::ColormapKind::Magma, w);
        const auto inApp = largestBlob(app, c), inFigure = largestBlob(png, c);
        EXPECT_GT(inApp[2] - inApp[0], 40) << "weight " << w << " missing from the app's heatmap";
        EXPECT_GT(inFigure[2] - inFigure[0], 40) << "weight " << w << " missing from the exported figure";
    }
}

// Heads are finished one a frame after the first; a screenshot waits for all of them. At
// τ = 1000 every weight of four tokens is 0.25, so the mean and all eight head thumbnails are
// solid blocks of viridis(0.25), none a "computing…" placeholder.
TEST(Screenshot, WaitsForEveryHead) {
    if (!hasDisplayTools()) GTEST_SKIP() << "xvfb-run is not installed";
    const fs::path out = tempDir() / "heads.png";
    ASSERT_EQ(run("--sentence \"a b c d\" --heads 8 --d-model 64 --temperature 1000 --screenshot " + out.string() + " --panel heads", true),
              0);
    const Image img = load(out.string());
    ASSERT_GT(img.width, 0);
    const Rgb quarter = attnviz::core::colormapColor(attnviz::core::ColormapKind::Viridis, 0.25f);
    const auto tile = largestBlob(img, quarter);
    const long long tileArea = static_cast<long long>(tile[2] - tile[0] + 1) * (tile[3] - tile[1] + 1);
    ASSERT_GT(tileArea, 400) << "no thumbnail drawn";
    EXPECT_GE(countColour(img, quarter), 9 * tileArea * 9 / 10) << "some of the 9 thumbnails are missing";
}

// The linear-attention lab: the softmax map, the linear map and the fast-weight matrix are
// drawn (viridis blocks), across the bottom row.
TEST(Screenshot, LinearAttentionLabDrawsItsMaps) {
    if (!hasDisplayTools()) GTEST_SKIP() << "xvfb-run is not installed";
    const fs::path out = tempDir() / "linear.png";
    ASSERT_EQ(run("--preset default --lab linear --screenshot " + out.string() + " --panel linear", true), 0);
    const Image img = load(out.string());
    ASSERT_GT(img.width, 1000);  // the whole bottom row, right of the controls
    long long viridis = 0;
    for (int k = 0; k < 256; ++k) viridis += countColour(img, attnviz::core::colormapTable(attnviz::core::ColormapKind::Viridis)[k]);
    EXPECT_GT(viridis, 3 * 150 * 150);  // three maps of at least 150 x 150 pixels
}

// A lesson in presenter mode: the strip is drawn under the step's heatmap (viridis cells).
TEST(Screenshot, LessonStripUnderTheStepsPanels) {
    if (!hasDisplayTools()) GTEST_SKIP() << "xvfb-run is not installed";
    const fs::path whole = tempDir() / "lesson.png", strip = tempDir() / "lesson-strip.png";
    ASSERT_EQ(run("--lesson attention --presenter --screenshot " + whole.string(), true), 0);
    ASSERT_EQ(run("--lesson attention --presenter --screenshot " + strip.string() + " --panel lesson", true), 0);
    const Image img = load(whole.string()), panel = load(strip.string());
    ASSERT_EQ(img.width, 1600);
    EXPECT_EQ(panel.width, 1600);             // the strip spans the window
    EXPECT_LT(panel.height, img.height / 2);  // and leaves most of it to the panels
    // Seed 000's three-token map: 0.40 and 0.20 cells in the heatmap above the strip
    for (float w : {0.40111208f, 0.19777581f}) {
        const auto blob = largestBlob(img, attnviz::core::colormapColor(attnviz::core::ColormapKind::Viridis, w));
        EXPECT_GT(blob[2] - blob[0], 60) << "weight " << w;
        EXPECT_LT(blob[3], img.height - panel.height) << "weight " << w;
    }
}

TEST(Screenshot, TwiceTheResolution) {
    if (!hasDisplayTools()) GTEST_SKIP() << "xvfb-run is not installed";
    const fs::path out = tempDir() / "double.png";
    ASSERT_EQ(run("--preset seed004-causal --size 1000x700 --scale 2 --screenshot " + out.string(), true), 0);
    const Image img = load(out.string());
    EXPECT_EQ(img.width, 2000);
    EXPECT_EQ(img.height, 1400);
}

TEST(Screenshot, SwapVerdictFlipsWithPositionalEncoding) {
    if (!hasDisplayTools()) GTEST_SKIP() << "xvfb-run is not installed";
    const fs::path off = tempDir() / "swap-off.png", on = tempDir() / "swap-on.png";
    ASSERT_EQ(run("--preset seed004-swap --screenshot " + off.string() + " --panel swap", true), 0);
    ASSERT_EQ(run("--preset seed004-swap --positional sinusoidal --screenshot " + on.string() + " --panel swap", true), 0);
    const Image a = load(off.string()), b = load(on.string());
    // The verdict is drawn in green when outputs match the permutation, red when they do not.
    const Rgb green{51, 191, 89}, red{242, 89, 64};
    EXPECT_GT(countColour(a, green), 100);
    EXPECT_EQ(countColour(a, red), 0);
    EXPECT_GT(countColour(b, red), 100);
    EXPECT_EQ(countColour(b, green), 0);
}

TEST(Screenshot, BadPathIsAnErrorNotACrash) {
    if (!hasDisplayTools()) GTEST_SKIP() << "xvfb-run is not installed";
    EXPECT_EQ(run("--preset default --screenshot /nonexistent-folder/x.png", true), 2);
    EXPECT_EQ(run("--preset default --screenshot " + (tempDir() / "p.png").string() + " --panel nosuch", true), 2);
}

// An unknown --panel is refused before anything is opened: a model folder that is not there is
// never reached (a real one would be read and run first, for seconds).
TEST(Screenshot, AnUnknownPanelIsRefusedBeforeTheModelOpens) {
    if (!hasDisplayTools()) GTEST_SKIP() << "xvfb-run is not installed";
    const fs::path never = tempDir() / "never.png";
    const Captured r =
        runCapturingErrors("--model /nonexistent-attnviz-model --screenshot " + never.string() + " --panel value_weighted", true);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("--panel: unknown panel 'value_weighted' (known: controls, heatmap, value-weighted,"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("nonexistent-attnviz-model"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(never));
}

// Paths that cannot be written other than a missing folder: one under a regular file (ENOTDIR)
// and one inside /proc, where no file can be created even by root. One error line naming the
// path, exit code 2, and nothing written: no file, no temporary file, the regular file intact.
TEST(Screenshot, UnwritablePathIsOneErrorLineAndLeavesNothing) {
    if (!hasDisplayTools()) GTEST_SKIP() << "xvfb-run is not installed";
    const fs::path dir = tempDir() / "unwritable";
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path file = dir / "notes.txt";
    std::ofstream(file) << "notes\n";
    const std::string procPath = "/proc/attnviz-" + std::to_string(::getpid()) + ".png";
    for (const std::string& path : {(file / "shot.png").string(), procPath}) {
        const Captured r = runCapturingErrors("--preset seed000-three-tokens --screenshot " + path + " --panel heatmap", true);
        EXPECT_EQ(r.code, 2) << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_EQ(r.err.rfind("attnviz: error: " + path + ": ", 0), 0u) << r.err;
        EXPECT_FALSE(fs::exists(path));
    }
    std::ifstream in(file);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "notes\n");
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST(Screenshot, NoDisplayExplainsItself) {
    const std::string cmd = std::string("env -u DISPLAY -u WAYLAND_DISPLAY ") + ATTNVIZ_BINARY + " --preset default 2>&1";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
    ASSERT_TRUE(pipe);
    std::string output;
    char buf[512];
    while (fgets(buf, sizeof buf, pipe.get())) output += buf;
    EXPECT_EQ(std::count(output.begin(), output.end(), '\n'), 1) << output;
    EXPECT_NE(output.find("no display"), std::string::npos) << output;
    EXPECT_NE(output.find("--export"), std::string::npos);
    EXPECT_NE(output.find("xvfb-run"), std::string::npos);
}

TEST(ExportHeatmap, CausalFigureWithoutAWindow) {
    const fs::path png = tempDir() / "figure.png", svg = tempDir() / "figure.svg";
    ASSERT_EQ(run("--preset seed004-causal --export-heatmap " + png.string() + " --cell-size 48", false), 0);
    const Image img = load(png.string());
    ASSERT_GT(img.width, 6 * 48);
    expectCausalCells(img, 6);
    ASSERT_EQ(run("--preset seed004-causal --export-heatmap " + svg.string(), false), 0);
    EXPECT_GT(fs::file_size(svg), 1000u);
}

namespace {

// ---- token labels read back from pixels ----

// Ink of a label: which pixels differ from the background around it.
struct Ink {
    int width = 0, height = 0;
    std::vector<char> on;
    bool at(int x, int y) const { return on[static_cast<std::size_t>(y) * width + x] != 0; }
};

bool isColormapColour(Rgb c) {
    for (const Rgb& v : attnviz::core::colormapTable(attnviz::core::ColormapKind::Viridis))
        if (v == c) return true;
    return false;
}

// The matrix of a heatmap: its left edge and the top and bottom of its cells (viridis pixels).
struct Matrix {
    int left = -1, top = -1, bottom = -1;
};

Matrix findMatrix(const Image& img) {
    Matrix m;
    int best = img.width;
    for (int y = img.height / 3; y < 2 * img.height / 3; ++y)
        for (int x = 0; x + 16 < img.width && x < best; ++x) {
            bool run = true;
            for (int k = 0; k < 16 && run; ++k) run = isColormapColour(img.at(x + k, y));
            if (run) best = x;
        }
    if (best == img.width) return m;
    m.left = best;
    const int x = best + 4;
    for (int y = 0; y < img.height; ++y)
        if (isColormapColour(img.at(x, y))) {
            if (m.top < 0) m.top = y;
            m.bottom = y;
        }
    return m;
}

// The ink left of the matrix across the middle of row `row` of `rows`: from the matrix leftwards
// to the first gap of 10 blank columns after the label (the axis title stays out), cropped to it.
Ink rowLabel(const Image& img, const Matrix& m, int rows, int row) {
    const float cell = static_cast<float>(m.bottom - m.top + 1) / static_cast<float>(rows);
    const int y0 = m.top + static_cast<int>(cell * (static_cast<float>(row) + 0.1f));
    const int y1 = m.top + static_cast<int>(cell * (static_cast<float>(row) + 0.9f));
    const Rgb paper = img.at(m.left - 3, m.top + static_cast<int>(cell * (static_cast<float>(row) + 0.05f)));
    const auto inked = [&](int x, int y) {
        const Rgb c = img.at(x, y);
        return std::max({std::abs(c.r - paper.r), std::abs(c.g - paper.g), std::abs(c.b - paper.b)}) > 60;
    };
    int right = -1, left = -1, blank = 0;
    for (int x = m.left - 3; x >= 0 && blank < 10; --x) {
        bool any = false;
        for (int y = y0; y < y1 && !any; ++y) any = inked(x, y);
        if (any) {
            if (right < 0) right = x;
            left = x;
            blank = 0;
        } else if (right >= 0) {
            ++blank;
        }
    }
    Ink ink;
    if (right < 0) return ink;
    int top = y1, bottom = y0 - 1;
    for (int y = y0; y < y1; ++y)
        for (int x = left; x <= right; ++x)
            if (inked(x, y)) top = std::min(top, y), bottom = std::max(bottom, y);
    ink.width = right - left + 1;
    ink.height = bottom - top + 1;
    for (int y = top; y <= bottom; ++y)
        for (int x = left; x <= right; ++x) ink.on.push_back(inked(x, y) ? 1 : 0);
    return ink;
}

// The best share of `glyph`'s pixels that agree with `label` at any placement, and where.
struct Match {
    double share = 0.0;
    int x = -1;
};

Match bestMatch(const Ink& label, const Ink& glyph) {
    Match best;
    for (int dy = -2; dy <= label.height - glyph.height + 2; ++dy)
        for (int dx = 0; dx + glyph.width <= label.width; ++dx) {
            int agree = 0;
            for (int y = 0; y < glyph.height; ++y)
                for (int x = 0; x < glyph.width; ++x) {
                    const int ly = y + dy;
                    const bool l = ly >= 0 && ly < label.height && label.at(x + dx, ly);
                    agree += l == glyph.at(x, y);
                }
            const double share = static_cast<double>(agree) / static_cast<double>(glyph.width * glyph.height);
            if (share > best.share) best = {share, dx};
        }
    return best;
}

// Tokens in every script, with the controls the check needs: a "?" (the glyph to look for), a
// label that holds one, Hebrew letters alone and together, and a character no font has (a box).
const std::vector<std::string> kScriptTokens = {"?",    "日本語", "テキスト", "한국어", "中文", "עברית", "سلام", "हिन्दी",     "ไทย",
                                                "🤖", "Ωμέγα",  "привет",   "x?",     "ע",    "ב",     "עב",   "\U0010FFFD"};
constexpr int kQuestionRow = 0, kHasQuestionRow = 12, kAyinRow = 13, kBetRow = 14, kPairRow = 15, kBoxRow = 16;

std::string scriptTokensFlag() {
    std::string out;
    for (const std::string& t : kScriptTokens) out += (out.empty() ? "" : ",") + t;
    return "--tokens \"" + out + "\"";
}

// Every label of `img`'s heatmap: no token but the controls is drawn with the "?" glyph or the
// box; the controls are found (so the check can see a "?"), and עב is drawn bet first.
void expectEveryScriptDrawn(const Image& img, const std::string& what) {
    SCOPED_TRACE(what);
    const int rows = static_cast<int>(kScriptTokens.size());
    const Matrix m = findMatrix(img);
    ASSERT_GT(m.left, 0);
    ASSERT_GT(m.bottom - m.top, rows * 10);
    std::vector<Ink> labels;
    for (int r = 0; r < rows; ++r) {
        labels.push_back(rowLabel(img, m, rows, r));
        ASSERT_GT(labels.back().width, 2) << "no label on row " << r << ", " << kScriptTokens[static_cast<std::size_t>(r)];
    }
    const Ink& question = labels[kQuestionRow];
    const Ink& box = labels[kBoxRow];
    // The check sees a "?" (the control's is drawn in the selected row's colour in the window, so
    // its ink differs by a pixel or two); no other label comes near (at most 0.8 measured).
    EXPECT_GT(bestMatch(labels[kHasQuestionRow], question).share, 0.93);
    for (int r = 1; r < rows; ++r) {
        if (r == kHasQuestionRow || r == kBoxRow) continue;
        const std::string& token = kScriptTokens[static_cast<std::size_t>(r)];
        EXPECT_LT(bestMatch(labels[static_cast<std::size_t>(r)], question).share, 0.88) << token << " has a \"?\"";
        EXPECT_LT(bestMatch(labels[static_cast<std::size_t>(r)], box).share, 0.88) << token << " has a box";
    }
    // עב: bet (drawn alone on its row) left of ayin.
    const Match bet = bestMatch(labels[kPairRow], labels[kBetRow]), ayin = bestMatch(labels[kPairRow], labels[kAyinRow]);
    EXPECT_GT(bet.share, 0.85);
    EXPECT_GT(ayin.share, 0.85);
    EXPECT_LT(bet.x, ayin.x) << "עב is not in visual order";
}

}  // namespace

TEST(Screenshot, EveryScriptIsDrawnWithItsGlyphsInTheWindowAndTheFigure) {
    if (!hasDisplayTools()) GTEST_SKIP() << "xvfb-run is not installed";
    const fs::path shot = tempDir() / "scripts-app.png", figure = tempDir() / "scripts-figure.png";
    ASSERT_EQ(run(scriptTokensFlag() + " --screenshot " + shot.string() + " --panel heatmap --size 1280x1024", true), 0);
    ASSERT_EQ(run(scriptTokensFlag() + " --export-heatmap " + figure.string(), false), 0);
    expectEveryScriptDrawn(load(shot.string()), "window");
    expectEveryScriptDrawn(load(figure.string()), "exported PNG");
}

// The head view in the window: with the causal mask the first query reads only the first key, at
// weight 1, so head 1's line from it is a horizontal run of head 1's colour, fully opaque (within
// the anti-aliasing's rounding), far longer than the head's swatch.
TEST(Screenshot, HeadViewDrawsTheFirstQuerysLineOpaqueInItsHeadsColour) {
    if (!hasDisplayTools()) GTEST_SKIP() << "xvfb-run is not installed";
    const fs::path out = tempDir() / "head-view.png";
    ASSERT_EQ(run("--preset default --causal --head 0 --screenshot " + out.string() + " --panel head-view", true), 0);
    const Image img = load(out.string());
    ASSERT_GT(img.width, 300);
    ASSERT_LT(img.width, 1600);    // the panel alone
    const Rgb head{31, 119, 180};  // core::headColour(0)
    const auto near = [&](Rgb c) { return std::abs(c.r - head.r) <= 10 && std::abs(c.g - head.g) <= 10 && std::abs(c.b - head.b) <= 10; };
    int longest = 0;
    for (int y = 0; y < img.height; ++y) {
        int run = 0;
        for (int x = 0; x < img.width; ++x) {
            run = near(img.at(x, y)) ? run + 1 : 0;
            longest = std::max(longest, run);
        }
    }
    EXPECT_GT(longest, 150) << "no opaque horizontal line of head 1";
}
