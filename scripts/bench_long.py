#!/usr/bin/python3
"""Measures long sentences on a Qwen2.5-0.5B-shaped model: the wall time and peak resident memory of
opening the pass, sweeping every layer's every head's map for the statistics, and exporting them,
with the maps kept (while they fit) and made on demand.

The model is bench_llama.py's: Qwen2.5-0.5B's shapes (24 layers, 14 query heads over 2 kv heads,
896 wide, 4,864 inner, 151,936 tokens, q/k/v biases, tied embeddings), random BF16 weights, a
byte-level tokenizer.json (a sentence of T ASCII characters is T tokens), written once in a
temporary folder.

For each T and each strategy (`--keep-maps 1048576`: every map kept when --max-memory allows it;
`--keep-maps 0`: every map made on demand), one run of
`attnviz --model DIR --sentence S --keep-maps K --export-stats FILE`: the checkpoint opened, the
whole pass, the shown layer's heads, and the statistics of every head (one sweep over every map);
with `--exports figures`, `--layer 3 --head 5 --query T-100 --export-heatmap --export-bars` instead
(the shown layer's one map and one row, no sweep). Reported: the strategy the run took (a pass
whose kept maps would pass --max-memory makes them on demand: the row says so), how the shown
layer was read (its heads whole while they fit --max-memory beside the pass, else from the pass),
its wall time, its peak resident memory (the kernel's ru_maxrss), and what the pass keeps
(keptModelBytes, computed here from the shapes as loaded_model.cpp does).

Usage: /usr/bin/python3 scripts/bench_long.py [--build build] [--sizes 1024,2048,4096] [--max-memory MIB]
       [--maps kept,on-demand] [--exports stats|figures]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "oracle"))
from bench_gpt2 import cpu_name, sentence  # noqa: E402
from bench_llama import write_qwen_shaped  # noqa: E402


def store_mib(cfg, t, kept, lean=False):
    """What the pass keeps (decoder::storeBytes): per layer input, normed [T, d] (not when lean: the
    shown layer read from the pass), q|k|v, scoreMax and logSum [h, T], with kept maps every head's
    [T, T]; the final rows [T, d]."""
    d, layers, heads, kv = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    dh = d // heads
    per_layer = t * ((0 if lean else 2 * d) + (heads + 2 * kv) * dh + 2 * heads) + (heads * t * t if kept else 0)
    return 4 * (layers * per_layer + t * d) / 2**20


def qk_lse_mib(cfg, t):
    """The queries, keys and log-sum-exp of every layer: what the long-context target counts."""
    d, layers, heads, kv = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    dh = d // heads
    return 4 * layers * t * ((heads + kv) * dh + 2 * heads) / 2**20


def memory_mib(cfg, t, kept):
    """What --max-memory counts (modelMemoryBytes) with the shown layer whole: the store, the shown
    layer's X and weights, and its pass as a scenario's (forwardBytes)."""
    d, heads, kv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    dh = d // heads
    w, q = (heads + 2 * kv) * dh, heads * dh
    layer = 4 * (2 * t * d + 3 * d * w + 2 * q * d)
    per_head = 2 * t * t + t * dh * 6 + 2 * t
    forward = 4 * (heads * per_head + 2 * t * (heads * dh + d) + t * d)
    return store_mib(cfg, t, kept) + (layer + forward) / 2**20


def run(argv):
    """Runs argv; returns (exit code, seconds, peak RSS in MiB, the last line of stderr)."""
    start = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    seconds = time.monotonic() - start
    err = p.stderr.read().decode(errors="replace").strip().splitlines()
    return os.waitstatus_to_exitcode(status), seconds, usage.ru_maxrss / 1024.0, err[-1] if err else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--max-memory", default="12288", help="MiB, as attnviz's --max-memory")
    ap.add_argument("--maps", default="kept,on-demand", help="the strategies run: kept, on-demand")
    ap.add_argument("--exports", default="stats", choices=["stats", "figures"])
    args = ap.parse_args()
    strategies = [(k, n) for k, n, flag in (("1048576", "kept", "kept"), ("0", "on demand", "on-demand")) if flag in args.maps.split(",")]
    attnviz = os.path.join(args.build, "attnviz")
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        folder, cfg, file_mib = write_qwen_shaped(tmp)
        print(f"CPU: {cpu_name()}; {os.cpu_count()} cores; model: Qwen2.5-0.5B's shape, random BF16 weights, {file_mib:.0f} MiB; "
              f"--max-memory {args.max_memory} MiB")
        print(f"exports: {args.exports}")
        print("| T | maps | shown layer | wall (s) | peak RSS (MiB) | kept by the pass (MiB) | file + q, k, lse + 1 GiB (MiB) |")
        print("|---|---|---|---|---|---|---|")
        for t in sizes:
            for keep, name in strategies:
                if args.exports == "stats":
                    exports = ["--export-stats", os.path.join(tmp, "stats.csv")]
                else:
                    exports = ["--layer", "3", "--head", "5", "--query", str(max(0, t - 100)),
                               "--export-heatmap", os.path.join(tmp, "heat.png"), "--export-bars", os.path.join(tmp, "bars.png")]
                code, seconds, rss, err = run([attnviz, "--model", folder, "--sentence", sentence(t), "--keep-maps", keep,
                                               "--max-memory", args.max_memory, "--max-tokens", str(max(t, 32768))] + exports)
                if name == "kept" and memory_mib(cfg, t, True) > float(args.max_memory):
                    name = "on demand (kept would pass --max-memory)"
                whole = memory_mib(cfg, t, name == "kept") <= float(args.max_memory)
                shown = "whole" if whole else "from the pass (lean pass)"
                kept = store_mib(cfg, t, name == "kept", lean=not whole)
                target = file_mib + qk_lse_mib(cfg, t) + 1024
                if code != 0:
                    print(f"| {t} | {name} | {shown} | refused | | {kept:.0f} | | ({err[:160]})")
                    continue
                print(f"| {t} | {name} | {shown} | {seconds:.1f} | {rss:.0f} | {kept:.0f} | {target:.0f} |")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
