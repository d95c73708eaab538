#include "core/attention/attention_maps.hpp"

#include "core/attention/colormap.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <unordered_map>

namespace attnviz::core {

std::vector<int> idsOfLabels(const std::vector<std::string>& labels) {
    std::unordered_map<std::string, int> first;
    std::vector<int> ids;
    ids.reserve(labels.size());
    for (std::size_t i = 0; i < labels.size(); ++i) ids.push_back(first.try_emplace(labels[i], static_cast<int>(i)).first->second);
    return ids;
}

void poolBlocks(const MatRef& weights, const Settings& settings, int factor, BlockPooling pooling, std::vector<float>& out) {
    if (pooling == BlockPooling::Max || factor <= 1) {
        poolTexels(weights, settings, factor, out);
        return;
    }
    const Eigen::Index tq = weights.rows(), tk = weights.cols();
    const Eigen::Index rows = pooledSize(tq, factor), cols = pooledSize(tk, factor);
    out.assign(static_cast<std::size_t>(rows * cols), 0.0f);
    std::vector<double> sum(static_cast<std::size_t>(cols));
    std::vector<int> readable(static_cast<std::size_t>(cols));
    for (Eigen::Index r = 0; r < rows; ++r) {
        std::fill(sum.begin(), sum.end(), 0.0);
        std::fill(readable.begin(), readable.end(), 0);
        for (Eigen::Index i = r * factor; i < std::min(tq, (r + 1) * factor); ++i)
            for (Eigen::Index j = 0; j < tk; ++j) {
                if (isBlocked(settings, i, j)) continue;
                const auto c = static_cast<std::size_t>(j / factor);
                sum[c] += weights(i, j);
                ++readable[c];
            }
        float* row = out.data() + r * cols;
        for (Eigen::Index c = 0; c < cols; ++c) {
            const auto k = static_cast<std::size_t>(c);
            row[c] = readable[k] > 0 ? static_cast<float>(sum[k] / readable[k]) : kMaskedTexel;
        }
    }
}

Mat headOrMean(const AttentionMaps& maps, int layer, int head) {
    Mat scratch;
    if (head >= 0) return maps.map(layer, head, scratch);
    Mat sum = Mat::Zero(maps.queries, maps.keys);
    for (int h = 0; h < maps.heads; ++h) sum += maps.map(layer, h, scratch);
    return sum / static_cast<float>(std::max(1, maps.heads));
}

MatRef AttentionMaps::rowBlock(int layer, int head, Eigen::Index r0, Eigen::Index n, Mat& scratch) const {
    if (r0 < 0 || n < 0 || r0 + n > queries) throw std::invalid_argument("AttentionMaps::rowBlock: rows outside the map");
    if (weights) {
        const MatRef w = weights(layer, head);
        return w.middleRows(r0, n);
    }
    scratch.resize(n, keys);
    rows(layer, head, r0, scratch);
    return scratch;
}

Eigen::Index AttentionMaps::blockRows(std::size_t floats, int multiple) const {
    const auto m = static_cast<Eigen::Index>(std::max(1, multiple));
    const Eigen::Index fit = static_cast<Eigen::Index>(floats) / std::max<Eigen::Index>(keys, 1);
    return std::max<Eigen::Index>(m, fit / m * m);
}

void blockedRow(const Settings& settings, Eigen::Index i, Eigen::Index keys, std::vector<char>& blocked) {
    blocked.assign(static_cast<std::size_t>(keys), 0);
    if (settings.custom.size() != 0)
        for (Eigen::Index j = 0; j < keys; ++j) blocked[static_cast<std::size_t>(j)] = settings.custom(i, j) ? 1 : 0;
    for (const int p : settings.paddedKeys)
        if (p >= 0 && p < keys) blocked[static_cast<std::size_t>(p)] = 1;
    for (Eigen::Index j = 0; j < keys; ++j)
        if ((settings.causal && j > i) || outsideWindow(settings.window, settings.causal, i, j)) blocked[static_cast<std::size_t>(j)] = 1;
}

BlockPooler::BlockPooler(Eigen::Index queries, Eigen::Index keys, const Settings& settings, int factor, Eigen::Index firstRow,
                         Eigen::Index rows, Eigen::Index firstCol, Eigen::Index cols)
    : m_keys(keys), m_settings(settings), m_factor(std::max(1, factor)) {
    if (rows < 0) rows = queries - firstRow;
    if (cols < 0) cols = keys - firstCol;
    if (firstRow < 0 || firstRow % m_factor != 0 || firstRow + rows > queries)
        throw std::invalid_argument("BlockPooler: rows outside the map or not at a band");
    if (firstCol < 0 || firstCol % m_factor != 0 || firstCol + cols > keys)
        throw std::invalid_argument("BlockPooler: keys outside the map or not at a block");
    m_firstCol = firstCol;
    m_endCol = firstCol + cols;
    m_endRow = firstRow + rows;
    m_cols = pooledSize(cols, m_factor);
    m_firstBand = m_band = firstRow / m_factor;
    m_nextRow = firstRow;
    const auto texels = static_cast<std::size_t>(pooledSize(rows, m_factor) * m_cols);
    m_means.assign(texels, kMaskedTexel);
    m_maxima.assign(texels, kMaskedTexel);
}

void BlockPooler::add(const MatRef& rows, Eigen::Index r0) {
    if (rows.cols() != m_keys) throw std::invalid_argument("BlockPooler::add: rows of another map");
    addTile(rows, r0, 0);
    finishRows(r0, rows.rows());
}

void BlockPooler::addTile(const MatRef& w, Eigen::Index r0, Eigen::Index c0) {
    const Eigen::Index c1 = c0 + w.cols();
    if (r0 < m_nextRow || r0 + w.rows() > m_endRow || c0 < 0 || c1 > m_keys)
        throw std::invalid_argument("BlockPooler::addTile: rows or keys outside those being pooled");
    if (w.rows() == 0) return;
    // the bands the tile's rows reach, from the first not yet finished
    const auto reach = static_cast<std::size_t>((r0 + w.rows() - 1) / m_factor - m_band + 1) * static_cast<std::size_t>(m_cols);
    if (m_sum.size() < reach) {
        m_sum.resize(reach, 0.0);
        m_readable.resize(reach, 0);
        m_largest.resize(reach, kMaskedTexel);
    }
    const Eigen::Index from = std::max(m_firstCol, c0), to = std::min(m_endCol, c1);  // the tile's keys pooled
    for (Eigen::Index r = 0; r < w.rows(); ++r) {
        const Eigen::Index i = r0 + r;
        const float* tile = w.data() + r * w.outerStride();
        const auto cell = [&](Eigen::Index j) { return tile + (j - c0); };  // key j's weight
        const auto at = static_cast<std::size_t>((i / m_factor - m_band) * m_cols);
        double* sum = m_sum.data() + at;
        int* readable = m_readable.data() + at;
        float* largest = m_largest.data() + at;
        if (m_settings.paddedKeys.empty() && m_settings.custom.size() == 0) {
            // a band of keys [lo, hi): no cell of it blocked, within the tile's keys pooled
            const KeyBand band = keyBand(m_settings, i, m_keys);
            const Eigen::Index lo = std::max(band.lo, from), hi = std::min(band.hi, to);
            // each block of columns the band crosses, on whole packets (none when the band is empty)
            for (Eigen::Index c = (lo - m_firstCol) / m_factor; lo < hi && m_firstCol + c * m_factor < hi; ++c) {
                const Eigen::Index j0 = std::max(lo, m_firstCol + c * m_factor), j1 = std::min(hi, m_firstCol + (c + 1) * m_factor);
                const Eigen::Map<const Eigen::ArrayXf> block(cell(j0), j1 - j0);
                sum[c] += block.cast<double>().sum();
                readable[c] += static_cast<int>(j1 - j0);
                largest[c] = std::max(largest[c], block.maxCoeff());
            }
        } else {
            blockedRow(m_settings, i, m_keys, m_blocked);
            for (Eigen::Index j = from; j < to; ++j) {
                if (m_blocked[static_cast<std::size_t>(j)]) continue;
                const Eigen::Index c = (j - m_firstCol) / m_factor;
                sum[c] += *cell(j);
                ++readable[c];
                largest[c] = std::max(largest[c], *cell(j));
            }
        }
    }
}

void BlockPooler::finishRows(Eigen::Index r0, Eigen::Index n) {
    if (r0 != m_nextRow || n < 0 || r0 + n > m_endRow) throw std::invalid_argument("BlockPooler::finishRows: rows out of order");
    m_nextRow = r0 + n;
    // every band whose rows are all finished (the last band ends at the pooler's last row)
    while (m_band < (m_endRow + m_factor - 1) / m_factor && std::min((m_band + 1) * m_factor, m_endRow) <= m_nextRow) finishBand();
}

void BlockPooler::finishBand() {
    float* means = m_means.data() + (m_band - m_firstBand) * m_cols;
    float* maxima = m_maxima.data() + (m_band - m_firstBand) * m_cols;
    const auto cols = static_cast<std::size_t>(m_cols);
    if (m_sum.size() < cols) {  // no cell of the band was handed over: every texel masked
        m_sum.resize(cols, 0.0);
        m_readable.resize(cols, 0);
        m_largest.resize(cols, kMaskedTexel);
    }
    for (std::size_t k = 0; k < cols; ++k) {
        // factor 1: the weight itself (poolBlocks gives toTexels' copy, not a float of a double)
        means[k] = m_readable[k] == 0 ? kMaskedTexel : m_factor == 1 ? m_largest[k] : static_cast<float>(m_sum[k] / m_readable[k]);
        maxima[k] = m_largest[k];
    }
    // the later bands' sums move up one band
    const auto drop = [cols](auto& v) { v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(cols)); };
    drop(m_sum);
    drop(m_readable);
    drop(m_largest);
    ++m_band;
}

float referenceQuantile(const MatRef& weights, const Settings& settings) {
    std::vector<float> maxima;
    poolBlocks(weights, settings, scaleReferenceFactor(weights.rows(), weights.cols()), BlockPooling::Max, maxima);
    return readableQuantile(maxima.data(), maxima.size(), kAutoClipQuantile);
}

int factorFor(Eigen::Index queries, Eigen::Index keys, Eigen::Index texels) {
    const Eigen::Index longest = std::max<Eigen::Index>({queries, keys, 1}), most = std::max<Eigen::Index>(texels, 1);
    return static_cast<int>((longest + most - 1) / most);
}

Mat meanRows(const AttentionMaps& maps, int layer, Eigen::Index r0, Eigen::Index n, const MeanOptions& options, Mat& scratch,
             const std::vector<RowVec>* keyScales) {
    Mat sum = Mat::Zero(n, maps.keys);
    for (int h = 0; h < maps.heads; ++h) {
        const MatRef rows = maps.rowBlock(layer, h, r0, n, scratch);
        if (keyScales) sum += rows * (*keyScales)[static_cast<std::size_t>(h)].asDiagonal();
        else if (options.skipFirstKey) sum += withoutFirstKey(rows);
        else sum += rows;
    }
    return sum / static_cast<float>(std::max(1, maps.heads));
}

namespace {

// The rows of a band of poolMap when the map is made a tile at a time.
constexpr Eigen::Index kTileBandRows = 512;

// One band's poolers: the screen's factor, and the reference factor's beside it when there is
// one, each handed the same rows or tiles.
struct BandPoolers {
    BlockPooler screen;
    std::optional<BlockPooler> reference;

    void add(const MatRef& rows, Eigen::Index r0) {
        screen.add(rows, r0);
        if (reference) reference->add(rows, r0);
    }
};

// A map made a tile at a time, pooled as it comes.
class PoolerSink final : public TileSink {
public:
    explicit PoolerSink(BandPoolers& poolers) : m_poolers(poolers) {}
    void tile(const MatRef& w, const MatRef*, Eigen::Index r0, Eigen::Index c0) override {
        m_poolers.screen.addTile(w, r0, c0);
        if (m_poolers.reference) m_poolers.reference->addTile(w, r0, c0);
    }
    void rowsDone(Eigen::Index r0, Eigen::Index n) override {
        m_poolers.screen.finishRows(r0, n);
        if (m_poolers.reference) m_poolers.reference->finishRows(r0, n);
    }

private:
    BandPoolers& m_poolers;
};

}  // namespace

PooledMap poolMap(const AttentionMaps& maps, int layer, int head, const PoolMapOptions& options) {
    if (layer < 0 || layer >= maps.layers || head < -1 || head >= maps.heads) throw std::invalid_argument("poolMap: no such map");
    if (options.keyScales &&
        (options.keyScales->size() != static_cast<std::size_t>(maps.heads) ||
         std::any_of(options.keyScales->begin(), options.keyScales->end(), [&](const RowVec& s) { return s.size() != maps.keys; })))
        throw std::invalid_argument("poolMap: a scale for each head's every key");
    PooledMap out;
    out.queries = maps.queries;
    out.keys = maps.keys;
    out.factor = std::max(1, options.factor);
    // the region: starts at block edges, within the map
    const auto region = [&](Eigen::Index first, Eigen::Index count, Eigen::Index size, Eigen::Index& start) {
        start = std::clamp<Eigen::Index>(first, 0, size) / out.factor * out.factor;
        const Eigen::Index end = count < 0 ? size : std::clamp<Eigen::Index>(first + count, start, size);
        return end - start;
    };
    out.cellRows = region(options.firstRow, options.rows, maps.queries, out.firstRow);
    out.cellCols = region(options.firstCol, options.cols, maps.keys, out.firstCol);
    out.rows = pooledSize(out.cellRows, out.factor);
    out.cols = pooledSize(out.cellCols, out.factor);
    out.means.assign(static_cast<std::size_t>(out.rows * out.cols), kMaskedTexel);
    out.maxima = out.means;
    const Settings& settings = maps.layerSettings(layer);
    // Bands of whole texel rows; a kept map in bands too, so that every thread pools its own. One
    // head's map made a tile at a time holds no band's rows: its bands are as long as keep every
    // thread busy (each packs the keys its rows read once).
    const bool tiles = maps.tiles && head >= 0 && !options.keyScales;
    // the reference's blocks: the whole map's, every band a whole number of them too
    const bool whole = out.cellRows == maps.queries && out.cellCols == maps.keys;
    const int reference = whole && options.referenceFactor > 0 ? options.referenceFactor : 0;
    const int multiple = reference > 0 ? std::lcm(out.factor, reference) : out.factor;
    Eigen::Index band = maps.blockRows(options.blockFloats, multiple);
    if (tiles) band = std::max(band, (kTileBandRows + multiple - 1) / multiple * multiple);
    if (reference > 0) {
        out.referenceFactor = reference;
        out.referenceMaxima.assign(static_cast<std::size_t>(pooledSize(maps.queries, reference) * pooledSize(maps.keys, reference)),
                                   kMaskedTexel);
    }
    const Eigen::Index bands = (out.cellRows + band - 1) / band;
    expect(options.progress, static_cast<std::uint64_t>(bands));
    std::atomic<bool> stopped{false};
    std::exception_ptr failure;  // the first error of any band: no exception leaves a parallel region
#pragma omp parallel
    {
        Mat scratch;
#pragma omp for schedule(dynamic)
        for (Eigen::Index b = 0; b < bands; ++b) {
            if (stopped) continue;
            try {
                const Eigen::Index r0 = out.firstRow + b * band, n = std::min(band, out.firstRow + out.cellRows - r0);
                BandPoolers poolers{BlockPooler(maps.queries, maps.keys, settings, out.factor, r0, n, out.firstCol, out.cellCols), {}};
                // at the screen's factor the screen's maxima are the reference's
                if (reference > 0 && reference != out.factor)
                    poolers.reference.emplace(maps.queries, maps.keys, settings, reference, r0, n);
                if (tiles) {
                    PoolerSink sink(poolers);
                    maps.tiles(layer, head, r0, n, out.firstCol, out.firstCol + out.cellCols, sink);
                } else if (head < 0) poolers.add(meanRows(maps, layer, r0, n, options.mean, scratch, options.keyScales), r0);
                else if (options.keyScales)
                    poolers.add(
                        maps.rowBlock(layer, head, r0, n, scratch) * (*options.keyScales)[static_cast<std::size_t>(head)].asDiagonal(), r0);
                else poolers.add(maps.rowBlock(layer, head, r0, n, scratch), r0);
                const BlockPooler& pooler = poolers.screen;
                const auto at = static_cast<std::ptrdiff_t>(((r0 - out.firstRow) / out.factor) * out.cols);
                std::copy(pooler.means().begin(), pooler.means().end(), out.means.begin() + at);
                std::copy(pooler.maxima().begin(), pooler.maxima().end(), out.maxima.begin() + at);
                if (const std::optional<BlockPooler>& ref = poolers.reference)
                    std::copy(
                        ref->maxima().begin(), ref->maxima().end(),
                        out.referenceMaxima.begin() + static_cast<std::ptrdiff_t>((r0 / reference) * pooledSize(maps.keys, reference)));
                advance(options.progress, 1);  // Cancelled once asked to stop
            } catch (const Cancelled&) {
                stopped = true;
            } catch (...) {
#pragma omp critical(attnviz_pool_failure)
                if (!failure) failure = std::current_exception();
                stopped = true;
            }
        }
    }
    if (failure) std::rethrow_exception(failure);
    if (stopped) throw Cancelled{};
    if (reference > 0 && reference == out.factor) out.referenceMaxima = out.maxima;
    if (reference > 0) out.referenceQuantile = readableQuantile(out.referenceMaxima.data(), out.referenceMaxima.size(), kAutoClipQuantile);
    return out;
}

}  // namespace attnviz::core
