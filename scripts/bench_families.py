#!/usr/bin/python3
"""Times the whole forward pass of a Gemma-3-1B-shaped decoder and a BERT-base-shaped encoder in
attnviz, and measures the peak memory of opening each and running one pass.

The models, written once in a temporary folder by the tests' checkpoint writers:
  * gemma-3-1b: Gemma 3 1B's shapes (26 layers, 4 query heads over 1 kv head of 256, 1,152 wide,
    6,912 inner, 262,144 tokens, sliding layers of 512 keys five to one global, tied embeddings) with
    random BF16 weights (tests/oracle/gemma_checkpoint.py --preset gemma-3-1b; 1.9 GiB), and a
    byte-level tokenizer.json of the 256 byte symbols, so that T ASCII characters are T tokens;
  * bert-base: bert-base-uncased's shapes (12 layers, 12 heads, 768 wide, 3,072 inner, 512
    positions) with random F32 weights and bert-base-uncased's vocabulary (tests/oracle/
    bert_checkpoint.py --preset bert-base-uncased; 0.4 GiB), on "the" repeated (T − 2 words and
    [CLS], [SEP]).
For each model and T: `attnviz --model DIR --bench` (the median pass with every layer's every
head's T × T weights kept), its GFLOP/s as a share of the FMA peak of the instruction set the
kernels ran (attnviz_bench's, in the same run), and the peak resident memory of one `attnviz
--model DIR --sentence S --export-csv` (open, one pass, the shown layer) against the file plus the
pass's kept matrices.

Usage: /usr/bin/python3 scripts/bench_families.py [--build build] [--deps build/test-deps] [--rounds 3] [--seconds 3]
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
from bench_gpt2 import cpu_name, sentence  # noqa: E402
from bench_llama import peak_rss_mib, write_tokenizer  # noqa: E402
import bert_vocab  # noqa: E402
from peer_blas import fma_peak  # noqa: E402

ORACLE = os.path.join(HERE, "..", "tests", "oracle")


def write(argv):
    p = subprocess.run([sys.executable] + argv, capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise SystemExit(f"{os.path.basename(argv[0])} failed: {p.stderr.strip()[-300:]}")


def weights_mib(folder):
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder) if f.endswith(".safetensors")) / 2**20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--deps", default=os.path.join("build", "test-deps"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    attnviz = os.path.join(args.build, "attnviz")
    with tempfile.TemporaryDirectory() as tmp:
        tok = os.path.join(tmp, "tokenizer")
        os.makedirs(tok)
        write_tokenizer(tok)
        gemma, bert = os.path.join(tmp, "gemma-3-1b-shaped"), os.path.join(tmp, "bert-base-shaped")
        write([os.path.join(ORACLE, "gemma_checkpoint.py"), "--write", gemma, "--preset", "gemma-3-1b", "--tokenizer-dir", tok,
               "--dtype", "BF16"])
        vocab = bert_vocab.vocab_txt(os.path.abspath(args.deps))
        write([os.path.join(ORACLE, "bert_checkpoint.py"), "--write", bert, "--vocab", vocab, "--preset", "bert-base-uncased",
               "--dtype", "F32"])
        models = [("Gemma 3 1B's shape, random BF16 weights", gemma, [128, 512], lambda t: sentence(t)),
                  ("bert-base's shape, random F32 weights", bert, [128, 512], lambda t: " ".join(["the"] * (t - 2)))]
        print(f"CPU: {cpu_name()}; {os.cpu_count()} cores")
        peak = None
        for name, folder, sizes, text in models:
            file_mib = weights_mib(folder)
            print(f"\n{name}, {file_mib:.0f} MiB")
            print("| T | forward (ms) | GFLOP/s | of the FMA peak | kept (MiB) | peak RSS (MiB) | RSS / (file + kept) |")
            print("|---|---|---|---|---|---|---|")
            for t in sizes:
                runs = []
                for _ in range(args.rounds):
                    p = subprocess.run([attnviz, "--model", folder, "--sentence", text(t), "--bench", "--bench-seconds", str(args.seconds)],
                                       capture_output=True, text=True, timeout=3600)
                    if p.returncode != 0:
                        raise SystemExit(f"attnviz --bench failed: {p.stderr.strip()[-300:]}")
                    runs.append(json.loads(p.stdout))
                if runs[0]["T"] != t:
                    raise SystemExit(f"{name}: the sentence is {runs[0]['T']} tokens, not {t}")
                if peak is None:
                    peak = fma_peak(args.build, runs[0]["kernels"])
                    if peak is None:
                        raise SystemExit(f"{os.path.join(args.build, 'attnviz_bench')} could not measure the FMA peak")
                rss = peak_rss_mib([attnviz, "--model", folder, "--sentence", text(t), "--layer", "1", "--export-csv",
                                    os.path.join(tmp, "head.csv")])
                forward = statistics.median(r["forward_ms"] for r in runs)
                gflops = statistics.median(r["gflops"] for r in runs)
                kept = runs[0]["kept_mib"]
                print(f"| {t} | {forward:.0f} | {gflops:.0f} | {100 * gflops / peak[1]:.0f} % | {kept:.0f} | {rss:.0f} | "
                      f"{rss / (file_mib + kept):.2f} |")
        print(f"\nFMA peak ({peak[0]}): {peak[1]:.0f} GFLOP/s")


if __name__ == "__main__":
    main()
