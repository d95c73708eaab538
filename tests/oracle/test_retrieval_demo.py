#!/usr/bin/python3
"""The retrieval test (attnviz --retrieval-test) ranks a hand-built checkpoint's copying heads
first at every depth of an 8,192-token filler.

The checkpoint is scripts/demo_llama.py's small Llama-shaped model (2 layers x 4 heads of 128,
rotary positions with rope_theta 1e9, GPT-2's vocabulary, a BOS first): its induction head 1.0
matches the query's token code against the previous-token head's copy of the key's previous token
through the rotary pairs that barely turn over 32,768 positions, so it reads back from any
distance. The test: `attnviz --model DIR --export-stats OUT.json --retrieval-test
--retrieval-lengths 8192 --retrieval-depths 0,0.25,0.5,0.75,1`, then for every depth the
induction head's score (the mean weight from the repeat to the key after the first copy) is the
largest of the 8 heads, above 0.9, with a top-1 share of 1, and every other head's is below 0.05.
The scores themselves are checked against kept weights in tests/core/test_retrieval.cpp; here the
long pass and the design meet.

Usage: test_retrieval_demo.py PATH/TO/attnviz CACHE_DIR   (GPT-2's vocabulary fetched into CACHE_DIR)
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import gpt2_vocab  # noqa: E402
import demo_llama  # noqa: E402

DEPTHS = [0, 0.25, 0.5, 0.75, 1]


def main():
    if len(sys.argv) != 3:
        print("usage: test_retrieval_demo.py PATH/TO/attnviz CACHE_DIR")
        return 2
    attnviz, cache = sys.argv[1], sys.argv[2]
    package = os.path.abspath(gpt2_vocab.fetch_package(cache))
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "demo")
        kinds = demo_llama.write(folder, package, layers=2, heads=4, positions=8192)
        copying = [lh for lh, k in kinds.items() if k == "induction"]
        assert copying, kinds
        out = os.path.join(tmp, "stats.json")
        cmd = [attnviz, "--model", folder, "--sentence", "A short sentence.", "--export-stats", out, "--retrieval-test",
               "--retrieval-lengths", "8192", "--retrieval-depths", ",".join(str(d) for d in DEPTHS)]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"FAIL: attnviz exited {run.returncode}: {run.stderr.strip()}")
            return 1
        with open(out) as f:
            stats = json.load(f)
    assert stats["retrieval_test"]["lengths"] == [8192], stats["retrieval_test"]
    heads = {(h["layer"], h["head"]): h for h in stats["heads"]}
    failures = []
    for d, depth in enumerate(DEPTHS):
        scores = {lh: h["retrieval_grid"][0][d] for lh, h in heads.items()}
        ranked = sorted(scores, key=lambda lh: -scores[lh])
        line = ", ".join(f"{l}.{h} {scores[(l, h)]:.4f}" for l, h in ranked[:4])
        print(f"depth {depth:4}: {line}")
        if set(ranked[:len(copying)]) != set(copying):
            failures.append(f"depth {depth}: the copying heads {copying} are not ranked first ({line})")
        for lh in copying:
            if scores[lh] < 0.9:
                failures.append(f"depth {depth}: head {lh} retrieves {scores[lh]:.4f} < 0.9")
        for lh, s in scores.items():
            if lh not in copying and s >= 0.05:
                failures.append(f"depth {depth}: head {lh} ({kinds[lh]}) retrieves {s:.4f} >= 0.05")
    for lh in copying:
        if heads[lh]["retrieval_top1"] != 1.0:
            failures.append(f"head {lh}: top-1 share {heads[lh]['retrieval_top1']} < 1")
    for f in failures:
        print("FAIL: " + f)
    if failures:
        return 1
    print("ok: the copying heads rank first at every depth of an 8,192-token filler")
    return 0


if __name__ == "__main__":
    sys.exit(main())
