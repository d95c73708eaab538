#!/usr/bin/env python3
"""--attention FILE of queries and keys (scripts/export_attention.py --qk) through the real binary,
against numpy.

The files hold what transformers' attention functions receive, per layer: the queries
[heads, T, d_h] and keys [kv_heads, T, d_h] after RoPE (random here, two query heads a key head),
written as safetensors byte by byte from the format's definition with its __metadata__
("format": "attnviz-qk", "scaling", "causal", "sliding_windows"), in BF16 (rounded to nearest even
from float32, as torch rounds), F16 and F32, tokens.txt beside them. The reference is each map
softmax(scaling · q kᵀ) under the causal mask and the layer's window, in float64 from the values
the file holds. T = 700 crosses the tiles of 256 keys and the blocks of 512 rows whose
log-sum-exp is made at once.

  * --export-npy DIR --layer L --head H: that map, every weight, to 1e-5;
  * --export-stats: every head's statistics against test_head_stats.py's numpy statistics;
  * --max-memory small enough that the shown layer is not made whole: the heatmap's CSV export,
    a row's bars, and the statistics are the same; every map at once is refused in one line that
    names the flags writing one head's;
  * --rollout --layer L (both rules) against test_rollout.py's numpy rollout;
  * --export-csv of a map of more than 16,384 keys (a spreadsheet's columns) refused in one line;
  * a non-causal file (an encoder's), whole;
  * a soft-capped file (Gemma 2's cap · tanh(s / cap) of the scaled scores): maps, statistics, title;
  * every bad file (no format, a bad scaling, a missing k, a gap, shapes that disagree, NaN in a
    query, queries and keys whose scores would pass float32's range, windows that do not match the
    layers, a negative soft-cap, an unsupported dtype) exits 2 with
    one line naming the file and the place.

Usage: test_import_qk.py PATH/TO/attnviz
"""
import csv
import io
import json
import os
import struct
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import CHECKS, FAILURES, close, expect, fail, one_error_line, run  # noqa: E402
import test_head_stats as hs  # noqa: E402
import test_rollout as ro  # noqa: E402

TOL = 1e-5
LAYERS, HEADS, KV, T, D = 3, 4, 2, 700, 16
WINDOWS = [0, 150, 0]
SCALING = 1.0 / np.sqrt(D)


def safetensors_bytes(tensors, metadata):
    """tensors: [(name, dtype, shape, raw bytes)] in order; metadata: strings to strings."""
    header, data = {"__metadata__": metadata}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def bf16(a):
    """float32 to bfloat16 bits, rounded to nearest even (torch's .to(torch.bfloat16))."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return bits.astype(np.uint16)


def widened(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def queries_keys(seed):
    rng = np.random.default_rng(seed)
    q = rng.normal(scale=1.2, size=(LAYERS, HEADS, T, D)).astype(np.float32)
    k = rng.normal(scale=1.2, size=(LAYERS, KV, T, D)).astype(np.float32)
    return q, k


def reference(q, k, scaling, causal, windows, softcap=0.0):
    """[L, H, T, T] float64: each map softmax(scaling · q kᵀ) over the keys each query reads, the
    scaled scores first capped at softcap · tanh(s / softcap) where softcap > 0 (Gemma 2's)."""
    layers, heads, t, _ = q.shape
    group = heads // k.shape[1]
    out = np.zeros((layers, heads, t, t))
    for l in range(layers):
        readable = hs.readable_mask(t, t, causal, windows[l])
        for h in range(heads):
            s = scaling * (q[l, h].astype(np.float64) @ k[l, h // group].astype(np.float64).T)
            if softcap > 0:
                s = softcap * np.tanh(s / softcap)
            s = np.where(readable, s, -np.inf)
            e = np.exp(s - s.max(-1, keepdims=True))
            out[l, h] = e / e.sum(-1, keepdims=True)
    return out


def qk_file(q, k, dtype, metadata):
    tensors = []
    for l in range(q.shape[0]):
        for name, x in ((f"layer.{l}.q", q[l]), (f"layer.{l}.k", k[l])):
            raw = {"BF16": lambda a: bf16(a).tobytes(), "F16": lambda a: a.astype(np.float16).tobytes(),
                   "F32": lambda a: a.astype(np.float32).tobytes()}[dtype](x)
            tensors.append((name, dtype, (1,) + x.shape if l == 1 else x.shape, raw))  # a batch of one on layer 1
    return safetensors_bytes(tensors, metadata)


def meta(**extra):
    m = {"format": "attnviz-qk", "scaling": repr(float(SCALING)), "causal": "true", "sliding_windows": ",".join(map(str, WINDOWS))}
    m.update(extra)
    return {k: v for k, v in m.items() if v is not None}


def one_map(attnviz, path, layer, head, tmp, *extra):
    d = os.path.join(tmp, f"one_{os.path.basename(path)}_{layer}_{head}")
    run(attnviz, "--attention", path, "--layer", str(layer), "--head", str(head), "--export-npy", d, *extra)
    return np.load(os.path.join(d, "attentions.npy"))


def check_good(attnviz, tmp):
    q, k = queries_keys(11)
    tokens = [f"t{i % 97}" for i in range(T)]  # repeated tokens: the duplicate and induction scores read them
    ids = hs.ids_of_labels(tokens)
    readables = [hs.readable_mask(T, T, True, w) for w in WINDOWS]
    for dtype in ("BF16", "F16", "F32"):
        folder = os.path.join(tmp, dtype)
        os.makedirs(folder)
        with open(os.path.join(folder, "tokens.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(tokens) + "\n")
        path = os.path.join(folder, "qk.safetensors")
        with open(path, "wb") as f:
            f.write(qk_file(q, k, dtype, meta()))
        held = {"BF16": lambda a: widened(bf16(a)), "F16": lambda a: a.astype(np.float16).astype(np.float32), "F32": lambda a: a}[dtype]
        maps = reference(held(q), held(k), SCALING, True, WINDOWS)
        for layer, head in ((0, 0), (1, 3), (2, 1)):
            got = one_map(attnviz, path, layer, head, tmp)
            close(f"{dtype} --export-npy --layer {layer} --head {head}", got, maps[layer, head][None, None], TOL)
        if dtype != "BF16":
            continue
        # every head's statistics, with the layer made whole and read from the file
        for extra in ((), ("--max-memory", "4")):
            p = run(attnviz, "--attention", path, "--export-stats", "-", *extra)
            hs.compare(f"--export-stats {' '.join(extra)}", list(csv.DictReader(io.StringIO(p.stdout))), maps, ids, readables, skip=False)
        # the layer read from the file: the heatmap's numbers and a row's bars are the map's
        p = run(attnviz, "--attention", path, "--layer", "1", "--head", "2", "--export-csv", "-", "--max-memory", "4")
        lines = list(csv.reader(io.StringIO(p.stdout)))
        got = np.array([[float(x) for x in row[1:]] for row in lines[1:]])
        close("--export-csv --max-memory 4 (read from the file)", got, maps[1, 2], TOL)
        one_error_line(attnviz, ["--attention", path, "--export-npy", os.path.join(tmp, "every"), "--max-memory", "4"], "--layer L --head H")
        got = one_map(attnviz, path, 2, 2, tmp, "--max-memory", "4")
        close("--export-npy one head --max-memory 4", got, maps[2, 2][None, None], TOL)
        # the figures say what the maps are made of
        svg = os.path.join(tmp, "model.svg")
        run(attnviz, "--attention", path, "--export-model-view", svg, "--layer", "1", "--head", "2", "--export-heatmap",
            os.path.join(tmp, "heat.svg"))
        for name, words in (("model.svg", "every layer × head · made from queries and keys"),
                            ("heat.svg", "made from queries and keys · causal · window 150")):
            with open(os.path.join(tmp, name), encoding="utf-8") as f:
                expect(f"the title of {name}", words in f.read(), f"no {words!r}")
        # every map at once, within the limit
        d = os.path.join(tmp, "all")
        run(attnviz, "--attention", path, "--export-npy", d)
        close("--export-npy every map", np.load(os.path.join(d, "attentions.npy")), maps, TOL)
    # rollout up to each layer, both rules, from a shorter file
    short_q, short_k = q[:, :, :200].copy(), k[:, :, :200].copy()
    path = os.path.join(tmp, "short.safetensors")
    with open(path, "wb") as f:
        f.write(qk_file(short_q, short_k, "F32", meta()))
    maps = reference(short_q, short_k, SCALING, True, WINDOWS)
    for layer in range(LAYERS):
        for rule in ("mean", "max"):
            d = os.path.join(tmp, f"roll{layer}{rule}")
            run(attnviz, "--attention", path, "--rollout", "--rollout-heads", rule, "--layer", str(layer), "--export-npy", d)
            want = ro.rollout([[maps[l, h] for h in range(HEADS)] for l in range(LAYERS)], layer, rule)
            close(f"--rollout --layer {layer} {rule}", np.load(os.path.join(d, "rollout.npy")), want, TOL)
    # a map of more keys than a spreadsheet has columns: --export-csv is refused at once, naming
    # the binary export of one head
    wide = os.path.join(tmp, "wide.safetensors")
    wq = np.random.default_rng(1).normal(size=(1, 1, 16400, 2)).astype(np.float32)
    with open(wide, "wb") as f:
        f.write(qk_file(wq, wq, "F32", meta(sliding_windows=None)))
    one_error_line(attnviz, ["--attention", wide, "--head", "0", "--export-csv", os.path.join(tmp, "never.csv")], "--layer L --head H")
    expect("--export-csv past 16,384 keys", not os.path.exists(os.path.join(tmp, "never.csv")), "a file was written")
    # an encoder's: every query reads every key
    enc_q, enc_k = q[:, :, :300].copy(), k[:, :, :300].copy()
    path = os.path.join(tmp, "encoder.safetensors")
    with open(path, "wb") as f:
        f.write(qk_file(enc_q, enc_k, "F32", meta(causal="false", sliding_windows=None)))
    maps = reference(enc_q, enc_k, SCALING, False, [0, 0, 0])
    for layer, head in ((0, 1), (2, 3)):
        close(f"non-causal --layer {layer} --head {head}", one_map(attnviz, path, layer, head, tmp), maps[layer, head][None, None], TOL)
    # soft-capped scores (Gemma 2's attn_logit_softcapping): a cap of 2 binds on these scores
    folder = os.path.join(tmp, "capped")
    os.makedirs(folder)
    with open(os.path.join(folder, "tokens.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(tokens[:300]) + "\n")
    path = os.path.join(folder, "qk.safetensors")
    with open(path, "wb") as f:
        f.write(qk_file(enc_q, enc_k, "F32", meta(softcap="2.0")))
    maps = reference(enc_q, enc_k, SCALING, True, WINDOWS, softcap=2.0)
    uncapped = reference(enc_q, enc_k, SCALING, True, WINDOWS)
    expect("the cap binds", np.abs(maps - uncapped).max() > 0.05, "a cap of 2 changes no map")
    for layer, head in ((0, 2), (1, 0)):
        close(f"softcap 2 --layer {layer} --head {head}", one_map(attnviz, path, layer, head, tmp), maps[layer, head][None, None], TOL)
    p = run(attnviz, "--attention", path, "--export-stats", "-")
    hs.compare("softcap 2 --export-stats", list(csv.DictReader(io.StringIO(p.stdout))), maps, hs.ids_of_labels(tokens[:300]),
               [hs.readable_mask(300, 300, True, w) for w in WINDOWS], skip=False)
    run(attnviz, "--attention", path, "--layer", "1", "--export-heatmap", os.path.join(tmp, "capped.svg"))
    with open(os.path.join(tmp, "capped.svg"), encoding="utf-8") as f:
        expect("the heatmap's title names the cap", "window 150 · soft-capped at 2" in f.read(), "no 'soft-capped at 2'")
    print("good files: maps, statistics, the layer read from the file, an encoder's, soft-capped scores", flush=True)


def check_bad(attnviz, tmp):
    q, k = queries_keys(5)
    q, k = q[:2, :, :8].copy(), k[:2, :, :8].copy()
    good = [(f"layer.{l}.{n}", "F32", x[l].shape, x[l].tobytes()) for l in range(2) for n, x in (("q", q), ("k", k))]
    two = meta(sliding_windows="0,0")
    nan_q = q.copy()
    nan_q[1, 2, 5, 3] = np.nan
    cases = {
        "noformat": (safetensors_bytes(good, {}), "has no \"format\": \"attnviz-qk\""),
        "scaling": (safetensors_bytes(good, meta(scaling="-1", sliding_windows="0,0")), "__metadata__.scaling: '-1' is not a positive number"),
        "noscaling": (safetensors_bytes(good, meta(scaling=None, sliding_windows="0,0")), "has no \"scaling\""),
        "causal": (safetensors_bytes(good, meta(causal="yes", sliding_windows="0,0")), "__metadata__.causal: 'yes' is neither"),
        "windows": (safetensors_bytes(good, meta()), "__metadata__.sliding_windows: holds 3 windows, the file 2 layers"),
        "window": (safetensors_bytes(good, meta(sliding_windows="0,x")), "__metadata__.sliding_windows: item 1 'x' is not a window"),
        "softcap": (safetensors_bytes(good, meta(sliding_windows="0,0", softcap="-50")), "__metadata__.softcap: '-50' is not a cap of the scores"),
        "missing_k": (safetensors_bytes(good[:3], two), "no tensor 'layer.1.k' beside its queries"),
        "gap": (safetensors_bytes(good[:2] + [("layer.2.q", "F32", q[1].shape, q[1].tobytes()), ("layer.2.k", "F32", k[1].shape, k[1].tobytes())], two),
                "no tensor 'layer.1.q'"),
        "shape": (safetensors_bytes(good[:3] + [("layer.1.k", "F32", (KV, 7, D), k[1, :, :7].tobytes())], two),
                  "layer.1.k: shape [2, 7, 16] differs from layer.0's [2, 8, 16]"),
        "kv": (safetensors_bytes([(n, d, (3,) + s[1:], q[int(n[6])][:3].tobytes()) if n.endswith(".k") else (n, d, s, r)
                                  for n, d, s, r in good], two), "3 kv heads do not divide the 4 query heads"),
        "nan": (safetensors_bytes([(f"layer.{l}.{n}", "F32", x[l].shape, x[l].tobytes()) for l in range(2) for n, x in (("q", nan_q), ("k", k))], two),
                "layer 1 · head 2 · query 5 · element 3: nan is not a finite number"),
        "huge": (safetensors_bytes([(f"layer.{l}.{n}", "F32", x[l].shape, (x[l] * 1e19).astype(np.float32).tobytes()) for l in range(2)
                                    for n, x in (("q", q), ("k", k))], two), "give scores past float32's range"),
        "dtype": (safetensors_bytes([(n, "F64", s, np.frombuffer(r, np.float32).astype(np.float64).tobytes()) for n, d, s, r in good], two),
                  "dtype F64 is not supported: BF16, F16 or F32"),
        "other": (safetensors_bytes(good + [("extra", "F32", (1,), b"\0\0\0\0")], two), "tensor 'extra' is neither layer.N.q nor layer.N.k"),
    }
    for name, (data, words) in cases.items():
        path = os.path.join(tmp, name + ".safetensors")
        with open(path, "wb") as f:
            f.write(data)
        p = one_error_line(attnviz, ["--attention", path, "--export-stats", "-"], name + ".safetensors")
        if words not in p.stderr:
            fail(f"bad file {name}", f"expected {words!r} in {p.stderr.strip()!r}")
    print(f"bad files: {len(cases)} refused in one line", flush=True)


def main():
    attnviz = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        check_good(attnviz, tmp)
        check_bad(attnviz, tmp)
    if FAILURES:
        print(f"{len(FAILURES)} of {CHECKS[0]} checks failed")
        sys.exit(1)
    print(f"all {CHECKS[0]} checks passed")


if __name__ == "__main__":
    main()
