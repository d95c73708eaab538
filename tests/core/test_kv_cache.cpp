// The cost lab's KV cache against hand derivations: the two published configurations' bytes,
// MHA / GQA / MQA in proportion, every input error's exact message, and counts that never wrap
// (checked against 128-bit products over many random configurations).
#include "core/base/error.hpp"
#include "core/base/prng.hpp"
#include "core/labs/cost.hpp"
#include "core/scenario/model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace attnviz::core {
namespace {

__extension__ typedef unsigned __int128 u128;  // the oracle's exact products (GCC and Clang)

const KvCachePreset& preset(const std::string& name) {
    for (const KvCachePreset& p : kvCachePresets())
        if (p.name == name) return p;
    throw std::runtime_error("no preset " + name);
}

// What a configuration's check throws, as the panel shows it ("" when nothing is thrown).
std::string errorOf(const KvCacheConfig& c) {
    try {
        kvCacheRows(c);
    } catch (const InputError& e) {
        return e.message();
    }
    return "";
}

// Llama 2 7B (MHA, fp16): 2 · 32 layers · 32 kv heads · 128 · 2 bytes = 524,288 bytes = 512 KiB a
// token; × 4096 tokens = 2^31 bytes = 2 GiB.
TEST(KvCache, Llama2SevenBIs512KiBATokenAnd2GiBAt4096) {
    const KvCacheConfig& c = preset("Llama 2 7B").config;
    EXPECT_EQ(c.layers, 32);
    EXPECT_EQ(c.heads, 32);
    EXPECT_EQ(c.kvHeads, 32);
    EXPECT_EQ(c.headDim, 128);
    EXPECT_EQ(c.bytesPerValue, 2);
    EXPECT_EQ(c.tokens, 4096);
    EXPECT_EQ(kvCacheBytesPerToken(c), 524288u);
    EXPECT_EQ(kvCacheBytes(c), 2147483648u);
    EXPECT_EQ(formatBytes(kvCacheBytesPerToken(c)), "512.0 KiB");
    EXPECT_EQ(formatBytes(kvCacheBytes(c)), "2.0 GiB");
}

// Llama 3 8B (GQA, 8 kv heads, bf16): 2 · 32 · 8 · 128 · 2 = 131,072 bytes = 128 KiB a token;
// × 8192 tokens = 2^30 bytes = 1 GiB.
TEST(KvCache, Llama3EightBIs128KiBATokenAnd1GiBAt8192) {
    const KvCacheConfig& c = preset("Llama 3 8B").config;
    EXPECT_EQ(c.layers, 32);
    EXPECT_EQ(c.heads, 32);
    EXPECT_EQ(c.kvHeads, 8);
    EXPECT_EQ(c.headDim, 128);
    EXPECT_EQ(c.bytesPerValue, 2);
    EXPECT_EQ(c.tokens, 8192);
    EXPECT_EQ(kvCacheBytesPerToken(c), 131072u);
    EXPECT_EQ(kvCacheBytes(c), 1073741824u);
    EXPECT_EQ(formatBytes(kvCacheBytesPerToken(c)), "128.0 KiB");
    EXPECT_EQ(formatBytes(kvCacheBytes(c)), "1.0 GiB");
}

// The three rows for Llama 3 8B's shape: MHA as Llama 2 7B's 512 KiB a token, GQA a quarter of
// it (4 query heads a kv head), MQA a 32nd (16 KiB a token, 128 MiB at 8192).
TEST(KvCache, RowsForLlama3ShapeAreMhaGqaMqa) {
    const auto rows = kvCacheRows(preset("Llama 3 8B").config);
    EXPECT_STREQ(rows[0].name, "MHA");
    EXPECT_STREQ(rows[1].name, "GQA");
    EXPECT_STREQ(rows[2].name, "MQA");
    EXPECT_EQ(rows[0].kvHeads, 32);
    EXPECT_EQ(rows[1].kvHeads, 8);
    EXPECT_EQ(rows[2].kvHeads, 1);
    EXPECT_EQ(rows[0].perToken, 524288u);
    EXPECT_EQ(rows[1].perToken, 131072u);
    EXPECT_EQ(rows[2].perToken, 16384u);
    EXPECT_EQ(rows[0].perSequence, 4294967296u);  // 512 KiB × 8192 = 4 GiB
    EXPECT_EQ(rows[1].perSequence, 1073741824u);
    EXPECT_EQ(rows[2].perSequence, 134217728u);  // 128 MiB
    EXPECT_EQ(rows[0].groups, 1);
    EXPECT_EQ(rows[1].groups, 4);
    EXPECT_EQ(rows[2].groups, 32);
    // the GQA row is the configuration's own cache
    EXPECT_EQ(rows[1].perToken, kvCacheBytesPerToken(preset("Llama 3 8B").config));
    EXPECT_EQ(rows[1].perSequence, kvCacheBytes(preset("Llama 3 8B").config));
}

// MQA = MHA / heads and GQA = MHA · kv_heads / heads, for every divisor of several head counts.
TEST(KvCache, MqaIsMhaOverHeadsAndGqaInProportion) {
    for (const int heads : {1, 2, 12, 32, 64, 96}) {
        for (int kv = 1; kv <= heads; ++kv) {
            if (heads % kv != 0) continue;
            SCOPED_TRACE("heads " + std::to_string(heads) + ", kv " + std::to_string(kv));
            const KvCacheConfig c{24, heads, kv, 64, 4, 1000, 3};
            const auto rows = kvCacheRows(c);
            EXPECT_EQ(rows[2].perToken * static_cast<std::uint64_t>(heads), rows[0].perToken);
            EXPECT_EQ(rows[2].perSequence * static_cast<std::uint64_t>(heads), rows[0].perSequence);
            EXPECT_EQ(rows[1].perToken * static_cast<std::uint64_t>(heads), rows[0].perToken * static_cast<std::uint64_t>(kv));
            EXPECT_EQ(rows[1].groups, heads / kv);
            EXPECT_EQ(rows[0].perToken, 2u * 24u * static_cast<std::uint64_t>(heads) * 64u * 4u);
            // per sequence: per token × tokens × batch
            EXPECT_EQ(rows[1].perSequence, rows[1].perToken * 1000u * 3u);
        }
    }
}

// The middle row is the configuration's own, named for what it is.
TEST(KvCache, MiddleRowIsNamedForTheConfiguration) {
    KvCacheConfig c;  // 32 heads
    c.kvHeads = 32;
    EXPECT_STREQ(kvCacheRows(c)[1].name, "MHA");
    c.kvHeads = 1;
    EXPECT_STREQ(kvCacheRows(c)[1].name, "MQA");
    c.kvHeads = 2;
    EXPECT_STREQ(kvCacheRows(c)[1].name, "GQA");
    c.heads = c.kvHeads = 1;  // one head: MHA and MQA at once
    EXPECT_STREQ(kvCacheRows(c)[1].name, "MHA");
}

TEST(KvCache, EveryFieldBelowOneIsNamed) {
    const KvCacheConfig good;
    EXPECT_EQ(errorOf(good), "");
    struct Case {
        KvCacheConfig config;
        const char* message;
    };
    KvCacheConfig layers = good, heads = good, kv = good, dim = good, bytes = good, tokens = good, batch = good;
    layers.layers = 0;
    heads.heads = -4;
    kv.kvHeads = 0;
    dim.headDim = 0;
    bytes.bytesPerValue = 0;
    tokens.tokens = -1;
    batch.batch = 0;
    const Case cases[] = {
        {layers, "layers: must be at least 1, got 0"},         {heads, "heads: must be at least 1, got -4"},
        {kv, "kv_heads: must be at least 1, got 0"},           {dim, "head_dim: must be at least 1, got 0"},
        {bytes, "bytes_per_value: must be at least 1, got 0"}, {tokens, "tokens: must be at least 1, got -1"},
        {batch, "batch: must be at least 1, got 0"},
    };
    for (const Case& c : cases) {
        EXPECT_EQ(errorOf(c.config), c.message);
        EXPECT_THROW(kvCacheBytesPerToken(c.config), InputError);
        EXPECT_THROW(kvCacheBytes(c.config), InputError);
    }
}

TEST(KvCache, KvHeadsMustDivideHeads) {
    KvCacheConfig c;  // 32 heads
    c.kvHeads = 5;
    EXPECT_EQ(errorOf(c), "kv_heads: 5 does not divide 32 query heads (each kv head serves heads / kv_heads of them)");
    c.kvHeads = 64;  // more kv heads than query heads
    EXPECT_EQ(errorOf(c), "kv_heads: 64 does not divide 32 query heads (each kv head serves heads / kv_heads of them)");
    EXPECT_THROW(kvCacheBytes(c), InputError);
    c.kvHeads = 32;
    EXPECT_EQ(errorOf(c), "");
}

TEST(KvCache, LargestCountsAreExactAndOneMoreThrows) {
    constexpr long long maxLL = std::numeric_limits<long long>::max();
    constexpr int maxInt = std::numeric_limits<int>::max();
    // 2 · (2^63 - 1) = 2^64 - 2: the largest cache this shape has still fits
    KvCacheConfig c{1, 1, 1, 1, 1, maxLL, 1};
    EXPECT_EQ(kvCacheBytes(c), std::numeric_limits<std::uint64_t>::max() - 1);
    EXPECT_EQ(kvCacheBytesPerToken(c), 2u);
    c.batch = 2;  // 2^65 - 4
    EXPECT_EQ(errorOf(c), "batch: 2 takes the KV cache past 2^64 - 1 bytes (16 EiB)");
    // exactly 2^64 throws; 2^63 does not
    c = {1, 1, 1, 1, 1, 1LL << 62, 2};
    EXPECT_EQ(errorOf(c), "batch: 2 takes the KV cache past 2^64 - 1 bytes (16 EiB)");
    c.batch = 1;
    EXPECT_EQ(kvCacheBytes(c), std::uint64_t{1} << 63);
    // a sequence too long
    c = {32, 32, 32, 128, 2, maxLL, 1};
    EXPECT_EQ(errorOf(c), "tokens: 9223372036854775807 takes the KV cache past 2^64 - 1 bytes (16 EiB)");
    // the bytes a token past 64 bits: the factor that takes it over is named
    c = {maxInt, maxInt, maxInt, maxInt, 1, 1, 1};
    EXPECT_EQ(errorOf(c), "head_dim: 2147483647 takes the KV cache past 2^64 - 1 bytes (16 EiB)");
    EXPECT_THROW(kvCacheBytesPerToken(c), InputError);
    // the configuration's own cache fits (MQA), MHA's does not: the rows throw, the bytes do not
    c = {maxInt, 1 << 30, 1, maxInt, 1, 1, 1};
    EXPECT_EQ(kvCacheBytes(c), 2u * static_cast<std::uint64_t>(maxInt) * static_cast<std::uint64_t>(maxInt));
    EXPECT_EQ(errorOf(c), "head_dim: 2147483647 takes the KV cache past 2^64 - 1 bytes (16 EiB)");
}

// Random configurations from 1 up to each type's largest, on a log scale: the bytes are the exact
// 128-bit product whenever it fits in 64 bits, and an InputError otherwise (never a wrapped count).
TEST(KvCache, NeverWrapsAgainst128BitProducts) {
    Prng prng(2024);
    const auto logUniform = [&](int bits) {  // 1 … 2^bits - 1
        const int b = static_cast<int>(prng.nextU64() % static_cast<std::uint64_t>(bits)) + 1;
        const std::uint64_t top = (std::uint64_t{1} << b) - 1;
        return std::max<std::uint64_t>(1, prng.nextU64() & top);
    };
    int fits = 0, throws = 0;
    for (int n = 0; n < 20000; ++n) {
        KvCacheConfig c;
        c.layers = static_cast<int>(logUniform(31));
        c.kvHeads = static_cast<int>(logUniform(20));
        c.heads = c.kvHeads * static_cast<int>(logUniform(10));
        c.headDim = static_cast<int>(logUniform(31));
        c.bytesPerValue = static_cast<int>(logUniform(4));
        c.tokens = static_cast<long long>(logUniform(63));
        c.batch = static_cast<long long>(logUniform(20));
        const u128 token = u128{2} * static_cast<u128>(c.layers) * static_cast<u128>(c.kvHeads) * static_cast<u128>(c.headDim) *
                           static_cast<u128>(c.bytesPerValue);
        // the token's bytes stay below 2^88; a whole sequence's can pass 128 bits, so it is
        // compared by division and multiplied out only when it fits
        constexpr u128 max64 = std::numeric_limits<std::uint64_t>::max();
        const bool tokenFits = token <= max64;
        const bool sequenceFits = tokenFits && static_cast<u128>(c.tokens) <= max64 / token &&
                                  static_cast<u128>(c.batch) <= max64 / (token * static_cast<u128>(c.tokens));
        if (sequenceFits) {
            ++fits;
            EXPECT_EQ(kvCacheBytesPerToken(c), static_cast<std::uint64_t>(token));
            EXPECT_EQ(kvCacheBytes(c), static_cast<std::uint64_t>(token * static_cast<u128>(c.tokens) * static_cast<u128>(c.batch)));
        } else {
            ++throws;
            EXPECT_THROW(kvCacheBytes(c), InputError);
        }
    }
    // both sides were exercised
    EXPECT_GT(fits, 1000);
    EXPECT_GT(throws, 1000);
}

TEST(KvCache, PresetsAreValidAndNamed) {
    ASSERT_EQ(kvCachePresets().size(), 2u);
    for (const KvCachePreset& p : kvCachePresets()) {
        EXPECT_FALSE(std::string(p.name).empty());
        EXPECT_FALSE(std::string(p.note).empty());
        EXPECT_EQ(errorOf(p.config), "") << p.name;
    }
}

}  // namespace
}  // namespace attnviz::core
