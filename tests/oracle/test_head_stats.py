#!/usr/bin/env python3
"""--export-stats against an independent numpy implementation of the head statistics.

A tiny GPT-2 checkpoint (gpt2_checkpoint.py's random weights, a byte-level vocabulary of the 256
byte symbols and <|endoftext|>) and two scenario files (a causal sliding window; padding without a
causal mask) are run by the real binary, which writes their attention maps with --export-npy and
every head's statistics with --export-stats (CSV and JSON, with and without --skip-first-key). The
statistics are then recomputed here from the exported maps, from the definitions alone:

  entropy        mean over rows of -sum_j A ln A
  entropy_share  mean over the rows that may read >= 2 keys of entropy / ln(keys readable)
  distance       mean over rows of sum_j A |i - j|
  self, previous, first
                 A[i, i], A[i, i-1], A[i, 0], each the mean over the rows that may read that key
  first_k        sum_{j<k} A[i, j] over the keys the row may read, the mean over the rows i >= k
                 (k = --first-tokens, default 4; a second run with 3)
  duplicate, induction
                 sum(A * P) / sum(A) (TransformerLens's detect_head, "mul"):
                 duplicate P[i, j] = 1 iff t_i = t_j and j < i; induction P[i, j] = 1 iff t_{j-1} = t_i and j <= i
  next           A[i, i+1], the mean over the rows that may read it (a column only where some row may)
  separator, punctuation
                 sum_j A[i, j] over the separator keys (special tokens after the first) and over the
                 keys of Unicode punctuation alone (white space and the space marks ␣ ▁ Ġ aside),
                 the mean over the rows (Clark et al. 2019); the tokens here hold no separator
  sink share     the share of heads whose first exceeds epsilon
  --skip-first-key: each row's weights over keys j >= 1 renormalised to sum 1, rows that may read
                 no key j >= 1 (or put no weight there) left out, every statistic over the rest,
                 first = the weight on key 1, first_k the mass on keys 1 … k over the rows i >= k + 1,
                 and key 0 no longer counted among the readable keys.

Usage: test_head_stats.py PATH/TO/attnviz
"""
import csv
import io
import json
import os
import sys
import tempfile
import unicodedata

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import FAILURES, fail, run  # noqa: E402
import gpt2_checkpoint as ckpt  # noqa: E402

TOL = 1e-5
COLUMNS = ["entropy", "entropy_share", "distance", "self", "previous", "first", "first_k", "duplicate", "induction"]
FIRST_K = 4  # attnviz's default --first-tokens



def readable_mask(t_q, t_k, causal, window=0, padding=()):
    """[T_q, T_k] booleans: true where query i may read key j."""
    i = np.arange(t_q)[:, None]
    j = np.arange(t_k)[None, :]
    ok = np.ones((t_q, t_k), bool)
    if causal:
        ok &= j <= i
    if window > 0:
        ok &= (j > i - window) if causal else (np.abs(i - j) < window)
    for p in padding:
        ok[:, p] = False
    return ok


def is_punctuation(label):
    """A token of Unicode punctuation (category P) alone, white space and ␣ ▁ Ġ aside."""
    kept = [c for c in label if not c.isspace() and c not in "\u2423\u2581\u0120"]
    return bool(kept) and all(unicodedata.category(c).startswith("P") for c in kept)


def stats(a, ids, readable, skip, k=FIRST_K, punctuation=None):
    """One head's statistics, in float64, from the definitions (module docstring). punctuation:
    the keys' flags (or None: no key is)."""
    a = np.asarray(a, np.float64)
    t_q, t_k = a.shape
    punct = np.zeros(t_k, bool) if punctuation is None else np.asarray(punctuation, bool)
    first_kept = 1 if skip else 0
    rows, entropy, distance, punct_mass = 0, 0.0, 0.0, 0.0
    shares, selfs, previous, nexts, firsts, first_ks = [], [], [], [], [], []
    dup = ind = total = 0.0
    t = np.asarray(ids)
    for i in range(t_q):
        keys = np.arange(first_kept, t_k)
        w = a[i, first_kept:].copy()
        can = readable[i, first_kept:]
        if skip:
            if not can.any() or w.sum() <= 0:
                continue
            w = w / w.sum()
        rows += 1
        nz = w[w > 0]
        h = float(-(nz * np.log(nz)).sum())
        entropy += h
        n_read = int(can.sum())
        if n_read >= 2:
            shares.append(h / np.log(n_read))
        distance += float((w * np.abs(i - keys)).sum())
        at = dict(zip(keys.tolist(), w.tolist()))
        may = dict(zip(keys.tolist(), can.tolist()))
        if may.get(i):
            selfs.append(at[i])
        if i >= 1 and may.get(i - 1):
            previous.append(at[i - 1])
        if may.get(i + 1):
            nexts.append(at[i + 1])
        punct_mass += float((w * punct[first_kept:]).sum())
        if may.get(first_kept):
            firsts.append(at[first_kept])
        if i >= first_kept + k:  # a row after the first k keys: its mass on the ones it may read
            first_ks.append(sum(at[j] for j in range(first_kept, min(t_k, first_kept + k)) if may.get(j)))
        p_dup = (t[keys] == t[i]) & (keys < i)
        p_ind = (keys >= 1) & (keys <= i) & (t[np.maximum(keys - 1, 0)] == t[i])
        dup += float((w * p_dup).sum())
        ind += float((w * p_ind).sum())
        total += float(w.sum())
    mean = lambda xs: float(np.mean(xs)) if len(xs) else 0.0
    n = rows if skip else t_q
    return {
        "entropy": entropy / n if n else 0.0, "entropy_share": mean(shares), "distance": distance / n if n else 0.0,
        "self": mean(selfs), "previous": mean(previous), "first": mean(firsts), "first_k": mean(first_ks),
        "duplicate": dup / total if total > 0 else 0.0, "induction": ind / total if total > 0 else 0.0,
        "next": mean(nexts), "separator": 0.0, "punctuation": punct_mass / n if n else 0.0,
    }


def ids_of_labels(labels):
    first = {}
    return [first.setdefault(label, k) for k, label in enumerate(labels)]


def compare(where, got_rows, maps, ids, readables, skip, tol=TOL, k=FIRST_K, punctuation=None, reads_next=False):
    """got_rows: [{column: value}] layer-major; maps [L, H, T_q, T_k]; readables per layer; the
    next column where some row may read its next key (reads_next), and never otherwise."""
    layers, heads = maps.shape[:2]
    if len(got_rows) != layers * heads:
        fail(where, f"{len(got_rows)} rows, expected {layers * heads}")
        return []
    want_all, worst = [], 0.0
    for l in range(layers):
        for h in range(heads):
            row = got_rows[l * heads + h]
            if int(row["layer"]) != l or int(row["head"]) != h:
                fail(where, f"row {l * heads + h} is layer {row['layer']} head {row['head']}")
            want = stats(maps[l, h], ids, readables[l], skip, k, punctuation)
            want_all.append(want)
            if ("next" in row) != reads_next:
                fail(where, f"layer {l} head {h}: the next column is {'there' if 'next' in row else 'missing'}")
            for c in COLUMNS + ["separator", "punctuation"] + (["next"] if reads_next else []):
                if c not in row:
                    fail(where, f"layer {l} head {h}: no {c} column")
                    continue
                err = abs(float(row[c]) - want[c])
                worst = max(worst, err / max(1.0, abs(want[c])))
                if not err <= tol * max(1.0, abs(want[c])):
                    fail(where, f"layer {l} head {h} {c}: {float(row[c])!r}, numpy {want[c]!r}")
    print(f"{where}: {layers * heads} heads, worst relative error {worst:.2g}", flush=True)
    return want_all


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def check_model(attnviz, tmp):
    folder = os.path.join(tmp, "tiny-gpt2")
    rng = np.random.default_rng(20261126)
    n_layer, n_head, n_embd, n_positions, vocab = 3, 4, 32, 64, 257
    weights = ckpt.random_weights(rng, n_layer, n_head, n_embd, n_positions, vocab, sharp=1.5)
    vocab_bytes, merges_bytes = ckpt.byte_vocabulary()
    ckpt.write_checkpoint(folder, weights, ckpt.config_json(n_layer, n_head, n_embd, n_positions, vocab),
                          {"vocab.json": vocab_bytes, "merges.txt": merges_bytes})
    sentence = "abcab, cabca. bcabc abcab"  # one token a byte, repeats for duplicate and induction, punctuation
    npy = os.path.join(tmp, "model-npy")
    out = {name: os.path.join(tmp, name) for name in ["m.csv", "m.json", "skip.csv", "skip.json", "k3.json"]}
    base = ["--model", folder, "--sentence", sentence]
    run(attnviz, *base, "--export-npy", npy, "--export-stats", out["m.csv"])
    run(attnviz, *base, "--export-stats", out["m.json"], "--sink-epsilon", "0.2")
    run(attnviz, *base, "--export-stats", out["skip.csv"], "--skip-first-key")
    run(attnviz, *base, "--export-stats", out["skip.json"], "--skip-first-key", "--sink-epsilon", "0.4")
    run(attnviz, *base, "--export-stats", out["k3.json"], "--first-tokens", "3", "--skip-first-key")
    if FAILURES:
        return
    maps = np.load(os.path.join(npy, "attentions.npy"))
    ids = np.load(os.path.join(npy, "token_ids.npy"))
    if maps.shape != (n_layer, n_head, len(sentence), len(sentence)) or ids.tolist() != list(sentence.encode()):
        fail("model", f"attentions.npy {maps.shape}, token_ids {ids.tolist()[:8]}…")
        return
    readables = [readable_mask(len(ids), len(ids), True)] * n_layer
    punct = [is_punctuation(chr(i)) for i in ids.tolist()]
    if sum(punct) != 2:
        fail("model", f"{sum(punct)} punctuation tokens in {sentence!r}, expected 2")
    plain = compare("model CSV", read_csv(out["m.csv"]), maps, ids, readables, False, punctuation=punct)
    with open(out["m.json"]) as f:
        j = json.load(f)
    compare("model JSON", j["heads"], maps, ids, readables, False, punctuation=punct)
    share = float(np.mean([s["first"] > 0.2 for s in plain]))
    if j["tokens"] != len(ids) or j["layer_count"] != n_layer or j["head_count"] != n_head or j["first_key_left_out"] is not False or j["sink"]["epsilon"] != 0.2 or abs(j["sink"]["share"] - share) > 1e-12:
        fail("model JSON", f"tokens {j['tokens']}, first_key_left_out {j['first_key_left_out']}, sink {j['sink']} (numpy share {share})")
    print(f"model: sink share at 0.2 = {share}")
    compare("model CSV, first key left out", read_csv(out["skip.csv"]), maps, ids, readables, True, punctuation=punct)
    with open(out["skip.json"]) as f:
        k = json.load(f)
    compare("model JSON, first key left out", k["heads"], maps, ids, readables, True, punctuation=punct)
    share = float(np.mean([s["first"] > 0.4 for s in plain]))  # the sink share reads every key
    if k["first_key_left_out"] is not True or "renormalised" not in k["rule"] or abs(k["sink"]["share"] - share) > 1e-12:
        fail("model JSON, first key left out", f"first_key_left_out {k['first_key_left_out']}, rule {k['rule']!r}, sink {k['sink']}")
    if k["rule"] == j["rule"]:
        fail("model JSON", "the rule is the same with and without --skip-first-key")
    with open(out["k3.json"]) as f:
        k3 = json.load(f)
    compare("model JSON, first 3 tokens, first key left out", k3["heads"], maps, ids, readables, True, k=3, punctuation=punct)
    if k3["first_k"]["k"] != 3 or j["first_k"]["k"] != FIRST_K:
        fail("model JSON", f"first_k {k3['first_k']} with --first-tokens 3, {j['first_k']} without")


def check_scenario(attnviz, tmp, name, scenario, readable_of, reads_next):
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(scenario, f)
    npy = os.path.join(tmp, name + "-npy")
    stats_csv = os.path.join(tmp, name + "-stats.csv")
    skip_json = os.path.join(tmp, name + "-skip.json")
    before = len(FAILURES)
    run(attnviz, path, "--export-npy", npy, "--export-stats", stats_csv)
    run(attnviz, path, "--export-stats", skip_json, "--skip-first-key")
    if len(FAILURES) > before:
        return
    maps = np.load(os.path.join(npy, "weights.npy"))[None]  # one layer of heads
    with open(os.path.join(npy, "key_tokens.txt"), encoding="utf-8") as f:
        labels = f.read().splitlines()
    ids = ids_of_labels(labels)
    punct = [is_punctuation(label) for label in labels]
    readable = readable_of(maps.shape[2], maps.shape[3])
    compare(name, read_csv(stats_csv), maps, ids, [readable], False, punctuation=punct, reads_next=reads_next)
    with open(skip_json) as f:
        compare(name + ", first key left out", json.load(f)["heads"], maps, ids, [readable], True, punctuation=punct,
                reads_next=reads_next)


def main():
    if len(sys.argv) != 2:
        print("usage: test_head_stats.py PATH/TO/attnviz")
        return 2
    attnviz = sys.argv[1]
    words = "the cat sat on the mat , and the cat sat on the hat .".split()
    with tempfile.TemporaryDirectory() as tmp:
        check_model(attnviz, tmp)
        base = {"tokens": words, "d_model": 16, "heads": 4, "seed": 5, "embedding": "random", "positional": "sinusoidal",
                "temperature": 0.5}
        check_scenario(attnviz, tmp, "causal-window", dict(base, causal=True, window=4),
                       lambda tq, tk: readable_mask(tq, tk, True, window=4), False)
        check_scenario(attnviz, tmp, "padded", dict(base, causal=False, padding=[0, 6]),
                       lambda tq, tk: readable_mask(tq, tk, False, padding=(0, 6)), True)
        check_scenario(attnviz, tmp, "window", dict(base, window=3), lambda tq, tk: readable_mask(tq, tk, False, window=3), True)
    if FAILURES:
        print(f"{len(FAILURES)} failed")
        return 1
    print("head statistics: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
