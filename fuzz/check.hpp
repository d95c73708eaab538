// What the fuzz targets share: a failed property aborts (libFuzzer saves the input as a crash),
// an independent strict UTF-8 validator to judge the tokenizer's output by, and the thread's CPU
// time for the targets that hold work to a budget linear in their input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <string_view>

namespace attnviz::fuzz {

// This thread's CPU time in seconds (not the wall clock: other work on the machine does not count).
inline double cpuSeconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Aborts with `what` (and `detail`) on stderr when a property does not hold.
inline void check(bool ok, const char* what, const std::string& detail = {}) {
    if (ok) return;
    std::fprintf(stderr, "\nproperty failed: %s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str());
    std::abort();
}

// RFC 3629: shortest form, no surrogates, nothing above U+10FFFF.
inline bool isValidUtf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto b0 = static_cast<unsigned char>(s[i]);
        std::size_t n = 0;
        unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
        if (b0 < 0x80) n = 0;
        else if (b0 >= 0xC2 && b0 <= 0xDF) n = 1;
        else if (b0 == 0xE0) n = 2, lo = 0xA0;
        else if (b0 >= 0xE1 && b0 <= 0xEC) n = 2;
        else if (b0 == 0xED) n = 2, hi = 0x9F;
        else if (b0 >= 0xEE && b0 <= 0xEF) n = 2;
        else if (b0 == 0xF0) n = 3, lo = 0x90;
        else if (b0 >= 0xF1 && b0 <= 0xF3) n = 3;
        else if (b0 == 0xF4) n = 3, hi = 0x8F;
        else return false;
        if (i + n >= s.size() && n > 0) return false;
        for (std::size_t k = 1; k <= n; ++k) {
            const auto b = static_cast<unsigned char>(s[i + k]);
            if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return false;
        }
        i += n + 1;
    }
    return true;
}

}  // namespace attnviz::fuzz
