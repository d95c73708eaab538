// What-if passes (decoder::forwardEdited) on a tiny GPT-2 checkpoint: a head's output zeroed or
// replaced by its mean over positions, a token hidden from every key set. Against an independent
// float64 GPT-2 written here from the stored tensors (not the checkpoint's reader), and the reuse
// of the layers below the first edited one (their storage shared, bit for bit the plain pass's).
// The same hooks against numpy: tests/oracle/test_gpt2_model.py and test_llama_model.py.
#include "core/base/error.hpp"
#include "core/models/gpt2/gpt2.hpp"
#include "tests/test_folder.hpp"
#include "tests/tiny_gpt2.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace attnviz::core {
namespace {

using namespace tinygpt2;
using decoder::Intervention;
using Kind = decoder::Intervention::Kind;
using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// A stored tensor as a float64 matrix [rows, cols] (a vector: [1, n]).
MatD tensor(const std::map<std::string, StoredTensor>& w, const std::string& name) {
    const StoredTensor& t = w.at(name);
    const Eigen::Index rows = t.shape.size() == 2 ? t.shape[0] : 1, cols = t.shape.back();
    MatD m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = t.values[static_cast<std::size_t>(i)];
    return m;
}

MatD layerNorm(const MatD& x, const MatD& gain, const MatD& bias) {
    MatD out(x.rows(), x.cols());
    for (Eigen::Index r = 0; r < x.rows(); ++r) {
        const double mean = x.row(r).mean();
        const double var = (x.row(r).array() - mean).square().mean();
        out.row(r) = ((x.row(r).array() - mean) / std::sqrt(var + 1e-5)) * gain.row(0).array() + bias.row(0).array();
    }
    return out;
}

struct Reference {
    std::vector<MatD> weights;  // layer-major, [T, T]
    Eigen::VectorXd probs;      // the next token's, softmax of the last position's logits
};

// GPT-2 in float64, as Hugging Face computes it, with the what-if hooks applied by hand.
Reference referencePass(const std::map<std::string, StoredTensor>& w, const std::vector<int>& ids, const std::vector<Intervention>& edits) {
    const auto t = static_cast<Eigen::Index>(ids.size());
    const Eigen::Index d = kEmbd, dh = kEmbd / kHeads;
    std::set<int> hidden;
    for (const Intervention& e : edits)
        if (e.kind == Kind::HideToken) hidden.insert(e.token);
    const MatD wte = tensor(w, "wte.weight"), wpe = tensor(w, "wpe.weight");
    MatD x(t, d);
    for (Eigen::Index i = 0; i < t; ++i) x.row(i) = wte.row(ids[static_cast<std::size_t>(i)]) + wpe.row(i);
    Reference ref;
    for (int l = 0; l < kLayers; ++l) {
        const std::string p = "h." + std::to_string(l) + ".";
        const MatD a = layerNorm(x, tensor(w, p + "ln_1.weight"), tensor(w, p + "ln_1.bias"));
        MatD qkv = a * tensor(w, p + "attn.c_attn.weight");
        qkv.rowwise() += tensor(w, p + "attn.c_attn.bias").row(0);
        MatD concat(t, d);
        for (int h = 0; h < kHeads; ++h) {
            const MatD q = qkv.middleCols(h * dh, dh), k = qkv.middleCols(d + h * dh, dh), v = qkv.middleCols(2 * d + h * dh, dh);
            MatD weights = MatD::Zero(t, t);
            for (Eigen::Index i = 0; i < t; ++i) {
                double top = -1e300;
                for (Eigen::Index j = 0; j <= i; ++j)
                    if (!hidden.count(static_cast<int>(j))) top = std::max(top, q.row(i).dot(k.row(j)) / std::sqrt(double(dh)));
                double sum = 0;
                for (Eigen::Index j = 0; j <= i; ++j)
                    if (!hidden.count(static_cast<int>(j)))
                        sum += weights(i, j) = std::exp(q.row(i).dot(k.row(j)) / std::sqrt(double(dh)) - top);
                if (sum > 0) weights.row(i) /= sum;
            }
            MatD o = weights * v;
            for (const Intervention& e : edits)
                if (e.kind != Kind::HideToken && e.layer == l && e.head == h) {
                    if (e.kind == Kind::ZeroHead) o.setZero();
                    else o.rowwise() = o.colwise().mean();
                }
            concat.middleCols(h * dh, dh) = o;
            ref.weights.push_back(weights);
        }
        MatD attn = concat * tensor(w, p + "attn.c_proj.weight");
        attn.rowwise() += tensor(w, p + "attn.c_proj.bias").row(0);
        x += attn;
        MatD up = layerNorm(x, tensor(w, p + "ln_2.weight"), tensor(w, p + "ln_2.bias")) * tensor(w, p + "mlp.c_fc.weight");
        up.rowwise() += tensor(w, p + "mlp.c_fc.bias").row(0);
        up = up.unaryExpr([](double u) { return 0.5 * u * (1 + std::tanh(std::sqrt(2 / M_PI) * (u + 0.044715 * u * u * u))); });
        MatD down = up * tensor(w, p + "mlp.c_proj.weight");
        down.rowwise() += tensor(w, p + "mlp.c_proj.bias").row(0);
        x += down;
    }
    const MatD last = layerNorm(x.bottomRows(1), tensor(w, "ln_f.weight"), tensor(w, "ln_f.bias"));
    const Eigen::VectorXd logits = wte * last.row(0).transpose();
    ref.probs = (logits.array() - logits.maxCoeff()).exp();
    ref.probs /= ref.probs.sum();
    return ref;
}

class WhatIf : public testfs::TestFolder {
protected:
    void SetUp() override {
        testfs::TestFolder::SetUp();
        m_weights = weights(7);
        writeCheckpoint(m_dir, m_weights);
        model = gpt2::open(m_dir.string());
        ids = model->tokenizer().encode(" the cat sat on");
    }
    // The pass's attentions and next-token probabilities against the reference's, to `tolerance`.
    void expectReference(const decoder::Run& run, const std::vector<Intervention>& edits, double tolerance = 1e-5) {
        const Reference ref = referencePass(m_weights, ids, edits);
        for (int l = 0; l < kLayers; ++l)
            for (int h = 0; h < kHeads; ++h)
                EXPECT_LT((run.weights(l, h).cast<double>() - ref.weights[static_cast<std::size_t>(l * kHeads + h)]).cwiseAbs().maxCoeff(),
                          tolerance)
                    << l << "." << h;
        Eigen::VectorXd probs = (run.logits.cast<double>().array() - run.logits.maxCoeff()).exp();
        probs /= probs.sum();
        EXPECT_LT((probs - ref.probs).cwiseAbs().maxCoeff(), tolerance);
    }
    std::map<std::string, StoredTensor> m_weights;
    std::shared_ptr<const decoder::Checkpoint> model;
    std::vector<int> ids;
};

Intervention zero(int layer, int head) { return {Kind::ZeroHead, layer, head, 0}; }
Intervention mean(int layer, int head) { return {Kind::MeanHead, layer, head, 0}; }
Intervention hide(int token) { return {Kind::HideToken, 0, 0, token}; }

TEST_F(WhatIf, TheReferenceIsTheModelsOwnPass) {
    ASSERT_GE(ids.size(), 6u);
    expectReference(decoder::forward(*model, ids), {});
}

TEST_F(WhatIf, AblatingEveryHeadOfTheLastLayerGivesTheReferencesNumbers) {
    const decoder::Run base = decoder::forward(*model, ids);
    std::vector<Intervention> all;
    for (int h = 0; h < kHeads; ++h) {
        const std::vector<Intervention> one = {zero(kLayers - 1, h)};
        const decoder::Run run = decoder::forwardEdited(*model, base, one);
        EXPECT_EQ(run.computedFrom(), kLayers - 1);
        expectReference(run, one);
        EXPECT_NE(run.logits, base.logits);  // the head mattered
        all.push_back(one[0]);
    }
    expectReference(decoder::forwardEdited(*model, base, all), all);
}

TEST_F(WhatIf, MeanAblationAndHiddenTokensGiveTheReferencesNumbers) {
    const decoder::Run base = decoder::forward(*model, ids);
    for (const std::vector<Intervention>& edits : std::vector<std::vector<Intervention>>{
             {mean(0, 1)}, {mean(1, 0), zero(0, 0)}, {hide(2)}, {hide(0)}, {hide(3), hide(1), mean(1, 1)}}) {
        const decoder::Run run = decoder::forwardEdited(*model, base, edits);
        expectReference(run, edits);
        EXPECT_EQ(run.edits, edits);
    }
    // A mean over positions differs from a zero (the head's output is not centred).
    EXPECT_NE(decoder::forwardEdited(*model, base, {mean(1, 0)}).logits, decoder::forwardEdited(*model, base, {zero(1, 0)}).logits);
}

TEST_F(WhatIf, AHiddenTokenGetsNoWeightInAnyLayerAndRowsStillSumToOne) {
    const decoder::Run base = decoder::forward(*model, ids);
    const int token = 2;
    const decoder::Run run = decoder::forwardEdited(*model, base, {hide(token)});
    EXPECT_EQ(run.computedFrom(), 0);
    EXPECT_EQ(run.hiddenTokens(), std::vector<int>{token});
    const auto t = static_cast<Eigen::Index>(ids.size());
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kHeads; ++h) {
            const decoder::KeptView w = run.weights(l, h);
            for (Eigen::Index i = 0; i < t; ++i) {
                EXPECT_EQ(w(i, token), 0.0f) << l << "." << h << " row " << i;
                EXPECT_NEAR(w.row(i).sum(), 1.0f, 1e-6f);
                for (Eigen::Index j = i + 1; j < t; ++j) EXPECT_EQ(w(i, j), 0.0f);
            }
            // Query `token` keeps its other keys; earlier rows do not read it anyway.
            EXPECT_GT(w.row(token).head(token).sum(), 0.99f);
            EXPECT_EQ(w.row(token - 1), base.weights(l, h).row(token - 1));
        }
    // Token 0 hidden: query 0 reads no key, its row is all 0 (and its output 0); the rest sum to 1.
    const decoder::Run first = decoder::forwardEdited(*model, base, {hide(0)});
    for (int l = 0; l < kLayers; ++l)
        for (int h = 0; h < kHeads; ++h) {
            const decoder::KeptView w = first.weights(l, h);
            EXPECT_EQ(w.row(0).cwiseAbs().sum(), 0.0f);
            for (Eigen::Index i = 1; i < t; ++i) EXPECT_NEAR(w.row(i).sum(), 1.0f, 1e-6f);
            EXPECT_TRUE(w.allFinite());
        }
    EXPECT_TRUE(first.logits.allFinite());
}

TEST_F(WhatIf, TheLayersBelowTheFirstEditedOneAreReusedNotComputed) {
    const decoder::Run base = decoder::forward(*model, ids);
    const decoder::Run run = decoder::forwardEdited(*model, base, {zero(1, 1)});
    ASSERT_EQ(run.computedFrom(), 1);
    ASSERT_EQ(run.layerCount(), kLayers);
    for (int h = 0; h < kHeads; ++h) {
        // Layer 0 is the plain pass's own storage, not a copy.
        EXPECT_EQ(run.weights(0, h).data(), base.weights(0, h).data());
        EXPECT_EQ(run.weights(0, h), base.weights(0, h));
        EXPECT_NE(run.weights(1, h).data(), base.weights(1, h).data());
    }
    EXPECT_EQ(run.input(0).data(), base.input(0).data());
    EXPECT_EQ(run.qkv(0).data(), base.qkv(0).data());
    // Layer 1's input is the same stream (copied into its own store), and so are its weights: the
    // ablation changes what the head writes, not what it reads.
    EXPECT_EQ(run.input(1), base.input(1));
    EXPECT_NE(run.input(1).data(), base.input(1).data());
    for (int h = 0; h < kHeads; ++h) EXPECT_EQ(run.weights(1, h), base.weights(1, h));
    // Its store holds only the layers it computed.
    EXPECT_LT(decoder::storeBytes(model->config(), run.tokens(), 1), decoder::storeBytes(model->config(), run.tokens()));
    // The plain pass is unchanged, and no edits give it back.
    EXPECT_EQ(base.logits, decoder::forward(*model, ids).logits);
    const decoder::Run none = decoder::forwardEdited(*model, base, {});
    EXPECT_EQ(none.weights(1, 0).data(), base.weights(1, 0).data());
    EXPECT_EQ(none.logits, base.logits);
}

TEST_F(WhatIf, AnEditAddedOrUndoneRerunsFromTheLayerWhereTheEditsPart) {
    const decoder::Run base = decoder::forward(*model, ids);
    const decoder::Run first = decoder::forwardEdited(*model, base, {mean(0, 0)});
    ASSERT_EQ(first.computedFrom(), 0);
    // Adding an edit in layer 1 keeps layer 0 from the pass before it (with its ablation).
    const std::vector<Intervention> both = {mean(0, 0), zero(1, 0)};
    const decoder::Run added = decoder::forwardEdited(*model, base, both, &first);
    EXPECT_EQ(added.computedFrom(), 1);
    EXPECT_EQ(added.weights(0, 1).data(), first.weights(0, 1).data());
    expectReference(added, both);
    // Undoing it reruns layer 1 only, and gives the first pass's numbers.
    const decoder::Run undone = decoder::forwardEdited(*model, base, {mean(0, 0)}, &added);
    EXPECT_EQ(undone.computedFrom(), 1);
    EXPECT_EQ(undone.weights(0, 0).data(), first.weights(0, 0).data());
    for (int h = 0; h < kHeads; ++h) EXPECT_EQ(undone.weights(1, h), first.weights(1, h));
    EXPECT_EQ(undone.logits, first.logits);
    // Edits that part from reuse's below those that part from the plain pass: the plain pass is read.
    const decoder::Run other = decoder::forwardEdited(*model, base, {zero(1, 1)}, &added);
    EXPECT_EQ(other.computedFrom(), 1);
    EXPECT_EQ(other.weights(0, 0).data(), base.weights(0, 0).data());
    expectReference(other, {zero(1, 1)});
    // The same edits in another order: reuse's pass itself.
    const decoder::Run same = decoder::forwardEdited(*model, base, {zero(1, 0), mean(0, 0)}, &added);
    EXPECT_EQ(same.weights(1, 0).data(), added.weights(1, 0).data());
    // A hidden token parts every layer.
    EXPECT_EQ(decoder::forwardEdited(*model, base, {mean(0, 0), hide(1)}, &first).computedFrom(), 0);
    EXPECT_EQ(decoder::firstDifferingLayer({hide(1)}, {hide(2)}, kLayers), 0);
    EXPECT_EQ(decoder::firstDifferingLayer({zero(1, 0)}, {mean(1, 0)}, kLayers), 1);
    EXPECT_EQ(decoder::firstDifferingLayer({zero(1, 0)}, {zero(1, 0)}, kLayers), kLayers);
    EXPECT_EQ(decoder::firstChangedLayer({zero(1, 0), mean(0, 1)}, kLayers), 0);
    EXPECT_EQ(decoder::firstChangedLayer({}, kLayers), kLayers);
}

TEST_F(WhatIf, AnEditedPassIsNotExtendedAsIfItWerePlain) {
    const decoder::Run base = decoder::forward(*model, std::vector<int>(ids.begin(), ids.end() - 1));
    const decoder::Run edited = decoder::forwardEdited(*model, base, {zero(1, 0)});
    const decoder::Run typed = decoder::forwardAppend(*model, ids, edited);
    EXPECT_TRUE(typed.edits.empty());
    EXPECT_EQ(typed.logits, decoder::forward(*model, ids).logits);
}

TEST_F(WhatIf, BadEditsNameTheEditAndTheProblem) {
    const decoder::Run base = decoder::forward(*model, ids);
    const auto error = [&](const std::vector<Intervention>& edits) {
        try {
            (void)decoder::forwardEdited(*model, base, edits);
        } catch (const InputError& e) {
            return e.message();
        }
        return std::string("(ran)");
    };
    EXPECT_EQ(error({zero(2, 0)}), "what-if[0]: layer 2 is outside this model's layers 0 … 1");
    EXPECT_EQ(error({hide(1), mean(0, 2)}), "what-if[1]: head 2 is outside this model's heads 0 … 1");
    EXPECT_EQ(error({hide(static_cast<int>(ids.size()))}), "what-if[0]: token " + std::to_string(ids.size()) +
                                                               " is outside the sentence's tokens 0 … " + std::to_string(ids.size() - 1));
    EXPECT_EQ(error({zero(1, 1), mean(1, 1)}), "what-if[1]: head 1.1 is ablated twice (ablate 1.1, ablate-mean 1.1)");
    EXPECT_EQ(error({hide(1), hide(1)}), "what-if[1]: token 1 is hidden twice");
}

TEST_F(WhatIf, TheNextTokenTableIsTheUnionOfBothTopsSortedByTheChangeInLogProbability) {
    Vec before(5), after(5);
    before << 3, 2, 1, 0, -1;
    after << 1, 2, 1, 3, -1;
    const auto changes = decoder::nextTokenChanges(before, after, 2);
    // top 2 before: 0, 1; after: 3, 1 → {0, 1, 3}
    ASSERT_EQ(changes.size(), 3u);
    const auto logZ = [](const Vec& v) { return std::log(v.cast<double>().array().exp().sum()); };
    const double zb = logZ(before), za = logZ(after);
    const double d0 = (1 - za) - (3 - zb), d1 = (2 - za) - (2 - zb), d3 = (3 - za) - (0 - zb);
    EXPECT_EQ(changes[0].id, 3);
    EXPECT_NEAR(changes[0].deltaLogProb, d3, 1e-9);
    EXPECT_EQ(changes[1].id, 0);
    EXPECT_NEAR(changes[1].deltaLogProb, d0, 1e-9);
    EXPECT_EQ(changes[2].id, 1);
    EXPECT_NEAR(changes[2].deltaLogProb, d1, 1e-9);
    EXPECT_NEAR(changes[2].before, std::exp(2 - zb), 1e-7);
    EXPECT_NEAR(changes[2].after, std::exp(2 - za), 1e-7);
}

}  // namespace
}  // namespace attnviz::core
