#!/usr/bin/python3
"""Times a Qwen2.5-0.5B-shaped model's whole forward pass in attnviz, and measures its peak memory.

The model: Qwen2.5-0.5B's shapes (24 layers, 14 query heads over 2 kv heads, 896 wide, 4,864
inner, 151,936 tokens, q/k/v biases, tied embeddings) with random BF16 weights, written once as a
Hugging Face folder (0.99 GB) in a temporary folder by tests/oracle/llama_checkpoint.py. Its
tokenizer.json holds only the 256 byte symbols (no merges, nothing fetched), so a sentence of T
ASCII characters is T tokens.

For each T: `attnviz --model DIR --bench` (the median pass with every layer's every head's T x T
weights kept, and one token appended to a kept pass of T - 1), its GFLOP/s as a share of the FMA
peak of the instruction set the kernels ran (attnviz_bench's BM_FmaPeak or BM_FmaPeakAvx512, in the
same run), and the peak resident memory of one `attnviz --model DIR --sentence S --export-csv`
(open, one pass, the shown layer) against the file plus the pass's kept matrices: the weights stay
in BF16, mapped or packed, and are widened in the kernels' registers.

With PyTorch installed (Debian's python3-torch, 1.13: a weak peer, since it multiplies with the
system's BLAS and has no transformers), also the same pass as an eager PyTorch Qwen2 written here
from transformers' definitions, in float32 on the BF16 weights widened (as attnviz computes), every
layer's attention kept as output_attentions=True keeps it, and the last position's logits; the
sides take turns round by round and the ratio is the median of the rounds'. PyTorch runs in a
subprocess with a thread for each core it may run on (as bench_gpt2.py's), OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset for it alone, and the BLAS
kernel it ran is named.

Usage: /usr/bin/python3 scripts/bench_llama.py [--build build] [--sizes 128,512] [--rounds 3] [--seconds 3]
"""
import argparse
import json
import os
import math
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "oracle"))
from bench_gpt2 import byte_symbols, cpu_name, print_peer_times, run_peer, sentence  # noqa: E402
import llama_checkpoint as ckpt  # noqa: E402
from peer_blas import fma_peak  # noqa: E402


def write_tokenizer(folder):
    """A byte-level tokenizer.json of the 256 byte symbols (and an empty tokenizer_config.json)."""
    vocab = {s: b for b, s in byte_symbols().items()}
    tokenizer = {"version": "1.0", "added_tokens": [], "normalizer": None,
                 "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
                 "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True},
                 "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
                 "model": {"type": "BPE", "dropout": None, "unk_token": None, "vocab": vocab, "merges": []}}
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False)
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({}, f)


def write_qwen_shaped(tmp):
    """Writes the Qwen2.5-0.5B-shaped folder (random BF16 weights, the byte-level tokenizer) under
    `tmp`; returns its path, its config and the weights' size in MiB."""
    tok, folder = os.path.join(tmp, "tokenizer"), os.path.join(tmp, "qwen2.5-0.5b-shaped")
    os.makedirs(tok)
    write_tokenizer(tok)
    preset = dict(ckpt.PRESETS["qwen2.5-0.5b"])
    family = preset.pop("family")
    cfg = ckpt.config(family, **preset)
    ckpt.write_folder(folder, family, cfg, ckpt.random_weights(cfg, 1), tok, dtype="BF16")
    return folder, cfg, os.path.getsize(os.path.join(folder, "model.safetensors")) / 2**20


def torch_model(folder):
    """The eager PyTorch Qwen2 of `folder` (float32): forward(ids) -> (every layer's [H, T, T], logits)."""
    import torch
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    raw, _ = ckpt.read_safetensors(os.path.join(folder, "model.safetensors"))
    w = {name: torch.from_numpy((a.astype(np.uint32) << 16).view(np.float32) if dtype == "BF16" else a.astype(np.float32))
         for name, (dtype, _, a) in raw.items()}
    del raw
    d, heads, kv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    dh, eps, layers = d // heads, cfg["rms_norm_eps"], cfg["num_hidden_layers"]
    inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, dh, 2, dtype=torch.float32) / dh))

    def rms(x, g):
        return g * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    def rotate(x, cos, sin):
        half = x.shape[-1] // 2
        return x * cos + torch.cat((-x[..., half:], x[..., :half]), -1) * sin

    def forward(ids):
        t = len(ids)
        angles = torch.arange(t, dtype=torch.float32)[:, None] * inv[None, :]
        cos, sin = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()
        mask = torch.full((t, t), float("-inf")).triu(1)
        x, attentions = w["model.embed_tokens.weight"][ids], []
        for l in range(layers):
            p = f"model.layers.{l}."
            a = rms(x, w[p + "input_layernorm.weight"])
            q = torch.nn.functional.linear(a, w[p + "self_attn.q_proj.weight"], w[p + "self_attn.q_proj.bias"]).view(t, heads, dh)
            k = torch.nn.functional.linear(a, w[p + "self_attn.k_proj.weight"], w[p + "self_attn.k_proj.bias"]).view(t, kv, dh)
            v = torch.nn.functional.linear(a, w[p + "self_attn.v_proj.weight"], w[p + "self_attn.v_proj.bias"]).view(t, kv, dh)
            q, k = rotate(q.transpose(0, 1), cos, sin), rotate(k.transpose(0, 1), cos, sin)
            k, v = k.repeat_interleave(heads // kv, 0), v.transpose(0, 1).repeat_interleave(heads // kv, 0)
            att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(dh) + mask, dim=-1)
            attentions.append(att)
            x = x + torch.nn.functional.linear((att @ v).transpose(0, 1).reshape(t, d), w[p + "self_attn.o_proj.weight"])
            m = rms(x, w[p + "post_attention_layernorm.weight"])
            m = torch.nn.functional.silu(torch.nn.functional.linear(m, w[p + "mlp.gate_proj.weight"])) * \
                torch.nn.functional.linear(m, w[p + "mlp.up_proj.weight"])
            x = x + torch.nn.functional.linear(m, w[p + "mlp.down_proj.weight"])
        return attentions, w["model.embed_tokens.weight"] @ rms(x[-1], w["model.norm.weight"])

    return forward


def torch_peer(folder, sizes, seconds):
    """The eager PyTorch Qwen2 over `sizes`, in this process: prints {"ms": {T: median}}."""
    import torch
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    forward = torch_model(folder)
    print_peer_times(forward, sizes, seconds)


def has_torch():
    return subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0


def peak_rss_mib(argv):
    """Runs argv and returns its peak resident set size in MiB (the kernel's ru_maxrss)."""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{argv[0]} failed: {p.stderr.read().decode(errors='replace').strip()[-300:]}")
    return usage.ru_maxrss / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--sizes", default="128,512")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer:
        torch_peer(args.peer, [int(s) for s in args.sizes.split(",")], args.seconds)
        return
    peer = has_torch()
    attnviz = os.path.join(args.build, "attnviz")
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        folder, cfg, file_mib = write_qwen_shaped(tmp)
        print(f"CPU: {cpu_name()}; {os.cpu_count()} cores; model: Qwen2.5-0.5B's shape, random BF16 weights, {file_mib:.0f} MiB")
        rows = []
        for t in sizes:
            runs, ratios = [], []
            for _ in range(args.rounds):
                p = subprocess.run([attnviz, "--model", folder, "--sentence", sentence(t), "--bench", "--bench-seconds",
                                    str(args.seconds)], capture_output=True, text=True, timeout=3600)
                if p.returncode != 0:
                    raise SystemExit(f"attnviz --bench failed: {p.stderr.strip()[-300:]}")
                runs.append(json.loads(p.stdout))
                if peer:
                    ms, kernel, cleared, info = run_peer(__file__, folder, t, args.seconds)
                    ratios.append(ms / runs[-1]["forward_ms"])
            if peer:
                print(f"T = {t}: PyTorch {info['torch']} eager, float32 ({info['threads']} threads, OpenBLAS {kernel}"
                      f"{', ' + ' and '.join(cleared) + ' unset for it' if cleared else ''}) {ms:.0f} ms in the last round: "
                      f"attnviz {statistics.median(ratios):.2f}x faster (median of {len(ratios)} rounds)")
            rss = peak_rss_mib([attnviz, "--model", folder, "--sentence", sentence(t), "--layer", "3", "--export-csv",
                                os.path.join(tmp, "head.csv")])
            rows.append((t, runs, rss))
        measured = fma_peak(args.build, rows[0][1][0]["kernels"])
        if measured is None:
            raise SystemExit(f"{os.path.join(args.build, 'attnviz_bench')} could not measure the FMA peak")
        peak_name, peak_gflops = measured
        print(f"FMA peak ({peak_name}, the kernels' {rows[0][1][0]['kernels']}): {peak_gflops:.0f} GFLOP/s")
        print("| T | forward (ms) | GFLOP/s | of the FMA peak | append (ms) | append / pass | kept (MiB) | peak RSS (MiB) | "
              "RSS / (file + kept) |")
        print("|---|---|---|---|---|---|---|---|---|")
        for t, runs, rss in rows:
            forward = statistics.median(r["forward_ms"] for r in runs)
            gflops = statistics.median(r["gflops"] for r in runs)
            append = statistics.median(r["append_ms"] for r in runs)
            kept = runs[0]["kept_mib"]
            print(f"| {t} | {forward:.0f} | {gflops:.0f} | {100 * gflops / peak_gflops:.0f} % | {append:.1f} | "
                  f"{100 * append / forward:.1f} % | {kept:.0f} | {rss:.0f} | {rss / (file_mib + kept):.2f} |")


if __name__ == "__main__":
    main()
