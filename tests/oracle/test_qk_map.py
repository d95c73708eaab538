#!/usr/bin/env python3
"""numpy as an independent oracle for attnviz's query-key map (--export-qk-map OUT.json).

Usage: test_qk_map.py PATH/TO/attnviz

The map, written here from AttentionViz (Yeh et al., IEEE VIS 2023), not from attnviz:

    q, k = one head's queries and keys as the head reads them (GPT-2: LN(x) @ c_attn.W + b, split by head)
    c = mean(q) - mean(k);  k' = k + c                       (softmax rows unchanged)
    a = sqrt(mean |k'| / mean |q|);  q^ = a q,  k^ = k' / a  (equal mean norms)
    X = [q^; k^] - mean;  C = X^T X / N;  the two largest eigenvectors of C (np.linalg.eigh), each
    signed so that its entry of largest magnitude is positive;  points = X @ [v1 v2]

For a tiny GPT-2 checkpoint written here (3 layers x 4 heads, d_head = 8, a byte-level vocabulary,
200 tokens), `--model DIR --layer L --head H --export-qk-map OUT.json` must export a, the shift, the
shares of the variance and every point as numpy computes them from its own float64 forward pass;
with --query, that query's strongest keys are its largest weights. Misuse (no --head, the mean, a
bad extension) exits 2 with one line naming the flag. Exits 1 on any failure.
"""

import json
import math
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import one_error_line, FAILURES, WORST_SHARE, close, fail, run  # noqa: E402
import gpt2_checkpoint as ckpt  # noqa: E402

N_LAYER, N_HEAD, N_EMBD, N_POSITIONS = 3, 4, 32, 256


def head_qk(w, ids, layer, head):
    """float64 q, k [T, d_head] of (layer, head), and its weights [T, T] (causal)."""
    t = len(ids)
    x = w["wte.weight"][ids] + w["wpe.weight"][:t]
    d = x.shape[1]
    dk = d // N_HEAD
    mask = np.triu(np.ones((t, t), bool), 1)
    for l in range(layer + 1):
        p = f"h.{l}."
        a = ckpt.layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"])
        qkv = a @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
        outs, weights = [], []
        for h in range(N_HEAD):
            s = q[:, h * dk:(h + 1) * dk] @ k[:, h * dk:(h + 1) * dk].T / math.sqrt(dk)
            s = np.where(mask, -np.inf, s)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            A = e / e.sum(axis=1, keepdims=True)
            weights.append(A)
            outs.append(A @ v[:, h * dk:(h + 1) * dk])
        if l == layer:
            return q[:, head * dk:(head + 1) * dk], k[:, head * dk:(head + 1) * dk], weights[head]
        x = x + np.concatenate(outs, axis=1) @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        m = ckpt.gelu_tanh(ckpt.layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"]) @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        x = x + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    raise ValueError(layer)


def qk_map(q, k):
    shift = q.mean(axis=0) - k.mean(axis=0)
    k1 = k + shift
    a = math.sqrt(np.linalg.norm(k1, axis=1).mean() / np.linalg.norm(q, axis=1).mean())
    x = np.vstack([a * q, k1 / a])
    x = x - x.mean(axis=0)
    c = x.T @ x / x.shape[0]
    values, vectors = np.linalg.eigh(c)  # ascending
    order = np.argsort(values)[::-1][:2]
    v = vectors[:, order]
    for j in range(2):
        at = int(np.argmax(np.abs(v[:, j])))
        if v[at, j] < 0:
            v[:, j] = -v[:, j]
    return {"scale": a, "shift": shift, "explained": values[order] / values.sum(), "points": x @ v, "components": v,
            "mean_norms": (np.linalg.norm(a * q, axis=1).mean(), np.linalg.norm(k1 / a, axis=1).mean())}


def check_model(attnviz, tmp):
    folder = os.path.join(tmp, "tiny-gpt2")
    vocab, merges = ckpt.byte_vocabulary()
    rng = np.random.default_rng(20261127)
    weights = ckpt.random_weights(rng, N_LAYER, N_HEAD, N_EMBD, N_POSITIONS, 257)
    ckpt.write_checkpoint(folder, weights, ckpt.config_json(N_LAYER, N_HEAD, N_EMBD, N_POSITIONS, 257),
                          {"vocab.json": vocab, "merges.txt": merges})
    w = ckpt.stored(weights, "F32")
    sentence = ("a query meets the keys it reads; " * 8)[:200]
    ids = list(sentence.encode())
    out = os.path.join(tmp, "qk.json")
    checked = 0
    for layer, head, query in ((0, 0, 17), (1, 3, 120), (2, 2, 199)):
        where = f"--layer {layer} --head {head}"
        if run(attnviz, "--model", folder, "--sentence", sentence, "--layer", str(layer), "--head", str(head), "--query", str(query),
               "--export-qk-map", out).returncode:
            continue
        with open(out, encoding="utf-8") as f:
            got = json.load(f)
        q, k, A = head_qk(w, ids, layer, head)
        want = qk_map(q, k)
        if abs(want["mean_norms"][0] - want["mean_norms"][1]) > 1e-9 * want["mean_norms"][0]:
            fail(where, "the oracle's own mean norms differ")
        pts = np.array([[p["pc1"], p["pc2"]] for p in got["queries"] + got["keys"]])
        span = float(np.max(np.abs(want["points"])))
        close(where + " points", pts, want["points"], 2e-4 * span)
        close(where + " a", got["scale"], want["scale"], 1e-5 * want["scale"])
        close(where + " shift", got["shift"], want["shift"], 1e-4 * max(1.0, float(np.max(np.abs(want["shift"])))))
        close(where + " explained", got["explained"], want["explained"], 1e-4)
        close(where + " components", got["components"], want["components"], 1e-3)
        if len(got["queries"]) != 200 or len(got["keys"]) != 200:
            fail(where, f"{len(got['queries'])} queries and {len(got['keys'])} keys, expected 200 each")
        strongest = list(np.argsort(-A[query], kind="stable")[:8])
        if got["query"] != query or [int(j) for j in got["strongest"]] != [int(j) for j in strongest]:
            fail(where, f"strongest keys of query {query}: {got['strongest']}, expected {strongest}")
        checked += 1
    return checked, folder


def check_misuse(attnviz, folder, tmp):
    out = os.path.join(tmp, "m.json")
    for args, flag in ((["--preset", "seed004-causal", "--export-qk-map", out], "--export-qk-map"),
                       (["--preset", "seed004-causal", "--head", "-1", "--export-qk-map", out], "--export-qk-map"),
                       (["--preset", "seed004-causal", "--head", "0", "--export-qk-map", os.path.join(tmp, "m.jpg")], "m.jpg"),
                       (["--model", folder, "--sentence", "ab", "--head", "9", "--export-qk-map", out], "--head")):
        one_error_line(attnviz, args, flag)


def main():
    if len(sys.argv) != 2:
        print("usage: test_qk_map.py PATH/TO/attnviz")
        return 2
    attnviz = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        checked, folder = check_model(attnviz, tmp)
        check_misuse(attnviz, folder, tmp)
    if FAILURES:
        print(f"{len(FAILURES)} failures")
        return 1
    print(f"all passed: {checked} query-key maps of a tiny GPT-2 (3 layers x 4 heads, T = 200) matched numpy "
          f"(worst difference {WORST_SHARE[0]:.2g} of its tolerance); misuse exits 2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
