// Relative positions: the same sentence at positions 0 … T-1 and at k … k+T-1. With RoPE and
// ALiBi a score depends on i - j alone, so a shift leaves every score as it was; sinusoidal
// encodings added to X do not have that property.
#pragma once

#include "core/scenario/model.hpp"
#include "core/scenario/scenario.hpp"

#include <string>

namespace attnviz::core {

struct ShiftReport {
    int shift = 0;
    float scoreDiff = 0.0f;   // max |S(shifted) - S| over every head and cell
    float scoreScale = 0.0f;  // max |S|: what the difference is measured against
    float weightDiff = 0.0f;  // max |A(shifted) - A|
    // Unchanged up to float rounding: max |ΔS| within a few float steps of the scores' size.
    bool unchanged() const;
};

// Builds the scenario's model twice (positions from 0 and from `shift`, 0 ≤ shift ≤ 1 << 20)
// and compares every head's scores and weights. Throws InputError as buildModel does.
ShiftReport checkShift(const Scenario& scenario, int shift, const Limits& limits = {});

// "scores unchanged after a shift of 7: max |ΔS| = 3e-7", "scores change after a shift of 7:
// max |ΔS| = 0.84"
std::string shiftVerdict(const ShiftReport& report);

}  // namespace attnviz::core
