#!/usr/bin/env python3
"""numpy as an independent oracle for the real attnviz command line.

Usage: test_numpy_oracle.py PATH/TO/attnviz

Generates random scenarios from a fixed seed, runs `attnviz --scenario FILE --export OUT.json`
on each, and recomputes every exported matrix in float64 numpy from the scenario's own numbers:

    X' = X with the swaps applied to its rows, in order
    per head h:  Q = X' W_Q[:, h*d_k:(h+1)*d_k]   K = X' W_K[...]   V = X' W_V[:, h*d_v:(h+1)*d_v]
                 scores  = Q K^T                                   [T_q, T_k]
                 weights = softmax_rows(scores / (sqrt(d_k) tau))  blocked cells 0, fully blocked row 0
                 output  = weights V
    output = concat(heads) W_O, or the concat when there is no W_O

and the variants modern models run, written here from their papers:

    kv_heads g:  query head h reads key/value head floor(h g / H): W_K, W_V have g*d_k, g*d_v columns
    window w:    key j blocked for query i unless i - w < j <= i (causal) or |i - j| < w
    rope:        q and k of each head rotated after projection, rotate-half pairs (i, i + d_k/2)
                 turned by position * base^(-2i/d_k)
    alibi:       logits = scores c - m_h |i - j| (c = 1/sqrt(d_k) or 1), over tau; the exported
                 scores are the softmax's input at tau = 1 over c, i.e. Q K^T - m_h |i - j| / c;
                 slopes m_h from Press et al. 2022 (geometric from 2^(-8/P) for P a power of 2)

Every comparison uses |got - want| <= 1e-5 * max(1, |want|). The inputs are float32 numbers
(the engine computes in float32), written exactly, so only the engine's float32 arithmetic
separates the two sides; magnitudes are chosen so that this stays well inside the tolerance.

Also checks --export-npy and --export-csv against the JSON export, and that bad input exits 2
with one "attnviz: error: <file>: <field>: ..." line and no output file.
Standard library and numpy only. Exits 1 on any failure; the last line is the summary.
"""

import csv
import io
import json
import math
import os
import random
import subprocess
import sys
import tempfile

import numpy as np

SEED = 20240611
REL_TOL = 1e-5  # |a - b| <= REL_TOL * max(1, |b|)
NPY_TOL = 1e-6
SENTENCE_WORDS = ["the", "cat", "sat", "on", "mat", "dog", "a", "ran", "big", "red", "sun", "sky"]


class Failures:
    def __init__(self):
        self.messages = []
        self.worst = 0.0  # largest |a - b| / tolerance seen in a passing comparison

    def add(self, where, what):
        self.messages.append(f"{where}: {what}")
        print(f"FAIL {where}: {what}", flush=True)

    def __len__(self):
        return len(self.messages)


FAIL = Failures()


# ---- numbers ----------------------------------------------------------------------------

def f32(a):
    """float32-exact float64 values (what the engine stores after parsing)."""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def as_json_matrix(m):
    return [[float(v) for v in row] for row in m]


def uniform_matrix(rng, rows, cols, scale):
    return f32([[rng.uniform(-scale, scale) for _ in range(cols)] for _ in range(rows)])


def log_uniform(rng, lo, hi):
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


# ---- the reference forward pass ---------------------------------------------------------

def apply_swaps(rows, swaps):
    """rows: a list (labels) or an array [T, ...]; each swap [i, j] exchanges positions i and j."""
    out = list(rows) if isinstance(rows, list) else rows.copy()
    for i, j in swaps:
        if isinstance(out, list):
            out[i], out[j] = out[j], out[i]
        else:
            out[[i, j]] = out[[j, i]]
    return out


def blocked_matrix(tq, tk, causal, padding, mask, window=0):
    """[T_q, T_k] bool, True = query i may not read key j."""
    blocked = np.zeros((tq, tk), dtype=bool)
    if causal:
        for i in range(tq):
            blocked[i, i + 1:] = True
    if window:
        for i in range(tq):
            for j in range(tk):
                if (j <= i - window) if causal else (abs(i - j) >= window):
                    blocked[i, j] = True
    for p in padding:
        blocked[:, p] = True
    if mask is not None:
        blocked |= np.asarray(mask, dtype=bool)
    return blocked


def softmax_rows(scores, scale, blocked):
    """scores, blocked: [T_q, T_k]; returns weights [T_q, T_k], fully blocked rows all zero."""
    weights = np.zeros_like(scores)
    logits = scores * scale
    for i in range(scores.shape[0]):
        allowed = ~blocked[i]
        if not allowed.any():
            continue
        row = logits[i, allowed]
        e = np.exp(row - row.max())
        weights[i, allowed] = e / e.sum()
    return weights


def logit_scale(dk, tau, scaled):
    return 1.0 / ((math.sqrt(dk) if scaled else 1.0) * tau)


def rope(m, base):
    """Rotary positions, rotate-half layout: row t turns pair (i, i + d/2) by t * base^(-2i/d)."""
    t, d = m.shape
    half = d // 2
    out = m.copy()
    for i in range(half):
        angle = np.arange(t) * base ** (-2.0 * i / d)
        c, s = np.cos(angle), np.sin(angle)
        out[:, i] = m[:, i] * c - m[:, i + half] * s
        out[:, i + half] = m[:, i + half] * c + m[:, i] * s
    return out


def alibi_slopes(n):
    """Press et al. 2022: for a power of two, 2^(-8/n), its square, ...; otherwise those of the
    largest power of two below n, then the odd-numbered slopes of twice that."""
    p = 2 ** int(math.floor(math.log2(n)))
    slopes = [2.0 ** (-8.0 * k / p) for k in range(1, p + 1)]
    return slopes + [2.0 ** (-8.0 * k / (2 * p)) for k in range(1, 2 * (n - p), 2)]


def distance(tq, tk):
    return np.abs(np.arange(tq)[:, None] - np.arange(tk)[None, :]).astype(np.float64)


def reference(spec):
    """The expected export of a scenario description (see make_* below)."""
    tau, scaled = spec["tau"], spec["scaled"]
    heads_out = []
    if spec["kind"] == "qkv":
        q = apply_swaps(spec["Q"], spec["swaps"])
        k = apply_swaps(spec["K"], spec["swaps"])
        v = apply_swaps(spec["V"], spec["swaps"])
        blocked = blocked_matrix(q.shape[0], k.shape[0], spec["causal"], spec["padding"], spec["mask"])
        scores = q @ k.T
        weights = softmax_rows(scores, logit_scale(q.shape[1], tau, scaled), blocked)
        heads_out.append({"Q": q, "K": k, "V": v, "scores": scores, "weights": weights, "output": weights @ v})
        return {"X": None, "heads": heads_out, "output": weights @ v, "blocked": blocked}
    x = apply_swaps(spec["X"], spec["swaps"])
    if spec.get("positional"):
        x = x + f32(sinusoidal(*x.shape))  # added after the reordering, as float32 numbers
    h, dk, dv = spec["heads"], spec["d_k"], spec["d_v"]
    kv_heads = spec.get("kv_heads") or h
    t = x.shape[0]
    blocked = blocked_matrix(t, t, spec["causal"], spec["padding"], spec["mask"], spec.get("window", 0))
    slopes = alibi_slopes(h) if spec.get("alibi") else None
    for head in range(h):
        g = head * kv_heads // h
        q = x @ spec["W_Q"][:, head * dk:(head + 1) * dk]
        k = x @ spec["W_K"][:, g * dk:(g + 1) * dk]
        v = x @ spec["W_V"][:, g * dv:(g + 1) * dv]
        if spec.get("rope"):
            q, k = rope(q, spec["rope"]), rope(k, spec["rope"])
        scores = q @ k.T
        if slopes:
            scores = scores - slopes[head] * distance(t, t) / logit_scale(dk, 1.0, scaled)
        weights = softmax_rows(scores, logit_scale(dk, tau, scaled), blocked)
        heads_out.append({"Q": q, "K": k, "V": v, "scores": scores, "weights": weights, "output": weights @ v,
                          "kv_head": g, "alibi_slope": slopes[head] if slopes else None})
    concat = np.concatenate([hd["output"] for hd in heads_out], axis=1)
    output = concat @ spec["W_O"] if spec["W_O"] is not None else concat
    return {"X": x, "heads": heads_out, "output": output, "blocked": blocked}


# ---- scenario generators ----------------------------------------------------------------

def random_masks(rng, spec, tq, tk):
    """Fills causal, padding and mask; some combinations block every key of a row."""
    spec["causal"] = rng.random() < 0.5
    spec["padding"] = []
    spec["mask"] = None
    choice = rng.random()
    if choice < 0.25 or 0.5 <= choice < 0.55:
        n = rng.randint(1, max(1, tk - 1))
        spec["padding"] = rng.sample(range(tk), n)
    if 0.25 <= choice < 0.55:
        spec["mask"] = [[1 if rng.random() < 0.35 else 0 for _ in range(tk)] for _ in range(tq)]
    elif 0.55 <= choice < 0.65:
        # Causal + padding key 0: query 0 reads nothing (an all-zero row).
        spec["causal"] = True
        spec["padding"] = [0] + rng.sample(range(1, tk), min(tk - 1, rng.randint(0, 1))) if tk > 1 else [0]
    elif 0.65 <= choice < 0.7:
        spec["padding"] = list(range(tk))  # every key padded: every row all zero
    if spec["mask"] is not None and rng.random() < 0.3:
        spec["mask"][rng.randrange(tq)] = [1] * tk  # one row fully masked


def random_swaps(rng, t):
    if t < 2 or rng.random() < 0.5:
        return []
    return [[rng.randrange(t), rng.randrange(t)] for _ in range(rng.randint(1, 3))]


def make_explicit_weights(rng, n):
    """Explicit X and W_Q/W_K/W_V (and sometimes W_O)."""
    t = rng.randint(1, 8)
    d_model = rng.randint(1, 12)
    heads = rng.randint(1, 4)
    give_dk = True
    if d_model % heads == 0 and rng.random() < 0.3:
        dk = d_model // heads
        give_dk = False
    else:
        dk = rng.randint(1, 6)
    dv = dk if rng.random() < 0.4 else rng.randint(1, 6)
    w_scale = 1.0 / math.sqrt(d_model)
    spec = {
        "kind": "xw", "heads": heads, "d_k": dk, "d_v": dv,
        "X": uniform_matrix(rng, t, d_model, 1.0),
        "W_Q": uniform_matrix(rng, d_model, heads * dk, 2 * w_scale),
        "W_K": uniform_matrix(rng, d_model, heads * dk, 2 * w_scale),
        "W_V": uniform_matrix(rng, d_model, heads * dv, w_scale * 2),
        "W_O": uniform_matrix(rng, heads * dv, d_model, 1.0 / math.sqrt(heads * dv)) if rng.random() < 0.5 else None,
        "tau": float(f32(log_uniform(rng, 0.05, 20.0))),
        "scaled": rng.random() < 0.7,
        "swaps": random_swaps(rng, t),
        "positional": rng.random() < 0.15,
    }
    random_masks(rng, spec, t, t)
    tokens = [f"t{n}_{i}" for i in range(t)] if rng.random() < 0.6 else None
    doc = {"name": f"oracle {n}: explicit X and W", "X": as_json_matrix(spec["X"]), "heads": heads,
           "W_Q": as_json_matrix(spec["W_Q"]), "W_K": as_json_matrix(spec["W_K"]), "W_V": as_json_matrix(spec["W_V"]),
           "temperature": spec["tau"], "scaled": spec["scaled"], "causal": spec["causal"], "swaps": spec["swaps"]}
    if give_dk:
        doc["d_k"] = dk
    if dv != dk or rng.random() < 0.5:
        doc["d_v"] = dv
    if rng.random() < 0.5:
        doc["d_model"] = d_model
    if spec["positional"]:
        doc["positional"] = "sinusoidal"
    if spec["W_O"] is not None:
        doc["W_O"] = as_json_matrix(spec["W_O"])
    elif rng.random() < 0.3:
        doc["W_O"] = "none"
    if tokens:
        doc["tokens"] = tokens
    if spec["padding"]:
        doc["padding"] = spec["padding"]
    if spec["mask"] is not None:
        doc["mask"] = spec["mask"]
    spec["tokens"] = apply_swaps(tokens or [f"x{i + 1}" for i in range(t)], spec["swaps"])
    spec["key_tokens"] = spec["tokens"]
    return doc, spec


def make_variant(rng, n):
    """Explicit X and weights with grouped-query heads, a sliding window, RoPE or ALiBi, alone and
    together, with causal masks, padding and swaps."""
    t = rng.randint(1, 9)
    heads = rng.choice([1, 2, 3, 4, 6, 8])
    kv_heads = rng.choice([g for g in range(1, heads + 1) if heads % g == 0])
    positional = rng.choice(["none", "rope", "alibi", "rope", "alibi"])
    dk = 2 * rng.randint(1, 3) if positional == "rope" else rng.randint(1, 6)
    dv = rng.randint(1, 5)
    d_model = rng.randint(1, 10)
    w_scale = 2.0 / math.sqrt(d_model)
    spec = {
        "kind": "xw", "heads": heads, "d_k": dk, "d_v": dv, "kv_heads": kv_heads,
        "X": uniform_matrix(rng, t, d_model, 1.0),
        "W_Q": uniform_matrix(rng, d_model, heads * dk, w_scale),
        "W_K": uniform_matrix(rng, d_model, kv_heads * dk, w_scale),
        "W_V": uniform_matrix(rng, d_model, kv_heads * dv, w_scale),
        "W_O": uniform_matrix(rng, heads * dv, d_model, 1.0 / math.sqrt(heads * dv)) if rng.random() < 0.5 else None,
        "tau": float(f32(log_uniform(rng, 0.1, 10.0))),
        "scaled": rng.random() < 0.7,
        "swaps": random_swaps(rng, t),
        "window": rng.randint(1, 4) if rng.random() < 0.5 else 0,
        "rope": float(f32(rng.choice([10000.0, 500.0, log_uniform(rng, 2.0, 1e6)]))) if positional == "rope" else None,
        "alibi": positional == "alibi",
    }
    random_masks(rng, spec, t, t)
    doc = {"name": f"oracle {n}: variants", "X": as_json_matrix(spec["X"]), "heads": heads, "d_k": dk, "d_v": dv,
           "W_Q": as_json_matrix(spec["W_Q"]), "W_K": as_json_matrix(spec["W_K"]), "W_V": as_json_matrix(spec["W_V"]),
           "temperature": spec["tau"], "scaled": spec["scaled"], "causal": spec["causal"], "swaps": spec["swaps"],
           "positional": positional}
    if kv_heads != heads or rng.random() < 0.5:
        doc["kv_heads"] = kv_heads
    else:
        spec["kv_heads"] = None  # not given: no kv_head in the export
    if spec["window"]:
        doc["window"] = spec["window"]
    if spec["rope"] and (spec["rope"] != 10000.0 or rng.random() < 0.5):
        doc["rope_base"] = spec["rope"]
    if spec["W_O"] is not None:
        doc["W_O"] = as_json_matrix(spec["W_O"])
    if spec["padding"]:
        doc["padding"] = spec["padding"]
    if spec["mask"] is not None:
        doc["mask"] = spec["mask"]
    spec["tokens"] = apply_swaps([f"x{i + 1}" for i in range(t)], spec["swaps"])
    spec["key_tokens"] = spec["tokens"]
    return doc, spec


def make_explicit_qkv(rng, n, cross):
    """Explicit Q, K, V: one head; cross-attention has T_q != T_k and no swaps."""
    tq = rng.randint(1, 7)
    tk = rng.randint(1, 7)
    if cross:
        while tk == tq:
            tk = rng.randint(1, 7)
    else:
        tk = tq
    dk, dv = rng.randint(1, 6), rng.randint(1, 6)
    spec = {
        "kind": "qkv", "Q": uniform_matrix(rng, tq, dk, 1.0), "K": uniform_matrix(rng, tk, dk, 1.0),
        "V": uniform_matrix(rng, tk, dv, 2.0), "tau": float(f32(log_uniform(rng, 0.05, 20.0))),
        "scaled": rng.random() < 0.7, "swaps": [] if cross else random_swaps(rng, tq),
    }
    random_masks(rng, spec, tq, tk)
    doc = {"name": f"oracle {n}: explicit Q, K, V", "Q": as_json_matrix(spec["Q"]), "K": as_json_matrix(spec["K"]),
           "V": as_json_matrix(spec["V"]), "temperature": spec["tau"], "scaled": spec["scaled"],
           "causal": spec["causal"]}
    if spec["swaps"]:
        doc["swaps"] = spec["swaps"]
    if spec["padding"]:
        doc["padding"] = spec["padding"]
    if spec["mask"] is not None:
        doc["mask"] = spec["mask"]
    queries = [f"q{i + 1}" for i in range(tq)]
    keys = [f"k{j + 1}" for j in range(tk)] if cross else queries
    if rng.random() < 0.5:
        queries = [f"query {n}.{i}" for i in range(tq)]
        doc["tokens"] = queries
        if not cross:
            keys = queries
    if cross and rng.random() < 0.5:
        keys = [f"key {n}.{j}" for j in range(tk)]
        doc["key_tokens"] = keys
    spec["tokens"] = apply_swaps(queries, spec["swaps"])
    spec["key_tokens"] = apply_swaps(keys, spec["swaps"])
    return doc, spec


def word_tokens(sentence):
    """The word tokenizer on plain words with trailing , . or !: punctuation is a token of its own."""
    for mark in ",.!":
        sentence = sentence.replace(mark, " " + mark)
    return sentence.split()


def make_token(rng, n):
    """A sentence with sinusoidal positional encoding and seeded weights: internal consistency only."""
    words = [rng.choice(SENTENCE_WORDS) for _ in range(rng.randint(2, 7))]
    if rng.random() < 0.3:
        words[rng.randrange(len(words))] += rng.choice([",", ".", "!"])
    d_model = rng.randint(2, 10)
    heads = rng.choice([h for h in (1, 2, 3, 4) if d_model % h == 0])
    tokens = word_tokens(" ".join(words))
    t = len(tokens)
    spec = {"kind": "token", "tau": float(f32(log_uniform(rng, 0.05, 20.0))), "scaled": rng.random() < 0.7,
            "swaps": random_swaps(rng, t), "heads": heads, "d_model": d_model,
            "has_wo": rng.random() < 0.5, "sentence": " ".join(words)}
    random_masks(rng, spec, t, t)
    doc = {"name": f"oracle {n}: sentence", "sentence": spec["sentence"], "d_model": d_model, "heads": heads,
           "seed": rng.randrange(1000), "positional": "sinusoidal", "temperature": spec["tau"],
           "scaled": spec["scaled"], "causal": spec["causal"], "swaps": spec["swaps"]}
    if spec["has_wo"]:
        doc["W_O"] = "random"
    if spec["padding"]:
        doc["padding"] = spec["padding"]
    if spec["mask"] is not None:
        doc["mask"] = spec["mask"]
    spec["tokens"] = apply_swaps(tokens, spec["swaps"])
    spec["key_tokens"] = spec["tokens"]
    return doc, spec


def fixed_scenarios():
    """Hand-picked corners: a fully masked row, every key padded, T = 1, d = 1, mask + causal."""
    x = f32([[0.5, -1.0], [1.0, 0.25], [-0.75, 0.5]])
    eye = f32(np.eye(2))
    out = []
    for causal, padding, mask in [(True, [0], None), (False, [0, 1, 2], None),
                                  (True, [], [[0, 0, 0], [1, 0, 0], [0, 1, 1]])]:
        spec = {"kind": "xw", "heads": 1, "d_k": 2, "d_v": 2, "X": x, "W_Q": eye, "W_K": eye, "W_V": eye,
                "W_O": None, "tau": 1.0, "scaled": True, "swaps": [[0, 2]], "causal": causal, "padding": padding,
                "mask": mask, "tokens": ["c", "b", "a"], "key_tokens": ["c", "b", "a"]}
        doc = {"name": "corner", "tokens": ["a", "b", "c"], "X": as_json_matrix(x), "W_Q": "identity",
               "W_K": "identity", "W_V": "identity", "causal": causal, "swaps": [[0, 2]]}
        if padding:
            doc["padding"] = padding
        if mask is not None:
            doc["mask"] = mask
        out.append((doc, spec))
    one = f32([[2.0]])
    spec = {"kind": "xw", "heads": 1, "d_k": 1, "d_v": 1, "X": one, "W_Q": one, "W_K": one, "W_V": one, "W_O": one,
            "tau": float(f32(0.05)), "scaled": False, "swaps": [], "causal": True, "padding": [], "mask": None,
            "tokens": ["x1"], "key_tokens": ["x1"]}
    doc = {"X": [[2.0]], "W_Q": [[2.0]], "W_K": [[2.0]], "W_V": [[2.0]], "W_O": [[2.0]],
           "temperature": spec["tau"], "scaled": False, "causal": True}
    out.append((doc, spec))
    return out


def generate():
    rng = random.Random(SEED)
    scenarios = fixed_scenarios()
    n = len(scenarios)
    for _ in range(44):
        scenarios.append(make_explicit_weights(rng, n))
        n += 1
    for cross in [True] * 10 + [False] * 4:
        scenarios.append(make_explicit_qkv(rng, n, cross))
        n += 1
    for _ in range(8):
        scenarios.append(make_token(rng, n))
        n += 1
    for _ in range(40):
        scenarios.append(make_variant(rng, n))
        n += 1
    return scenarios


# ---- running the binary -----------------------------------------------------------------

def run(binary, args):
    # no time limit of its own: a run that hangs is stopped by the test's limit (ctest's TIMEOUT)
    return subprocess.run([binary] + args, capture_output=True, text=True)


def compare(where, got, want):
    """got: nested lists from JSON (or an array); want: array. Records a failure and returns False on mismatch."""
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError) as e:
        FAIL.add(where, f"not a numeric matrix: {e}")
        return False
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        FAIL.add(where, f"shape {got.shape}, expected {want.shape}")
        return False
    if got.size == 0:
        return True
    tol = REL_TOL * np.maximum(1.0, np.abs(want))
    err = np.abs(got - want)
    ratio = err / tol
    worst = np.unravel_index(np.argmax(ratio), ratio.shape)
    if not np.all(np.isfinite(got)) or ratio[worst] > 1.0:
        FAIL.add(where, f"at {tuple(int(i) for i in worst)} got {got[worst]!r}, expected {want[worst]!r} "
                        f"(|diff| {err[worst]:.3g})")
        return False
    FAIL.worst = max(FAIL.worst, float(ratio[worst]))
    return True


def check_weight_rows(where, weights, blocked):
    """Rows sum to 1, or are exactly 0 when every key is blocked; blocked cells are exactly 0."""
    w = np.asarray(weights, dtype=np.float64)
    ok = True
    for i in range(w.shape[0]):
        if blocked[i].all():
            if np.any(w[i] != 0.0):
                FAIL.add(where, f"row {i} is fully masked but not all zero: {w[i].tolist()}")
                ok = False
        elif abs(w[i].sum() - 1.0) > 1e-5:
            FAIL.add(where, f"row {i} sums to {w[i].sum()!r}")
            ok = False
    if np.any(w[blocked] != 0.0):
        FAIL.add(where, "a blocked cell has a non-zero weight")
        ok = False
    return ok


def check_export(where, exported, spec):
    if exported.get("tokens") != spec["tokens"]:
        FAIL.add(where, f"tokens {exported.get('tokens')!r}, expected {spec['tokens']!r}")
    if exported.get("key_tokens") != spec["key_tokens"]:
        FAIL.add(where, f"key_tokens {exported.get('key_tokens')!r}, expected {spec['key_tokens']!r}")
    ref = reference(spec)
    if ref["X"] is None:
        if exported.get("X") is not None:
            FAIL.add(where, "X should be null for explicit Q, K, V")
    else:
        compare(f"{where}: X", exported.get("X"), ref["X"])
    heads = exported.get("heads", [])
    if len(heads) != len(ref["heads"]):
        FAIL.add(where, f"{len(heads)} heads, expected {len(ref['heads'])}")
        return ref
    for h, (got, want) in enumerate(zip(heads, ref["heads"])):
        for key in ("Q", "K", "V", "scores", "weights", "output"):
            compare(f"{where}: heads[{h}].{key}", got.get(key), want[key])
        if spec.get("kv_heads") and got.get("kv_head") != want["kv_head"]:
            FAIL.add(where, f"heads[{h}].kv_head {got.get('kv_head')!r}, expected {want['kv_head']}")
        if not spec.get("kv_heads") and "kv_head" in got:
            FAIL.add(where, f"heads[{h}] has a kv_head without kv_heads")
        if want.get("alibi_slope") is not None:
            compare(f"{where}: heads[{h}].alibi_slope", got.get("alibi_slope"), want["alibi_slope"])
        elif "alibi_slope" in got:
            FAIL.add(where, f"heads[{h}] has an alibi_slope without ALiBi")
        check_weight_rows(f"{where}: heads[{h}].weights", got.get("weights"), ref["blocked"])
    compare(f"{where}: output", exported.get("output"), ref["output"])
    return ref


def check_token_export(where, exported, spec):
    """Sentence + seeded weights: what can be recomputed from the export itself."""
    if exported.get("tokens") != spec["tokens"]:
        FAIL.add(where, f"tokens {exported.get('tokens')!r}, expected {spec['tokens']!r}")
    if exported.get("key_tokens") != spec["tokens"]:
        FAIL.add(where, f"key_tokens {exported.get('key_tokens')!r}, expected {spec['tokens']!r}")
    x = np.asarray(exported["X"], dtype=np.float64)
    t = len(spec["tokens"])
    if x.shape != (t, spec["d_model"]):
        FAIL.add(where, f"X shape {x.shape}, expected {(t, spec['d_model'])}")
        return
    blocked = blocked_matrix(t, t, spec["causal"], spec["padding"], spec["mask"])
    heads = exported["heads"]
    if len(heads) != spec["heads"]:
        FAIL.add(where, f"{len(heads)} heads, expected {spec['heads']}")
        return
    outputs = []
    for h, head in enumerate(heads):
        q, k, v = (np.asarray(head[m], dtype=np.float64) for m in ("Q", "K", "V"))
        dk = q.shape[1]
        if dk != spec["d_model"] // spec["heads"] or k.shape != q.shape or v.shape[0] != t:
            FAIL.add(where, f"heads[{h}]: Q {q.shape}, K {k.shape}, V {v.shape} for d_model {spec['d_model']}")
            continue
        scores = np.asarray(head["scores"], dtype=np.float64)
        compare(f"{where}: heads[{h}].scores", scores, q @ k.T)
        weights = np.asarray(head["weights"], dtype=np.float64)
        compare(f"{where}: heads[{h}].weights", weights,
                softmax_rows(scores, logit_scale(dk, spec["tau"], spec["scaled"]), blocked))
        check_weight_rows(f"{where}: heads[{h}].weights", weights, blocked)
        compare(f"{where}: heads[{h}].output", head["output"], weights @ v)
        outputs.append(np.asarray(head["output"], dtype=np.float64))
    if not spec["has_wo"] and outputs:
        compare(f"{where}: output", exported["output"], np.concatenate(outputs, axis=1))


def sinusoidal(t, d):
    """Vaswani et al. 3.5: pe[pos, 2i] = sin(pos / 10000^(2i/d)), pe[pos, 2i+1] = cos(...)."""
    pe = np.zeros((t, d))
    for pos in range(t):
        for c in range(d):
            angle = pos / 10000 ** (2 * (c // 2) / d)
            pe[pos, c] = math.sin(angle) if c % 2 == 0 else math.cos(angle)
    return pe


def check_positional(binary, tmp, where, doc, spec):
    """The exported X minus the same scenario's X without positional encoding is the encoding."""
    plain = dict(doc, positional="none")
    path = os.path.join(tmp, "plain.json")
    out = os.path.join(tmp, "plain-out.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(plain, f)
    r = run(binary, ["--scenario", path, "--export", out])
    if r.returncode != 0:
        FAIL.add(where, f"positional none: exit {r.returncode}: {r.stderr.strip()}")
        return
    with open(out, encoding="utf-8") as f:
        x_plain = np.asarray(json.load(f)["X"], dtype=np.float64)
    with open(os.path.join(tmp, "out.json"), encoding="utf-8") as f:
        x_pos = np.asarray(json.load(f)["X"], dtype=np.float64)
    compare(f"{where}: X - X(positional none)", x_pos - x_plain, sinusoidal(*x_pos.shape))
    # The same token has the same embedding wherever it stands.
    for i, a in enumerate(spec["tokens"]):
        for j, b in enumerate(spec["tokens"]):
            if i < j and a == b and not np.array_equal(x_plain[i], x_plain[j]):
                FAIL.add(where, f"token {a!r} at {i} and {j} has two embeddings")


def check_npy(binary, tmp, where, scenario_path, exported):
    d = os.path.join(tempfile.mkdtemp(dir=tmp), "new-folder")  # created by the export
    r = run(binary, ["--scenario", scenario_path, "--export-npy", d])
    if r.returncode != 0:
        FAIL.add(where, f"--export-npy: exit {r.returncode}: {r.stderr.strip()}")
        return
    heads = exported["heads"]
    stacks = {"Q.npy": "Q", "K.npy": "K", "V.npy": "V", "scores.npy": "scores", "weights.npy": "weights",
              "head_output.npy": "output"}
    for name, key in stacks.items():
        arr = np.load(os.path.join(d, name))
        want = np.asarray([h[key] for h in heads], dtype=np.float64)
        if arr.dtype != np.dtype("<f4") or arr.ndim != 3:
            FAIL.add(where, f"{name}: dtype {arr.dtype}, rank {arr.ndim}; expected <f4, rank 3")
            continue
        if arr.shape != want.shape or np.max(np.abs(arr - want), initial=0.0) > NPY_TOL:
            FAIL.add(where, f"{name}: {arr.shape} differs from the JSON export {want.shape}")
    for name, key, dtype in (("kv_head.npy", "kv_head", "<i8"), ("alibi_slopes.npy", "alibi_slope", "<f4")):
        path = os.path.join(d, name)
        if all(key in h for h in heads) and heads:
            arr = np.load(path)
            if arr.dtype != np.dtype(dtype) or arr.tolist() != [np.asarray(h[key], dtype=dtype).item() for h in heads]:
                FAIL.add(where, f"{name}: {arr.tolist()} ({arr.dtype}) differs from the JSON export")
        elif os.path.exists(path):
            FAIL.add(where, f"{name} written without its variant")
    out = np.load(os.path.join(d, "output.npy"))
    if out.shape != np.asarray(exported["output"]).shape or np.max(np.abs(out - exported["output"])) > NPY_TOL:
        FAIL.add(where, "output.npy differs from the JSON export")
    x_path = os.path.join(d, "X.npy")
    if exported["X"] is None:
        if os.path.exists(x_path):
            FAIL.add(where, "X.npy written for explicit Q, K, V")
    else:
        x = np.load(x_path)
        if x.shape != np.asarray(exported["X"]).shape or np.max(np.abs(x - exported["X"])) > NPY_TOL:
            FAIL.add(where, "X.npy differs from the JSON export")
    for name, key in (("tokens.txt", "tokens"), ("key_tokens.txt", "key_tokens")):
        with open(os.path.join(d, name), encoding="utf-8") as f:
            if f.read().split("\n")[:-1] != exported[key]:
                FAIL.add(where, f"{name} differs from the JSON export's {key}")


def check_csv(binary, tmp, where, scenario_path, exported):
    for head in (["--head", "0"], ["--head", "-1"], []):
        target = os.path.join(tmp, "weights.csv")
        r = run(binary, ["--scenario", scenario_path, "--export-csv", target] + head)
        if r.returncode != 0:
            FAIL.add(where, f"--export-csv {head}: exit {r.returncode}: {r.stderr.strip()}")
            return
        with open(target, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        if rows[0] != ["query\\key"] + exported["key_tokens"]:
            FAIL.add(where, f"CSV header {rows[0]!r}")
            continue
        if [row[0] for row in rows[1:]] != exported["tokens"]:
            FAIL.add(where, f"CSV row labels {[row[0] for row in rows[1:]]!r}")
            continue
        all_w = np.asarray([h["weights"] for h in exported["heads"]], dtype=np.float64)
        want = all_w.mean(axis=0) if head == ["--head", "-1"] else all_w[0]
        got = np.asarray([[float(v) for v in row[1:]] for row in rows[1:]])
        if got.shape != want.shape or np.max(np.abs(got - want)) > NPY_TOL:
            FAIL.add(where, f"CSV {head or 'default head'} weights differ from the JSON export")
        # The same CSV on stdout.
        r = run(binary, ["--scenario", scenario_path, "--export-csv", "-"] + head)
        if list(csv.reader(io.StringIO(r.stdout))) != rows:
            FAIL.add(where, f"--export-csv - {head} differs from the file")


def check_bad_inputs(binary, tmp):
    """Each bad input exits 2, prints one error line naming the file and field, writes nothing."""
    cases = [
        ("ragged.json", json.dumps({"X": [[1, 0], [0, 1]], "W_Q": [[1, 0], [0]]}), "W_Q"),
        ("unknown.json", json.dumps({"tokens": ["a", "b"], "colour": "blue"}), "colour"),
        ("zero-temperature.json", json.dumps({"tokens": ["a", "b"], "temperature": 0}), "temperature"),
        ("malformed.json", '{"tokens": ["a", "b"],\n  "causal": tru }', "line 2"),
        ("missing.json", None, "no such file"),
        ("kv-heads.json", json.dumps({"tokens": ["a", "b"], "heads": 4, "d_model": 8, "kv_heads": 3}), "kv_heads"),
        ("window.json", json.dumps({"tokens": ["a", "b"], "window": 0}), "window"),
        ("rope-odd.json", json.dumps({"tokens": ["a", "b"], "d_model": 6, "heads": 2, "positional": "rope"}), "d_k"),
        ("rope-base.json", json.dumps({"tokens": ["a", "b"], "positional": "rope", "rope_base": 0.5}), "rope_base"),
        ("kv-shape.json", json.dumps({"X": [[1, 0]], "heads": 2, "d_k": 1, "kv_heads": 1, "W_K": [[1, 0], [0, 1]]}), "W_K"),
        ("a-folder", "DIR", "directory"),
    ]
    count = 0
    for name, text, field in cases:
        count += 1
        path = os.path.join(tmp, name)
        if text == "DIR":
            os.makedirs(path, exist_ok=True)
        elif text is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        out = os.path.join(tmp, "bad-out.json")
        for extra in (["--export", out], ["--export-npy", out], ["--export-csv", out]):
            where = f"bad input {name} {extra[0]}"
            r = run(binary, ["--scenario", path] + extra)
            lines = r.stderr.splitlines()
            if r.returncode != 2:
                FAIL.add(where, f"exit {r.returncode}, expected 2")
            if len(lines) != 1 or not r.stderr.endswith("\n"):
                FAIL.add(where, f"expected one stderr line, got {r.stderr!r}")
            elif not lines[0].startswith("attnviz: error: " + path + ": "):
                FAIL.add(where, f"line does not start with 'attnviz: error: {path}: ': {lines[0]!r}")
            elif field not in lines[0][len("attnviz: error: " + path + ": "):]:
                FAIL.add(where, f"line does not name {field!r}: {lines[0]!r}")
            if r.stdout:
                FAIL.add(where, f"wrote to stdout: {r.stdout[:80]!r}")
            if os.path.exists(out):
                FAIL.add(where, "created the output file")
                if os.path.isdir(out):
                    for entry in os.listdir(out):
                        os.remove(os.path.join(out, entry))
                    os.rmdir(out)
                else:
                    os.remove(out)
    return count


def main():
    if len(sys.argv) != 2:
        print("usage: test_numpy_oracle.py PATH/TO/attnviz", file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    if not os.access(binary, os.X_OK):
        print(f"oracle: {binary} is not an executable")
        print("oracle: 0 scenarios, 1 failures")
        return 1
    scenarios = generate()
    fully_masked_rows = 0
    npy_checked = csv_checked = 0
    with tempfile.TemporaryDirectory(prefix="attnviz-oracle-") as tmp:
        for n, (doc, spec) in enumerate(scenarios):
            where = f"scenario {n} ({spec['kind']})"
            scenario_path = os.path.join(tmp, f"scenario-{n}.json")
            out_path = os.path.join(tmp, "out.json")
            with open(scenario_path, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            if os.path.exists(out_path):
                os.remove(out_path)
            r = run(binary, ["--scenario", scenario_path, "--export", out_path])
            if r.returncode != 0:
                FAIL.add(where, f"exit {r.returncode}: {r.stderr.strip()}  scenario: {json.dumps(doc)[:300]}")
                continue
            if r.stdout or r.stderr:
                FAIL.add(where, f"unexpected output: {r.stdout[:80]!r} {r.stderr[:80]!r}")
            with open(out_path, encoding="utf-8") as f:
                exported = json.load(f)
            before = len(FAIL)
            if spec["kind"] == "token":
                check_token_export(where, exported, spec)
                check_positional(binary, tmp, where, doc, spec)
                blocked = blocked_matrix(len(spec["tokens"]), len(spec["tokens"]), spec["causal"],
                                         spec["padding"], spec["mask"])
            else:
                blocked = check_export(where, exported, spec)["blocked"]
            fully_masked_rows += int(blocked.all(axis=1).sum())
            if n % 7 == 0:
                check_npy(binary, tmp, where, scenario_path, exported)
                npy_checked += 1
            if n % 9 == 0:
                check_csv(binary, tmp, where, scenario_path, exported)
                csv_checked += 1
            if len(FAIL) > before:
                print(f"  scenario {n}: {json.dumps(doc)[:400]}")

        # CSV quoting: labels with commas, quotes and edge spaces survive the csv module.
        labels = ["a,b", 'say "hi"', " lead", "plain"]
        doc = {"tokens": labels, "Q": [[1, 0], [0, 1], [1, 1], [0, 0]], "K": [[1, 0], [0, 1], [1, 1], [0, 0]],
               "V": [[1], [2], [3], [4]]}
        path = os.path.join(tmp, "quoted.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        out = os.path.join(tmp, "quoted-out.json")
        r = run(binary, ["--scenario", path, "--export", out])
        if r.returncode != 0:
            FAIL.add("csv quoting", f"exit {r.returncode}: {r.stderr.strip()}")
        else:
            with open(out, encoding="utf-8") as f:
                exported = json.load(f)
            if exported["tokens"] != labels:
                FAIL.add("csv quoting", f"tokens {exported['tokens']!r}")
            check_csv(binary, tmp, "csv quoting", path, exported)
            csv_checked += 1

        bad = check_bad_inputs(binary, tmp)

    if fully_masked_rows == 0:
        FAIL.add("coverage", "no scenario had a fully masked row")
    print(f"checked {len(scenarios)} scenarios ({fully_masked_rows} fully masked rows), --export-npy on "
          f"{npy_checked}, --export-csv on {csv_checked}, {bad} bad inputs x 3 exports; "
          f"worst passing error {FAIL.worst:.3f} of the tolerance")
    print(f"oracle: {len(scenarios)} scenarios, {len(FAIL)} failures")
    return 1 if len(FAIL) else 0


if __name__ == "__main__":
    sys.exit(main())
