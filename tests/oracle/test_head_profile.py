#!/usr/bin/env python3
"""--export-distance against an independent numpy implementation of each head's profile.

The real binary writes the attention maps (--export-npy) and every head's profile (--export-distance
as CSV and JSON) of a tiny GPT-2 checkpoint and of three scenario files (a causal sliding window;
padding without a causal mask; a window without one). The profile is then recomputed here from
the exported maps, from the definitions alone:

  distance bins   0, 1, ..., 7 each a bin, then four bins a doubling ([8, 10), [10, 12), [12, 14),
                  [14, 16), [16, 20), ...), the last cut at the longest distance
  distance        the mean of A[i, j] over the pairs the mask lets query i read whose |i - j| is in
                  the bin (count = those pairs)
  uniform         the same mean of 1 / (keys row i may read)
  position bins   consecutive queries in blocks of 1, 2, 5, 10, 20, 50, ... positions, the least
                  that makes at most 256 blocks
  first_k         sum_{j<k} A[i, j] over the keys the row may read, the mean over the queries i >= k
                  of the block (count = those queries); k = --first-tokens (default 4, and 3)

Usage: test_head_profile.py PATH/TO/attnviz
"""
import csv
import json
import math
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import FAILURES, fail, run  # noqa: E402
import gpt2_checkpoint as ckpt  # noqa: E402
from test_head_stats import readable_mask  # noqa: E402

TOL = 1e-6


def distance_edges(longest):
    end = max(1, longest)
    edges = list(range(0, min(8, end) + 1))
    base = 8
    while edges[-1] < end:
        for m in range(1, 5):
            if edges[-1] < end:
                edges.append(min(end, base + m * base // 4))
        base *= 2
    return edges


def position_edges(t_q, most=256):
    need = max(1, math.ceil(t_q / most))
    block = next(m * 10 ** e for e in range(12) for m in (1, 2, 5) if m * 10 ** e >= need)
    return list(range(0, t_q, block)) + [t_q]


def profile(a, readable, k):
    """One head's curves, in float64, from the definitions (module docstring)."""
    a = np.asarray(a, np.float64)
    t_q, t_k = a.shape
    d = np.abs(np.arange(t_q)[:, None] - np.arange(t_k)[None, :])
    per_row = readable.sum(axis=1)
    out = {"distance": [], "uniform": [], "first_k": []}
    edges = distance_edges(max(t_q, t_k))
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = readable & (d >= lo) & (d < hi)
        n = int(sel.sum())
        spread = (sel / np.maximum(per_row, 1)[:, None]).sum()
        out["distance"].append((lo, hi - 1, float(a[sel].sum()) / n if n else 0.0, n))
        out["uniform"].append((lo, hi - 1, float(spread) / n if n else 0.0, n))
    positions = position_edges(t_q)
    for lo, hi in zip(positions[:-1], positions[1:]):
        rows = [i for i in range(lo, hi) if i >= k]
        mass = [float((a[i, :k] * readable[i, :k]).sum()) for i in rows]
        out["first_k"].append((lo, hi - 1, sum(mass) / len(rows) if rows else 0.0, len(rows)))
    return out


def compare_csv(where, path, maps, readables, k):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    layers, heads = maps.shape[:2]
    got = {}
    for r in rows:
        got.setdefault((int(r["layer"]), int(r["head"]), r["curve"]), []).append(
            (int(r["from"]), int(r["to"]), float(r["value"]), int(r["count"])))
    if len(got) != layers * heads * 3:
        fail(where, f"{len(got)} curves, expected {layers * heads * 3}")
        return
    worst = 0.0
    for l in range(layers):
        for h in range(heads):
            want = profile(maps[l, h], readables[l], k)
            for curve, points in want.items():
                have = got.get((l, h, curve), [])
                if [(p[0], p[1], p[3]) for p in have] != [(p[0], p[1], p[3]) for p in points]:
                    fail(where, f"layer {l} head {h} {curve}: bins or counts {[(p[0], p[1], p[3]) for p in have][:6]}…, "
                                f"numpy {[(p[0], p[1], p[3]) for p in points][:6]}…")
                    continue
                for p, q in zip(have, points):
                    err = abs(p[2] - q[2])
                    worst = max(worst, err)
                    if not err <= TOL:
                        fail(where, f"layer {l} head {h} {curve} {q[0]}..{q[1]}: {p[2]!r}, numpy {q[2]!r}")
    print(f"{where}: {layers * heads} heads, worst error {worst:.2g}", flush=True)


def compare_json(where, path, maps, readables, k):
    with open(path) as f:
        j = json.load(f)
    layers, heads, t_q, t_k = maps.shape
    if j["tokens"] != t_q or j["layer_count"] != layers or j["head_count"] != heads or j["first_k"]["k"] != k:
        fail(where, f"tokens {j['tokens']}, layers {j['layer_count']}, heads {j['head_count']}, first_k {j['first_k']}")
    edges = distance_edges(max(t_q, t_k))
    if j["distance_bins"] != [[lo, hi - 1] for lo, hi in zip(edges[:-1], edges[1:])]:
        fail(where, f"distance_bins {j['distance_bins'][:10]}…")
    positions = position_edges(t_q)
    if j["position_bins"] != [[lo, hi - 1] for lo, hi in zip(positions[:-1], positions[1:])]:
        fail(where, f"position_bins {j['position_bins'][:10]}…")
    worst = 0.0
    for record in j["heads"]:
        l, h = record["layer"], record["head"]
        want = profile(maps[l, h], readables[l], k)
        for key, curve in (("by_distance", "distance"), ("uniform", "uniform"), ("first_k", "first_k")):
            values = [p[2] for p in want[curve]]
            if len(record[key]) != len(values):
                fail(where, f"layer {l} head {h} {key}: {len(record[key])} values, numpy {len(values)}")
                continue
            worst = max([worst] + [abs(a - b) for a, b in zip(record[key], values)])
        if record["pairs"] != [p[3] for p in want["distance"]] or record["rows"] != [p[3] for p in want["first_k"]]:
            fail(where, f"layer {l} head {h}: pairs or rows differ")
    if len(j["heads"]) != layers * heads:
        fail(where, f"{len(j['heads'])} heads, expected {layers * heads}")
    if not worst <= TOL:
        fail(where, f"worst error {worst!r}")
    print(f"{where}: worst error {worst:.2g}", flush=True)


def check_model(attnviz, tmp):
    folder = os.path.join(tmp, "tiny-gpt2")
    rng = np.random.default_rng(20261129)
    n_layer, n_head, n_embd, n_positions, vocab = 2, 4, 32, 128, 257
    weights = ckpt.random_weights(rng, n_layer, n_head, n_embd, n_positions, vocab, sharp=1.5)
    vocab_bytes, merges_bytes = ckpt.byte_vocabulary()
    ckpt.write_checkpoint(folder, weights, ckpt.config_json(n_layer, n_head, n_embd, n_positions, vocab),
                          {"vocab.json": vocab_bytes, "merges.txt": merges_bytes})
    sentence = "the cat sat on the mat and the dog sat on the log, then both went home."  # 71 tokens: bins past 64
    npy = os.path.join(tmp, "model-npy")
    out = {name: os.path.join(tmp, name) for name in ["m.csv", "m.json", "k3.json"]}
    base = ["--model", folder, "--sentence", sentence]
    run(attnviz, *base, "--export-npy", npy, "--export-distance", out["m.csv"])
    run(attnviz, *base, "--export-distance", out["m.json"])
    run(attnviz, *base, "--export-distance", out["k3.json"], "--first-tokens", "3")
    if FAILURES:
        return
    maps = np.load(os.path.join(npy, "attentions.npy"))
    if maps.shape != (n_layer, n_head, len(sentence), len(sentence)):
        fail("model", f"attentions.npy {maps.shape}")
        return
    readables = [readable_mask(len(sentence), len(sentence), True)] * n_layer
    compare_csv("model CSV", out["m.csv"], maps, readables, 4)
    compare_json("model JSON", out["m.json"], maps, readables, 4)
    compare_json("model JSON, k = 3", out["k3.json"], maps, readables, 3)


def check_scenario(attnviz, tmp, name, scenario, readable_of):
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(scenario, f)
    npy = os.path.join(tmp, name + "-npy")
    out = os.path.join(tmp, name + "-profile.csv")
    before = len(FAILURES)
    run(attnviz, path, "--export-npy", npy, "--export-distance", out)
    if len(FAILURES) > before:
        return
    maps = np.load(os.path.join(npy, "weights.npy"))[None]  # one layer of heads
    compare_csv(name, out, maps, [readable_of(maps.shape[2], maps.shape[3])], 4)


def main():
    if len(sys.argv) != 2:
        print("usage: test_head_profile.py PATH/TO/attnviz")
        return 2
    attnviz = sys.argv[1]
    words = ("the cat sat on the mat and the cat sat on the hat while the dog lay by the door and "
             "the bird sang in the tree").split()
    with tempfile.TemporaryDirectory() as tmp:
        check_model(attnviz, tmp)
        base = {"tokens": words, "d_model": 16, "heads": 4, "seed": 5, "embedding": "random", "positional": "sinusoidal",
                "temperature": 0.5}
        check_scenario(attnviz, tmp, "causal-window", dict(base, causal=True, window=6),
                       lambda tq, tk: readable_mask(tq, tk, True, window=6))
        check_scenario(attnviz, tmp, "padded", dict(base, causal=False, padding=[0, 6]),
                       lambda tq, tk: readable_mask(tq, tk, False, padding=(0, 6)))
        check_scenario(attnviz, tmp, "window", dict(base, window=5), lambda tq, tk: readable_mask(tq, tk, False, window=5))
    if FAILURES:
        print(f"{len(FAILURES)} failed")
        return 1
    print("head profiles: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
