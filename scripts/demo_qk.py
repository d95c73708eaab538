#!/usr/bin/env python3
"""Writes a file of queries and keys (the format of scripts/export_attention.py --qk) whose heads are
built by hand, for the README's picture of --attention on such a file; numpy only.

    python3 scripts/demo_qk.py OUT_DIR [--tokens 16384]
    attnviz --attention OUT_DIR/qk.safetensors

4 layers × 8 query heads over 4 kv heads of 64, BF16, causal, a window of 4,096 keys on the last
layer. Built on rotary positions (a rotated score is a function of i − j, so the heads work at any
length): kv head 0 reads the previous token (query heads 0 and 1, the second looking 1 to 4 tokens
further back by layer); kv head 1 holds a sink on the first key (heads 2 and 3, sharper by layer);
kv head 2 a local, nearby bias (heads 4 and 5); kv head 3 noise (heads 6 and 7). tokens.txt beside
it holds ten words in turn.
"""
import argparse
import json
import os
import struct

import numpy as np

LAYERS, HEADS, KV, D = 4, 8, 4, 64


def rotated(x, positions):
    """x [T, D] with each pair of columns rotated by position × its RoPE frequency."""
    freqs = 1.0 / (10000 ** (np.arange(0, D, 2) / D))
    angle = positions[:, None] * freqs[None, :]
    c, s = np.cos(angle), np.sin(angle)
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * c - x[:, 1::2] * s
    out[:, 1::2] = x[:, 0::2] * s + x[:, 1::2] * c
    return out


def bfloat16_bits(a):
    """float32 to bfloat16, rounded to nearest even."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--tokens", type=int, default=16384)
    a = p.parse_args()
    t = a.tokens
    rng = np.random.default_rng(0)
    pos = np.arange(t, dtype=np.float64)
    u = np.full((t, D), 2.0)
    tensors = []
    for layer in range(LAYERS):
        q = rng.normal(scale=0.3, size=(HEADS, t, D))
        k = rng.normal(scale=0.3, size=(KV, t, D))
        k[0] = rotated(u, pos) + rng.normal(scale=0.2, size=(t, D))
        q[0] = rotated(u, pos - 1) * (1.0 + 0.5 * layer)
        q[1] = rotated(u, pos - 2 - layer) * 1.5
        k[1][0] = 8.0
        q[2] = np.full((t, D), 0.6 + 0.2 * layer)
        q[3] = np.full((t, D), 0.3)
        k[2] = rotated(u * 0.5, pos)
        q[4] = rotated(u * 0.5, pos) * 0.8
        q[5] = rotated(u * 0.5, pos) * 0.3
        for name, x in ((f"layer.{layer}.q", q), (f"layer.{layer}.k", k)):
            tensors.append((name, list(x.shape), bfloat16_bits(x).tobytes()))
    header = {"__metadata__": {"format": "attnviz-qk", "scaling": repr(1.0 / np.sqrt(D)), "causal": "true",
                               "sliding_windows": "0,0,0,4096"}}
    data = b""
    for name, shape, raw in tensors:
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "qk.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
    words = ["the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "off"]
    with open(os.path.join(a.out, "tokens.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(words[i % len(words)] for i in range(t)) + "\n")
    print(f"wrote {a.out}/qk.safetensors ({len(data) >> 20} MiB) and tokens.txt")


if __name__ == "__main__":
    main()
