#include "core/attention/head_order.hpp"

#include "core/base/error.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnviz::core {
namespace {

struct ScoreInfo {
    const char* id;
    const char* name;
};

constexpr ScoreInfo kScores[kHeadScoreCount] = {
    {"entropy", "entropy"},
    {"entropy-share", "entropy share"},
    {"distance", "mean attention distance"},
    {"self", "self mass"},
    {"previous", "previous-token mass"},
    {"first", "first-token mass"},
    {"first-k", "mass on the first k tokens"},
    {"duplicate", "duplicate-token score"},
    {"induction", "induction score"},
    {"induction-test", "induction test score"},
    {"moved", "how far the map moved"},
    {"retrieval-test", "retrieval test score"},
    {"next", "next-token mass"},
    {"separator", "mass on separators"},
    {"punctuation", "mass on punctuation"},
    {"attribution", "direct logit attribution"},
};

}  // namespace

const char* headScoreId(HeadScore score) { return kScores[static_cast<int>(score)].id; }
const char* headScoreName(HeadScore score) { return kScores[static_cast<int>(score)].name; }

HeadScore parseHeadScore(const std::string& id, const std::string& where) {
    std::string choices;
    for (int k = 0; k < kHeadScoreCount; ++k) {
        if (id == kScores[k].id) return static_cast<HeadScore>(k);
        choices += (k == 0 ? "" : k + 1 == kHeadScoreCount ? " or " : ", ") + std::string(kScores[k].id);
    }
    throw InputError(where, "expected " + choices + ", got " + quoteValue(id));
}

double headScore(const HeadStats& s, HeadScore score) {
    switch (score) {
        case HeadScore::Entropy: return s.entropy;
        case HeadScore::EntropyShare: return s.entropyShare;
        case HeadScore::Distance: return s.distance;
        case HeadScore::Self: return s.self;
        case HeadScore::Previous: return s.previous;
        case HeadScore::First: return s.first;
        case HeadScore::FirstK: return s.firstK;
        case HeadScore::Duplicate: return s.duplicate;
        case HeadScore::Induction: return s.induction;
        case HeadScore::Next: return s.next;
        case HeadScore::Separator: return s.separator;
        case HeadScore::Punctuation: return s.punctuation;
        case HeadScore::InductionTest:
        case HeadScore::RetrievalTest:
        case HeadScore::Moved:
        case HeadScore::Attribution: return 0.0;
    }
    return 0.0;
}

std::vector<double> tintStrengths(const std::vector<double>& scores) {
    double hi = 0.0, lo = 0.0;
    for (const double v : scores) hi = std::max(hi, std::isfinite(v) ? v : 0.0), lo = std::min(lo, std::isfinite(v) ? v : 0.0);
    const double size = std::max(hi, -lo);
    std::vector<double> out(scores.size(), 0.0);
    if (size <= 0.0) return out;
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = std::isfinite(scores[k]) ? scores[k] / size : 0.0;
    return out;
}

std::vector<int> tileOrder(int layers, int heads, TileOrder order, const std::vector<double>& scores) {
    std::vector<int> slots(static_cast<std::size_t>(layers) * static_cast<std::size_t>(heads));
    std::iota(slots.begin(), slots.end(), 0);
    if (order == TileOrder::Natural || scores.size() != slots.size()) return slots;
    const auto larger = [&](int a, int b) { return scores[static_cast<std::size_t>(a)] > scores[static_cast<std::size_t>(b)]; };
    if (order == TileOrder::Ranked) {
        std::stable_sort(slots.begin(), slots.end(), larger);
        return slots;
    }
    for (int l = 0; l < layers; ++l) {
        const auto row = slots.begin() + static_cast<std::ptrdiff_t>(l) * heads;
        std::stable_sort(row, row + heads, larger);
    }
    return slots;
}

std::string orderRule(TileOrder order, std::optional<HeadScore> tint, HeadScore sortBy) {
    std::string rule;
    if (order == TileOrder::WithinLayer) rule = std::string("sorted by ") + headScoreName(sortBy) + " within each layer";
    if (order == TileOrder::Ranked) rule = std::string("every head ranked by ") + headScoreName(sortBy) + ", largest first";
    if (tint) rule += std::string(rule.empty() ? "" : "; ") + "tint = " + headScoreId(*tint);
    return rule;
}

}  // namespace attnviz::core
