// Every layer × head's attention weights over one input, as the views of many heads read them
// (the model view, the head statistics, the head view, rollout), whatever made them: a
// checkpoint's own pass (every layer), a scenario's forward pass (one layer of heads), or maps
// computed elsewhere. The maps are views: whoever builds an AttentionMaps keeps what it reads
// alive while it is used.
#pragma once

#include "core/attention/attention.hpp"
#include "core/base/matrix.hpp"
#include "core/base/progress.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attnviz::core {

// Where a map made a tile at a time is handed (AttentionMaps::tiles): its rows in blocks, in
// ascending order; each block's tiles of keys (each tile every row of the block) in descending
// order of keys, together covering every key a row of the block may read (a key outside them
// holds 0 for those rows), then rowsDone.
class TileSink {
public:
    TileSink() = default;
    TileSink(const TileSink&) = delete;
    TileSink& operator=(const TileSink&) = delete;
    TileSink(TileSink&&) = delete;
    TileSink& operator=(TileSink&&) = delete;
    virtual ~TileSink() = default;
    // The weights of rows [r0, r0 + w.rows()) and keys [c0, c0 + w.cols()); a key a row may not
    // read holds 0. logs, when not null: each weight's natural log as the maker had it (the log
    // the weight is the exponential of; 0 where the weight is), so that no reader takes a log.
    virtual void tile(const MatRef& w, const MatRef* logs, Eigen::Index r0, Eigen::Index c0) = 0;
    // Every tile of rows [r0, r0 + n) handed over.
    virtual void rowsDone(Eigen::Index r0, Eigen::Index n) = 0;
};

// What a key token is, for the statistics after Clark et al. (2019, "What Does BERT Look At?"):
// bits of AttentionMaps::kinds. A separator is a special token after the first (BERT's [SEP],
// RoBERTa's </s>, a chat template's end of turn; not a [MASK]); punctuation a token of Unicode
// punctuation alone, white space around it aside.
enum TokenKind : std::uint8_t { kSeparatorToken = 1, kPunctuationToken = 2 };

struct AttentionMaps {
    int layers = 0, heads = 0;
    Eigen::Index queries = 0, keys = 0;  // every map is [queries, keys]; queries are the first keys
    int firstLayer = 0;                  // the number of the first layer shown (a scenario of one layer of a model: that layer)
    std::vector<int> ids;                // the keys' token ids (equal tokens, equal ids); empty when there are none
    std::vector<std::string> labels;     // the keys' labels as drawn
    std::vector<std::uint8_t> kinds;     // per key: its TokenKind bits; empty when none is known
    std::vector<Settings> settings;      // per layer: the mask the weights were made under
    std::vector<int> kvHead;             // per query head: the key/value head it reads (grouped-query); empty: its own
    // The whole map of (layer, head), [queries, keys], where the maps are kept whole; null for maps
    // made on demand (a long pass keeps only what they are made of), read through `rows`.
    std::function<MatRef(int layer, int head)> weights;
    // Rows [r0, r0 + out.rows()) of the map of (layer, head) made into out [n, keys]: the maps that
    // are not kept whole. Null where `weights` gives every map.
    std::function<void(int layer, int head, Eigen::Index r0, Eigen::Ref<Mat> out)> rows;
    // Optional beside `rows`: rows [r0, r0 + n) of the map of (layer, head) made a tile of keys at a
    // time into `sink` (TileSink's order), so that no row of the map is ever whole and each tile
    // is read while it is in cache: what the sweeps over every map read when it is there. Only
    // keys [k0, k1) are asked for (a zoomed region's): the tiles may leave the others out.
    std::function<void(int layer, int head, Eigen::Index r0, Eigen::Index n, Eigen::Index k0, Eigen::Index k1, TileSink& sink)> tiles;
    // Optional: the caller is done with the map weights(layer, head) gave (maps read from a mapped
    // file then free that map's widened copy or give its pages back). Null: nothing to do. The
    // sweeps over every map call it; a reader that does not keeps the map until the maps die.
    std::function<void(int layer, int head)> done;

    explicit operator bool() const { return layers > 0 && heads > 0 && (weights != nullptr || rows != nullptr); }
    // Every map kept whole: weights() is a view, read at no cost.
    bool whole() const { return weights != nullptr; }
    // Rows [r0, r0 + n) of a map: a view into the kept map, or made into `scratch` (resized).
    MatRef rowBlock(int layer, int head, Eigen::Index r0, Eigen::Index n, Mat& scratch) const;
    // The whole map: a view, or made into `scratch` ([queries, keys] floats: the caller has
    // counted them).
    MatRef map(int layer, int head, Mat& scratch) const { return rowBlock(layer, head, 0, queries, scratch); }
    // The rows a sweep reads at once so that a block holds about `floats` floats: at least 1, a
    // multiple of `multiple`.
    Eigen::Index blockRows(std::size_t floats, int multiple = 1) const;
    int count() const { return layers * heads; }
    void finished(int layer, int head) const {
        if (done) done(layer, head);
    }
    // The index of (layer, head) in a [layers × heads] list, layer-major.
    int index(int layer, int head) const { return layer * heads + head; }
    const Settings& layerSettings(int layer) const { return settings[static_cast<std::size_t>(layer)]; }
};

// One head's map, or the mean over the layer's heads (head −1), as a matrix of its own.
Mat headOrMean(const AttentionMaps& maps, int layer, int head);

// Token ids for labels that have none (a scenario's words): equal labels get equal ids, the
// index of their first occurrence.
std::vector<int> idsOfLabels(const std::vector<std::string>& labels);

// How a map is shrunk to a thumbnail: the mean of each block's readable weights (what a long
// map's structure shows as), or its largest weight (a single sharp weight stays visible).
enum class BlockPooling : std::uint8_t { Mean, Max };

// The map at 1/factor resolution: ⌈T_q/f⌉ × ⌈T_k/f⌉ texels, row-major, a block's mean or largest
// readable weight, or kMaskedTexel when the mask blocks every cell of the block. Max is
// poolTexels.
void poolBlocks(const MatRef& weights, const Settings& settings, int factor, BlockPooling pooling, std::vector<float>& out);

// The same thumbnails, both poolings at once, from a map handed over in blocks of rows (a map made
// on demand is never whole): add() each block of whole rows in order, or its tiles of keys
// (addTile, any order) and then finishRows; the texels equal poolBlocks' of the whole map. A
// pooler of rows [firstRow, firstRow + rows) (firstRow a multiple of the factor) holds only their
// texel rows: poolers of disjoint bands fill one map on many threads.
class BlockPooler {
public:
    // Rows [firstRow, firstRow + rows) and keys [firstCol, firstCol + cols) of the map (−1: to its
    // end), each start at a block's edge.
    BlockPooler(Eigen::Index queries, Eigen::Index keys, const Settings& settings, int factor, Eigen::Index firstRow = 0,
                Eigen::Index rows = -1, Eigen::Index firstCol = 0, Eigen::Index cols = -1);
    // Whole rows [r0, r0 + rows.rows()) (every key), the rows after those handed over before.
    void add(const MatRef& rows, Eigen::Index r0);
    // The weights of rows [r0, r0 + w.rows()) and keys [c0, c0 + w.cols()), rows not yet
    // finished; the tiles of a row must cover every key it may read.
    void addTile(const MatRef& w, Eigen::Index r0, Eigen::Index c0);
    // Every tile of rows [r0, r0 + n) added: the rows after those finished before.
    void finishRows(Eigen::Index r0, Eigen::Index n);
    // [⌈rows/f⌉ × ⌈cols/f⌉] each (every row and key: ⌈T_q/f⌉ × ⌈T_k/f⌉), row-major: block
    // means, block maxima (kMaskedTexel where masked).
    const std::vector<float>& means() const { return m_means; }
    const std::vector<float>& maxima() const { return m_maxima; }

private:
    void finishBand();
    Eigen::Index m_keys, m_cols;
    Eigen::Index m_firstCol = 0, m_endCol = 0;  // the keys pooled
    Eigen::Index m_endRow = 0;                  // the row after the last pooled
    Eigen::Index m_nextRow = 0;                 // the first row not yet finished
    Settings m_settings;
    int m_factor;
    Eigen::Index m_firstBand = 0;  // the texel row of firstRow
    Eigen::Index m_band = 0;       // the first band of rows not yet finished
    // The sums of the bands from m_band on that the rows being added reach, m_cols floats each.
    std::vector<double> m_sum;
    std::vector<int> m_readable;
    std::vector<float> m_largest, m_means, m_maxima;
    std::vector<char> m_blocked;  // one row's mask
};

// Rows [r0, r0 + n) of the mean of the layer's heads' maps, each head's rows read as `options`
// says (the first key left out: each row renormalised over keys j ≥ 1), or with keyScales (per
// head, [keys]) each key's column times its head's scale instead; `scratch` holds a head's rows
// made on demand.
Mat meanRows(const AttentionMaps& maps, int layer, Eigen::Index r0, Eigen::Index n, const MeanOptions& options, Mat& scratch,
             const std::vector<RowVec>* keyScales = nullptr);

// One head's map, or the mean of the layer's heads (head −1, each head's rows read as MeanOptions
// says), pooled by `factor` (poolBlocks' texels, both poolings), read a band of rows at a time on
// every thread: a map made on demand is never whole, and a kept one is read in place. Counted and
// stopped through `progress` (Cancelled).
// Or a region of it: the rows and keys of PoolMapOptions (a zoomed view's, at a finer factor).
struct PooledMap {
    Eigen::Index queries = 0, keys = 0;       // the map's
    int factor = 1;                           // cells per texel side
    Eigen::Index firstRow = 0, firstCol = 0;  // the cell texel (0, 0) starts at
    Eigen::Index cellRows = 0, cellCols = 0;  // the cells pooled: the region's, or the map's
    Eigen::Index rows = 0, cols = 0;          // texels: ⌈cellRows/factor⌉ × ⌈cellCols/factor⌉
    std::vector<float> means, maxima;         // [rows × cols] each, row-major; kMaskedTexel where masked
    // With PoolMapOptions::referenceFactor (the whole map): its block maxima at that factor, made
    // from the same tiles, [⌈queries/r⌉ × ⌈keys/r⌉]; what Auto's colour scale reads its quantile
    // from whatever factor the screen pools the map by (core::scaleReferenceFactor).
    int referenceFactor = 0;
    std::vector<float> referenceMaxima;
    float referenceQuantile = 0.0f;  // their kAutoClipQuantile quantile (readableQuantile); 0 without them
};
struct PoolMapOptions {
    int factor = 1;
    MeanOptions mean;                    // how the mean over heads reads each head
    std::size_t blockFloats = 4u << 20;  // a band's floats, on each thread
    Progress* progress = nullptr;
    // A region: rows [firstRow, firstRow + rows) and keys [firstCol, firstCol + cols), −1: to the
    // end; each start is rounded down to a multiple of factor. Only its rows are made.
    Eigen::Index firstRow = 0, rows = -1, firstCol = 0, cols = -1;
    // Per head, [keys]: each key's column of that head's map multiplied by its scale before it
    // is pooled (value-weighted maps: α_ij ‖v_j W_O‖); the mean over heads is then the plain mean
    // of the scaled maps (`mean` is not read). Null: the maps as they are.
    const std::vector<RowVec>* keyScales = nullptr;
    // > 0, for the whole map only: its block maxima at this factor too (PooledMap::referenceMaxima).
    int referenceFactor = 0;
};
PooledMap poolMap(const AttentionMaps& maps, int layer, int head, const PoolMapOptions& options);
// Auto's quantile of a map held whole, as a pooled map's (PooledMap::referenceQuantile): the
// kAutoClipQuantile quantile of its block maxima at scaleReferenceFactor, masked blocks left out;
// 0 when no cell is readable. The top of Auto's bar then stays where it is whatever factor a
// screen or a figure pools the map by.
float referenceQuantile(const MatRef& weights, const Settings& settings);
// The least factor that pools the longer of the map's sides to at most `texels`.
int factorFor(Eigen::Index queries, Eigen::Index keys, Eigen::Index texels);

// One row's mask: blocked[j] for the row's keys (a causal mask, a window, padded keys, a custom mask).
void blockedRow(const Settings& settings, Eigen::Index i, Eigen::Index keys, std::vector<char>& blocked);

}  // namespace attnviz::core
