// attnviz's GEMM kernels against the BLAS libraries Debian ships (OpenBLAS, BLIS), fp32,
// row-major C = A·B, on the forward pass's own product shapes: GPT-2 small's projections and MLP
// at T = 128 and 512, the multi-head benchmark's projection (d_model 512, 8 heads) at T = 1024
// and 2048, and one head's q·kᵀ and A·V (d_h = 64) at T = 512 and 2048. It answers, for the CPU it
// runs on, whether a library's cblas_sgemm beats the kernels on the products the pass makes.
//
// The kernels are timed as the pass calls them: a weight matrix packed once by packWeights (F32,
// GPT-2's Conv1D layout) outside the timed loop and the activations not packed beforehand
// (multiplyWeights with no PackedRows); k packed by packKeys before scoreRows, and v by packColumns
// before weighValues, inside the timed loop (the pass packs them per head). A library gets plain
// cblas_sgemm on the same row-major data (kᵀ as a transposed operand). The libraries are loaded
// at run time (dlopen by soname, nothing linked): an absent one is reported and skipped. Each
// runs on as many threads as the kernels' OpenMP (omp_get_max_threads()).
//
// Timing: per shape, the kernels and each library take turns in rounds (each round starting with
// the next of them), a round being a warm-up call and then repeated calls for --seconds / --rounds
// seconds, of which the median call counts. The table gives the median over rounds; "attnviz vs
// best library" is the median over rounds of (best library's time / attnviz's time), so above 1
// the kernels are faster. Turns taken in the same minutes keep those ratios meaningful on a
// shared, noisy machine even when the times themselves move. GFLOP/s are also given as a share of
// the FMA peak of the instruction set the kernels use (every core issuing independent fused
// multiply-adds, measured in the same run over each thread's own CPU time, so that another process
// taking turns on a core does not lower it). Each shape is checked once before it is timed: a
// library whose C differs from the kernels' by more than 1e-4 of max |C| stops the run (exit 1).
//
// Run (after building): ./build/attnviz_blas_bench [--seconds S] [--rounds R] [--filter TEXT] [--json]
//   --seconds S   time per shape for each of the kernels and the libraries (default 1.5)
//   --rounds R    rounds per shape (default 5)
//   --filter TEXT only the shapes whose name contains TEXT (e.g. "gpt2", "T=2048", "scores")
//   --json        one JSON object instead of the header and table
// OpenBLAS: apt-get install libopenblas0-pthread; BLIS: apt-get install libblis4-openmp.
// On a machine that other processes keep busy, OpenMP's threads spinning between products lose
// their turns to them and calls stall for whole scheduler ticks (times near 4 or 8 ms): run with
// OMP_WAIT_POLICY=passive there (the header lists such variables that are set).
#include "bench/fma_chains.hpp"
#include "core/attention/kernels.hpp"
#include "core/base/prng.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

using namespace attnviz::core;

namespace {

constexpr const char* kProgram = "attnviz_blas_bench";
constexpr double kTolerance = 1e-4;  // max |ours - library| / max |C|

[[noreturn]] void usageError(const std::string& message) {
    std::fprintf(stderr, "%s: error: %s\n", kProgram, message.c_str());
    std::exit(2);
}

// A user's value in a message, clipped.
std::string quoted(const std::string& text) { return "'" + (text.size() > 40 ? text.substr(0, 40) + "..." : text) + "'"; }

struct Options {
    double seconds = 1.5;
    int rounds = 5;
    std::string filter;
    bool json = false;
};

Options parseOptions(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) usageError(flag + ": missing its value");
            return argv[++i];
        };
        if (flag == "--seconds") {
            const std::string text = value();
            char* end = nullptr;
            const double s = std::strtod(text.c_str(), &end);
            if (text.empty() || *end != '\0' || !std::isfinite(s) || s <= 0.0 || s > 600.0)
                usageError("--seconds: expected a number of seconds in (0, 600], got " + quoted(text));
            options.seconds = s;
        } else if (flag == "--rounds") {
            const std::string text = value();
            char* end = nullptr;
            const long r = std::strtol(text.c_str(), &end, 10);
            if (text.empty() || *end != '\0' || r < 1 || r > 100)
                usageError("--rounds: expected a whole number from 1 to 100, got " + quoted(text));
            options.rounds = static_cast<int>(r);
        } else if (flag == "--filter") {
            options.filter = value();
        } else if (flag == "--json") {
            options.json = true;
        } else if (flag == "--help" || flag == "-h") {
            std::printf("usage: %s [--seconds S] [--rounds R] [--filter TEXT] [--json]\n", kProgram);
            std::exit(0);
        } else {
            usageError("unknown flag " + quoted(flag) + " (flags: --seconds S, --rounds R, --filter TEXT, --json)");
        }
    }
    return options;
}

// cblas_sgemm with 32-bit integers; CBLAS's enums are ints in the C calling convention.
using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

struct Library {
    std::string name, soname, package;
    Sgemm sgemm = nullptr;  // null: not usable (status says why)
    std::string status, version, core;
};

template <class Function>
Function symbol(void* handle, const char* name) {
    return reinterpret_cast<Function>(dlsym(handle, name));
}

// dlopen(soname); its version, core and threads set to `threads` where the library can tell and set them.
Library loadLibrary(const std::string& name, const std::string& soname, const std::string& package, int threads) {
    Library lib{name, soname, package, nullptr, "", "", ""};
    void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* why = dlerror();
        const bool absent = why && std::strstr(why, "No such file");
        lib.status = absent ? "not installed (apt-get install " + package + ")" : "could not be loaded: " + std::string(why ? why : "?");
        return lib;
    }
    const auto sgemm = symbol<Sgemm>(handle, "cblas_sgemm");
    if (!sgemm) {
        lib.status = "has no cblas_sgemm";
        return lib;
    }
    bool wideIntegers = false;
    if (name == "OpenBLAS") {
        if (const auto config = symbol<const char* (*)()>(handle, "openblas_get_config")) {
            lib.version = config();
            wideIntegers = lib.version.find("USE64BITINT") != std::string::npos;
        }
        if (const auto corename = symbol<const char* (*)()>(handle, "openblas_get_corename")) lib.core = corename();
        if (const auto setThreads = symbol<void (*)(int)>(handle, "openblas_set_num_threads")) setThreads(threads);
    } else {
        if (const auto version = symbol<const char* (*)()>(handle, "bli_info_get_version_str"))
            lib.version = std::string("BLIS ") + version();
        const auto queryId = symbol<int (*)()>(handle, "bli_arch_query_id");
        const auto archString = symbol<const char* (*)(int)>(handle, "bli_arch_string");
        if (queryId && archString) lib.core = archString(queryId());
        if (const auto intSize = symbol<int (*)()>(handle, "bli_info_get_blas_int_type_size")) wideIntegers = intSize() == 64;
        if (const auto setThreads = symbol<void (*)(std::int64_t)>(handle, "bli_thread_set_num_threads")) setThreads(threads);  // dim_t
    }
    if (wideIntegers) {
        lib.status = "built with 64-bit integers (this program calls the 32-bit interface)";
        return lib;
    }
    lib.sgemm = sgemm;
    lib.status = "loaded";
    return lib;
}

std::string cpuModel() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("model name", 0) == 0) {
            const auto value = line.find_first_not_of(" \t", line.find(':') + 1);
            if (line.find(':') != std::string::npos && value != std::string::npos) return line.substr(value);
        }
    return "unknown";
}

using Clock = std::chrono::steady_clock;

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// A warm-up call, then calls for `seconds` (at least three); each call's time in seconds.
std::vector<double> callTimes(const std::function<void()>& call, double seconds) {
    call();
    std::vector<double> times;
    const auto start = Clock::now();
    do {
        const auto t0 = Clock::now();
        call();
        times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    } while (times.size() < 3 || std::chrono::duration<double>(Clock::now() - start).count() < seconds);
    return times;
}

// GFLOP/s of fused multiply-adds at the width of `isa` on every thread (the median of the calls
// over `seconds`); 0 for the portable build, whose products are Eigen's.
double fmaPeak(KernelIsa isa, double seconds) {
#if defined(__AVX2__) && defined(__FMA__)
    void (*chains)(long) = nullptr;
    int floats = 0;
    if (isa == KernelIsa::Avx512 && hasKernelIsa(KernelIsa::Avx512)) chains = fmaChainsAvx512, floats = 16;
    else if (isa == KernelIsa::Avx2) chains = fmaChainsAvx2, floats = 8;
    if (!chains) return 0.0;
    std::vector<double> rates;
    callTimes([&] { rates.push_back(chainsOnEveryThread(chains, 1 << 20, floats)); }, seconds);
    return median(rates);
#else
    (void)isa;
    (void)seconds;
    return 0.0;
#endif
}

enum class Product { Weights, Scores, Values };

// C [m, n] = A [m, k] · B [k, n]; for Scores B = kᵀ (k: [n, k]).
struct Shape {
    std::string name;
    Product product;
    Eigen::Index m, k, n;
};

std::vector<Shape> shapes() {
    std::vector<Shape> out;
    for (Eigen::Index t : {128, 512}) {
        const std::string at = "gpt2 T=" + std::to_string(t) + " ";
        out.push_back({at + "x·W_qkv", Product::Weights, t, 768, 2304});
        out.push_back({at + "concat·W_o", Product::Weights, t, 768, 768});
        out.push_back({at + "mlp up", Product::Weights, t, 768, 3072});
        out.push_back({at + "mlp down", Product::Weights, t, 3072, 768});
    }
    for (Eigen::Index t : {1024, 2048}) out.push_back({"mha T=" + std::to_string(t) + " projection", Product::Weights, t, 512, 512});
    for (Eigen::Index t : {512, 2048}) {
        out.push_back({"head T=" + std::to_string(t) + " scores", Product::Scores, t, 64, t});
        out.push_back({"head T=" + std::to_string(t) + " A·V", Product::Values, t, t, 64});
    }
    return out;
}

std::string operands(const Shape& s) {
    const auto dims = [](Eigen::Index r, Eigen::Index c) { return "[" + std::to_string(r) + "," + std::to_string(c) + "]"; };
    return dims(s.m, s.k) + "·" + (s.product == Product::Scores ? dims(s.n, s.k) + "ᵀ" : dims(s.k, s.n));
}

Mat normalMat(Eigen::Index rows, Eigen::Index cols, double scale, Prng& prng) {
    Mat m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<float>(scale * prng.normal());
    return m;
}

// Rows of positive weights summing to about 1, as a softmax's.
Mat weightsMat(Eigen::Index rows, Eigen::Index cols, Prng& prng) {
    Mat m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<float>(2.0 * prng.uniform() / static_cast<double>(cols));
    return m;
}

// One shape's operands and the C of the kernels and of each library.
struct Bench {
    Mat a, b;  // Scores: a = q, b = k [n, k]
    PackedWeights weights;
    PackedKeys keys;
    PackedColumns values;
    Mat ours;
    std::vector<Mat> theirs;
};

// The operands, the weights packed once (as a model's are when it is opened).
void makeOperands(const Shape& s, std::size_t libraries, Prng& prng, Bench& bench) {
    switch (s.product) {
        case Product::Weights:
            bench.a = normalMat(s.m, s.k, 1.0, prng);
            bench.b = normalMat(s.k, s.n, 0.02, prng);
            packWeights(bench.b.data(), WeightType::F32, s.k, s.n, false, bench.weights);
            break;
        case Product::Scores:
            bench.a = normalMat(s.m, s.k, 1.0, prng);
            bench.b = normalMat(s.n, s.k, 1.0, prng);
            break;
        case Product::Values:
            bench.a = weightsMat(s.m, s.k, prng);
            bench.b = normalMat(s.k, s.n, 1.0, prng);
            break;
    }
    bench.ours.resize(s.m, s.n);
    bench.theirs.assign(libraries, Mat(s.m, s.n));
}

// The kernels as the pass calls them: k and v packed on every call, the weights beforehand.
std::function<void()> oursCall(const Shape& s, Bench& bench) {
    switch (s.product) {
        case Product::Weights: return [&] { multiplyWeights(bench.a, nullptr, bench.weights, bench.ours); };
        case Product::Scores:
            return [&] {
                packKeys(bench.b, bench.keys);
                scoreRows(bench.a, bench.b, bench.keys, bench.ours);
            };
        case Product::Values:
            return [&] {
                packColumns(bench.b, bench.values);
                weighValues(bench.a, bench.b, bench.values, bench.ours);
            };
    }
    return {};
}

std::function<void()> libraryCall(const Shape& s, Bench& bench, Sgemm sgemm, Mat& c) {
    const int m = static_cast<int>(s.m), k = static_cast<int>(s.k), n = static_cast<int>(s.n);
    const int transB = s.product == Product::Scores ? kTrans : kNoTrans, ldb = s.product == Product::Scores ? k : n;
    return [&bench, &c, sgemm, m, k, n, transB, ldb] {
        sgemm(kRowMajor, kNoTrans, transB, m, n, k, 1.0f, bench.a.data(), k, bench.b.data(), ldb, 0.0f, c.data(), n);
    };
}

struct Timing {
    double ms = 0, gflops = 0, peakShare = 0;  // the median over rounds
    std::vector<double> roundsMs;              // each round's median call
};

// One shape's results: timings[0] the kernels', then each library's in `usable` order.
struct Result {
    std::vector<Timing> timings;
    double ratio = 0;  // median over rounds of (fastest library / kernels)
    std::string best;  // the library faster by median
};

// Rounds of turns, each round starting with the next peer (calls[0] = the kernels).
Result measure(const Shape& s, const std::vector<std::function<void()>>& calls, const std::vector<const Library*>& usable,
               const Options& options, double peak) {
    std::vector<std::vector<double>> times(calls.size(), std::vector<double>(static_cast<std::size_t>(options.rounds)));
    const double perRound = options.seconds / options.rounds;
    for (std::size_t r = 0; r < times[0].size(); ++r)
        for (std::size_t i = 0; i < calls.size(); ++i) {
            const std::size_t p = (r + i) % calls.size();
            times[p][r] = median(callTimes(calls[p], perRound));
        }

    Result result;
    const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.k) * static_cast<double>(s.n);
    for (const auto& peer : times) {
        const double seconds = median(peer);
        Timing t{seconds * 1e3, flops / seconds * 1e-9, peak > 0 ? flops / seconds * 1e-9 / peak : 0.0, {}};
        for (double round : peer) t.roundsMs.push_back(round * 1e3);
        result.timings.push_back(t);
    }
    if (usable.empty()) return result;
    std::vector<double> ratios;
    for (std::size_t r = 0; r < times[0].size(); ++r) {
        double fastest = times[1][r];
        for (std::size_t p = 2; p < times.size(); ++p) fastest = std::min(fastest, times[p][r]);
        ratios.push_back(fastest / times[0][r]);
    }
    result.ratio = median(ratios);
    std::size_t best = 1;
    for (std::size_t p = 2; p < times.size(); ++p)
        if (result.timings[p].ms < result.timings[best].ms) best = p;
    result.best = usable[best - 1]->name;
    return result;
}

std::string fixed(double value, int decimals) {
    char text[32];
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    return text;
}

void printHeader(const nlohmann::json& report, const std::vector<const Library*>& usable, double perRound) {
    std::printf("attnviz's kernels against Debian's BLAS, fp32 row-major C = A·B, on the forward pass's products\n\n");
    std::printf("- CPU: %s\n- threads: %d (OpenMP; each library set to the same)\n- kernels: %s\n",
                report["cpu"].get<std::string>().c_str(), report["threads"].get<int>(), report["kernel_isa"].get<std::string>().c_str());
    const double peak = report["fma_peak_gflops"];
    if (peak > 0) std::printf("- FMA peak (%s, every thread): %.1f GFLOP/s\n", report["kernel_isa"].get<std::string>().c_str(), peak);
    else std::printf("- FMA peak: none measured (portable build: the products are Eigen's)\n");
    for (const auto& lib : report["libraries"]) {
        std::printf("- %s (%s): %s", lib["name"].get<std::string>().c_str(), lib["soname"].get<std::string>().c_str(),
                    lib["status"].get<std::string>().c_str());
        if (!lib["version"].get<std::string>().empty()) std::printf("; %s", lib["version"].get<std::string>().c_str());
        if (!lib["core"].get<std::string>().empty()) std::printf("; core %s", lib["core"].get<std::string>().c_str());
        std::printf("\n");
    }
    std::string waiting;
    for (const auto& [variable, value] : report["environment"].items()) waiting += " " + variable + "=" + quoted(value.get<std::string>());
    std::printf("- threads' waiting:%s\n",
                waiting.empty() ? " the libraries' defaults (no OMP_WAIT_POLICY, GOMP_SPINCOUNT, ... set)" : waiting.c_str());
    for (const auto& warning : report["warnings"]) std::printf("- warning: %s\n", warning.get<std::string>().c_str());
    std::printf("- timing: per shape, rounds: %d, the kernels and the libraries in turn; a turn: the median call of %.2f s\n\n",
                report["rounds"].get<int>(), perRound);
    std::printf("| shape | A·B | attnviz ms | GFLOP/s | %% peak |");
    for (const Library* lib : usable) std::printf(" %s ms | GFLOP/s | %% peak |", lib->name.c_str());
    std::printf(" attnviz vs best library |\n|---|---|--:|--:|--:|");
    for (std::size_t i = 0; i < usable.size(); ++i) std::printf("--:|--:|--:|");
    std::printf("---|\n");
    std::fflush(stdout);
}

void printRow(const Shape& s, const Result& result, bool libraries, double peak) {
    std::printf("| %s | %s |", s.name.c_str(), operands(s).c_str());
    for (const Timing& t : result.timings)
        std::printf(" %s | %s | %s |", fixed(t.ms, 3).c_str(), fixed(t.gflops, 1).c_str(),
                    peak > 0 ? fixed(100 * t.peakShare, 0).c_str() : "–");
    std::printf(" %s |\n", libraries ? (fixed(result.ratio, 2) + " (" + result.best + ")").c_str() : "–");
    std::fflush(stdout);
}

nlohmann::json rowJson(const Shape& s, const Result& result, const std::vector<const Library*>& usable, const nlohmann::json& differences) {
    const auto timing = [](const Timing& t) {
        return nlohmann::json{{"ms", t.ms}, {"gflops", t.gflops}, {"peak_share", t.peakShare}, {"rounds_ms", t.roundsMs}};
    };
    nlohmann::json row = {{"name", s.name},
                          {"m", s.m},
                          {"k", s.k},
                          {"n", s.n},
                          {"b_transposed", s.product == Product::Scores},
                          {"gflop", 2e-9 * static_cast<double>(s.m) * static_cast<double>(s.k) * static_cast<double>(s.n)},
                          {"max_relative_difference", differences},
                          {"attnviz", timing(result.timings[0])}};
    for (std::size_t l = 0; l < usable.size(); ++l) row[usable[l]->name] = timing(result.timings[l + 1]);
    if (!usable.empty()) {
        row["best_library"] = result.best;
        row["attnviz_vs_best_library"] = result.ratio;
    }
    return row;
}

}  // namespace

int main(int argc, char** argv) {
    const Options options = parseOptions(argc, argv);
    std::vector<Shape> chosen;
    for (const Shape& s : shapes())
        if (s.name.find(options.filter) != std::string::npos) chosen.push_back(s);
    if (chosen.empty()) usageError("--filter: no shape's name contains " + quoted(options.filter));

    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    std::vector<std::string> warnings;
    for (const char* variable : {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"})
        if (const char* value = std::getenv(variable))
            warnings.push_back(std::string(variable) + "=" + quoted(value) +
                               " is set: OpenBLAS runs the kernels it names, not those it picks for this CPU");
    // How idle threads wait changes the times on a busy machine (a spinning thread loses its turn to
    // another process), for the kernels and BLIS (libgomp) and OpenBLAS (its own threads) alike.
    nlohmann::json environment = nlohmann::json::object();
    for (const char* variable : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_PROC_BIND", "OMP_PLACES", "OPENBLAS_THREAD_TIMEOUT"})
        if (const char* value = std::getenv(variable)) environment[variable] = value;
    const std::vector<Library> libraries = {loadLibrary("OpenBLAS", "libopenblas.so.0", "libopenblas0-pthread", threads),
                                            loadLibrary("BLIS", "libblis.so.4", "libblis4-openmp", threads)};
    std::vector<const Library*> usable;
    for (const Library& lib : libraries)
        if (lib.sgemm) usable.push_back(&lib);

    const KernelIsa isa = kernelIsa();
    const double peak = fmaPeak(isa, 0.3);
    nlohmann::json report = {{"cpu", cpuModel()},
                             {"threads", threads},
                             {"kernel_isa", kernelIsaName(isa)},
                             {"fma_peak_gflops", peak},
                             {"warnings", warnings},
                             {"environment", environment},
                             {"seconds", options.seconds},
                             {"rounds", options.rounds},
                             {"libraries", nlohmann::json::array()},
                             {"shapes", nlohmann::json::array()}};
    for (const Library& lib : libraries)
        report["libraries"].push_back({{"name", lib.name},
                                       {"soname", lib.soname},
                                       {"package", lib.package},
                                       {"status", lib.status},
                                       {"version", lib.version},
                                       {"core", lib.core}});
    if (!options.json) printHeader(report, usable, options.seconds / options.rounds);

    Prng prng(20240611);
    for (const Shape& s : chosen) {
        // 1. operands and one call of each peer.
        Bench bench;
        makeOperands(s, usable.size(), prng, bench);
        std::vector<std::function<void()>> calls = {oursCall(s, bench)};
        for (std::size_t l = 0; l < usable.size(); ++l) calls.push_back(libraryCall(s, bench, usable[l]->sgemm, bench.theirs[l]));
        for (const auto& call : calls) call();

        // 2. each library's C against the kernels': a wrong product's time means nothing.
        const double scale = std::max(bench.ours.cwiseAbs().maxCoeff(), 1e-30f);
        nlohmann::json differences = nlohmann::json::object();
        for (std::size_t l = 0; l < usable.size(); ++l) {
            const double difference = (bench.ours - bench.theirs[l]).cwiseAbs().maxCoeff() / scale;
            differences[usable[l]->name] = difference;
            if (!(difference < kTolerance)) {
                std::fprintf(stderr, "%s: error: %s: %s's C differs from attnviz's by %.3g of max |C| (limit %.0e)\n", kProgram,
                             s.name.c_str(), usable[l]->name.c_str(), difference, kTolerance);
                return 1;
            }
        }

        // 3. the rounds.
        const Result result = measure(s, calls, usable, options, peak);
        report["shapes"].push_back(rowJson(s, result, usable, differences));
        if (!options.json) printRow(s, result, !usable.empty(), peak);
    }
    if (options.json) std::printf("%s\n", report.dump(2).c_str());
    else if (!usable.empty())
        std::printf(
            "\nattnviz vs best library: the median over rounds of (fastest library's time / attnviz's time), the library\n"
            "named being the faster by median; above 1, attnviz is faster.\n");
    return 0;
}
