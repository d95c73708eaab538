#!/usr/bin/env python3
"""--attention FILE (attention computed elsewhere) through the real binary, against numpy.

The files are written here in transformers' conventions: `outputs.attentions` is a tuple with one
[batch = 1, heads, T, T] tensor a layer, each row a softmax of random logits under a causal mask
(a few heads bidirectional in a second file). They are saved as numpy saves them
(np.save(np.stack(attentions)[:, 0]), 4-D float32 and float16, 3-D and 2-D) and as safetensors
(layer.0, layer.1, … each [1, H, T, T], and one `attentions` [L, H, T, T]), written here byte by
byte from the format's definition (8-byte little-endian header length, JSON header, data), with
tokens.txt beside them. Then:

  * --export-stats (CSV) against test_head_stats.py's numpy statistics of the same arrays, the
    ids those of the tokens (equal tokens, equal ids);
  * --rollout --layer L --export-npy: rollout.npy against test_rollout.py's numpy rollout;
  * --export-npy: attentions.npy is the input file byte for byte for a 4-D np.save input
    (float32 and float16), and holds the same data bytes for the 3-D, 2-D and safetensors inputs;
  * --export-csv --layer L --head H: that map, every number; --export-npy with them: that map alone;
  * every bad file (shape, dtype, order, truncated, a lying header, NaN, inf, a negative weight, a
    row that does not sum to 1, tokens that do not match, safetensors layers of different T, a
    gap in the names, a batch of two, BF16) exits 2 with one line naming the file and the place.

Usage: test_import_attention.py PATH/TO/attnviz
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
from checks import FAILURES, fail, run  # noqa: E402
import test_head_stats as hs  # noqa: E402
import test_rollout as ro  # noqa: E402

TOL = 1e-5


def attentions(layers, heads, t, seed, bidirectional=()):
    """transformers' tuple: one [1, heads, t, t] float32 array a layer, softmax rows."""
    rng = np.random.default_rng(seed)
    out = []
    for l in range(layers):
        logits = rng.normal(scale=2.0, size=(1, heads, t, t))
        for h in range(heads):
            if (l, h) not in bidirectional:
                logits[0, h][np.triu(np.ones((t, t), bool), 1)] = -np.inf
        a = np.exp(logits - logits.max(-1, keepdims=True))
        out.append((a / a.sum(-1, keepdims=True)).astype(np.float32))
    return tuple(out)


def safetensors_bytes(tensors):
    """tensors: [(name, dtype, shape, raw bytes)] in order."""
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def npy_bytes(array):
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def check_good(attnviz, tmp):
    tokens = ["The", "Ġcat", "Ġsat", "Ġon", "Ġthe", "Ġmat", ".", "ĠThe", "Ġcat", "Ġ日本", "語", "Ċ"]
    t = len(tokens)
    att = attentions(3, 4, t, 7, bidirectional={(1, 2)})
    maps = np.stack(att)[:, 0]  # [L, H, T, T]
    folder = os.path.join(tmp, "good")
    os.makedirs(folder)
    write(os.path.join(folder, "tokens.txt"), ("\n".join(tokens) + "\n").encode())
    f4 = os.path.join(folder, "attentions.npy")
    np.save(f4, maps)

    # statistics: the ids of the tokens, each layer's mask as found (causal unless a head reads ahead)
    out = os.path.join(tmp, "stats.csv")
    run(attnviz, "--attention", f4, "--export-stats", out)
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    ids = hs.ids_of_labels(tokens)
    readables = [hs.readable_mask(t, t, causal=(l != 1)) for l in range(3)]
    punct = [hs.is_punctuation(token) for token in tokens]  # "." (layer 1 reads ahead: a next column)
    hs.compare("--export-stats", rows, maps, ids, readables, skip=False, punctuation=punct, reads_next=True)
    out = os.path.join(tmp, "stats_skip.csv")
    run(attnviz, "--attention", f4, "--export-stats", out, "--skip-first-key")
    with open(out, newline="") as f:
        hs.compare("--export-stats --skip-first-key", list(csv.DictReader(f)), maps, ids, readables, skip=True, punctuation=punct,
                   reads_next=True)

    # rollout up to each layer, both rules
    for layer in range(3):
        for rule in ("mean", "max"):
            d = os.path.join(tmp, f"roll{layer}{rule}")
            run(attnviz, "--attention", f4, "--rollout", "--rollout-heads", rule, "--layer", str(layer), "--export-npy", d)
            got = np.load(os.path.join(d, "rollout.npy"))
            want = ro.rollout([[maps[l, h] for h in range(4)] for l in range(3)], layer, rule)
            err = float(np.max(np.abs(got - want)))
            if not err <= TOL:
                fail(f"--rollout --layer {layer} {rule}", f"max |got - numpy| = {err:.3g}")

    # one map as CSV
    p = run(attnviz, "--attention", f4, "--layer", "2", "--head", "3", "--export-csv", "-")
    lines = list(csv.reader(io.StringIO(p.stdout)))
    if lines[0][1:] != tokens:
        fail("--export-csv", f"header {lines[0][:4]}…")
    got = np.array([[float(x) for x in row[1:]] for row in lines[1:]])
    if got.shape != (t, t) or float(np.max(np.abs(got - maps[2, 3]))) > 1e-7:
        fail("--export-csv --layer 2 --head 3", "differs from the file's map")

    # round trips: 4-D float32 and float16 byte for byte, the rest by their data
    src16 = os.path.join(folder, "half.npy")
    np.save(src16, maps.astype(np.float16))
    for name in ("attentions.npy", "half.npy"):
        d = os.path.join(tmp, "back_" + name)
        run(attnviz, "--attention", os.path.join(folder, name), "--export-npy", d)
        a = open(os.path.join(folder, name), "rb").read()
        b = open(os.path.join(d, "attentions.npy"), "rb").read()
        if a != b:
            fail(f"round trip {name}", f"{len(b)} bytes written, {len(a)} read; not the same bytes")
        if open(os.path.join(d, "tokens.txt"), encoding="utf-8").read().split("\n")[:-1] != tokens:
            fail(f"round trip {name}", "tokens.txt differs")
    # one head's map: --layer L --head H --export-npy writes it alone, its bytes the file's
    d = os.path.join(tmp, "one_head")
    run(attnviz, "--attention", f4, "--layer", "2", "--head", "3", "--export-npy", d)
    one = np.load(os.path.join(d, "attentions.npy"))
    if one.shape != (1, 1, t, t) or one.tobytes() != maps[2, 3].tobytes():
        fail("--export-npy --layer 2 --head 3", f"shape {one.shape}, not the file's map [2, 3] alone")
    inputs = {
        "three.npy": npy_bytes(maps[1]),
        "two.npy": npy_bytes(maps[2, 1]),
        "layers.safetensors": safetensors_bytes([(f"layer.{l}", "F32", a.shape, a.tobytes()) for l, a in enumerate(att)]),
        "all.safetensors": safetensors_bytes([("attentions", "F32", maps.shape, maps.tobytes())]),
        "half.safetensors": safetensors_bytes([(f"layer.{l}", "F16", a.shape, a.astype(np.float16).tobytes()) for l, a in enumerate(att)]),
    }
    want_data = {"three.npy": maps[1].tobytes(), "two.npy": maps[2, 1].tobytes(), "layers.safetensors": maps.tobytes(),
                 "all.safetensors": maps.tobytes(), "half.safetensors": maps.astype(np.float16).tobytes()}
    for name, data in inputs.items():
        write(os.path.join(folder, name), data)
        d = os.path.join(tmp, "back_" + name)
        run(attnviz, "--attention", os.path.join(folder, name), "--export-npy", d)
        back = np.load(os.path.join(d, "attentions.npy"))
        if back.tobytes() != want_data[name] or back.ndim != 4:
            fail(f"round trip {name}", f"data differs (shape {back.shape})")
        # the safetensors inputs read as the same maps as the .npy
        if name.endswith(".safetensors") and not name.startswith("half"):
            p = run(attnviz, "--attention", os.path.join(folder, name), "--export-stats", "-")
            hs.compare(f"--export-stats {name}", list(csv.DictReader(io.StringIO(p.stdout))), maps, ids, readables, skip=False,
                       punctuation=punct, reads_next=True)
    print("good files: statistics, rollout, CSV and round trips checked", flush=True)


def check_bad(attnviz, tmp):
    t = 6
    att = attentions(2, 2, t, 3)
    maps = np.stack(att)[:, 0]
    folder = os.path.join(tmp, "bad")
    os.makedirs(folder)
    good = npy_bytes(maps)

    def edited(layer, head, row, key, value):
        m = maps.copy()
        m[layer, head, row, key] = value
        return npy_bytes(m)

    off_by = maps.copy()
    off_by[1, 0, 3, 2] += 0.01
    half_bytes = bytearray(npy_bytes(maps.astype(np.float16)))
    half_bytes[-2:] = struct.pack("<H", 0x7E00)  # a float16 NaN in the last weight
    cases = {
        "five.npy": (npy_bytes(maps[None]), "shape (1, 2, 2, 6, 6) is not [layers, heads, T_q, T_k], [heads, T, T] or [T, T]"),
        "one.npy": (npy_bytes(maps[0, 0, 0]), "shape (6,) is not [layers, heads, T_q, T_k]"),
        "f8.npy": (npy_bytes(maps.astype(np.float64)), "dtype '<f8' is not supported: float32 or float16"),
        "int.npy": (npy_bytes(np.zeros((2, 2), np.int32)), "dtype '<i4' is not supported"),
        "fortran.npy": (npy_bytes(np.asfortranarray(maps[0, 0])), "Fortran order is not supported"),
        "truncated.npy": (good[:-1], "truncated: shape (2, 2, 6, 6) needs 576 bytes, the file has 575 after its header"),
        "lying.npy": (good + b"\0\0\0\0", "the header's shape (2, 2, 6, 6) accounts for 576 bytes but 580 follow it"),
        "nan.npy": (edited(1, 1, 4, 2, np.nan), "layer 1 · head 1 · row 4 · key 2: weight nan is not a finite number"),
        "inf.npy": (edited(0, 1, 2, 0, np.inf), "layer 0 · head 1 · row 2 · key 0: weight inf is not a finite number"),
        "negative.npy": (edited(1, 0, 5, 5, -0.001), "layer 1 · head 0 · row 5 · key 5: weight -0.001 is negative"),
        "rowsum.npy": (npy_bytes(off_by), "layer 1 · head 0 · row 3: weights sum to 1.0100, not 1"),
        "halfnan.npy": (bytes(half_bytes), "layer 1 · head 1 · row 5 · key 5: weight nan is not a finite number"),
        "neither.npy": (b"hello world, not attention", "neither a .npy nor a safetensors file"),
        "uneven.safetensors": (safetensors_bytes([("layer.0", "F32", (1, 2, 6, 6), att[0].tobytes()),
                                                  ("layer.1", "F32", (1, 2, 5, 5), att[1][:, :, :5, :5].copy().tobytes())]),
                               "layer.1 is [2, 5, 5], layer.0 [2, 6, 6]: every layer's maps must have the same heads and T"),
        "gap.safetensors": (safetensors_bytes([("layer.0", "F32", (1, 2, 6, 6), att[0].tobytes()),
                                               ("layer.2", "F32", (1, 2, 6, 6), att[1].tobytes())]),
                            "no tensor 'layer.1' (found layer.0, layer.2)"),
        "batch.safetensors": (safetensors_bytes([("layer.0", "F32", (2, 1, 6, 6), att[0].tobytes())]), "is a batch of 2"),
        "bf16.safetensors": (safetensors_bytes([("layer.0", "BF16", (1, 2, 6, 6), b"\0" * 144)]),
                             "dtype BF16 is not supported: F32 or F16 (convert with .float() or .half())"),
    }
    for name, (data, words) in cases.items():
        path = os.path.join(folder, name)
        write(path, data)
        p = run(attnviz, "--attention", path, "--export-stats", os.path.join(tmp, "never.csv"), expect=2)
        line = p.stderr
        if line.count("\n") != 1 or not line.startswith("attnviz: error: ") or path not in line or words not in line:
            fail(f"bad file {name}", f"stderr {line[:300]!r}, expected one line naming the file and {words!r}")
        if len(line) > 600:
            fail(f"bad file {name}", f"the error line is {len(line)} bytes")
    # tokens that do not match the keys
    path = os.path.join(folder, "tokens_ok.npy")
    write(path, good)
    tokens = os.path.join(folder, "five_tokens.txt")
    write(tokens, b"a\nb\nc\nd\ne\n")
    p = run(attnviz, "--attention", path, "--tokens-file", tokens, "--export-stats", "-", expect=2)
    if "five_tokens.txt: has 5 tokens (one a line), the maps in" not in p.stderr or "have 6 keys" not in p.stderr:
        fail("tokens", p.stderr.strip())
    if os.path.exists(os.path.join(tmp, "never.csv")):
        fail("bad files", "a bad file wrote its export")
    print(f"bad files: {len(cases) + 1} refused with one line", flush=True)


def main():
    attnviz = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        check_good(attnviz, tmp)
        check_bad(attnviz, tmp)
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
