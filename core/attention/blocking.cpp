#include "core/attention/blocking.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace attnviz::core {

namespace {

// What detectCaches assumes where the CPU says nothing: the smallest caches of the x86-64 CPUs
// with AVX2 (a smaller guess only costs speed).
constexpr CacheLevel kAssumedL1{32L * 1024, 8};
constexpr CacheLevel kAssumedL2{512L * 1024, 8};

// The first line of a small file, or "" (a sysfs attribute).
std::string firstLine(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::string line;
    if (in) std::getline(in, line);
    return line;
}

// "48K", "1024K", "32M", "65536" → bytes; 0 when it is not a size.
long parseSize(const std::string& text) {
    std::size_t i = 0;
    long value = 0;
    for (; i < text.size() && i < 12 && text[i] >= '0' && text[i] <= '9'; ++i) value = value * 10 + (text[i] - '0');
    if (i == 0 || i >= 12) return 0;
    const std::string unit = text.substr(i);
    if (unit.empty()) return value;
    if (unit == "K") return value * 1024;
    if (unit == "M") return value * 1024 * 1024;
    return 0;
}

int parseWays(const std::string& text) {
    const long ways = parseSize(text);
    return ways > 0 && ways <= 1024 ? static_cast<int>(ways) : 0;
}

// Rounds v down to a multiple of `step` within [lo, hi].
Eigen::Index roundedWithin(double v, Eigen::Index step, Eigen::Index lo, Eigen::Index hi) {
    const auto n = static_cast<Eigen::Index>(v) / step * step;
    return std::clamp(n, lo, hi);
}

}  // namespace

bool operator==(const KernelBlocking& a, const KernelBlocking& b) {
    return a.depth == b.depth && a.columns == b.columns && a.keys == b.keys && a.narrowDepth == b.narrowDepth && a.rowTiles == b.rowTiles;
}

CpuCaches readCaches(const std::string& folder) {
    CpuCaches caches;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("index", 0) != 0) continue;
        const std::string type = firstLine(entry.path() / "type");
        if (type != "Data" && type != "Unified") continue;
        const CacheLevel level{parseSize(firstLine(entry.path() / "size")), parseWays(firstLine(entry.path() / "ways_of_associativity"))};
        switch (parseSize(firstLine(entry.path() / "level"))) {
            case 1: caches.l1 = level; break;
            case 2: caches.l2 = level; break;
            case 3: caches.l3 = level; break;
            default: break;
        }
    }
    caches.source = "sysfs";
    return caches;
}

CpuCaches detectCaches() {
    CpuCaches caches = readCaches("/sys/devices/system/cpu/cpu0/cache");
    if (caches.l1.bytes > 0 && caches.l2.bytes > 0) return caches;
    caches = {};
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
    const auto conf = [](int name) { return std::max(0L, sysconf(name)); };
    caches.l1 = {conf(_SC_LEVEL1_DCACHE_SIZE), static_cast<int>(conf(_SC_LEVEL1_DCACHE_ASSOC))};
    caches.l2 = {conf(_SC_LEVEL2_CACHE_SIZE), static_cast<int>(conf(_SC_LEVEL2_CACHE_ASSOC))};
    caches.l3 = {conf(_SC_LEVEL3_CACHE_SIZE), static_cast<int>(conf(_SC_LEVEL3_CACHE_ASSOC))};
    if (caches.l1.bytes > 0 && caches.l2.bytes > 0) {
        caches.source = "sysconf";
        return caches;
    }
#endif
    caches.l1 = kAssumedL1;
    caches.l2 = kAssumedL2;
    caches.l3 = {};
    caches.source = "assumed";
    return caches;
}

KernelBlocking deriveBlocking(const CpuCaches& caches, int tileRows, int tileColumns) {
    const CacheLevel l1 = caches.l1.bytes > 0 ? caches.l1 : kAssumedL1;
    const CacheLevel l2 = caches.l2.bytes > 0 ? caches.l2 : kAssumedL2;
    // Unknown ways: the assumed caches' 8.
    const double w1 = l1.ways > 1 ? l1.ways : 8, w2 = l2.ways > 2 ? l2.ways : 8;
    constexpr double kFloat = 4;
    const Eigen::Index columnsStep = std::max(1, tileColumns);
    KernelBlocking b;
    b.depth = roundedWithin((w1 - 1) / w1 * static_cast<double>(l1.bytes) / ((tileRows + tileColumns) * kFloat), 16, 16, 1024);
    b.columns = roundedWithin((w2 - 2) / w2 * static_cast<double>(l2.bytes) / (static_cast<double>(b.depth) * kFloat), columnsStep,
                              columnsStep, 4096 / columnsStep * columnsStep);
    b.keys = b.depth;
    b.narrowDepth =
        roundedWithin((w2 - 2) / w2 * static_cast<double>(l2.bytes) / (static_cast<double>(columnsStep) * kFloat), 16, 16, 4096);
    return b;
}

}  // namespace attnviz::core
