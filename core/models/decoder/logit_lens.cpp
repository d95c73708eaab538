#include "core/models/decoder/logit_lens.hpp"

#include "core/base/error.hpp"
#include "core/models/decoder/decoder_store.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <string>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnviz::core::decoder {
namespace {

constexpr Eigen::Index kVocabBlock = 1024;  // unembedding rows widened at a time (1024 × d floats)
// Lens rows scanned together: a block's logits are 2 MiB a core, and a stop asked for is seen
// after at most one block of 512 rows × 1,024 tokens (a window's lens is cancelled at each change).
constexpr Eigen::Index kRowChunk = 512;

// What the scan keeps of one row's logits: the running log-sum-exp (max and the sum of exp(v −
// max)), the k largest (value, id), and how many logits exceed the target's.
struct RowScan {
    float max = -std::numeric_limits<float>::infinity();
    double sum = 0;
    long long above = 0;                                     // logits of other tokens above the target's
    float target = std::numeric_limits<float>::quiet_NaN();  // the target's logit as the scan made it
};

// Each row's target: its token and its logit made apart (NaN, −1: none), which the rank counts against.
struct Targets {
    std::vector<int> ids;
    std::vector<float> logits;
};

struct Scan {
    Eigen::Index rows = 0;
    int k = 0;
    std::vector<RowScan> row;
    std::vector<std::pair<float, int>> top;  // [rows][k], largest first; id −1 empty

    Scan(Eigen::Index n, int keep)
        : rows(n),
          k(keep),
          row(static_cast<std::size_t>(n)),
          top(static_cast<std::size_t>(n * keep), {-std::numeric_limits<float>::infinity(), -1}) {}
    std::pair<float, int>* topOf(Eigen::Index r) { return top.data() + r * k; }

    // Takes in logits `s` [rows, n] of vocabulary ids v0 … v0 + n − 1.
    void add(const Mat& s, Eigen::Index v0, const Targets& targets) {
        for (Eigen::Index r = 0; r < rows; ++r) {
            const auto v = s.row(r);
            RowScan& st = row[static_cast<std::size_t>(r)];
            const float m = v.maxCoeff();
            const double part = (v.array() - m).exp().cast<double>().sum();
            if (m > st.max) {
                st.sum = st.sum * std::exp(static_cast<double>(st.max) - m) + part;
                st.max = m;
            } else {
                st.sum += part * std::exp(static_cast<double>(m) - st.max);
            }
            std::pair<float, int>* t = topOf(r);
            if (m > t[k - 1].first) {
                for (Eigen::Index c = 0; c < v.size(); ++c) {
                    if (v[c] <= t[k - 1].first) continue;
                    int at = k - 1;
                    while (at > 0 && t[at - 1].first < v[c]) {
                        t[at] = t[at - 1];
                        --at;
                    }
                    t[at] = {v[c], static_cast<int>(v0 + c)};
                }
            }
            if (targets.ids.empty()) continue;
            const float target = targets.logits[static_cast<std::size_t>(r)];
            if (std::isnan(target)) continue;
            st.above += (v.array() > target).count();
            // the target's own logit, as the product made it, is not one above itself
            if (const Eigen::Index own = targets.ids[static_cast<std::size_t>(r)] - v0; own >= 0 && own < v.size()) {
                st.target = v[own];
                if (v[own] > target) --st.above;
            }
        }
    }

    // Takes in another scan of other vocabulary blocks over the same rows.
    void merge(const Scan& o) {
        for (Eigen::Index r = 0; r < rows; ++r) {
            RowScan& a = row[static_cast<std::size_t>(r)];
            const RowScan& b = o.row[static_cast<std::size_t>(r)];
            if (b.sum == 0) continue;
            if (a.sum == 0) {
                a.max = b.max, a.sum = b.sum;
            } else {
                const float m = std::max(a.max, b.max);
                a.sum = a.sum * std::exp(static_cast<double>(a.max) - m) + b.sum * std::exp(static_cast<double>(b.max) - m);
                a.max = m;
            }
            a.above += b.above;
            if (!std::isnan(b.target)) a.target = b.target;
            std::pair<float, int>* t = topOf(r);
            const std::pair<float, int>* u = o.top.data() + r * k;
            std::vector<std::pair<float, int>> both(t, t + k);
            both.insert(both.end(), u, u + k);
            // largest first; equal logits: the lower id first, as a sort over the vocabulary would
            std::sort(both.begin(), both.end(),
                      [](const auto& x, const auto& y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
            std::copy_n(both.begin(), k, t);
        }
    }
    double logSumExp(Eigen::Index r) const {
        const RowScan& st = row[static_cast<std::size_t>(r)];
        return static_cast<double>(st.max) + std::log(st.sum);
    }
};

// What the model does to a block of logits after the product: an encoder's vocabulary bias,
// Gemma 2's final soft-capping.
void finishLogits(const Checkpoint& model, Mat& s, Eigen::Index v0) {
    if (model.lmBias()) s.rowwise() += model.lmBias().row().segment(v0, s.cols());
    if (const float cap = model.config().logitSoftcap; cap > 0.0f) s = (s.array() / cap).tanh() * cap;
}

// The logits of rows `x` [n, d] for the whole vocabulary, a block of rows of the unembedding at a
// time on every core, kept as a scan (top k, log-sum-exp, the count above each target logit).
Scan scanVocabulary(const Checkpoint& model, const MatRef& x, int k, const Targets& targets, Progress* progress) {
    const Weight& head = model.lmHead();
    const Eigen::Index vocab = head.storedRows();
    const Eigen::Index blocks = (vocab + kVocabBlock - 1) / kVocabBlock;
    Scan total(x.rows(), k);
    bool stopped = false;
    std::exception_ptr failure;  // what a thread threw (no exception may leave the parallel region)
    const auto fail = [&](std::exception_ptr e) {
#pragma omp critical(lens_failure)
        if (!failure) failure = std::move(e);
#pragma omp atomic write
        stopped = true;
    };
#pragma omp parallel
    {
        try {
            Scan mine(x.rows(), k);
            Mat s;
#pragma omp for schedule(dynamic)
            for (Eigen::Index b = 0; b < blocks; ++b) {
                bool stop = false;
#pragma omp atomic read
                stop = stopped;
                if (stop) continue;
                try {
                    const Eigen::Index v0 = b * kVocabBlock, n = std::min(kVocabBlock, vocab - v0);
                    const Mat w = head.storedRowsWidened(v0, n);
                    s.noalias() = x * w.transpose();
                    finishLogits(model, s, v0);
                    mine.add(s, v0, targets);
                    if (progress) {
#pragma omp critical(lens_progress)
                        progress->advance(1);
                    }
                } catch (...) {
                    fail(std::current_exception());
                }
            }
#pragma omp critical(lens_merge)
            total.merge(mine);
        } catch (...) {
            fail(std::current_exception());
        }
    }
    if (failure) std::rethrow_exception(failure);
    return total;
}

// Each row's target token and its logit made apart (NaN where none): what the scan counts the
// logits above (the scan's own product of the target is what its probability is read from).
Targets targetsOf(const Checkpoint& model, const Mat& x, const std::vector<int>& targets, Eigen::Index positions) {
    Targets out{std::vector<int>(static_cast<std::size_t>(x.rows()), -1),
                std::vector<float>(static_cast<std::size_t>(x.rows()), std::numeric_limits<float>::quiet_NaN())};
    for (Eigen::Index r = 0; r < x.rows(); ++r) {
        const int t = targets[static_cast<std::size_t>(r % positions)];
        if (t < 0) continue;
        Mat s = x.row(r) * model.lmHead().storedRowsWidened(t, 1).transpose();
        finishLogits(model, s, t);
        out.ids[static_cast<std::size_t>(r)] = t;
        out.logits[static_cast<std::size_t>(r)] = s(0, 0);
    }
    return out;
}

}  // namespace

Mat lensRows(const Checkpoint& model, const Run& run, int layer, Eigen::Index first, Eigen::Index count) {
    const Config& cfg = model.config();
    Mat rows(count, cfg.nEmbd);
    if (layer == cfg.nLayer) {
        rows = run.final().middleRows(first, count);
    } else {
        const Mat x = run.input(layer).middleRows(first, count);
        if (model.finalGain()) normRows(cfg.norm, x, model.finalGain(), model.finalBias(), cfg.normEpsilon, rows);
        else rows = x;  // a post-norm model's stream is normed where it is kept
    }
    if (!model.headDense()) return rows;
    Mat h(count, model.headDense().cols);
    linear(rows, model.headDense(), model.headDenseBias(), h);
    activate(cfg.headActivation, h);
    normRows(cfg.norm, h, model.headNormGain(), model.headNormBias(), cfg.normEpsilon, h);
    return h;
}

LogitLens logitLens(const Checkpoint& model, const Run& run, Eigen::Index first, Eigen::Index count, int k, const std::vector<int>& targets,
                    Progress* progress) {
    const Config& cfg = model.config();
    const char* where = "logit lens";
    if (!model.predicts()) throw InputError(where, "the checkpoint has no output head to read the residual stream through");
    if (!run.keepsActivations())
        throw InputError(where, "this pass keeps no residual stream (an input of " + std::to_string(run.tokens()) +
                                    " tokens keeps only what makes its maps); shorten the text");
    if (k < 1 || k > kMaxLensTokens) throw InputError(where, "keeps 1 to " + std::to_string(kMaxLensTokens) + " tokens a cell");
    if (first < 0 || count < 1 || first + count > run.tokens())
        throw InputError(where, "positions " + std::to_string(first) + " … " + std::to_string(first + count - 1) + " are outside the " +
                                    std::to_string(run.tokens()) + " tokens");
    const Eigen::Index vocab = model.lmHead().storedRows();
    if (!targets.empty()) {
        if (static_cast<Eigen::Index>(targets.size()) != count)
            throw InputError(where, std::to_string(targets.size()) + " targets for " + std::to_string(count) + " positions");
        for (const int t : targets)
            if (t >= vocab)
                throw InputError(where, "target token " + std::to_string(t) + " is outside the vocabulary of " + std::to_string(vocab));
    }
    LogitLens lens;
    lens.layers = cfg.nLayer + 1;
    lens.first = first;
    lens.positions = count;
    lens.k = static_cast<int>(std::min<Eigen::Index>(k, vocab));
    // Every layer's rows at once: [layers · count, d], layer-major.
    const Mat last = lensRows(model, run, cfg.nLayer, first, count);
    Mat x(static_cast<Eigen::Index>(lens.layers) * count, last.cols());
    for (int l = 0; l < cfg.nLayer; ++l) x.middleRows(l * count, count) = lensRows(model, run, l, first, count);
    x.bottomRows(count) = last;
    // The progress: every scan's blocks of the vocabulary, expected once.
    const Eigen::Index blocks = (vocab + kVocabBlock - 1) / kVocabBlock;
    const Eigen::Index scans = (targets.empty() ? 1 : 0) + (x.rows() + kRowChunk - 1) / kRowChunk;
    if (progress) progress->expect(static_cast<std::uint64_t>(blocks * scans));
    if (targets.empty()) {  // what the last layer ranks first
        const Scan final = scanVocabulary(model, last, 1, Targets{}, progress);
        lens.targets.resize(static_cast<std::size_t>(count));
        for (Eigen::Index p = 0; p < count; ++p) lens.targets[static_cast<std::size_t>(p)] = final.top[static_cast<std::size_t>(p)].second;
    } else {
        lens.targets = targets;
    }
    // The predicted position's last row is the pass's own logits (the next-token panel's, to the bit).
    const Eigen::Index own = run.predicted - first;
    const bool ownRow = own >= 0 && own < count && run.logits.size() == vocab;
    if (ownRow && targets.empty()) lens.targets[static_cast<std::size_t>(own)] = topNext(run.logits, 1.0f, 1)[0].id;
    const Targets all = targetsOf(model, x, lens.targets, count);
    const auto cells = static_cast<std::size_t>(x.rows());
    lens.top.resize(cells * static_cast<std::size_t>(lens.k));
    lens.targetProb.assign(cells, 0.0f);
    lens.targetRank.assign(cells, 0);
    for (Eigen::Index r0 = 0; r0 < x.rows(); r0 += kRowChunk) {
        const Eigen::Index n = std::min(kRowChunk, x.rows() - r0);
        const Targets chunk{std::vector<int>(all.ids.begin() + r0, all.ids.begin() + r0 + n),
                            std::vector<float>(all.logits.begin() + r0, all.logits.begin() + r0 + n)};
        const Scan scan = scanVocabulary(model, x.middleRows(r0, n), lens.k, chunk, progress);
        for (Eigen::Index i = 0; i < n; ++i) {
            const auto r = static_cast<std::size_t>(r0 + i);
            const double lse = scan.logSumExp(i);
            for (int j = 0; j < lens.k; ++j) {
                const auto& [logit, id] = scan.top[static_cast<std::size_t>(i * lens.k + j)];
                lens.top[r * static_cast<std::size_t>(lens.k) + static_cast<std::size_t>(j)] = {
                    id, static_cast<float>(std::exp(static_cast<double>(logit) - lse))};
            }
            const RowScan& st = scan.row[static_cast<std::size_t>(i)];
            if (std::isnan(st.target)) continue;
            lens.targetProb[r] = static_cast<float>(std::exp(static_cast<double>(st.target) - lse));
            lens.targetRank[r] = static_cast<int>(st.above) + 1;
        }
    }
    if (ownRow) {
        const std::size_t r = lens.at(cfg.nLayer, own);
        const std::vector<NextToken> next = topNext(run.logits, 1.0f, lens.k);
        for (int j = 0; j < lens.k; ++j)
            lens.top[r * static_cast<std::size_t>(lens.k) + static_cast<std::size_t>(j)] = {next[static_cast<std::size_t>(j)].id,
                                                                                            next[static_cast<std::size_t>(j)].prob};
        if (const int t = lens.targets[static_cast<std::size_t>(own)]; t >= 0) {
            const float logit = run.logits[t];
            lens.targetProb[r] = probabilities(run.logits, {NextToken{t, logit, 0.0f}}, 1.0f)[0];
            lens.targetRank[r] = static_cast<int>((run.logits.array() > logit).count()) + 1;
        }
    }
    return lens;
}

}  // namespace attnviz::core::decoder
