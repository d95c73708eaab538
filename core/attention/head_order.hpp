// Many heads laid out by what they do: a statistic of HeadStats picked by name, and the order
// of a [layers × heads] grid of tiles sorted by it (within each layer, or every head ranked),
// with the rule in words for the panel and the figure that show it.
#pragma once

#include "core/attention/head_stats.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attnviz::core {

// A head's score by which tiles are ordered and tinted: one of HeadStats, or a measurement given
// from outside: the induction test (repeated random tokens), the retrieval test (a segment
// copied from far back, its mean over lengths and depths), how far the head's map moved against
// another input (compare.hpp's mapMoved), or what the head writes onto a target's logit (direct
// logit attribution, models/decoder/attribution.hpp: signed).
enum class HeadScore : std::uint8_t {
    Entropy,
    EntropyShare,
    Distance,
    Self,
    Previous,
    First,
    FirstK,
    Duplicate,
    Induction,
    InductionTest,
    Moved,
    RetrievalTest,
    Next,
    Separator,
    Punctuation,
    Attribution
};
inline constexpr int kHeadScoreCount = 16;

// "entropy", "entropy-share", "distance", "self", "previous", "first", "first-k", "duplicate",
// "induction", "induction-test", "moved", "retrieval-test", "next", "separator", "punctuation",
// "attribution": the name flags and tooltips use.
const char* headScoreId(HeadScore score);
// In words, for a rule: "previous-token mass", "mean attention distance", …
const char* headScoreName(HeadScore score);
// Throws InputError(where, …) naming the choices on an unknown id.
HeadScore parseHeadScore(const std::string& id, const std::string& where);

// The statistic's value; InductionTest, RetrievalTest, Moved and Attribution are not in HeadStats (0: read them where
// they are made).
double headScore(const HeadStats& stats, HeadScore score);

// Each score's tint, −1 … 1: its share of the largest score when none is negative (0 … 1), else
// its share of the largest size, signed (a signed score such as attribution: for or against).
std::vector<double> tintStrengths(const std::vector<double>& scores);

// How tiles are placed: layer by layer in head order, sorted within each layer (largest score
// first), or every head ranked by score in one list (largest first).
enum class TileOrder : std::uint8_t { Natural, WithinLayer, Ranked };

// The heads in the order their tiles are drawn, row-major over a [layers × heads] grid: entry k
// is the index (layer × heads + head) of the head drawn in slot k. `scores`: [layers × heads]
// layer-major; ties keep head order (a stable sort), so the order is the same on every run.
std::vector<int> tileOrder(int layers, int heads, TileOrder order, const std::vector<double>& scores);

// The rule in words, for the panel and the figure: "" for the natural order without a tint;
// e.g. "sorted by previous-token mass within each layer; tint = previous".
std::string orderRule(TileOrder order, std::optional<HeadScore> tint, HeadScore sortBy);

}  // namespace attnviz::core
