// Attention computed elsewhere (core/io/imported_attention.hpp): files built in memory as numpy
// and safetensors write them, every structure and value check, the maps as the views read them.
#include "core/attention/head_stats.hpp"
#include "core/attention/qk_tiles.hpp"
#include "core/attention/rollout.hpp"
#include "core/base/error.hpp"
#include "core/base/files.hpp"
#include "core/base/format.hpp"
#include "core/base/prng.hpp"
#include "core/io/export.hpp"
#include "core/io/imported_attention.hpp"
#include "core/io/npy.hpp"
#include "tests/test_folder.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include <sys/stat.h>
#include <unistd.h>

namespace attnviz::core {
namespace {

std::uint16_t toHalf(float f) {
    // exact for the values used here: multiples of 2^-11 in [0, 2) and 0
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if ((bits & 0x7FFFFFFFU) == 0) return static_cast<std::uint16_t>(bits >> 16);
    const std::uint32_t exponent = ((bits >> 23) & 0xFFU) - 127 + 15;
    return static_cast<std::uint16_t>(((bits >> 16) & 0x8000U) | (exponent << 10) | ((bits >> 13) & 0x3FFU));
}

// Causal softmax rows of random logits: [layers, heads, t, t], rows quantised to multiples of
// 2^-11 (exact in float16) that still sum to 1 exactly.
std::vector<float> causalMaps(int layers, int heads, int t, std::uint64_t seed, bool causal = true) {
    Prng rng(seed);
    std::vector<float> out;
    for (int m = 0; m < layers * heads; ++m)
        for (int i = 0; i < t; ++i) {
            const int n = causal ? i + 1 : t;
            std::vector<int> units(static_cast<std::size_t>(n));
            int left = 2048;
            for (int j = 0; j + 1 < n; ++j) {
                units[static_cast<std::size_t>(j)] = static_cast<int>(rng.nextU64() % static_cast<std::uint64_t>(left / 2 + 1));
                left -= units[static_cast<std::size_t>(j)];
            }
            units[static_cast<std::size_t>(n - 1)] = left;
            for (int j = 0; j < t; ++j) out.push_back(j < n ? static_cast<float>(units[static_cast<std::size_t>(j)]) / 2048.0f : 0.0f);
        }
    return out;
}

std::string npyFile(const std::vector<long long>& shape, const std::vector<float>& values, bool half = false) {
    std::string out = npyHeader(shape, half ? "<f2" : "<f4");
    for (const float v : values) {
        if (half) {
            const std::uint16_t h = toHalf(v);
            out.append(reinterpret_cast<const char*>(&h), 2);
        } else {
            out.append(reinterpret_cast<const char*>(&v), 4);
        }
    }
    return out;
}

// A safetensors file of the named F32 (or other dtype, bytes given) tensors, in order.
struct StTensor {
    std::string name, dtype = "F32";
    std::vector<long long> shape;
    std::string bytes;
};
// metadata: the members of __metadata__ ("" for none).
std::string safetensorsFile(const std::vector<StTensor>& tensors, const std::string& metadata = "") {
    std::string header = metadata.empty() ? "{" : "{\"__metadata__\":{" + metadata + "}", data;
    for (const StTensor& t : tensors) {
        if (header.size() > 1) header += ",";
        header += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
        for (std::size_t i = 0; i < t.shape.size(); ++i) header += (i ? "," : "") + std::to_string(t.shape[i]);
        header += "],\"data_offsets\":[" + std::to_string(data.size()) + "," + std::to_string(data.size() + t.bytes.size()) + "]}";
        data += t.bytes;
    }
    header += "}";
    while ((8 + header.size()) % 8 != 0) header += ' ';
    std::string out(8, '\0');
    const std::uint64_t n = header.size();
    std::memcpy(out.data(), &n, 8);
    return out + header + data;
}
std::string floatBytes(const float* v, std::size_t n) { return std::string(reinterpret_cast<const char*>(v), 4 * n); }

// The import views `bytes`, which must outlive it: a temporary is refused.
std::shared_ptr<const ImportedAttention> fromString(const std::string& bytes, std::vector<std::string> labels = {}) {
    return ImportedAttention::fromBytes(std::as_bytes(std::span(bytes.data(), bytes.size())), "a.npy", std::move(labels));
}
std::shared_ptr<const ImportedAttention> fromString(std::string&& bytes, std::vector<std::string> labels = {}) = delete;

// The message an import's open and full check give, or "".
std::string problemOf(const std::string& bytes, std::vector<std::string> labels = {}) {
    try {
        fromString(bytes, std::move(labels))->checkAll();
    } catch (const InputError& e) {
        return e.message();
    }
    return "";
}

TEST(ImportedAttention, FourThreeAndTwoDimensionalNpy) {
    const std::vector<float> v = causalMaps(2, 3, 5, 1);
    const std::string four = npyFile({2, 3, 5, 5}, v);
    const auto a = fromString(four);
    EXPECT_EQ(a->layers(), 2);
    EXPECT_EQ(a->heads(), 3);
    EXPECT_EQ(a->queries(), 5);
    EXPECT_EQ(a->keys(), 5);
    EXPECT_TRUE(a->positionsOnly());
    EXPECT_EQ(a->labels(), (std::vector<std::string>{"0", "1", "2", "3", "4"}));
    EXPECT_EQ(a->describe(), "a.npy · 2 layers × 3 heads · T = 5 · float32");
    EXPECT_FALSE(a->checked(1, 2));
    a->checkAll();
    EXPECT_TRUE(a->checked(1, 2));
    std::vector<float> scratch;
    const MatRef w = a->weights(1, 2, scratch);
    // in place: the view points into the file's bytes, nothing was copied
    EXPECT_TRUE(scratch.empty());
    EXPECT_EQ(reinterpret_cast<const char*>(w.data()), four.data() + npyHeader({2, 3, 5, 5}).size() + 125 * 4);
    EXPECT_EQ(w(4, 3), v[static_cast<std::size_t>(5 * 25 + 4 * 5 + 3)]);
    EXPECT_TRUE(a->layerSettings(0).causal);

    const std::string threeFile = npyFile({3, 5, 5}, std::vector<float>(v.begin(), v.begin() + 75));
    const auto three = fromString(threeFile);
    EXPECT_EQ(three->layers(), 1);
    EXPECT_EQ(three->heads(), 3);
    const std::string twoFile = npyFile({5, 5}, std::vector<float>(v.begin(), v.begin() + 25));
    const auto two = fromString(twoFile, {"a", "b", "c", "d", "e"});
    EXPECT_EQ(two->layers(), 1);
    EXPECT_EQ(two->heads(), 1);
    EXPECT_FALSE(two->positionsOnly());
    EXPECT_EQ(two->labels()[4], "e");
}

TEST(ImportedAttention, Float16IsWidenedExactly) {
    const std::vector<float> v = causalMaps(1, 2, 6, 2);
    const std::string file = npyFile({1, 2, 6, 6}, v, true);
    const auto a = fromString(file);
    EXPECT_EQ(a->dtype(), MapDType::F16);
    a->checkAll();
    std::vector<float> scratch;
    const MatRef w = a->weights(0, 1, scratch);
    EXPECT_EQ(w.data(), scratch.data());
    for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) EXPECT_EQ(w(i, j), v[static_cast<std::size_t>(36 + i * 6 + j)]);
}

TEST(ImportedAttention, FewerQueriesZeroRowsAndBidirectionalMaps) {
    // T_q = 2 < T_k = 3: not causal; row 1 all zero (fully masked) is allowed
    const std::string f = npyFile({2, 3}, {0.25f, 0.75f, 0.0f, 0, 0, 0});
    const auto a = fromString(f);
    a->checkAll();
    EXPECT_FALSE(a->layerSettings(0).causal);
    // a full (bidirectional) map is not causal
    const std::string bFile = npyFile({1, 4, 4}, causalMaps(1, 1, 4, 3, false));
    const auto b = fromString(bFile);
    b->checkAll();
    EXPECT_FALSE(b->layerSettings(0).causal);
    // a row that sums to 0.9995 is within 1e-3
    EXPECT_EQ(problemOf(npyFile({2, 2}, {1, 0, 0.4995f, 0.5f})), "");
}

TEST(ImportedAttention, BadFilesNameTheFirstBadPlace) {
    const std::vector<float> v = causalMaps(2, 2, 4, 4);
    const std::string good = npyFile({2, 2, 4, 4}, v);
    ASSERT_EQ(problemOf(good), "");
    EXPECT_EQ(problemOf(npyFile({1, 1, 1, 2, 2}, {1, 0, 0, 1})),
              "a.npy: shape (1, 1, 1, 2, 2) is not [layers, heads, T_q, T_k], [heads, T, T] or [T, T]");
    EXPECT_EQ(problemOf(npyFile({4}, {1, 0, 0, 0})), "a.npy: shape (4,) is not [layers, heads, T_q, T_k], [heads, T, T] or [T, T]");
    EXPECT_EQ(problemOf(npyFile({0, 4}, {})), "a.npy: shape (0, 4) holds no weights");
    EXPECT_EQ(problemOf(npyFile({3, 2}, {1, 0, 0, 1, 0.5f, 0.5f})),
              "a.npy: shape (3, 2) has more queries (T_q = 3) than keys (T_k = 2): the queries must be the first keys");
    std::string f8 = npyHeader({2, 2}, "<f8") + std::string(32, '\0');
    EXPECT_EQ(problemOf(f8), "a.npy: dtype '<f8' is not supported: float32 or float16 (save with .astype(np.float32))");
    std::string big = good;
    big.replace(big.find("<f4"), 3, ">f4");
    EXPECT_EQ(problemOf(big), "a.npy: dtype '>f4' is not supported: float32 or float16 (save with .astype(np.float32))");
    std::string fortran = good;
    fortran.replace(fortran.find("False"), 5, "True ");
    EXPECT_EQ(problemOf(fortran), "a.npy: Fortran order is not supported: save a C-ordered array (np.ascontiguousarray)");
    EXPECT_EQ(problemOf(good.substr(0, good.size() - 1)),
              "a.npy: truncated: shape (2, 2, 4, 4) needs 256 bytes, the file has 255 after its header");
    EXPECT_EQ(problemOf(good + '\0'),
              "a.npy: the header's shape (2, 2, 4, 4) accounts for 256 bytes but 257 follow it: the header does not describe this file");
    std::string longHeader = good;
    longHeader[8] = '\xFF';
    longHeader[9] = '\x7F';
    EXPECT_EQ(problemOf(longHeader.substr(0, 200)), "a.npy: truncated .npy header");
    EXPECT_EQ(problemOf("hello, world"), "a.npy: neither a .npy nor a safetensors file");

    // values: layer 1 · head 0 · row 2 · key 1 (index 32 + 8 + 1)
    const auto with = [&](float x) {
        std::vector<float> w = v;
        w[41] = x;
        return npyFile({2, 2, 4, 4}, w);
    };
    EXPECT_EQ(problemOf(with(std::numeric_limits<float>::quiet_NaN())),
              "a.npy: layer 1 · head 0 · row 2 · key 1: weight nan is not a finite number");
    EXPECT_EQ(problemOf(with(std::numeric_limits<float>::infinity())),
              "a.npy: layer 1 · head 0 · row 2 · key 1: weight inf is not a finite number");
    EXPECT_EQ(problemOf(with(-1e-6f)), "a.npy: layer 1 · head 0 · row 2 · key 1: weight -1e-06 is negative");
    std::vector<float> over = v;
    over[41] += 0.002f;
    EXPECT_EQ(problemOf(npyFile({2, 2, 4, 4}, over)).rfind("a.npy: layer 1 · head 0 · row 2: weights sum to 1.0020, not 1", 0), 0u);
    std::vector<float> under = v;
    under[40] = 0;
    under[41] = 0;
    under[42] = 0.5f;
    EXPECT_NE(problemOf(npyFile({2, 2, 4, 4}, under)).find("row 2: weights sum to 0.5000, not 1 (±1e-3; a row of zeros is allowed)"),
              std::string::npos);
    std::vector<float> negZero = v;
    negZero[3] = -0.0f;  // row 0 key 3 of a causal map: -0 is allowed and counts as zero
    EXPECT_EQ(problemOf(npyFile({2, 2, 4, 4}, negZero)), "");
    // the first bad map in (layer, head) order wins whatever order the threads finish in
    std::vector<float> two = v;
    two[16 * 3 + 5] = -1;
    two[16 * 1 + 5] = std::numeric_limits<float>::infinity();
    EXPECT_EQ(problemOf(npyFile({2, 2, 4, 4}, two)).rfind("a.npy: layer 0 · head 1 · row 1 · key 1: weight inf", 0), 0u);
    // float16 infinity and negative by their bits
    std::string halfBad = npyFile({2, 2}, {1, 0, 0.5f, 0.5f}, true);
    const std::uint16_t inf = 0x7C00, neg = 0x8001;
    std::memcpy(halfBad.data() + halfBad.size() - 2, &inf, 2);
    EXPECT_EQ(problemOf(halfBad), "a.npy: layer 0 · head 0 · row 1 · key 1: weight inf is not a finite number");
    std::memcpy(halfBad.data() + halfBad.size() - 2, &neg, 2);
    EXPECT_EQ(problemOf(halfBad), "a.npy: layer 0 · head 0 · row 1 · key 1: weight -5.9604645e-08 is negative");
}

TEST(ImportedAttention, TokensMustMatchTheKeys) {
    const std::string f = npyFile({2, 2}, {1, 0, 0.5f, 0.5f});
    try {
        fromString(f, {"a", "b", "c"});
        FAIL();
    } catch (const InputError& e) {
        EXPECT_EQ(e.message(), "tokens: has 3 tokens (one a line), the maps in a.npy have 2 keys");
    }
    Limits small;
    small.maxTokens = 1;
    EXPECT_THROW(ImportedAttention::fromBytes(std::as_bytes(std::span(f.data(), f.size())), "a.npy", {}, small), InputError);
}

TEST(ImportedAttention, SafetensorsOneTensorALayerOrAll) {
    const std::vector<float> v = causalMaps(3, 2, 4, 5);
    const std::size_t layer = 2 * 16;
    std::vector<StTensor> layers;
    for (int l = 0; l < 3; ++l)
        layers.push_back({"layer." + std::to_string(l), "F32", {1, 2, 4, 4}, floatBytes(v.data() + l * layer, layer)});
    const std::string perLayer = safetensorsFile(layers);
    const auto a = fromString(perLayer);
    EXPECT_EQ(a->layers(), 3);
    EXPECT_EQ(a->heads(), 2);
    a->checkAll();
    std::vector<float> scratch;
    EXPECT_EQ(a->weights(2, 1, scratch)(3, 2), v[2 * layer + 16 + 14]);
    EXPECT_TRUE(a->layerSettings(2).causal);
    const std::string all = safetensorsFile({{"attentions", "F32", {3, 2, 4, 4}, floatBytes(v.data(), v.size())}});
    const auto b = fromString(all);
    b->checkAll();
    EXPECT_EQ(b->weights(2, 1, scratch)(3, 2), v[2 * layer + 16 + 14]);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(b->mapBytes(1, 0).data()), 64), floatBytes(v.data() + layer, 16));

    // heads of different T, a gap, a batch, BF16, another tensor
    std::vector<StTensor> uneven = layers;
    uneven[1] = {"layer.1", "F32", {2, 2, 2}, floatBytes(v.data(), 8)};
    EXPECT_EQ(problemOf(safetensorsFile(uneven)),
              "a.npy: layer.1 is [2, 2, 2], layer.0 [2, 4, 4]: every layer's maps must have the same heads and T");
    std::vector<StTensor> gap = {layers[0], layers[2]};
    EXPECT_EQ(problemOf(safetensorsFile(gap)), "a.npy: no tensor 'layer.1' (found layer.0, layer.2)");
    EXPECT_EQ(problemOf(safetensorsFile({{"layer.0", "F32", {2, 1, 4, 4}, floatBytes(v.data(), 32)}})),
              "a.npy: layer.0: shape [2, 1, 4, 4] is a batch of 2: save one sequence (attentions[l][b])");
    EXPECT_EQ(problemOf(safetensorsFile({{"layer.0", "BF16", {1, 4, 4}, std::string(32, '\0')}})),
              "a.npy: layer.0: dtype BF16 is not supported: F32 or F16 (convert with .float() or .half())");
    EXPECT_EQ(problemOf(safetensorsFile({layers[0], {"lm_head", "F32", {1}, floatBytes(v.data(), 1)}})),
              "a.npy: tensor 'lm_head' is neither 'attentions' nor layer.N (one tensor a layer: layer.0, layer.1, …)");
}

TEST(ImportedAttention, MapsOverFloat16FreeEveryWidenedCopy) {
    const std::vector<float> v = causalMaps(3, 4, 8, 6);
    const std::string f32 = npyFile({3, 4, 8, 8}, v), f16 = npyFile({3, 4, 8, 8}, v, true);
    const auto a = fromString(f32), b = fromString(f16);
    a->checkAll();
    b->checkAll();
    AttentionMaps ma = importedMaps(a, a->labels()), mb = importedMaps(b, b->labels());
    std::atomic<int> reads{0}, done{0};  // the sweeps read the maps from several threads
    const auto weights = mb.weights;
    const auto finished = mb.done;
    mb.weights = [&](int l, int h) {
        ++reads;
        return weights(l, h);
    };
    mb.done = [&](int l, int h) {
        ++done;
        finished(l, h);
    };
    EXPECT_TRUE(ma.settings[2].causal);
    const std::vector<HeadStats> sa = allHeadStats(ma), sb = allHeadStats(mb);
    EXPECT_EQ(reads.load(), 12);
    EXPECT_EQ(done.load(), 12);
    ASSERT_EQ(sa.size(), sb.size());
    for (std::size_t k = 0; k < sa.size(); ++k) {
        EXPECT_EQ(sa[k].entropy, sb[k].entropy);
        EXPECT_EQ(sa[k].first, sb[k].first);
    }
    const Mat ra = attentionRollout(ma, 2, {}), rb = attentionRollout(mb, 2, {});
    EXPECT_EQ((ra - rb).cwiseAbs().maxCoeff(), 0.0f);
}

TEST(ImportedAttention, ShownLayerAsAScenarioReadsIt) {
    const std::vector<float> v = causalMaps(2, 3, 5, 7);
    const std::string file = npyFile({2, 3, 5, 5}, v);
    const auto a = fromString(file, {"a", "b", "c", "d", "e"});
    const ImportedLayer layer = importedLayer(*a, 1);
    EXPECT_TRUE(a->checked(1, 0));
    EXPECT_FALSE(a->checked(0, 0));
    EXPECT_EQ(layer.model.heads, 3);
    EXPECT_EQ(layer.model.keyTokens[2], "c");
    ASSERT_EQ(layer.forward.heads.size(), 3u);
    EXPECT_EQ(layer.forward.heads[2].weights(4, 1), v[static_cast<std::size_t>(75 + 50 + 21)]);
    EXPECT_TRUE(layer.settings.causal);
    EXPECT_THROW(importedLayer(*a, 2), InputError);
    Limits tight;
    tight.maxBytes = 100;
    EXPECT_THROW(importedLayer(*a, 0, tight), InputError);
}

// A file of queries and keys (scripts/export_attention.py --qk): F32 values, two query heads a key
// head, a window on layer 1; every map made on demand equals softmax(scaling · q kᵀ) under the
// mask, computed here in double, through importedMaps' rows and tiles, the layer made whole, and a
// zoomed region's tiles.
TEST(ImportedAttention, QueriesAndKeysMakeEveryMapOnDemand) {
    constexpr int layers = 2, heads = 4, kvHeads = 2, t = 600, d = 8;
    const int windows[layers] = {0, 40};
    const float scaling = 0.3f;
    Prng rng(17);
    std::vector<std::vector<float>> q(layers), k(layers);
    std::vector<StTensor> tensors;
    for (int l = 0; l < layers; ++l) {
        for (int n = 0; n < heads * t * d; ++n) q[l].push_back(static_cast<float>(rng.normal()) * 1.5f);
        for (int n = 0; n < kvHeads * t * d; ++n) k[l].push_back(static_cast<float>(rng.normal()) * 1.5f);
        tensors.push_back({"layer." + std::to_string(l) + ".q", "F32", {heads, t, d}, floatBytes(q[l].data(), q[l].size())});
        tensors.push_back({"layer." + std::to_string(l) + ".k", "F32", {1, kvHeads, t, d}, floatBytes(k[l].data(), k[l].size())});
    }
    const std::string bytes = safetensorsFile(tensors, R"("format":"attnviz-qk","scaling":"0.3","causal":"true","sliding_windows":"0,40")");
    const auto a = ImportedAttention::fromBytes(std::as_bytes(std::span(bytes.data(), bytes.size())), "qk.safetensors");
    ASSERT_TRUE(a->queriesAndKeys());
    EXPECT_EQ(a->layers(), layers);
    EXPECT_EQ(a->heads(), heads);
    EXPECT_EQ(a->keys(), t);
    EXPECT_EQ(a->kvHeadOf(3), 1);
    EXPECT_EQ(a->layerSettings(1).window, 40);
    EXPECT_TRUE(a->layerSettings(0).causal);
    a->checkAll();
    const auto reference = [&](int l, int h) {
        Eigen::MatrixXd m = Eigen::MatrixXd::Zero(t, t);
        const int g = h / (heads / kvHeads);
        for (int i = 0; i < t; ++i) {
            std::vector<double> s(static_cast<std::size_t>(t), -std::numeric_limits<double>::infinity());
            double top = -std::numeric_limits<double>::infinity();
            for (int j = 0; j <= i; ++j) {
                if (windows[l] > 0 && i - j >= windows[l]) continue;
                double dot = 0;
                for (int c = 0; c < d; ++c)
                    dot += static_cast<double>(q[l][static_cast<std::size_t>((h * t + i) * d + c)]) *
                           k[l][static_cast<std::size_t>((g * t + j) * d + c)];
                s[static_cast<std::size_t>(j)] = scaling * dot;
                top = std::max(top, s[static_cast<std::size_t>(j)]);
            }
            double sum = 0;
            for (int j = 0; j < t; ++j) sum += std::exp(s[static_cast<std::size_t>(j)] - top);
            for (int j = 0; j < t; ++j) m(i, j) = std::exp(s[static_cast<std::size_t>(j)] - top) / sum;
        }
        return m;
    };
    const AttentionMaps maps = importedMaps(a, a->labels());
    ASSERT_TRUE(maps);
    EXPECT_FALSE(maps.whole());
    EXPECT_EQ(maps.kvHead, (std::vector<int>{0, 0, 1, 1}));
    for (const auto& [l, h] : {std::pair{0, 1}, std::pair{1, 2}, std::pair{1, 3}}) {
        const Eigen::MatrixXd want = reference(l, h);
        Mat scratch;
        // rows past a block of log-sum-exp (512) first, then the start: each block made once
        const MatRef late = maps.rowBlock(l, h, 500, 100, scratch);
        EXPECT_LT((late.cast<double>() - want.middleRows(500, 100)).cwiseAbs().maxCoeff(), 1e-6) << l << " " << h;
        std::vector<float> whole(static_cast<std::size_t>(t * t));
        a->copyWeights(l, h, whole.data());
        EXPECT_LT((Eigen::Map<const Mat>(whole.data(), t, t).cast<double>() - want).cwiseAbs().maxCoeff(), 1e-6) << l << " " << h;
        // a region's tiles: only its keys' tiles, the others' weights never made
        Mat region = Mat::Zero(64, t);
        RowsSink sink(region, 520);
        a->weightTiles(l, h, 520, 64, 300, 420, sink);
        EXPECT_LT((region.middleCols(300, 120).cast<double>() - want.block(520, 300, 64, 120)).cwiseAbs().maxCoeff(), 1e-6);
        EXPECT_EQ(region.leftCols(256).cwiseAbs().maxCoeff(), 0.0f);  // the tile of keys 0 … 255 holds none of them
    }
    // the layer whole while it fits, else read from the file
    const ImportedLayer whole = importedLayer(*a, 1);
    EXPECT_TRUE(whole.whole);
    EXPECT_LT((whole.forward.heads[2].weights.cast<double>() - reference(1, 2)).cwiseAbs().maxCoeff(), 1e-6);
    Limits small;
    small.shownLayerBytes = static_cast<std::uint64_t>(heads) * t * t * 4 - 1;
    EXPECT_FALSE(layerMadeWhole(*a, small));
    const ImportedLayer read = importedLayer(*a, 1, small);
    EXPECT_FALSE(read.whole);
    EXPECT_EQ(read.forward.heads.size(), static_cast<std::size_t>(heads));
    EXPECT_EQ(read.forward.heads[0].weights.size(), 0);
    EXPECT_EQ(read.settings.window, 40);
    EXPECT_NE(a->describe().find("float32 queries and keys"), std::string::npos) << a->describe();
}

TEST(ImportedAttention, AMapWithNoWeightIsRefusedAZeroRowIsNot) {
    // a file of zeros: what numpy.lib.format.open_memmap leaves when the export stops before the values
    EXPECT_EQ(problemOf(npyFile({2, 2, 3, 3}, std::vector<float>(36, 0.0f))),
              "a.npy: layer 0 · head 0 · holds no weight at all: every row is zero (what a file created but never filled, such as an "
              "interrupted export, holds)");
    // one map of zeros among good ones is named
    std::vector<float> v = causalMaps(2, 2, 3, 5);
    std::fill(v.begin() + 27, v.begin() + 36, 0.0f);
    EXPECT_EQ(problemOf(npyFile({2, 2, 3, 3}, v)).rfind("a.npy: layer 1 · head 1 · holds no weight at all", 0), 0u);
    EXPECT_EQ(problemOf(npyFile({2, 2}, {0, 0, 0, 0}, true)).rfind("a.npy: layer 0 · head 0 · holds no weight at all", 0), 0u);
    // a fully masked row beside rows with weight is allowed
    EXPECT_EQ(problemOf(npyFile({2, 2}, {0, 0, 0.5f, 0.5f})), "");
}

// bfloat16's significand has 8 bits: rounding each weight moves it by up to 2^-8 of itself.
float toBfloat16(double v) {
    const auto bits = std::bit_cast<std::uint32_t>(static_cast<float>(v));
    const std::uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;  // to nearest, ties to even
    return std::bit_cast<float>(rounded);
}

TEST(ImportedAttention, RowsRoundedToBfloat16OrFloat16AreWithinTheirPrecision) {
    // a softmax row rounded to bfloat16 and widened falls short of 1 by more than 1e-3, as a BF16
    // model's maps do: seven weights just under half a bfloat16 step (2^-10 here) past one
    std::vector<double> exact(7, 0.125 + 4.49 / 1024);
    exact.push_back(1 - 7 * exact[0]);
    std::vector<float> row;
    double sum = 0;
    for (const double e : exact) row.push_back(toBfloat16(e)), sum += row.back();
    ASSERT_LT(std::abs(sum - 1), std::ldexp(1.0, -8));
    ASSERT_GT(std::abs(sum - 1), 1e-3);  // what the float32 tolerance alone refused
    std::vector<float> map;
    for (int i = 0; i < 8; ++i) map.insert(map.end(), row.begin(), row.end());
    EXPECT_EQ(problemOf(npyFile({8, 8}, map)), "");
    // the same sum from values that are not all bfloat16 is still refused, and says its rule
    std::vector<float> f32 = map;
    f32[0] = std::nextafter(f32[0], 1.0f);
    EXPECT_NE(problemOf(npyFile({8, 8}, f32)).find("weights sum to 0.99"), std::string::npos);
    EXPECT_NE(problemOf(npyFile({8, 8}, f32)).find("(±1e-3; a row of zeros is allowed)"), std::string::npos);
    // past bfloat16's rounding, refused with the rule named
    std::vector<float> far = map;
    far[0] = toBfloat16(0.1279 - 0.01);
    double farSum = 0;
    for (int j = 0; j < 8; ++j) farSum += far[static_cast<std::size_t>(j)];
    EXPECT_EQ(problemOf(npyFile({8, 8}, far)),
              "a.npy: layer 0 · head 0 · row 0: weights sum to " + formatFixed(farSum, 4) +
                  ", not 1 (±0.0049: 1e-3 and bfloat16's rounding, which the values show; a row of zeros is allowed)");
    EXPECT_NEAR(rowSumTolerance(MapDType::F32, true, 8), 1e-3 + 1.0 / 256, 1e-12);
    EXPECT_NEAR(rowSumTolerance(MapDType::F16, false, 4096), 1e-3 + 1.0 / 2048 + 4096.0 / (1 << 25), 1e-12);
    EXPECT_EQ(rowSumTolerance(MapDType::F32, false, 4096), 1e-3);
}

TEST(ImportedAttention, WhatIsWidenedCountsAgainstTheLimit) {
    const std::vector<float> v = causalMaps(1, 2, 16, 9);
    const std::string f32 = npyFile({1, 2, 16, 16}, v), f16 = npyFile({1, 2, 16, 16}, v, true);
    const auto a = fromString(f32), b = fromString(f16);
    EXPECT_FALSE(a->widens());
    EXPECT_TRUE(b->widens());
    Limits limits;
    limits.maxBytes = 2 * 16 * 16 * 4;  // the layer's copy, exactly
    EXPECT_NO_THROW(importedLayer(*a, 0, limits));
    try {
        importedLayer(*b, 0, limits);
        ADD_FAILURE() << "float16 maps widened past the limit were accepted";
    } catch (const InputError& e) {
        EXPECT_EQ(e.message().rfind("--max-memory: the shown layer's 2 maps of 16 x 16 need 2.0 KiB and widening them to float32 "
                                    "for the views of every layer ",
                                    0),
                  0u)
            << e.message();
    }
    // widened straight into place: the values are the file's
    limits.maxBytes = 1 << 20;
    const ImportedLayer layer = importedLayer(*b, 0, limits);
    EXPECT_EQ(layer.forward.heads[1].weights(15, 3), v[256 + 15 * 16 + 3]);
}

class ImportedFiles : public testfs::TestFolder {
protected:
    static std::string errorOf(const std::string& path) {
        try {
            ImportedAttention::open(path);
        } catch (const InputError& e) {
            return e.message();
        }
        return "";
    }
};

TEST_F(ImportedFiles, WhatIsNotAFileIsRefusedAtOnce) {
    const std::string missing = path("missing.npy").string();
    EXPECT_EQ(errorOf(missing), missing + ": no such file");
    EXPECT_EQ(errorOf(m_dir.string()), m_dir.string() + ": is a directory, expected a .npy or safetensors file of attention weights");
    const std::string fifo = path("pipe.npy").string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(errorOf(fifo), fifo + ": is not a regular file (a pipe or a device cannot be mapped)");  // not a wait for a writer
    const std::string empty = path("empty.npy").string();
    testfs::writeFile(empty, "");
    EXPECT_EQ(errorOf(empty), empty + ": is empty, expected a .npy or safetensors file of attention weights");
}

TEST_F(ImportedFiles, TokensFileByteOrderMarkAndEmptyLines) {
    const std::string file = path("a.npy").string(), tokens = path("tokens.txt").string();
    testfs::writeFile(file, npyFile({2, 2}, {1, 0, 0.5f, 0.5f}));
    testfs::writeFile(tokens, "\xEF\xBB\xBFthe\r\ncat\r\n");  // as Windows' Notepad saves it
    EXPECT_EQ(ImportedAttention::open(file)->labels(), (std::vector<std::string>{"the", "cat"}));
    testfs::writeFile(tokens, "the\n\ncat\n");
    EXPECT_EQ(errorOf(file), tokens + ": line 2 is empty: one token a line, each shown as its label (a space is a token; nothing is not)");
    testfs::writeFile(tokens, " \ncat\n");  // a space is a token
    EXPECT_EQ(ImportedAttention::open(file)->labels(), (std::vector<std::string>{" ", "cat"}));
}

// A map of a MiB or more goes from the mapping to write(2) directly: a file truncated after its
// check makes that write fail with EFAULT, which must be reported as the import that changed.
TEST_F(ImportedFiles, AnImportTruncatedWhileWrittenBackIsTheChangedFile) {
    const int t = 512;
    std::vector<float> v;
    for (int i = 0; i < t; ++i)
        for (int j = 0; j < t; ++j) v.push_back(j <= i ? 1.0f / static_cast<float>(i + 1) : 0.0f);
    const std::string file = path("a.npy").string();
    testfs::writeFile(file, npyFile({1, 1, t, t}, v));
    const auto a = ImportedAttention::open(file);
    a->checkAll();
    ASSERT_EQ(::truncate(file.c_str(), 0), 0);
    std::string message;
    {
        FileBatch batch;
        try {
            exportImportedNpyDir(batch, path("out").string(), *a, nullptr);
            batch.commit();
        } catch (const InputError& e) {
            message = e.message();
        }
    }
    EXPECT_EQ(message, file + ": changed while it was read; open it again");
    EXPECT_FALSE(std::filesystem::exists(path("out")));  // the folder made for it is gone again
}

}  // namespace
}  // namespace attnviz::core
