// Inputs that were mishandled, found by the fuzz targets (fuzz/) or by reading the code they
// exercise, each pinned to the fixed behaviour; the files are in fuzz/corpus/<target>/regression_*.
// Some old failures were undefined behaviour that only the sanitized build (ATTNVIZ_SANITIZE)
// reports; each test also checks a visible outcome where there is one.
#include "core/tokenizer.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace attnviz::core;

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
