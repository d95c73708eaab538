#!/usr/bin/env python3
"""Writes a valid attention file for attnviz --attention: [layers, heads, T, T] causal maps, at
constant memory (one T x T map at a time), as the 16 GiB measurement of bench/import_big.sh needs.

Head h of every layer spreads its weight evenly over a causal window of w = 2^(1 + h % 11) keys
(query i reads keys max(0, i - w + 1) ... i): 11 different maps, cached, so the heads differ in the
model view and the statistics, and every row sums to 1 to float rounding (the file passes every
check attnviz makes). The header is numpy's own (np.lib.format), the data written map by map with
plain writes, so the writer's memory does not grow with dirty pages of a mapping.

Usage: make_attention_npy.py [--layers 32] [--heads 32] [--tokens 2048] [--dtype float32|float16] OUT.npy
       (32 x 32 x 2048^2 float32 is 16 GiB; float16 is 8 GiB)
"""
import argparse
import sys

import numpy as np


def window_map(t, w, dtype):
    m = np.tril(np.ones((t, t), np.float32))
    m = np.triu(m, -(w - 1))
    m /= m.sum(axis=1, keepdims=True)
    return m.astype(dtype)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--layers", type=int, default=32)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--tokens", type=int, default=2048)
    p.add_argument("--dtype", choices=["float32", "float16"], default="float32")
    a = p.parse_args()
    dtype = np.dtype(a.dtype)
    cache = {}
    with open(a.out, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (a.layers, a.heads, a.tokens, a.tokens)})
        for _layer in range(a.layers):
            for h in range(a.heads):
                w = 2 ** (1 + h % 11)
                if w not in cache:
                    cache[w] = window_map(a.tokens, w, dtype).tobytes()
                f.write(cache[w])
    size = a.layers * a.heads * a.tokens * a.tokens * dtype.itemsize
    print(f"wrote {a.out}: [{a.layers}, {a.heads}, {a.tokens}, {a.tokens}] {a.dtype}, {size / 2**30:.2f} GiB of maps", file=sys.stderr)


if __name__ == "__main__":
    main()
