// The sweep over every head's map (sweepHeads) when the maps are made on demand, a block of rows at
// a time: the statistics, thumbnails and profiles of a pass that keeps no maps equal the kept pass's, the
// thumbnails pooled from blocks equal poolBlocks' of the whole map under every mask, and a sweep
// stops when asked.
#include "core/attention/colormap.hpp"
#include "core/attention/head_stats.hpp"
#include "core/base/prng.hpp"
#include "core/models/decoder/decoder.hpp"
#include "core/models/loaded_model.hpp"
#include "core/models/run_maps.hpp"
#include "tests/every_mask.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_llama.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <new>

using namespace attnviz;
using namespace attnviz::core;

namespace {

class HeadSweepTest : public testfs::TestFolder {};

void expectSameStats(const std::vector<HeadStats>& got, const std::vector<HeadStats>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
        SCOPED_TRACE("head " + std::to_string(k));
        EXPECT_NEAR(got[k].entropy, want[k].entropy, 2e-6);
        EXPECT_NEAR(got[k].entropyShare, want[k].entropyShare, 2e-6);
        EXPECT_NEAR(got[k].distance, want[k].distance, 2e-5);
        EXPECT_NEAR(got[k].self, want[k].self, 1e-6);
        EXPECT_NEAR(got[k].previous, want[k].previous, 1e-6);
        EXPECT_NEAR(got[k].first, want[k].first, 1e-6);
        EXPECT_NEAR(got[k].duplicate, want[k].duplicate, 1e-6);
        EXPECT_NEAR(got[k].induction, want[k].induction, 1e-6);
    }
}

void expectSameTexels(const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
        if (isMaskedTexel(want[k])) {
            EXPECT_TRUE(isMaskedTexel(got[k])) << k;
            continue;
        }
        EXPECT_NEAR(got[k], want[k], 1e-6f) << k;
        EXPECT_FALSE(isMaskedTexel(got[k])) << k;
    }
}

TEST_F(HeadSweepTest, MapsMadeOnDemandGiveTheKeptMapsStatisticsAndThumbnails) {
    // A sliding window, grouped kv heads and a hidden token, 90 tokens with
    // repeats so that duplicate and induction are not 0.
    const nlohmann::json c = tinyllama::config("mistral", {{"sliding_window", 9}, {"max_position_embeddings", 128}});
    tinyllama::writeCheckpoint(m_dir, c, tinyllama::weights(c, 3), 1);
    const auto model = openCheckpoint(m_dir.string());
    std::vector<int> ids = {259};
    for (int n = 0; n < 89; ++n) ids.push_back(32 + (n * 7) % 23);
    const decoder::Run kept = decoder::forward(*model, ids);
    const decoder::Run lazy = decoder::forward(*model, ids, nullptr, decoder::PassMaps::OnDemand);
    const std::vector<decoder::Intervention> hide = {{decoder::Intervention::Kind::HideToken, 0, 0, 5}};
    const decoder::Run keptHidden = decoder::forwardEdited(*model, kept, hide), lazyHidden = decoder::forwardEdited(*model, lazy, hide);
    for (const bool hidden : {false, true}) {
        SCOPED_TRACE(hidden ? "a hidden token" : "the plain pass");
        const AttentionMaps whole = runMaps(hidden ? keptHidden : kept, model->config());
        const AttentionMaps made = runMaps(hidden ? lazyHidden : lazy, model->config());
        ASSERT_TRUE(whole.whole());
        ASSERT_FALSE(made.whole());
        ASSERT_TRUE(made);
        for (const bool skip : {false, true}) {
            // blocks of 6 rows (a multiple of the factor 3), the last one short
            const HeadSweepOptions options{
                .stats = {.skipFirstKey = skip}, .everyKey = skip, .factor = 3, .profiles = true, .blockFloats = 6 * 90 + 5};
            ASSERT_EQ(made.blockRows(options.blockFloats, options.factor), 6);
            const HeadSweep want = sweepHeads(whole, options), got = sweepHeads(made, options);
            expectSameStats(got.stats, want.stats);
            expectSameStats(got.everyKey, want.everyKey);
            EXPECT_EQ(got.side, 30);
            EXPECT_EQ(got.sideKeys, 30);
            expectSameTexels(got.means, want.means);
            expectSameTexels(got.maxima, want.maxima);
            ASSERT_EQ(got.profiles.size(), want.profiles.size());
            for (std::size_t k = 0; k < got.profiles.size(); ++k) {
                const HeadProfile& p = got.profiles[k];
                const HeadProfile& q = want.profiles[k];
                const HeadProfile one = headProfile(whole.weights(static_cast<int>(k) / whole.heads, static_cast<int>(k) % whole.heads),
                                                    whole.layerSettings(static_cast<int>(k) / whole.heads), 4);
                EXPECT_EQ(p.pairs, q.pairs);
                EXPECT_EQ(p.rows, one.rows);
                for (std::size_t b = 0; b < q.byDistance.size(); ++b) {
                    EXPECT_NEAR(p.byDistance[b], q.byDistance[b], 1e-6) << k << " " << b;
                    EXPECT_NEAR(q.byDistance[b], one.byDistance[b], 1e-12) << k << " " << b;
                }
                for (std::size_t b = 0; b < q.firstKAt.size(); ++b) EXPECT_NEAR(p.firstKAt[b], q.firstKAt[b], 1e-6) << k << " " << b;
            }
            expectSameStats(got.stats, allHeadStats(whole, {.skipFirstKey = skip}));
        }
        // One map whole, and one row block, as the views read them.
        Mat scratch;
        const Mat a = made.map(1, 2, scratch);
        EXPECT_LT((a - Mat(whole.weights(1, 2))).cwiseAbs().maxCoeff(), 2e-7f);
        EXPECT_LT((Mat(made.rowBlock(0, 3, 40, 7, scratch)) - Mat(whole.weights(0, 3).middleRows(40, 7))).cwiseAbs().maxCoeff(), 2e-7f);
    }
}

TEST(HeadSweep, ThumbnailsPooledFromBlocksOfRowsAreTheWholeMapsPooling) {
    const Eigen::Index tq = 13, tk = 17;
    const std::vector<Settings> masks = everyMask(tq, tk, 4, 3);
    Prng prng(11);
    Mat scores(tq, tk);
    for (Eigen::Index k = 0; k < scores.size(); ++k) scores.data()[k] = static_cast<float>(2 * prng.normal());
    for (std::size_t m = 0; m < masks.size(); ++m)
        for (const int factor : {1, 2, 3, 5}) {
            SCOPED_TRACE("mask " + std::to_string(m) + ", factor " + std::to_string(factor));
            Mat a;
            softmaxRows(scores, 1.0f, masks[m], a);
            BlockPooler pooler(tq, tk, masks[m], factor);
            for (Eigen::Index r0 = 0; r0 < tq; r0 += 2 * factor)
                pooler.add(a.middleRows(r0, std::min<Eigen::Index>(2 * factor, tq - r0)), r0);
            std::vector<float> means, maxima;
            poolBlocks(a, masks[m], factor, BlockPooling::Mean, means);
            poolBlocks(a, masks[m], factor, BlockPooling::Max, maxima);
            expectSameTexels(pooler.means(), means);
            EXPECT_EQ(pooler.maxima(), maxima);
            // the keys from the second block on: the same texels' columns
            BlockPooler right(tq, tk, masks[m], factor, 0, -1, factor, tk - factor);
            right.add(a, 0);
            const Eigen::Index cols = pooledSize(tk, factor);
            std::vector<float> tail, tailMax;
            for (Eigen::Index r = 0; r < pooledSize(tq, factor); ++r)
                for (Eigen::Index c = 1; c < cols; ++c) {
                    tail.push_back(means[static_cast<std::size_t>(r * cols + c)]);
                    tailMax.push_back(maxima[static_cast<std::size_t>(r * cols + c)]);
                }
            expectSameTexels(right.means(), tail);
            EXPECT_EQ(right.maxima(), tailMax);
        }
    BlockPooler pooler(tq, tk, masks[0], 2);
    EXPECT_THROW(pooler.add(Mat::Zero(2, tk), 2), std::invalid_argument);  // rows 0 and 1 not yet added
    // More queries than keys under a window: the last rows read no key at all.
    Settings window;
    window.window = 2;
    const Mat wide = Mat::Constant(9, 4, 0.25f);
    BlockPooler rows(9, 4, window, 3);
    rows.add(wide, 0);
    std::vector<float> means;
    poolBlocks(wide, window, 3, BlockPooling::Max, means);
    EXPECT_EQ(rows.maxima(), means);
}

TEST_F(HeadSweepTest, OneMapPooledByBandsOnEveryThreadIsTheWholeMapsPooling) {
    // One head's map and the mean of a layer's heads, made on demand and read a band of rows at a
    // time on every thread, pooled as poolBlocks pools the whole map (sliding window, kv heads).
    const nlohmann::json c = tinyllama::config("mistral", {{"sliding_window", 7}, {"max_position_embeddings", 128}});
    tinyllama::writeCheckpoint(m_dir, c, tinyllama::weights(c, 5), 1);
    const auto model = openCheckpoint(m_dir.string());
    std::vector<int> ids = {259};
    for (int n = 0; n < 76; ++n) ids.push_back(32 + (n * 11) % 29);
    const decoder::Run kept = decoder::forward(*model, ids);
    const decoder::Run lazy = decoder::forward(*model, ids, nullptr, decoder::PassMaps::OnDemand);
    const AttentionMaps whole = runMaps(kept, model->config()), made = runMaps(lazy, model->config());
    for (const int head : {2, -1})
        for (const bool skip : {false, true})
            for (const int factor : {1, 3, 8}) {
                SCOPED_TRACE("head " + std::to_string(head) + (skip ? ", first key left out" : "") + ", factor " + std::to_string(factor));
                // bands of 2 texel rows: many bands, the last one short
                Progress progress;
                const PoolMapOptions options{
                    .factor = factor, .mean = {.skipFirstKey = skip}, .blockFloats = 2u * factor * 77, .progress = &progress};
                const PooledMap got = poolMap(made, 1, head, options);
                EXPECT_DOUBLE_EQ(progress.fraction(), 1.0);
                // the reference: the whole map (the mean over heads as meanWeights reads them), pooled at once
                Mat want = Mat::Zero(77, 77);
                for (int h = 0; h < whole.heads; ++h)
                    if (head < 0 || h == head) want += skip && head < 0 ? withoutFirstKey(whole.weights(1, h)) : Mat(whole.weights(1, h));
                if (head < 0) want /= static_cast<float>(whole.heads);
                std::vector<float> means, maxima;
                poolBlocks(want, whole.layerSettings(1), factor, BlockPooling::Mean, means);
                poolBlocks(want, whole.layerSettings(1), factor, BlockPooling::Max, maxima);
                EXPECT_EQ(got.rows, pooledSize(77, factor));
                EXPECT_EQ(got.cols, pooledSize(77, factor));
                expectSameTexels(got.means, means);
                expectSameTexels(got.maxima, maxima);
                expectSameTexels(poolMap(whole, 1, head, options).means, means);  // kept maps, read in place
                // The reference factor's block maxima made from the same tiles, in bands of both factors'
                // multiples (5 and 3 or 8), whatever the screen's factor; the screen's texels unchanged.
                PoolMapOptions withReference = options;
                withReference.progress = nullptr;
                withReference.referenceFactor = 5;
                const PooledMap referenced = poolMap(made, 1, head, withReference);
                std::vector<float> referenceMaxima;
                poolBlocks(want, whole.layerSettings(1), 5, BlockPooling::Max, referenceMaxima);
                EXPECT_EQ(referenced.referenceFactor, 5);
                expectSameTexels(referenced.referenceMaxima, referenceMaxima);
                expectSameTexels(referenced.maxima, maxima);
                EXPECT_EQ(referenced.referenceQuantile,
                          readableQuantile(referenceMaxima.data(), referenceMaxima.size(), kAutoClipQuantile));
                expectSameTexels(poolMap(whole, 1, head, withReference).referenceMaxima, referenceMaxima);
                withReference.referenceFactor = factor;  // the screen's own factor: its maxima
                expectSameTexels(poolMap(made, 1, head, withReference).referenceMaxima, maxima);
                // A region (a zoomed view's): its texels are the whole map's there, its rows alone made.
                PoolMapOptions part = options;
                part.progress = nullptr;
                part.firstRow = 31, part.rows = 72 - 31, part.firstCol = 13, part.cols = 48 - 13;  // starts rounded down to a block
                part.referenceFactor = 5;                                                          // a region has none
                const PooledMap region = poolMap(made, 1, head, part);
                EXPECT_TRUE(region.referenceMaxima.empty());
                EXPECT_EQ(region.referenceQuantile, 0.0f);
                const Eigen::Index r0 = 31 / factor * factor, c0 = 13 / factor * factor;
                EXPECT_EQ(region.firstRow, r0);
                EXPECT_EQ(region.firstCol, c0);
                EXPECT_EQ(region.cellRows, 72 - r0);
                EXPECT_EQ(region.cellCols, 48 - c0);
                ASSERT_EQ(region.rows, pooledSize(72 - r0, factor));
                ASSERT_EQ(region.cols, pooledSize(48 - c0, factor));
                std::vector<float> inside, insideMax;
                for (Eigen::Index r = 0; r < region.rows; ++r)
                    for (Eigen::Index c = 0; c < region.cols; ++c) {
                        const auto at = static_cast<std::size_t>((r0 / factor + r) * got.cols + c0 / factor + c);
                        inside.push_back(means[at]);
                        insideMax.push_back(maxima[at]);
                    }
                expectSameTexels(region.means, inside);
                expectSameTexels(region.maxima, insideMax);
            }
    EXPECT_EQ(factorFor(77, 77, 1024), 1);
    EXPECT_EQ(factorFor(16384, 16384, 1024), 16);
    EXPECT_EQ(factorFor(1025, 3, 1024), 2);
    Progress stop;
    stop.cancel();
    EXPECT_THROW(poolMap(made, 0, 0, {.factor = 2, .mean = {}, .blockFloats = 4u << 20, .progress = &stop}), Cancelled);
    EXPECT_THROW(poolMap(made, 0, whole.heads, {}), std::invalid_argument);
}

// Every map of `whole` handed over as a sweep reads a map made a tile at a time: blocks of `rows`
// rows, each block's tiles of `cols` keys from the last to the first (or from the first to the
// last: out of order).
AttentionMaps tilesOf(const AttentionMaps& whole, Eigen::Index rows, Eigen::Index cols, bool descending = true) {
    AttentionMaps tiled = whole;
    tiled.weights = nullptr;
    tiled.rows = [whole](int layer, int head, Eigen::Index r0, Eigen::Ref<Mat> out) {
        out = whole.weights(layer, head).middleRows(r0, out.rows());
    };
    tiled.tiles = [whole, rows, cols, descending](int layer, int head, Eigen::Index r0, Eigen::Index n, Eigen::Index, Eigen::Index,
                                                  TileSink& sink) {
        const MatRef a = whole.weights(layer, head);
        const Eigen::Index last = (a.cols() - 1) / cols * cols;
        for (Eigen::Index b0 = r0; b0 < r0 + n; b0 += rows) {
            const Eigen::Index m = std::min(rows, r0 + n - b0);
            for (Eigen::Index t = 0; t <= last / cols; ++t) {
                const Eigen::Index c0 = descending ? last - t * cols : t * cols;
                sink.tile(a.block(b0, c0, m, std::min(cols, a.cols() - c0)), nullptr, b0, c0);
            }
            sink.rowsDone(b0, m);
        }
    };
    return tiled;
}

TEST(HeadSweep, AMapHandedOverInTilesGivesTheWholeMapsSweep) {
    // Every mask a sweep reads (one per layer), tokens with repeats for duplicate and induction, a
    // thumbnail factor (3) whose bands cross the blocks of 7 rows, tiles of 5 keys.
    const Eigen::Index t = 37;
    const std::vector<Settings> masks = everyMask(t, t, 6, 4);
    Prng prng(13);
    std::vector<Mat> made;
    for (std::size_t m = 0; m < masks.size(); ++m)
        for (int h = 0; h < 2; ++h) {
            Mat scores(t, t), a;
            for (Eigen::Index k = 0; k < scores.size(); ++k) scores.data()[k] = static_cast<float>(2 * prng.normal());
            softmaxRows(scores, 1.0f, masks[m], a);
            made.push_back(a);
        }
    AttentionMaps whole;
    whole.layers = static_cast<int>(masks.size());
    whole.heads = 2;
    whole.queries = whole.keys = t;
    whole.settings = masks;
    for (Eigen::Index j = 0; j < t; ++j) whole.ids.push_back(static_cast<int>((j * 5 + j / 9) % 3));
    whole.weights = [&made](int layer, int head) { return MatRef(made[static_cast<std::size_t>(layer * 2 + head)]); };
    const AttentionMaps tiled = tilesOf(whole, 7, 5);
    for (const bool skip : {false, true}) {
        SCOPED_TRACE(skip ? "first key left out" : "every key");
        const HeadSweepOptions options{.stats = {.skipFirstKey = skip, .firstTokens = 6}, .everyKey = true, .factor = 3, .profiles = true};
        Progress progress;
        HeadSweepOptions counted = options;
        counted.progress = &progress;
        const HeadSweep want = sweepHeads(whole, options), got = sweepHeads(tiled, counted);
        EXPECT_DOUBLE_EQ(progress.fraction(), 1.0);
        expectSameStats(got.stats, want.stats);
        expectSameStats(got.everyKey, want.everyKey);
        for (std::size_t k = 0; k < got.stats.size(); ++k) {
            EXPECT_NEAR(got.stats[k].firstK, want.stats[k].firstK, 1e-6) << k;
            EXPECT_GT(want.stats[k].duplicate + want.stats[k].induction, 0.0) << k;  // the walks have something to find
        }
        expectSameTexels(got.means, want.means);
        EXPECT_EQ(got.maxima, want.maxima);
        ASSERT_EQ(got.profiles.size(), want.profiles.size());
        for (std::size_t k = 0; k < got.profiles.size(); ++k) {
            EXPECT_EQ(got.profiles[k].pairs, want.profiles[k].pairs);
            EXPECT_EQ(got.profiles[k].rows, want.profiles[k].rows);
            for (std::size_t b = 0; b < want.profiles[k].byDistance.size(); ++b)
                EXPECT_NEAR(got.profiles[k].byDistance[b], want.profiles[k].byDistance[b], 1e-7) << k << " " << b;
            for (std::size_t b = 0; b < want.profiles[k].firstKAt.size(); ++b)
                EXPECT_NEAR(got.profiles[k].firstKAt[b], want.profiles[k].firstKAt[b], 1e-7) << k << " " << b;
        }
    }
    // The token walks go down the keys: tiles from the first key up are refused, not miscounted.
    EXPECT_THROW(sweepHeads(tilesOf(whole, 7, 5, false), {}), std::logic_error);
}

TEST_F(HeadSweepTest, ALongPassMadeATileAtATimeGivesTheKeptPasssSweep) {
    // 600 tokens: blocks of 96 queries, tiles of 256 keys (the last short), a sliding window of
    // 300 across tiles, grouped kv heads, a hidden token, repeats for the token statistics.
    const nlohmann::json c = tinyllama::config("mistral", {{"head_dim", 20}, {"max_position_embeddings", 1024}, {"sliding_window", 300}});
    tinyllama::writeCheckpoint(m_dir, c, tinyllama::weights(c, 3), 1);
    const auto model = openCheckpoint(m_dir.string());
    const decoder::Config& cfg = model->config();
    std::vector<int> ids(600);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int>((i * 37 + i / 7) % 97);
    const std::vector<decoder::Intervention> hide = {{decoder::Intervention::Kind::HideToken, 0, 0, 290}};
    const decoder::Run keptPass = decoder::forward(*model, ids),
                       lazyPass = decoder::forward(*model, ids, nullptr, decoder::PassMaps::OnDemand);
    const decoder::Run kept = decoder::forwardEdited(*model, keptPass, hide), lazy = decoder::forwardEdited(*model, lazyPass, hide);
    const AttentionMaps whole = runMaps(kept, cfg), made = runMaps(lazy, cfg);
    ASSERT_TRUE(made.tiles);
    // The tiles in TileSink's order, every weight the row-by-row one's.
    struct Collect final : TileSink {
        Mat map;
        Eigen::Index nextRow = 0, lastKey = 0, end = 600;  // the rows asked for end at `end`
        void tile(const MatRef& w, const MatRef* logs, Eigen::Index r0, Eigen::Index c0) override {
            ASSERT_NE(logs, nullptr);
            for (Eigen::Index i = 0; i < w.rows(); ++i)
                for (Eigen::Index j = 0; j < w.cols(); ++j) {
                    // each weight the exponential of its log (0 where the weight is)
                    if (w(i, j) == 0.0f) EXPECT_EQ((*logs)(i, j), 0.0f);
                    else EXPECT_NEAR(std::exp((*logs)(i, j)), w(i, j), 1e-5f * w(i, j));
                }
            EXPECT_EQ(r0, nextRow);
            EXPECT_LT(c0 + w.cols(), lastKey + 1);  // below the tile before
            EXPECT_EQ(w.rows(), std::min<Eigen::Index>(96, end - r0));
            lastKey = c0;
            map.block(r0, c0, w.rows(), w.cols()) = w;
        }
        void rowsDone(Eigen::Index r0, Eigen::Index n) override {
            nextRow = r0 + n;
            lastKey = map.cols();
        }
    };
    for (const int head : {0, 3}) {
        Collect collect;
        collect.map = Mat::Constant(600, 600, 7.0f);  // a key no tile covers stays 7
        collect.lastKey = 600;
        decoder::mapWeightTiles(lazy, cfg, 1, head, 0, 600, collect);
        EXPECT_EQ(collect.nextRow, 600);
        Mat rows(600, 600);
        decoder::mapWeightRows(lazy, cfg, 1, head, 0, rows);
        for (Eigen::Index i = 0; i < 600; ++i)
            for (Eigen::Index j = 0; j < 600; ++j) {
                if (collect.map(i, j) != 7.0f || rows(i, j) != 0.0f) {
                    ASSERT_NEAR(collect.map(i, j), rows(i, j), 1e-6f) << i << " " << j;
                }
            }
        // A zoomed region's keys alone (rows 350 … 449, keys 300 … 419): only the tiles that hold them.
        Collect region;
        region.map = Mat::Constant(600, 600, 7.0f);
        region.nextRow = 350, region.end = 450;
        region.lastKey = 600;
        decoder::mapWeightTiles(lazy, cfg, 1, head, 350, 100, region, 300, 420);
        EXPECT_EQ(region.nextRow, 450);
        for (Eigen::Index i = 350; i < 450; ++i) {
            for (Eigen::Index j = 300; j < 420; ++j) ASSERT_NEAR(region.map(i, j), rows(i, j), 1e-6f) << i << " " << j;
            for (Eigen::Index j = 0; j < 256; ++j) ASSERT_EQ(region.map(i, j), 7.0f) << i << " " << j;  // a tile of none of its keys
        }
    }
    for (const bool skip : {false, true}) {
        SCOPED_TRACE(skip ? "first key left out" : "every key");
        const HeadSweepOptions options{.stats = {.skipFirstKey = skip}, .everyKey = skip, .factor = 7, .profiles = true};
        const HeadSweep want = sweepHeads(whole, options), got = sweepHeads(made, options);
        expectSameStats(got.stats, want.stats);
        expectSameStats(got.everyKey, want.everyKey);
        expectSameTexels(got.means, want.means);
        expectSameTexels(got.maxima, want.maxima);
        for (std::size_t k = 0; k < got.profiles.size(); ++k)
            for (std::size_t b = 0; b < want.profiles[k].byDistance.size(); ++b)
                EXPECT_NEAR(got.profiles[k].byDistance[b], want.profiles[k].byDistance[b], 1e-6) << k << " " << b;
    }
}

TEST(HeadSweep, AHeadsFailureLeavesTheSweepAsAnException) {
    AttentionMaps maps;
    maps.layers = 1;
    maps.heads = 4;
    maps.queries = maps.keys = 8;
    maps.settings.assign(1, Settings{});
    maps.rows = [](int, int head, Eigen::Index, const Eigen::Ref<Mat>& out) {
        if (head == 2) throw std::bad_alloc();
        const_cast<Eigen::Ref<Mat>&>(out).setConstant(1.0f / 8);
    };
    EXPECT_THROW(sweepHeads(maps, {.stats = {}, .everyKey = false, .factor = 2, .blockFloats = 16}), std::bad_alloc);
}

TEST(HeadSweep, StopsWhenAskedAndCountsItsBlocks) {
    const Eigen::Index t = 40;
    Mat a = Mat::Constant(t, t, 1.0f / static_cast<float>(t));
    AttentionMaps maps;
    maps.layers = 2;
    maps.heads = 3;
    maps.queries = maps.keys = t;
    maps.settings.assign(2, Settings{});
    maps.rows = [&](int, int, Eigen::Index r0, Eigen::Ref<Mat> out) { out = a.middleRows(r0, out.rows()); };
    Progress progress;
    const HeadSweep sweep = sweepHeads(maps, {.stats = {}, .everyKey = false, .factor = 0, .blockFloats = 10 * t, .progress = &progress});
    EXPECT_DOUBLE_EQ(progress.fraction(), 1.0);
    EXPECT_NEAR(sweep.stats[5].entropy, std::log(40.0), 1e-6);
    Progress stop;
    stop.cancel();
    EXPECT_THROW(sweepHeads(maps, {.stats = {}, .everyKey = false, .factor = 0, .blockFloats = 10 * t, .progress = &stop}), Cancelled);
}

}  // namespace
