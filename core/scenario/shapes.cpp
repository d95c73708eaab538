#include "core/scenario/shapes.hpp"

#include "core/base/error.hpp"
#include "core/base/format.hpp"

#include <initializer_list>
#include <string>
#include <tuple>

namespace attnviz::core {
namespace {

std::string count(long long n, const char* noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

// An explicit matrix as the source of one size: its rows or its columns.
struct Source {
    const char* name = nullptr;  // nullptr: no matrix fixes the size
    const Mat* m = nullptr;
    const char* role = "";  // its shape in symbols: "d_model x heads*d_k"
    bool rows = false;      // the size is its rows (else its columns)

    explicit operator bool() const { return name != nullptr; }
    long long size() const { return rows ? m->rows() : m->cols(); }
    std::string shape() const { return shapeString(m->rows(), m->cols()); }
    // "W_Q has 3 columns"
    std::string says() const { return std::string(name) + " has " + count(size(), rows ? "row" : "column"); }
    // "W_Q is 10 x 3 (d_model x heads*d_k)"
    std::string is() const { return std::string(name) + " is " + shape() + " (" + role + ")"; }
};

// Two weights that fix the same size and disagree: neither is more right, both are named.
InputError disagree(const Source& later, const Source& first) {
    const std::string roles = std::string(later.role) == first.role
                                  ? std::string("both are ") + first.role
                                  : std::string(first.name) + " is " + first.role + ", " + later.name + " is " + later.role;
    return InputError(later.name, later.shape() + " disagrees with " + first.name + ": " + first.shape() + " (" + roles + ")");
}

// The first of `sources` that is there fixes the size; each later one must agree with it.
Source agreeing(std::initializer_list<Source> sources) {
    Source first;
    for (const Source& s : sources) {
        if (!s) continue;
        if (!first) first = s;
        else if (s.size() != first.size()) throw disagree(s, first);
    }
    return first;
}

// `width` columns or rows of `from` (heads*d_k or heads*d_v) split into `heads` heads.
// headsWhy: "" when heads was given, else where the count came from.
InputError notMultiple(const Source& from, const char* role, int heads, const std::string& headsWhy) {
    if (headsWhy.empty())
        return InputError(
            "heads", std::to_string(heads) + " given, but " + from.says() + " (" + role + "), not a multiple of " + std::to_string(heads));
    return InputError(from.name, "its " + count(from.size(), from.rows ? "row" : "column") + " (" + role + ") are not a multiple of " +
                                     count(heads, "head") + headsWhy);
}

}  // namespace

// Every size of a token-mode model (X or tokens, W_Q, W_K, W_V, W_O), or the contradiction that
// names both sides. `vocab`: the distinct tokens a one-hot embedding needs (0: not one-hot).
// `skip`: a weight taken as not given, to say what shape the others expect of it.
// 1. d_model: X's columns, else the weights' rows (all equal), else d_model, one-hot's vocabulary, 16
// 2. heads*d_k from W_Q, W_K's columns; heads*d_v from W_V's columns and W_O's rows
// 3. heads: given, else a given d_k (d_v) into heads*d_k (heads*d_v), else 1
// 4. d_k, d_v: those widths split into the heads, else given, else d_model / heads and d_k
//    (d_model / heads for an identity W_V)
// 5. d_out: W_O's columns, else d_model
Shapes resolveShapes(const Scenario& s, int vocab, const Limits& limits, const MatrixSpec* skip) {
    const auto given = [&](const MatrixSpec& spec) { return spec.kind == MatrixSpec::Kind::Explicit && &spec != skip; };
    const auto source = [&](const MatrixSpec& spec, const char* name, const char* role, bool rows) {
        return given(spec) ? Source{name, &spec.value, role, rows} : Source{};
    };
    const char* qk = "d_model x heads*d_k";
    const char* v = "d_model x heads*d_v";
    const char* o = "heads*d_v x d_out";
    Shapes out;

    // 1. d_model
    const Source x = s.x ? Source{"X", &*s.x, "T x d_model", false} : Source{};
    if (x && s.dModel && *s.dModel != x.size()) throw InputError("d_model", std::to_string(*s.dModel) + " given, but " + x.is());
    Source dModelFrom = x;
    for (const auto& [spec, name, role] : {std::tuple{&s.wq, "W_Q", qk}, {&s.wk, "W_K", qk}, {&s.wv, "W_V", v}}) {
        const Source w = source(*spec, name, role, true);
        if (!w) continue;
        if (!dModelFrom) {
            dModelFrom = w;
        } else if (w.size() != dModelFrom.size()) {
            if (!x) throw disagree(w, dModelFrom);
            // X is the data: the weight is wrong. Say the shape the other inputs give it, when
            // they agree among themselves (one level deep: `skip` is set while saying it).
            const std::string why = count(w.size(), "row") + ", but " + x.says() + " (d_model)";
            const InputError plain(name, w.shape() + " (" + role + ") has " + why);
            if (skip) throw InputError(plain);
            Shapes others;
            try {
                others = resolveShapes(s, vocab, limits, spec);
            } catch (const InputError&) {
                throw InputError(plain);
            }
            const long long width =
                static_cast<long long>(spec == &s.wq ? others.heads : others.kvHeads) * (spec == &s.wv ? others.dv : others.dk);
            throw InputError(name, "expected " + shapeString(others.dModel, width) + " (" + role + "), got " + w.shape() + ": " + why);
        }
    }
    if (!x && dModelFrom && s.dModel && *s.dModel != dModelFrom.size())
        throw InputError("d_model", std::to_string(*s.dModel) + " given, but " + dModelFrom.is());
    out.dModel = dModelFrom ? static_cast<int>(dModelFrom.size()) : s.dModel.value_or(vocab > 0 ? vocab : 16);
    if (!x && out.dModel < vocab)
        throw InputError("d_model", "one-hot embedding needs at least " + std::to_string(vocab) + " dimensions (one per distinct token), " +
                                        (s.dModel ? "got " + std::to_string(*s.dModel) : "but " + dModelFrom.is()));

    // 2. the heads' total widths
    // Grouped-query: W_K and W_V are narrower than W_Q and W_O by heads / kv_heads, and are checked
    // once the per-head widths are known.
    const bool grouped = s.kvHeads.has_value();
    const Source hk = grouped ? source(s.wq, "W_Q", qk, false) : agreeing({source(s.wq, "W_Q", qk, false), source(s.wk, "W_K", qk, false)});
    const Source hv = grouped ? source(s.wo, "W_O", o, true) : agreeing({source(s.wv, "W_V", v, false), source(s.wo, "W_O", o, true)});

    // 3. heads
    std::string headsWhy;  // "" when given
    // heads from a given per-head width (d_k or d_v) and the total width it must divide
    const auto headsFrom = [&](const char* name, int width, const Source& total, const char* role) {
        if (total.size() % width != 0)
            throw InputError(name, std::to_string(width) + " given, but " + total.says() + " (" + role + "), not a multiple of " +
                                       std::to_string(width));
        out.heads = static_cast<int>(total.size() / width);
        headsWhy = " (" + total.says() + ", " + name + " " + std::to_string(width) + " given)";
    };
    if (s.heads) out.heads = *s.heads;
    else if (s.dk && hk) headsFrom("d_k", *s.dk, hk, "heads*d_k");
    else if (s.dv && hv) headsFrom("d_v", *s.dv, hv, "heads*d_v");
    // Checked before any size is derived from it (d_k = d_model / heads).
    if (out.heads > limits.maxHeads)
        throw InputError("heads", std::to_string(out.heads) + " is over the limit of " + std::to_string(limits.maxHeads) + headsWhy);

    // 4. per-head widths
    const auto split = [&](const Source& from, const std::optional<int>& width, const char* name, const char* role) {
        if (width) {
            if (static_cast<long long>(out.heads) * *width != from.size())
                throw InputError(name, std::to_string(*width) + " given, but " + from.says() + " for " + count(out.heads, "head"));
            return *width;
        }
        if (from.size() % out.heads != 0) throw notMultiple(from, role, out.heads, headsWhy);
        return static_cast<int>(from.size() / out.heads);
    };
    if (hk) {
        out.dk = split(hk, s.dk, "d_k", "heads*d_k");
    } else if (s.dk) {
        out.dk = *s.dk;
    } else {
        if (out.dModel % out.heads != 0)
            throw InputError(
                "d_k", "d_model " + std::to_string(out.dModel) + " is not divisible by " + std::to_string(out.heads) + " heads; give d_k");
        out.dk = out.dModel / out.heads;
    }
    if (hv) out.dv = split(hv, s.dv, "d_v", "heads*d_v");
    else if (s.dv) out.dv = *s.dv;
    // an identity W_V is square: V = X, split into the heads
    else if (s.wv.kind == MatrixSpec::Kind::Identity && out.dModel % s.kvHeads.value_or(out.heads) == 0)
        out.dv = out.dModel / s.kvHeads.value_or(out.heads);
    else out.dv = out.dk;

    out.kvHeads = out.heads;
    if (grouped) {
        const int kv = *s.kvHeads;
        if (kv > out.heads || out.heads % kv != 0)
            throw InputError("kv_heads", std::to_string(kv) + " does not divide " + count(out.heads, "query head") +
                                             " (each key/value head serves heads / kv_heads of them)");
        out.kvHeads = kv;
        for (const auto& [spec, name, width, role] :
             {std::tuple{&s.wk, "W_K", out.dk, "d_model x kv_heads*d_k"}, {&s.wv, "W_V", out.dv, "d_model x kv_heads*d_v"}}) {
            if (!given(*spec)) continue;
            const long long want = static_cast<long long>(kv) * width;
            if (spec->value.cols() != want)
                throw InputError(name, "expected " + shapeString(out.dModel, want) + " (" + role + ", " + count(kv, "kv head") + "), got " +
                                           shapeString(spec->value.rows(), spec->value.cols()));
        }
    }

    // 5. d_out
    out.dOut = given(s.wo) ? static_cast<int>(s.wo.value.cols()) : out.dModel;
    return out;
}

}  // namespace attnviz::core
