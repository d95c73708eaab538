// Inputs that were mishandled, found by the fuzz targets (fuzz/) or by reading the code they
// exercise, each pinned to the fixed behaviour; the files are in fuzz/corpus/<target>/regression_*.
// Some old failures were undefined behaviour that only the sanitized build (ATTNVIZ_SANITIZE)
// reports; each test also checks a visible outcome where there is one.
#include "core/error.hpp"
#include "core/npy.hpp"
#include "core/scenario.hpp"
#include "core/tokenizer.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <limits>
#include <string>

using namespace attnviz::core;

namespace {

// A .npy header with this shape text and no data.
std::string npyWithShape(const std::string& shape) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(header.size() & 0xFF);
    out += static_cast<char>(header.size() >> 8);
    return out + header;
}

// The message of the InputError that decoding `bytes` throws ("" if none).
std::string npyError(const std::string& bytes) {
    try {
        decodeNpy(bytes, "w.npy");
    } catch (const InputError& e) {
        return e.message();
    }
    return "";
}

}  // namespace

// fuzz_tokenizer: "th\v\0at csat" at character level gave a token "\v" whose label was blank.
TEST(FuzzRegressions, EveryWhiteSpaceTokenHasAVisibleLabel) {
    const auto tokens = tokenize(std::string("th\v\0at csat", 11), Tokenizer::Char);
    ASSERT_EQ(tokens.size(), 11u);
    EXPECT_EQ(visibleToken(tokens[2]), "\u21B5");
    EXPECT_EQ(visibleToken("\f"), "\u21B5");
    EXPECT_EQ(visibleToken("\u2028"), "\u21B5");
    EXPECT_EQ(visibleToken("\u00A0"), "\u2423");
    EXPECT_EQ(visibleToken("\u3000"), "\u2423");
    EXPECT_EQ(visibleToken(" \t\r\n"), "\u2423\u21E5\u21B5\u21B5");  // unchanged
    EXPECT_EQ(visibleToken("a\u00A0"), "a\u00A0");                   // not only white space
    EXPECT_EQ(visibleToken(""), "");
}

// fuzz_npy: a (0, 4) array re-encoded passed memcpy a null source (UB the sanitized build reports).
TEST(FuzzRegressions, EmptyTensorRoundTrips) {
    Tensor empty;
    empty.shape = {0, 4};
    const Tensor back = decodeNpy(encodeNpy(empty), "e.npy");
    EXPECT_EQ(back.shape, empty.shape);
    EXPECT_TRUE(back.data.empty());
}

// fuzz_npy: a byte count beyond 2^64 was converted to unsigned long long for the message (UB; the
// message showed a wrong number).
TEST(FuzzRegressions, HugeShapeNamesItsByteCount) {
    EXPECT_EQ(npyError(npyWithShape("(777777777777777, 777777777777777)")),
              "w.npy: truncated data: shape (777777777777777, 777777777777777) needs 2.42e+30 bytes, the file has 0");
}

// Found reading decodeNpy (fuzz_npy confirms it): hundreds of 15-digit dimensions overflowed the
// element count to inf; a 0 after them made it NaN, which passed the size check and became a
// vector of 2^63 elements. At most 64 dimensions now.
TEST(FuzzRegressions, HugeDimensionsThenZeroAreRefused) {
    std::string shape = "(";
    for (int i = 0; i < 400; ++i) shape += "999999999999999, ";
    EXPECT_EQ(npyError(npyWithShape(shape + "0)")), "w.npy: npy shape has more than 64 dimensions");
    std::string zeros = "(";
    for (int i = 0; i < 64; ++i) zeros += "0, ";
    const Tensor t = decodeNpy(npyWithShape(zeros + ")"), "z.npy");
    EXPECT_EQ(t.shape.size(), 64u);
    EXPECT_TRUE(t.data.empty());
}

// fuzz_scenario: the smallest float is saved as its shortest text, 1e-45, which is below
// denorm_min as a double and was refused when the session was loaded back.
TEST(FuzzRegressions, SmallestFloatSurvivesSaveAndLoad) {
    const Scenario s = parseScenario(R"({"temperature": 1.401298464324817e-45, "X": [[1e-45, 0]]})", "s.json");
    EXPECT_EQ(s.temperature, std::numeric_limits<float>::denorm_min());
    const nlohmann::json saved = scenarioToJson(s);
    const Scenario loaded = parseScenario(saved.dump(), "session.json");
    EXPECT_EQ(loaded.temperature, s.temperature);
    EXPECT_EQ((*loaded.x)(0, 0), std::numeric_limits<float>::denorm_min());
    EXPECT_EQ(scenarioToJson(loaded), saved);
    // What rounds to 0 is still refused.
    EXPECT_THROW(parseScenario(R"({"temperature": 1e-46})", "s.json"), InputError);
}
