#!/usr/bin/env python3
"""numpy as an independent oracle for value-weighted attention (--export-value-weighted OUT.npy).

Usage: test_value_weighted.py PATH/TO/attnviz

Value-weighted attention (Kobayashi et al., EMNLP 2020, "Attention is Not Only a Weight"), written
here from the paper, not from attnviz: for head h of a layer, with alpha the head's weights, v_j its
value of key j (the projection's bias included) and W_O^h the head's rows of the output projection,

    map[i, j] = || alpha[i, j] * v_j @ W_O^h ||_2 = alpha[i, j] * || v_j @ W_O^h ||_2   (alpha >= 0)

For a tiny GPT-2 (3 layers x 4 heads, Conv1D weights [in, out], fused c_attn with bias) and a tiny
Llama (2 layers, 4 query heads reading 2 key/value heads, RoPE, no bias, o_proj [out, in]) written
here, the .npy holds every layer x head's map, [layers, heads, T, T], as a float64 forward computes
it; the PNG and SVG figures are written; an import (no values behind it) and a bad extension exit 2
with one line naming the flag or the file. Exits 1 on any failure.
"""

import json
import math
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import FAILURES, CHECKS, WORST_SHARE, close, expect, one_error_line, run  # noqa: E402
import gpt2_checkpoint as gpt2  # noqa: E402
import llama_checkpoint as llama  # noqa: E402


def norms_map(A, v, wo):
    """alpha[i, j] * ||v_j @ wo||."""
    return A * np.linalg.norm(v @ wo, axis=1)[None, :]


def gpt2_value_weighted(w, ids, n_layer, n_head):
    """float64 [layers, heads, T, T] of a GPT-2 pass (causal)."""
    t = len(ids)
    x = w["wte.weight"][ids] + w["wpe.weight"][:t]
    d = x.shape[1]
    dk = d // n_head
    mask = np.triu(np.ones((t, t), bool), 1)
    maps = []
    for l in range(n_layer):
        p = f"h.{l}."
        a = gpt2.layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"])
        qkv = a @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
        wo = w[p + "attn.c_proj.weight"]  # [h * dk, d]
        layer, outs = [], []
        for h in range(n_head):
            cols = slice(h * dk, (h + 1) * dk)
            s = np.where(mask, -np.inf, q[:, cols] @ k[:, cols].T / math.sqrt(dk))
            e = np.exp(s - s.max(axis=1, keepdims=True))
            A = e / e.sum(axis=1, keepdims=True)
            layer.append(norms_map(A, v[:, cols], wo[cols]))
            outs.append(A @ v[:, cols])
        maps.append(layer)
        x = x + np.concatenate(outs, axis=1) @ wo + w[p + "attn.c_proj.bias"]
        m = gpt2.gelu_tanh(gpt2.layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"]) @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        x = x + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    return np.array(maps)


def llama_value_weighted(weights, cfg, ids):
    """float64 [layers, heads, T, T] of a Llama pass, as llama_checkpoint.forward computes it."""
    w = {k: np.asarray(v, np.float64) for k, v in weights.items()}
    eps = cfg["rms_norm_eps"]
    nh, kv, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], llama.head_dim(cfg)
    kv_heads = [h // (nh // kv) for h in range(nh)]
    t = len(ids)
    freqs, windows = llama.inv_freq(cfg), llama.layer_windows(cfg)
    x = w["model.embed_tokens.weight"][np.asarray(ids)]
    maps = []
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        a = llama.rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q, k, v = (a @ w[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
        q, k, v = q.reshape(t, nh, d), k.reshape(t, kv, d), v.reshape(t, kv, d)
        q, k = llama.rope(q, np.arange(t), freqs), llama.rope(k, np.arange(t), freqs)
        visible = llama.attention_mask(t, windows[l])
        wo = w[p + "self_attn.o_proj.weight"].T  # [h * d, hidden]
        layer, outs = [], []
        for h in range(nh):
            s = np.where(visible, (q[:, h] @ k[:, kv_heads[h]].T) * d ** -0.5, -np.inf)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            A = e / e.sum(axis=1, keepdims=True)
            layer.append(norms_map(A, v[:, kv_heads[h]], wo[h * d:(h + 1) * d]))
            outs.append(A @ v[:, kv_heads[h]])
        maps.append(layer)
        x = x + np.concatenate(outs, axis=1) @ wo
        b = llama.rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate, up = b @ w[p + "mlp.gate_proj.weight"].T, b @ w[p + "mlp.up_proj.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ w[p + "mlp.down_proj.weight"].T
    return np.array(maps)


def byte_tokenizer(folder):
    """A byte-level tokenizer.json (every byte one token, id = the byte) and its config, for Llama."""
    os.makedirs(folder, exist_ok=True)
    vocab, _ = gpt2.byte_vocabulary()
    tokenizer = {"version": "1.0", "added_tokens": [], "normalizer": None,
                 "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
                 "post_processor": None, "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
                 "model": {"type": "BPE", "dropout": None, "unk_token": None, "vocab": json.loads(vocab), "merges": []}}
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False)
    with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({}, f)


def check(attnviz, tmp, name, folder, sentence, want):
    out = os.path.join(tmp, name + ".npy")
    if run(attnviz, "--model", folder, "--sentence", sentence, "--export-value-weighted", out).returncode:
        return
    got = np.load(out)
    expect(name, got.dtype == np.float32, f"dtype {got.dtype}, expected float32")
    close(name + " every layer x head", got, want, 2e-4 * float(np.max(want)))
    # rows do not sum to 1: the oracle's own check that the view is not the weights
    expect(name, float(np.max(np.abs(want.sum(axis=3) - 1.0))) > 0.05, "the maps' rows sum to 1")
    for layer, head in ((0, 1), (want.shape[0] - 1, want.shape[1] - 1)):
        for ext in ("png", "svg"):
            fig = os.path.join(tmp, f"{name}-{layer}-{head}.{ext}")
            if run(attnviz, "--model", folder, "--sentence", sentence, "--layer", str(layer), "--head", str(head),
                   "--export-value-weighted", fig).returncode == 0:
                expect(fig, os.path.getsize(fig) > 1000, "a figure of under 1000 bytes")


def main():
    if len(sys.argv) != 2:
        print("usage: test_value_weighted.py PATH/TO/attnviz")
        return 2
    attnviz = sys.argv[1]
    sentence = "the cat sat on the mat; the cat ran"
    ids = list(sentence.encode())
    with tempfile.TemporaryDirectory() as tmp:
        # GPT-2
        folder = os.path.join(tmp, "tiny-gpt2")
        vocab, merges = gpt2.byte_vocabulary()
        weights = gpt2.random_weights(np.random.default_rng(20261128), 3, 4, 32, 64, 257)
        gpt2.write_checkpoint(folder, weights, gpt2.config_json(3, 4, 32, 64, 257), {"vocab.json": vocab, "merges.txt": merges})
        check(attnviz, tmp, "gpt2", folder, sentence, gpt2_value_weighted(gpt2.stored(weights, "F32"), ids, 3, 4))
        # Llama: grouped-query heads, RoPE
        cfg = llama.config("llama", 32, 64, 2, 4, 2, 257)
        lw = llama.random_weights(cfg, 7)
        tokenizer = os.path.join(tmp, "tokenizer")
        byte_tokenizer(tokenizer)
        lfolder = os.path.join(tmp, "tiny-llama")
        llama.write_folder(lfolder, "llama", cfg, lw, tokenizer)
        check(attnviz, tmp, "llama", lfolder, sentence, llama_value_weighted(llama.stored(lw, "F32"), cfg, ids))
        # misuse
        npy = os.path.join(tmp, "gpt2.npy")
        one_error_line(attnviz, ["--model", folder, "--export-value-weighted", os.path.join(tmp, "v.jpg")], "v.jpg")
        attention = os.path.join(tmp, "a.npy")
        a = np.tril(np.ones((6, 6), np.float32))
        np.save(attention, a / a.sum(axis=1, keepdims=True))
        with open(os.path.join(tmp, "tokens.txt"), "w") as f:
            f.write("a\nb\nc\nd\ne\nf\n")
        one_error_line(attnviz, ["--attention", attention, "--export-value-weighted", npy + ".png"], "--export-value-weighted")
    if FAILURES:
        print(f"{len(FAILURES)} failures")
        return 1
    print(f"value-weighted: {CHECKS[0]} checks passed (worst {WORST_SHARE[0]:.2f} of its tolerance)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
