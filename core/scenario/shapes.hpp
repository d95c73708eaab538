// Inside the scenario room: the sizes of a token-mode model, resolved from what the scenario's
// matrices fix, the sizes it gives, and the defaults (model.cpp builds the matrices from them).
#pragma once

#include "core/scenario/model.hpp"
#include "core/scenario/scenario.hpp"

namespace attnviz::core {

// The sizes of a token-mode model: what the explicit matrices fix, then the given sizes, then
// the defaults.
struct Shapes {
    int dModel = 0, heads = 1, dk = 0, dv = 0, dOut = 0;
    int kvHeads = 1;  // key/value heads: heads unless kv_heads is given (grouped-query attention)
};

// Every size of a token-mode model (X or tokens, W_Q, W_K, W_V, W_O), or the contradiction that
// names both sides. `vocab`: the distinct tokens a one-hot embedding needs (0: not one-hot).
// `skip`: a weight taken as not given, to say what shape the others expect of it.
// 1. d_model: X's columns, else the weights' rows (all equal), else d_model, one-hot's vocabulary, 16
// 2. heads*d_k from W_Q, W_K's columns; heads*d_v from W_V's columns and W_O's rows
// 3. heads: given, else a given d_k (d_v) into heads*d_k (heads*d_v), else 1
// 4. d_k, d_v: those widths split into the heads, else given, else d_model / heads and d_k
//    (d_model / heads for an identity W_V)
// 5. d_out: W_O's columns, else d_model
// With kv_heads, W_K and W_V are d_model x kv_heads*d_k (d_v): W_Q and W_O fix the widths, and
// kv_heads must divide heads.
Shapes resolveShapes(const Scenario& s, int vocab, const Limits& limits, const MatrixSpec* skip = nullptr);

}  // namespace attnviz::core
