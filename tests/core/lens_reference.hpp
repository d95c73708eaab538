// The logit lens the long way, for the tests: every logit of every cell made whole (the lens's
// rows against the whole unembedding, widened, in double), then the encoder's bias and Gemma 2's
// soft-capping, a softmax in double, and a full sort; checked against core::decoder::logitLens.
#pragma once

#include "core/models/decoder/logit_lens.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace attnviz::testing {

inline void expectLensIsTheWholeSoftmax(const core::decoder::Checkpoint& model, const core::decoder::Run& run,
                                        const core::decoder::LogitLens& lens, double tol = 1e-5) {
    using namespace core::decoder;
    const Eigen::MatrixXd unembed = model.lmHead().storedRowsWidened(0, model.lmHead().storedRows()).cast<double>();
    const int vocab = static_cast<int>(unembed.rows());
    const float cap = model.config().logitSoftcap;
    for (int l = 0; l < lens.layers; ++l) {
        const Eigen::MatrixXd rows = lensRows(model, run, l, lens.first, lens.positions).cast<double>();
        for (Eigen::Index p = 0; p < lens.positions; ++p) {
            SCOPED_TRACE("layer " + std::to_string(l) + " position " + std::to_string(lens.first + p));
            Eigen::VectorXd logits = unembed * rows.row(p).transpose();
            if (model.lmBias()) logits += model.lmBias().row().transpose().cast<double>();
            if (cap > 0.0f) logits = (logits.array() / cap).tanh() * cap;
            const double top = logits.maxCoeff();
            const double lse = top + std::log((logits.array() - top).exp().sum());
            std::vector<int> order(static_cast<std::size_t>(vocab));
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
            const LensToken* cell = lens.cell(l, p);
            for (int j = 0; j < lens.k; ++j) {
                const int want = order[static_cast<std::size_t>(j)];
                // a near tie may be ranked either way; the probability must agree
                if (cell[j].id != want) {
                    EXPECT_NEAR(logits[cell[j].id], logits[want], 1e-5) << "rank " << j + 1;
                }
                EXPECT_NEAR(cell[j].prob, std::exp(logits[cell[j].id] - lse), tol) << "rank " << j + 1;
            }
            const int target = lens.targets[static_cast<std::size_t>(p)];
            ASSERT_GE(target, 0);
            const std::size_t at = lens.at(l, p);
            EXPECT_NEAR(lens.targetProb[at], std::exp(logits[target] - lse), tol);
            const auto above = static_cast<int>((logits.array() > logits[target] + 1e-5).count());
            const auto within = static_cast<int>((logits.array() > logits[target] - 1e-5).count());
            EXPECT_GE(lens.targetRank[at], above + 1);
            EXPECT_LE(lens.targetRank[at], std::max(within, 1));
        }
    }
    // The predicted position's last row is the pass's own logits, exactly.
    if (const Eigen::Index own = run.predicted - lens.first; own >= 0 && own < lens.positions) {
        const std::vector<NextToken> next = topNext(run.logits, 1.0f, lens.k);
        for (int j = 0; j < lens.k; ++j) {
            EXPECT_EQ(lens.cell(lens.layers - 1, own)[j].id, next[static_cast<std::size_t>(j)].id);
            EXPECT_EQ(lens.cell(lens.layers - 1, own)[j].prob, next[static_cast<std::size_t>(j)].prob);
        }
    }
}

}  // namespace attnviz::testing
