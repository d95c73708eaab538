#include "core/scenario/shift.hpp"

#include "core/attention/permutation.hpp"
#include "core/base/error.hpp"

#include <algorithm>
#include <cstdio>

namespace attnviz::core {

bool ShiftReport::unchanged() const {
    // A score is a sum of d_k products, each rounded: 1e-5 of the largest score (and of 1), some
    // 80 float steps, is rounding; a position that matters moves scores by far more.
    return scoreDiff <= 1e-5f * std::max(1.0f, scoreScale);
}

ShiftReport checkShift(const Scenario& scenario, int shift, const Limits& limits) {
    if (shift < 0 || shift > (1 << 20)) throw InputError("shift", "must be between 0 and 1048576, got " + std::to_string(shift));
    const Model at0 = buildModel(scenario, true, limits, 0), atShift = buildModel(scenario, true, limits, shift);
    const Settings settings = buildSettings(scenario, at0);
    const Forward a = runForward(at0, settings), b = runForward(atShift, settings);
    ShiftReport report;
    report.shift = shift;
    for (std::size_t h = 0; h < a.heads.size(); ++h) {
        report.scoreDiff = std::max(report.scoreDiff, maxAbsDiff(a.heads[h].scores, b.heads[h].scores));
        report.scoreScale = std::max(report.scoreScale, a.heads[h].scores.cwiseAbs().maxCoeff());
        report.weightDiff = std::max(report.weightDiff, maxAbsDiff(a.heads[h].weights, b.heads[h].weights));
    }
    return report;
}

std::string shiftVerdict(const ShiftReport& report) {
    char diff[32];
    std::snprintf(diff, sizeof diff, "%.2g", static_cast<double>(report.scoreDiff));
    return std::string(report.unchanged() ? "scores unchanged" : "scores change") + " after a shift of " + std::to_string(report.shift) +
           ": max |ΔS| = " + diff;
}

}  // namespace attnviz::core
