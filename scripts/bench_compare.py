#!/usr/bin/python3
"""Times multi-head self-attention in attnviz, numpy and (when installed) PyTorch on identical
inputs, in one run, and prints the ratio table; then the cost-growth table of attnviz alone.

The three take turns: each size is timed in rounds (attnviz, numpy, torch, then again), and a
ratio is the median of the rounds' ratios, so that a neighbour's burst of work on a shared
machine slows one round of every peer rather than the whole measurement of one.

Forward pass: d_model 512, 8 heads (d_k = d_v = 64), W_Q, W_K, W_V, W_O, fp32, every per-head
T x T weight matrix materialised. numpy and torch are comparison peers only.

Usage: /usr/bin/python3 scripts/bench_compare.py [--attnviz build/attnviz] [--seconds 3] [--rounds 5]
                                                  [--sizes 1024,2048] [--growth 128,...,4096]
"""
import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

D_MODEL, HEADS = 512, 8


def median_ms(work, seconds):
    times = []
    start = time.perf_counter()
    while len(times) < 5 or time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        work()
        times.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(times)


def inputs(T):
    rng = np.random.default_rng(T)
    x = rng.standard_normal((T, D_MODEL)).astype(np.float32)
    w = [(rng.standard_normal((D_MODEL, D_MODEL)) / math.sqrt(D_MODEL)).astype(np.float32) for _ in range(4)]
    return x, w


def numpy_mha(x, wq, wk, wv, wo):
    T, dk = x.shape[0], D_MODEL // HEADS
    def heads(m):
        return m.reshape(T, HEADS, dk).transpose(1, 0, 2)
    q, k, v = heads(x @ wq), heads(x @ wk), heads(x @ wv)
    s = q @ k.transpose(0, 2, 1) / np.float32(math.sqrt(dk))
    s -= s.max(axis=-1, keepdims=True)
    a = np.exp(s)
    a /= a.sum(axis=-1, keepdims=True)
    y = (a @ v).transpose(1, 0, 2).reshape(T, D_MODEL)
    return y @ wo, a


def run_attnviz(binary, scenario_path, seconds):
    proc = subprocess.Popen([binary, "--scenario", scenario_path, "--bench", "--bench-seconds", str(seconds)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    if proc.returncode != 0:
        sys.exit(f"attnviz failed: {err.strip()}")
    return json.loads(out.strip().splitlines()[-1])


def peak_rss_mib(args):
    """Runs a command under GNU time and returns its peak resident memory in MiB (measured on
    the command itself, not on this Python process that starts it)."""
    if not os.path.exists("/usr/bin/time"):
        return float("nan")  # Debian's package "time" is not installed
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"{args[0]} failed: {proc.stderr.strip()}")
    return int(proc.stderr.strip().splitlines()[-1]) / 1024.0


def numpy_blas():
    """The BLAS numpy actually loaded (after a product), from this process's memory map."""
    from peer_blas import describe_loaded
    a = np.ones((64, 64), dtype=np.float32)
    a @ a
    return describe_loaded()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attnviz", default=os.path.join(os.path.dirname(__file__), "..", "build", "attnviz"))
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds of timing per peer and size, over all rounds")
    parser.add_argument("--rounds", type=int, default=5, help="turns the peers take at each size")
    parser.add_argument("--sizes", default="1024,2048")
    parser.add_argument("--growth", default="128,256,512,1024,2048,4096")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds: expected at least 1")

    try:
        import torch
        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    numpy_desc = numpy_blas()
    if torch:
        from peer_blas import describe_torch
        probe = torch.ones(64, 64)
        probe @ probe  # loads the BLAS it multiplies with
    print(f"machine: {cpu}, {os.cpu_count()} cores; numpy {np.__version__} on {numpy_desc}; "
          f"torch: {describe_torch(torch) + f' ({args.threads} threads)' if torch else 'not installed'}")
    print(f"forward: d_model {D_MODEL}, {HEADS} heads, W_O, fp32, all weights materialised; each peer timed for >= {args.seconds:g} s "
          f"per size, in {args.rounds} rounds taken in turn\n")

    per_round = args.seconds / args.rounds
    rows = []
    for T in [int(t) for t in args.sizes.split(",") if t]:
        x, (wq, wk, wv, wo) = inputs(T)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"X": x.tolist(), "heads": HEADS, "W_Q": wq.tolist(), "W_K": wk.tolist(), "W_V": wv.tolist(),
                       "W_O": wo.tolist()}, f)
            path = f.name
        torch_step = None
        if torch:
            mha = torch.nn.MultiheadAttention(D_MODEL, HEADS, bias=False, batch_first=True)
            with torch.no_grad():
                mha.in_proj_weight.copy_(torch.from_numpy(np.concatenate([wq.T, wk.T, wv.T])))
                mha.out_proj.weight.copy_(torch.from_numpy(wo.T.copy()))
            xt = torch.from_numpy(x).unsqueeze(0)

            def torch_step():
                with torch.no_grad():
                    return mha(xt, xt, xt, need_weights=True, average_attn_weights=False)
            # Same numbers as numpy (a check that the peers compute the same thing).
            out, _ = torch_step()
            ref, _ = numpy_mha(x, wq, wk, wv, wo)
            assert np.allclose(out[0].numpy(), ref, atol=1e-3), "torch and numpy disagree"
        turns = []  # per round: (attnviz JSON, numpy ms, torch ms or None)
        try:
            for r in range(args.rounds):
                av = run_attnviz(args.attnviz, path, per_round)
                np_ms = median_ms(lambda: numpy_mha(x, wq, wk, wv, wo), per_round)
                torch_ms = median_ms(torch_step, per_round) if torch_step else None
                turns.append((av, np_ms, torch_ms))
                t = f", PyTorch {torch_ms:.1f} ms" if torch_ms else ""
                print(f"T = {T}, round {r + 1} of {args.rounds}: attnviz {av['forward_ms']:.1f} ms (sgemm "
                      f"{av['sgemm_gflops']:.0f} GFLOP/s), numpy {np_ms:.1f} ms{t}", flush=True)
        finally:
            os.unlink(path)
        rows.append((T, turns))
    print()

    med = statistics.median

    kernels = rows[0][1][0][0].get("kernels", "?") if rows else "?"  # rows: (T, turns); a turn: (attnviz, numpy, torch)
    from peer_blas import fma_peak
    measured = fma_peak(os.path.dirname(os.path.abspath(args.attnviz)), kernels)
    peak = measured[1] if measured else None
    print("| T | PyTorch nn.MultiheadAttention | numpy | attnviz | attnviz GFLOP/s | of the FMA peak | Eigen sgemm GFLOP/s | vs PyTorch | "
          "vs numpy | of sgemm |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for T, turns in rows:
        av_ms = med([av["forward_ms"] for av, _, _ in turns])
        np_ms = med([n for _, n, _ in turns])
        has_torch = turns[0][2] is not None
        t = f"{med([tm for _, _, tm in turns]):.1f} ms" if has_torch else "n/a"
        vt = f"{med([tm / av['forward_ms'] for av, _, tm in turns]):.2f}x" if has_torch else "n/a"
        vn = med([n / av["forward_ms"] for av, n, _ in turns])
        of = med([100 * av["gflops"] / av["sgemm_gflops"] for av, _, _ in turns])
        gflops = med([av['gflops'] for av, _, _ in turns])
        share = f"{100 * gflops / peak:.0f}%" if peak else "n/a"
        print(f"| {T} | {t} | {np_ms:.1f} ms | {av_ms:.1f} ms | {gflops:.0f} | {share} | "
              f"{med([av['sgemm_gflops'] for av, _, _ in turns]):.0f} | {vt} | {vn:.2f}x | {of:.0f}% |")
    blocking = rows[0][1][0][0].get("blocking", {}) if rows else {}
    print(f"\n(times and GFLOP/s: medians of the {args.rounds} rounds' medians; ratios: medians of the rounds' ratios; "
          f"attnviz's kernels: {kernels}, blocking depth {blocking.get('depth', '?')} x columns {blocking.get('columns', '?')} "
          f"from {blocking.get('caches_from', '?')} caches; FMA peak of {kernels}: "
          f"{f'{peak:.0f} GFLOP/s' if peak else 'n/a (attnviz_bench not built)'}, same run; "
          f"the Eigen sgemm is attnviz's build, x86-64-v3)\n")
    for T, turns in rows:
        sm = med([av["softmax_ms"] for av, _, _ in turns])
        vs = med([av["visible_softmax_ms"] for av, _, _ in turns])
        print(f"T = {T}: softmax of all {HEADS} heads {sm:.1f} ms, of the visible head {vs:.2f} ms")

    growth = [int(t) for t in args.growth.split(",") if t]
    if growth:
        print("\nCost growth (attnviz, same model; ms / T² flattens once T >> d_k):\n")
        print("| T | forward | ms per million T² | GFLOP/s | kept matrices | peak RSS |")
        print("|---|---|---|---|---|---|")
        for T in growth:
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump({"sentence": "the cat sat on the mat", "length": T, "d_model": D_MODEL, "heads": HEADS, "W_O": "random"}, f)
                path = f.name
            try:
                av = run_attnviz(args.attnviz, path, min(args.seconds, 2.0))
                rss = peak_rss_mib([args.attnviz, "--scenario", path, "--bench", "--bench-seconds", "0.2"])
            finally:
                os.unlink(path)
            kept = av["kept_mib"]  # every matrix the model and its forward pass hold, as attnviz counts them
            print(f"| {T} | {av['forward_ms']:.2f} ms | {av['forward_ms'] / (T * T / 1e6):.2f} | {av['gflops']:.0f} | "
                  f"{kept:.0f} MiB | {'n/a (install time)' if math.isnan(rss) else f'{rss:.0f} MiB'} |")


if __name__ == "__main__":
    main()
