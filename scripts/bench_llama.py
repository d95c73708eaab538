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

Usage: /usr/bin/python3 scripts/bench_llama.py [--build build] [--sizes 128,512] [--rounds 3] [--seconds 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "oracle"))
from bench_gpt2 import benchmark_json, byte_symbols, cpu_name, sentence  # noqa: E402
import llama_checkpoint as ckpt  # noqa: E402


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
    args = ap.parse_args()
    attnviz = os.path.join(args.build, "attnviz")
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        tok, folder = os.path.join(tmp, "tokenizer"), os.path.join(tmp, "qwen2.5-0.5b-shaped")
        os.makedirs(tok)
        write_tokenizer(tok)
        preset = dict(ckpt.PRESETS["qwen2.5-0.5b"])
        family = preset.pop("family")
        cfg = ckpt.config(family, **preset)
        ckpt.write_folder(folder, family, cfg, ckpt.random_weights(cfg, 1), tok, dtype="BF16")
        file_mib = os.path.getsize(os.path.join(folder, "model.safetensors")) / 2**20
        print(f"CPU: {cpu_name()}; {os.cpu_count()} cores; model: Qwen2.5-0.5B's shape, random BF16 weights, {file_mib:.0f} MiB")
        rows = []
        for t in sizes:
            runs = []
            for _ in range(args.rounds):
                p = subprocess.run([attnviz, "--model", folder, "--sentence", sentence(t), "--bench", "--bench-seconds",
                                    str(args.seconds)], capture_output=True, text=True, timeout=3600)
                if p.returncode != 0:
                    raise SystemExit(f"attnviz --bench failed: {p.stderr.strip()[-300:]}")
                runs.append(json.loads(p.stdout))
            rss = peak_rss_mib([attnviz, "--model", folder, "--sentence", sentence(t), "--layer", "3", "--export-csv",
                                os.path.join(tmp, "head.csv")])
            rows.append((t, runs, rss))
        wide = rows[0][1][0]["kernels"] == "avx512"
        peak_name = "BM_FmaPeakAvx512" if wide else "BM_FmaPeak"
        peak = benchmark_json(os.path.join(args.build, "attnviz_bench"), f"^{peak_name}/")
        peak_gflops = next(iter(peak.values()))["GFLOP/s"]  # the counter is in GFLOP/s
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
