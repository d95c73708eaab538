// Sizes: explicit matrices define the sizes they fix (d_model, heads*d_k, heads*d_v, d_out),
// only true contradictions are refused and name both sides; and every size has a limit that
// buildModel checks before it allocates.
#include "core/base/error.hpp"
#include "core/io/export.hpp"
#include "core/scenario/model.hpp"
#include "core/scenario/scenario.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

using namespace attnviz::core;
using nlohmann::json;

namespace {

// rows x cols of distinct, smooth numbers in [-1, 1] (`salt` tells matrices apart).
json numbers(int rows, int cols, int salt) {
    json m = json::array();
    for (int r = 0; r < rows; ++r) {
        json row = json::array();
        for (int c = 0; c < cols; ++c) row.push_back(std::sin(0.7 * r + 1.3 * c + 0.37 * salt));
        m.push_back(row);
    }
    return m;
}

// The message of the InputError that parsing, building and running `j` throws ("" if none).
std::string errorOf(const json& j) {
    try {
        const Scenario s = parseScenario(j.dump(), "s.json");
        try {
            const Model m = buildModel(s);
            runForward(m, buildSettings(s, m));
        } catch (const InputError& e) {
            throw e.within("s.json");
        }
    } catch (const InputError& e) {
        return e.message();
    }
    return "";
}

using MatD = Eigen::MatrixXd;

MatD toDouble(const Mat& m) { return m.cast<double>(); }

MatD fromJson(const json& rows) {
    MatD m(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(rows[0].size()));
    for (Eigen::Index r = 0; r < m.rows(); ++r)
        for (Eigen::Index c = 0; c < m.cols(); ++c) m(r, c) = rows[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)].get<double>();
    return m;
}

// softmax(q kᵀ / √d_k) row by row, in double.
MatD attention(const MatD& q, const MatD& k) {
    MatD a = q * k.transpose() / std::sqrt(static_cast<double>(q.cols()));
    for (Eigen::Index r = 0; r < a.rows(); ++r) {
        a.row(r) = (a.row(r).array() - a.row(r).maxCoeff()).exp().matrix();
        a.row(r) /= a.row(r).sum();
    }
    return a;
}

}  // namespace

TEST(Shapes, ExplicitMatricesDefineTheirShapes) {
    // 1. Sizes the matrices fix are read from them; the forward pass runs and has those shapes.
    const struct {
        const char* what;
        json scenario;
        int dModel, heads, dk, dv, dOut;
    } inferred[] = {
        {"the report: W_Q, W_K 10 x 3 and W_V 10 x 7, heads 1",
         {{"X", numbers(6, 10, 0)}, {"W_Q", numbers(10, 3, 1)}, {"W_K", numbers(10, 3, 2)}, {"W_V", numbers(10, 7, 3)}, {"heads", 1}},
         10,
         1,
         3,
         7,
         7},
        {"the same without heads",
         {{"X", numbers(6, 10, 0)}, {"W_Q", numbers(10, 3, 1)}, {"W_K", numbers(10, 3, 2)}, {"W_V", numbers(10, 7, 3)}},
         10,
         1,
         3,
         7,
         7},
        {"heads given: d_k and d_v are the widths over the heads",
         {{"X", numbers(6, 10, 0)}, {"W_Q", numbers(10, 6, 1)}, {"W_K", numbers(10, 6, 2)}, {"W_V", numbers(10, 4, 3)}, {"heads", 2}},
         10,
         2,
         3,
         2,
         4},
        {"d_k given: heads is W_Q's width over it, W_K and W_V are drawn to match",
         {{"X", numbers(6, 10, 0)}, {"W_Q", numbers(10, 6, 1)}, {"d_k", 3}},
         10,
         2,
         3,
         3,
         6},
        {"d_v given: heads is W_V's width over it", {{"X", numbers(5, 12, 0)}, {"W_V", numbers(12, 6, 3)}, {"d_v", 2}}, 12, 3, 4, 2, 6},
        {"no X: d_model is the weights' rows",
         {{"tokens", {"a", "b", "c"}}, {"W_Q", numbers(5, 4, 1)}, {"W_K", numbers(5, 4, 2)}},
         5,
         1,
         4,
         4,
         4},
        {"W_O's rows give heads*d_v, its columns d_out",
         {{"X", numbers(6, 10, 0)}, {"W_O", numbers(8, 5, 4)}, {"heads", 2}},
         10,
         2,
         5,
         4,
         5},
        {"one-hot over the d_model W_Q's rows give",
         {{"tokens", {"a", "b", "a"}}, {"embedding", "onehot"}, {"W_Q", numbers(7, 2, 1)}},
         7,
         1,
         2,
         2,
         2},
        {"an identity W_V keeps X's width",
         {{"X", numbers(6, 4, 0)}, {"W_Q", numbers(4, 2, 1)}, {"W_K", numbers(4, 2, 2)}, {"W_V", "identity"}},
         4,
         1,
         2,
         4,
         4},
        {"explicit Q, K, V: d_k from Q, d_v from V, d_out from W_O",
         {{"Q", numbers(2, 3, 1)}, {"K", numbers(4, 3, 2)}, {"V", numbers(4, 5, 3)}, {"W_O", numbers(5, 2, 4)}},
         2,
         1,
         3,
         5,
         2},
    };
    for (const auto& c : inferred) {
        SCOPED_TRACE(c.what);
        ASSERT_EQ(errorOf(c.scenario), "");
        const Scenario s = parseScenario(c.scenario.dump(), "s.json");
        const Model m = buildModel(s);
        EXPECT_EQ(m.dModel, c.dModel);
        EXPECT_EQ(m.heads, c.heads);
        EXPECT_EQ(m.dk, c.dk);
        EXPECT_EQ(m.dv, c.dv);
        if (!m.explicitQkv) {
            EXPECT_EQ(m.wq.rows(), c.dModel);
            EXPECT_EQ(m.wq.cols(), c.heads * c.dk);
            EXPECT_EQ(m.wk.cols(), c.heads * c.dk);
            EXPECT_EQ(m.wv.cols(), c.heads * c.dv);
        }
        const Forward f = runForward(m, buildSettings(s, m));
        ASSERT_EQ(f.heads.size(), static_cast<std::size_t>(c.heads));
        EXPECT_EQ(f.heads[0].q.cols(), c.dk);
        EXPECT_EQ(f.heads[0].v.cols(), c.dv);
        EXPECT_EQ(f.output.rows(), m.tq());
        EXPECT_EQ(f.output.cols(), c.dOut);
    }

    // 2. True contradictions: the message names both sides.
    const struct {
        json scenario;
        const char* message;
    } contradictions[] = {
        {{{"X", numbers(6, 10, 0)}, {"W_Q", numbers(10, 3, 1)}, {"W_K", numbers(10, 4, 2)}},
         "s.json: W_K: 10 x 4 disagrees with W_Q: 10 x 3 (both are d_model x heads*d_k)"},
        {{{"X", numbers(6, 10, 0)}, {"W_Q", numbers(10, 3, 1)}, {"d_k", 4}, {"heads", 1}},
         "s.json: d_k: 4 given, but W_Q has 3 columns for 1 head"},
        {{{"X", numbers(6, 10, 0)}, {"W_Q", numbers(8, 3, 1)}, {"W_K", numbers(10, 3, 2)}},
         "s.json: W_Q: expected 10 x 3 (d_model x heads*d_k), got 8 x 3: 8 rows, but X has 10 columns (d_model)"},
        {{{"W_Q", numbers(10, 3, 1)}, {"W_V", numbers(8, 3, 3)}},
         "s.json: W_V: 8 x 3 disagrees with W_Q: 10 x 3 (W_Q is d_model x heads*d_k, W_V is d_model x heads*d_v)"},
        {{{"X", numbers(6, 10, 0)}, {"W_V", numbers(10, 7, 3)}, {"W_O", numbers(6, 10, 4)}},
         "s.json: W_O: 6 x 10 disagrees with W_V: 10 x 7 (W_V is d_model x heads*d_v, W_O is heads*d_v x d_out)"},
        {{{"X", numbers(6, 10, 0)}, {"W_Q", numbers(10, 3, 1)}, {"heads", 2}},
         "s.json: heads: 2 given, but W_Q has 3 columns (heads*d_k), not a multiple of 2"},
        {{{"X", numbers(6, 10, 0)}, {"W_Q", numbers(10, 3, 1)}, {"d_k", 2}},
         "s.json: d_k: 2 given, but W_Q has 3 columns (heads*d_k), not a multiple of 2"},
        {{{"X", numbers(6, 10, 0)}, {"W_V", numbers(10, 7, 3)}, {"d_v", 4}, {"heads", 1}},
         "s.json: d_v: 4 given, but W_V has 7 columns for 1 head"},
        {{{"X", numbers(6, 10, 0)}, {"W_V", numbers(10, 7, 3)}, {"d_v", 4}},
         "s.json: d_v: 4 given, but W_V has 7 columns (heads*d_v), not a multiple of 4"},
        {{{"X", numbers(6, 10, 0)}, {"W_Q", numbers(10, 3, 1)}, {"W_V", numbers(10, 4, 3)}, {"d_v", 2}},
         "s.json: W_Q: its 3 columns (heads*d_k) are not a multiple of 2 heads (W_V has 4 columns, d_v 2 given)"},
        {{{"X", numbers(6, 10, 0)}, {"d_model", 8}}, "s.json: d_model: 8 given, but X is 6 x 10 (T x d_model)"},
        {{{"W_Q", numbers(10, 3, 1)}, {"d_model", 8}}, "s.json: d_model: 8 given, but W_Q is 10 x 3 (d_model x heads*d_k)"},
        {{{"tokens", {"a", "b", "c"}}, {"embedding", "onehot"}, {"W_Q", numbers(2, 2, 1)}},
         "s.json: d_model: one-hot embedding needs at least 3 dimensions (one per distinct token), but W_Q is 2 x 2 "
         "(d_model x heads*d_k)"},
        {{{"Q", numbers(2, 3, 1)}, {"K", numbers(2, 3, 2)}, {"V", numbers(2, 2, 3)}, {"d_k", 2}},
         "s.json: d_k: 2 given, but Q is 2 x 3 (T_q x d_k)"},
        {{{"X", numbers(6, 4, 0)}, {"W_Q", "identity"}, {"W_K", numbers(4, 2, 2)}},
         "s.json: W_Q: \"identity\" needs a square matrix, but the shape is 4 x 2 (d_model x heads*d_k)"},
    };
    for (const auto& c : contradictions) EXPECT_EQ(errorOf(c.scenario), c.message) << c.scenario.dump();
}

// An inferred case end to end: the JSON export's numbers against the attention recomputed in
// double with Eigen from the scenario's own matrices. Two heads of d_k 2 and d_v 3 (from W_Q's
// 4 and W_V's 6 columns) and a W_O of 6 x 5: d_out 5 ≠ d_model 6.
TEST(Shapes, InferredShapesExportTheRightNumbers) {
    const json j = {{"X", numbers(4, 6, 0)},   {"W_Q", numbers(6, 4, 1)}, {"W_K", numbers(6, 4, 2)},
                    {"W_V", numbers(6, 6, 3)}, {"W_O", numbers(6, 5, 4)}, {"heads", 2}};
    const Scenario s = parseScenario(j.dump(), "s.json");
    const Model m = buildModel(s);
    ASSERT_EQ(m.dk, 2);
    ASSERT_EQ(m.dv, 3);
    const Forward f = runForward(m, buildSettings(s, m));
    StringSink sink;
    writeExportJson(sink, m, f);
    const json out = json::parse(sink.text);

    const MatD x = toDouble(*s.x), wq = toDouble(s.wq.value), wk = toDouble(s.wk.value), wv = toDouble(s.wv.value);
    MatD concat(4, 6);
    for (int h = 0; h < 2; ++h) {
        const MatD q = x * wq.middleCols(2 * h, 2), k = x * wk.middleCols(2 * h, 2), v = x * wv.middleCols(3 * h, 3);
        const MatD a = attention(q, k);
        concat.middleCols(3 * h, 3) = a * v;
        const json& head = out["heads"][static_cast<std::size_t>(h)];
        EXPECT_LT((fromJson(head["Q"]) - q).cwiseAbs().maxCoeff(), 1e-5) << "head " << h;
        EXPECT_LT((fromJson(head["weights"]) - a).cwiseAbs().maxCoeff(), 1e-5) << "head " << h;
        EXPECT_LT((fromJson(head["output"]) - a * v).cwiseAbs().maxCoeff(), 1e-5) << "head " << h;
        for (Eigen::Index r = 0; r < a.rows(); ++r) EXPECT_NEAR(a.row(r).sum(), 1.0, 1e-12);
    }
    const MatD expected = concat * toDouble(s.wo.value);
    const MatD output = fromJson(out["output"]);
    ASSERT_EQ(output.rows(), 4);
    ASSERT_EQ(output.cols(), 5);
    EXPECT_LT((output - expected).cwiseAbs().maxCoeff(), 1e-5);
}

TEST(Shapes, HeavyRequestsStayResponsive) {
    // heads: 256 is the most; the flags' --heads 4096 --d-k 1 --d-model 1 is refused at once.
    EXPECT_EQ(errorOf({{"tokens", {"a", "b"}}, {"heads", 257}, {"d_k", 1}, {"d_model", 1}}), "s.json: heads: 257 is over the limit of 256");
    EXPECT_EQ(errorOf({{"tokens", {"a", "b"}}, {"heads", 4096}, {"d_k", 1}, {"d_model", 1}}),
              "s.json: heads: 4096 is over the limit of 256");
    // before d_k = d_model / heads is derived from it
    EXPECT_EQ(errorOf({{"heads", 300}}), "s.json: heads: 300 is over the limit of 256");
    // a count the matrices imply is held to it too
    EXPECT_EQ(errorOf({{"X", numbers(2, 1, 0)}, {"W_Q", numbers(1, 300, 1)}, {"d_k", 1}}),
              "s.json: heads: 300 is over the limit of 256 (W_Q has 300 columns, d_k 1 given)");
    const json most = {{"tokens", {"a", "b"}}, {"heads", 256}, {"d_k", 1}, {"d_model", 1}};
    ASSERT_EQ(errorOf(most), "");
    const Scenario s = parseScenario(most.dump(), "s.json");
    const Model m = buildModel(s);
    EXPECT_EQ(m.heads, 256);
    EXPECT_EQ(runForward(m, buildSettings(s, m)).heads.size(), 256u);

    // d_k, d_v: 16384, the widest d_model
    EXPECT_EQ(errorOf({{"tokens", {"a"}}, {"d_model", 1}, {"d_k", 16385}}), "s.json: d_k: 16385 is over the limit of 16384");
    EXPECT_EQ(errorOf({{"tokens", {"a"}}, {"d_model", 1}, {"d_v", 16385}}), "s.json: d_v: 16385 is over the limit of 16384");
    EXPECT_EQ(errorOf({{"Q", numbers(1, 16385, 1)}, {"K", numbers(1, 16385, 2)}, {"V", numbers(1, 1, 3)}}),
              "s.json: d_k: 16385 is over the limit of 16384");
    EXPECT_EQ(errorOf({{"tokens", {"a"}}, {"d_model", 1}, {"d_k", 16384}, {"d_v", 16384}}), "");
    // d_out: W_O's columns, held to d_model's limit
    EXPECT_EQ(errorOf({{"tokens", {"a"}}, {"d_model", 1}, {"W_O", numbers(1, 16385, 4)}}),
              "s.json: W_O: 16385 columns (d_out) is over the limit of 16384");

    // Huge sizes are refused before anything is allocated: each of these would need tens of GB
    // (X or W_Q alone), more than a test machine has.
    EXPECT_EQ(errorOf({{"d_model", 1 << 30}}), "s.json: d_model: 1073741824 is over the limit of 16384");
    EXPECT_EQ(errorOf({{"d_model", 16384}, {"heads", 1}, {"d_k", 1 << 30}}),
              "s.json: W_Q: this needs about 384.2 TiB (W_Q alone is 16384 x 1073741824), over the limit of 12.0 GiB");
    // The flags and the app's actions set the same Scenario fields and build it the same way.
    Scenario flags;
    flags.heads = 4096;
    flags.dk = 1;
    flags.dModel = 1;
    try {
        buildModel(flags);
        ADD_FAILURE() << "4096 heads were built";
    } catch (const InputError& e) {
        EXPECT_EQ(e.message(), "heads: 4096 is over the limit of 256");
    }
}
