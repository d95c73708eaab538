#!/usr/bin/env python3
"""The Python entry (python/attnviz): attnviz.figure on transformers-shaped attentions gives the same
file as `attnviz --attention FILE` with the same flags, byte for byte.

Usage: test_python_entry.py PATH/TO/attnviz

Random causal maps (2 layers x 3 heads over 7 tokens, rows summing to 1) as transformers returns
them (a tuple of per-layer [1, heads, T, T] arrays), as one [layers, heads, T, T] array and as
[heads, T, T]; each through attnviz.figure (model view SVG, heatmap PNG of layer 1 head 2, head
view SVG) against the command line on a file numpy writes. With torch installed, the same from
torch tensors (else a note). Refused with AttnvizError and attnviz's own line: a token count that
does not match, an unknown view, rows that do not sum to 1. attnviz.show starts the program on the
written file (a stand-in program here records what it was given) and the folder is gone once it
exits. Standard library and numpy. Exits 1 on any failure.
"""

import os
import stat
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import attnviz  # noqa: E402

FAILURES = []


def fail(where, what):
    FAILURES.append(f"{where}: {what}")
    print(f"FAIL {where}: {what}")


def causal_maps(rng, layers, heads, t):
    s = rng.standard_normal((layers, heads, t, t)) * 2
    s = np.where(np.triu(np.ones((t, t), bool), 1), -np.inf, s)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def cli_figure(binary, maps, tokens, flags, out, tmp):
    folder = os.path.join(tmp, "cli")
    os.makedirs(folder, exist_ok=True)
    np.save(os.path.join(folder, "attentions.npy"), maps)
    with open(os.path.join(folder, "tokens.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
    p = subprocess.run([binary, "--attention", os.path.join(folder, "attentions.npy"), *flags, out], capture_output=True, text=True)
    if p.returncode:
        fail("command line", p.stderr.strip())
        return None
    with open(out, "rb") as f:
        return f.read()


def check_same(binary, where, inputs, maps, tokens, view, fmt, options, flags, tmp):
    try:
        fig = attnviz.figure(inputs, tokens, view=view, format=fmt, **options)
    except attnviz.AttnvizError as e:
        fail(where, f"refused: {e}")
        return
    want = cli_figure(binary, maps, tokens, flags + [attnviz.VIEWS[view]], os.path.join(tmp, "cli." + fmt), tmp)
    if want is None:
        return
    if fig.data != want:
        fail(where, f"{len(fig.data)} bytes differ from the command line's {len(want)}")
    if fmt == "svg" and (fig._repr_svg_() is None or not fig._repr_svg_().startswith("<?xml")):
        fail(where, "_repr_svg_ is not the SVG")
    if fmt == "png" and fig._repr_png_()[:8] != b"\x89PNG\r\n\x1a\n":
        fail(where, "_repr_png_ is not the PNG")


def expect_error(where, words, call):
    try:
        call()
    except attnviz.AttnvizError as e:
        if words not in str(e) or "\n" in str(e):
            fail(where, f"message {str(e)!r}")
        return
    fail(where, "was not refused")


def check_show(tmp):
    """show() runs the program on the written file, then the folder goes."""
    record = os.path.join(tmp, "args.txt")
    fake = os.path.join(tmp, "fake-attnviz")
    with open(fake, "w") as f:
        f.write(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\ntest -s "$2" && test -s "$(dirname "$2")/tokens.txt"\n')
    os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
    os.environ["ATTNVIZ_BINARY"] = fake
    maps = causal_maps(np.random.default_rng(1), 1, 2, 4)
    proc = attnviz.show(maps, ["a", "b", "c", "d"], layer=0)
    code = proc.wait(timeout=30)
    if code != 0:
        fail("show", f"the program exited {code} (the file or tokens.txt was missing)")
    with open(record) as f:
        args = f.read().split("\n")
    if args[0] != "--attention" or not args[1].endswith("attentions.npy") or args[2:4] != ["--layer", "0"]:
        fail("show", f"arguments {args}")
    if os.path.exists(os.path.dirname(args[1])):
        fail("show", "the temporary folder is still there")


def main():
    if len(sys.argv) != 2:
        print("usage: test_python_entry.py PATH/TO/attnviz")
        return 2
    binary = os.path.abspath(sys.argv[1])
    os.environ["ATTNVIZ_BINARY"] = binary
    rng = np.random.default_rng(20261130)
    maps = causal_maps(rng, 2, 3, 7)
    tokens = ["The", "Ġcat", "Ġsat", "Ġon", "Ġthe", "Ġmat", "."]
    per_layer = tuple(maps[l][None] for l in range(maps.shape[0]))  # transformers' tuple of [1, heads, T, T]
    with tempfile.TemporaryDirectory() as tmp:
        cases = [("tuple · model view", per_layer, "model", "svg", {}, []),
                 ("array · heatmap", maps, "heatmap", "png", {"layer": 1, "head": 2}, ["--layer", "1", "--head", "2"]),
                 ("tuple · head view", per_layer, "head-view", "svg", {"layer": 0}, ["--layer", "0"]),
                 ("tuple · model view ranked", per_layer, "model", "svg", {"model_view_rank": "previous"}, ["--model-view-rank", "previous"])]
        for where, inputs, view, fmt, options, flags in cases:
            check_same(binary, where, inputs, maps, tokens, view, fmt, options, flags, tmp)
        check_same(binary, "[heads, T, T] · heads", maps[1], maps[1], tokens, "heads", "svg", {}, [], tmp)
        try:
            import torch  # noqa: F401

            tensors = tuple(torch.from_numpy(maps[l][None].copy()) for l in range(maps.shape[0]))
            check_same(binary, "torch · model view", tensors, maps, tokens, "model", "svg", {}, [], tmp)
        except ImportError:
            print("NOTE: torch is not installed: torch tensors not checked")
        expect_error("tokens", "7 keys", lambda: attnviz.figure(per_layer, tokens[:5]))
        expect_error("view", "view", lambda: attnviz.figure(per_layer, tokens, view="nothing"))
        bad = maps.copy()
        bad[1, 2, 4] *= 0.5
        expect_error("rows", "layer 1 · head 2 · row 4", lambda: attnviz.figure(bad, tokens))
        expect_error("shape", "shape", lambda: attnviz.figure(np.zeros((2, 2, 2, 3, 3, 3)), None))
        check_show(tmp)
    if FAILURES:
        print(f"{len(FAILURES)} failures")
        return 1
    print("all passed: attnviz.figure gives the command line's files byte for byte (tuple, array, [heads, T, T] inputs; SVG and PNG); "
          "errors and show() checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
