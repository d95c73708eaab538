#!/usr/bin/python3
"""Times GPT-2's whole forward pass in attnviz and in a PyTorch eager GPT-2, on the same weights,
in one run, and prints the ratios; attnviz's GFLOP/s against the same run's AVX-512 sgemm.

GPT-2 small's shape (12 layers, 12 heads, 768 wide, 1024 positions, 50257 tokens) with random
weights, written once as a Hugging Face folder (F32 safetensors, 0.5 GB) in a temporary folder.
Its tokenizer holds only the 256 byte symbols (no merges), so a sentence of T ASCII characters is
T tokens. Both sides keep every layer's every head's T x T weights (attnviz always does; the
PyTorch model returns them, as output_attentions=True does).

The sides take turns, round by round (attnviz, torch, then again), and a ratio is the median of
the rounds' ratios. PyTorch runs in a subprocess of its own with a thread for each core this process
may run on (os.sched_getaffinity: both cores of a 2-core machine, 2 under `taskset -c 0,1`, as
attnviz's OpenMP reads it); if OPENBLAS_CORETYPE
or OPENBLAS_L2_SIZE are set, they are unset for it alone (OpenBLAS then picks the kernel for this
CPU), and the kernel it ran is named (OPENBLAS_VERBOSE=2). attnviz runs with the environment as
it is. PyTorch on Debian multiplies with the system's libblas.so.3: install libopenblas0-pthread to
give it OpenBLAS (the reference BLAS it otherwise gets is many times slower).

Also: the append of one token to a kept pass of T - 1 (a causal model's earlier keys and values
do not change), as a share of the whole pass.

Usage: /usr/bin/python3 scripts/bench_gpt2.py [--build build] [--sizes 128,512] [--rounds 3] [--seconds 3]
"""
import argparse
import json
import math
import os
import platform
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

N_LAYER, N_HEAD, N_EMBD, N_POSITIONS, VOCAB = 12, 12, 768, 1024, 50257


def byte_symbols():
    """GPT-2's byte-to-unicode table: the character standing for each byte."""
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def weights(rng):
    d, inner = N_EMBD, 4 * N_EMBD
    f = lambda *shape, s=0.02: (rng.standard_normal(shape, dtype=np.float32) * s)
    w = {"wte.weight": f(VOCAB, d), "wpe.weight": f(N_POSITIONS, d, s=0.01)}
    for l in range(N_LAYER):
        p = f"h.{l}."
        w[p + "ln_1.weight"] = np.ones(d, np.float32)
        w[p + "ln_1.bias"] = np.zeros(d, np.float32)
        w[p + "attn.c_attn.weight"] = f(d, 3 * d)
        w[p + "attn.c_attn.bias"] = np.zeros(3 * d, np.float32)
        w[p + "attn.c_proj.weight"] = f(d, d)
        w[p + "attn.c_proj.bias"] = np.zeros(d, np.float32)
        w[p + "ln_2.weight"] = np.ones(d, np.float32)
        w[p + "ln_2.bias"] = np.zeros(d, np.float32)
        w[p + "mlp.c_fc.weight"] = f(d, inner)
        w[p + "mlp.c_fc.bias"] = np.zeros(inner, np.float32)
        w[p + "mlp.c_proj.weight"] = f(inner, d)
        w[p + "mlp.c_proj.bias"] = np.zeros(d, np.float32)
    w["ln_f.weight"] = np.ones(d, np.float32)
    w["ln_f.bias"] = np.zeros(d, np.float32)
    return w


def write_folder(folder, w):
    header, offset = {}, 0
    for name, a in w.items():
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header).encode()
    text += b" " * ((-(8 + len(text))) % 8)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for a in w.values():
            f.write(a.tobytes())
    config = {"model_type": "gpt2", "n_layer": N_LAYER, "n_head": N_HEAD, "n_embd": N_EMBD, "n_positions": N_POSITIONS,
              "vocab_size": VOCAB, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump({s: b for b, s in byte_symbols().items()}, f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n")


def sentence(t):
    words = "the cat sat on the mat because it was tired and the dog ran ".split()
    out = ""
    i = 0
    while len(out) < t:
        out += words[i % len(words)] + " "
        i += 1
    return out[:t]


# ---- the PyTorch peer, in a subprocess of its own ---------------------------------------------

def torch_peer(folder, sizes, seconds, threads):
    import torch
    torch.set_num_threads(threads)
    with open(os.path.join(folder, "model.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    w = {}
    for name, info in header.items():
        a, b = info["data_offsets"]
        w[name] = torch.from_numpy(np.frombuffer(data, np.float32, (b - a) // 4, a).reshape(info["shape"]).copy())
    def forward(ids):
        t, d, dk = len(ids), N_EMBD, N_EMBD // N_HEAD
        x = w["wte.weight"][ids] + w["wpe.weight"][:t]
        mask = torch.full((t, t), float("-inf")).triu(1)
        attentions = []
        for l in range(N_LAYER):
            p = f"h.{l}."
            a = torch.nn.functional.layer_norm(x, (d,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], 1e-5)
            qkv = torch.addmm(w[p + "attn.c_attn.bias"], a, w[p + "attn.c_attn.weight"])
            q, k, v = (qkv[:, i * d:(i + 1) * d].view(t, N_HEAD, dk).transpose(0, 1) for i in range(3))
            att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(dk) + mask, dim=-1)
            attentions.append(att)
            o = (att @ v).transpose(0, 1).reshape(t, d)
            x = x + torch.addmm(w[p + "attn.c_proj.bias"], o, w[p + "attn.c_proj.weight"])
            m = torch.nn.functional.layer_norm(x, (d,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], 1e-5)
            m = torch.nn.functional.gelu(torch.addmm(w[p + "mlp.c_fc.bias"], m, w[p + "mlp.c_fc.weight"]), approximate="tanh")
            x = x + torch.addmm(w[p + "mlp.c_proj.bias"], m, w[p + "mlp.c_proj.weight"])
        final = torch.nn.functional.layer_norm(x[-1], (d,), w["ln_f.weight"], w["ln_f.bias"], 1e-5)
        return attentions, w["wte.weight"] @ final

    print_peer_times(forward, sizes, seconds)


def print_peer_times(forward, sizes, seconds):
    """Times a PyTorch forward(ids) over sentence(T) for each T (a warm-up, then at least 5 runs and
    `seconds`) and prints {"ms": {T: median}, "torch", "threads"}: what run_peer reads."""
    import torch
    out = {}
    with torch.inference_mode():
        for t in sizes:
            ids = torch.tensor(list(sentence(t).encode()))  # the vocabulary's id of a byte's symbol is the byte
            forward(ids)
            times, start = [], time.perf_counter()
            while len(times) < 5 or time.perf_counter() - start < seconds:
                t0 = time.perf_counter()
                forward(ids)
                times.append((time.perf_counter() - t0) * 1000)
            out[t] = statistics.median(times)
    from peer_blas import describe_torch
    print(json.dumps({"ms": out, "torch": torch.__version__, "threads": torch.get_num_threads(), "blas": describe_torch(torch)}))


def run_torch(folder, t, seconds):
    return run_peer(__file__, folder, t, seconds)


def run_peer(script, folder, t, seconds):
    """`script --peer FOLDER` for one T in a subprocess: its median ms, the OpenBLAS kernel it ran,
    the variables unset for it, and what it printed."""
    env = dict(os.environ)
    cleared = [k for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in env]
    for k in cleared:
        del env[k]
    env["OPENBLAS_VERBOSE"] = "2"
    p = subprocess.run([sys.executable, script, "--peer", folder, "--sizes", str(t), "--seconds", str(seconds)],
                       capture_output=True, text=True, env=env, timeout=3600)
    if p.returncode != 0:
        raise SystemExit(f"the PyTorch peer failed: {p.stderr.strip()[-400:]}")
    kernel = [line.strip() for line in p.stderr.splitlines() if "Core:" in line]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    return r["ms"][str(t)], (kernel[0] if kernel else "not reported (no OpenBLAS?)"), cleared, r


def run_attnviz(attnviz, folder, t, seconds):
    p = subprocess.run([attnviz, "--model", folder, "--sentence", sentence(t), "--bench", "--bench-seconds", str(seconds)],
                       capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise SystemExit(f"attnviz --bench failed: {p.stderr.strip()}")
    return json.loads(p.stdout)


def benchmark_json(program, pattern):
    p = subprocess.run([program, f"--benchmark_filter={pattern}", "--benchmark_format=json", "--benchmark_min_time=1"],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"{program} failed: {p.stderr.strip()[-300:]}")
    return {b["name"]: b for b in json.loads(p.stdout)["benchmarks"]}


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--sizes", default="128,512")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.peer:
        torch_peer(args.peer, sizes, args.seconds, len(os.sched_getaffinity(0)))
        return 0
    attnviz = os.path.join(args.build, "attnviz")
    print(f"CPU: {cpu_name()}, {os.cpu_count()} logical cores")
    with tempfile.TemporaryDirectory() as folder:
        write_folder(folder, weights(np.random.default_rng(20241124)))
        print(f"GPT-2 small's shape, random weights: {os.path.getsize(os.path.join(folder, 'model.safetensors')) / 1e6:.0f} MB F32")
        last, kept_mib = {}, {}
        for t in sizes:
            ratios, ours, peers, appends, rates = [], [], [], [], []
            for _ in range(args.rounds):
                a = run_attnviz(attnviz, folder, t, args.seconds)
                ms, kernel, cleared, info = run_torch(folder, t, args.seconds)
                ours.append(a["forward_ms"])
                peers.append(ms)
                ratios.append(ms / a["forward_ms"])
                appends.append(a["append_ms"] / a["forward_ms"])
                rates.append(a["gflops"])
            last[t], kept_mib[t] = statistics.median(rates), a["kept_mib"]
            print(f"T = {t}: attnviz {statistics.median(ours):.1f} ms ({last[t]:.0f} GFLOP/s, kernels {a['kernels']}), "
                  f"PyTorch {info['torch']} eager ({info['threads']} threads; {info.get('blas', 'BLAS not named')}; "
                  f"OPENBLAS_VERBOSE: {kernel}"
                  f"{'; ' + ' and '.join(cleared) + ' unset for it' if cleared else ''}) {statistics.median(peers):.1f} ms: "
                  f"attnviz {statistics.median(ratios):.2f}x faster; appending a token costs "
                  f"{100 * statistics.median(appends):.1f} % of the whole pass")
        # The ceilings: an sgemm of the width the kernels ran (AVX-512 here needs its own program),
        # and the fused multiply-add peak of that width on every core.
        wide = a["kernels"] == "avx512"
        program = os.path.join(args.build, "attnviz_sgemm_avx512" if wide else "attnviz_bench")
        sgemm = next(iter(benchmark_json(program, "BM_Sgemm").values()))["GFLOP/s"]
        from peer_blas import fma_peak
        measured = fma_peak(args.build, a["kernels"])
        if measured is None:
            raise SystemExit(f"{os.path.join(args.build, 'attnviz_bench')} could not measure the FMA peak")
        peak_name, peak = measured
        for t, gflops in last.items():
            print(f"T = {t}: attnviz {gflops:.0f} GFLOP/s = {100 * gflops / sgemm:.0f} % of Eigen's {a['kernels']} sgemm "
                  f"(1024^3, {sgemm:.0f} GFLOP/s in this run) = {100 * gflops / peak:.0f} % of the {a['kernels']} FMA peak "
                  f"({peak_name}, {peak:.0f} GFLOP/s)")
        # Memory: peak RSS of one export against the file and what the pass keeps.
        for t in sizes:
            p = subprocess.run(["/usr/bin/time", "-f", "%M", attnviz, "--model", folder, "--sentence", sentence(t), "--export-csv",
                                os.devnull], capture_output=True, text=True, timeout=600)
            rss = int(p.stderr.strip().splitlines()[-1]) * 1024
            kept = kept_mib[t] * 1024 * 1024
            size = os.path.getsize(os.path.join(folder, "model.safetensors"))
            print(f"T = {t}: peak RSS {rss / 2**20:.0f} MiB = {rss / (size + kept):.2f} x (the file, {size / 2**20:.0f} MiB, "
                  f"+ the pass's kept matrices, {kept / 2**20:.0f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
