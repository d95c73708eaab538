"""Tiny GPT-2 checkpoints in Hugging Face's exact layout, and an independent float64 GPT-2.

write_checkpoint() makes a folder like the hub's `gpt2`: config.json, model.safetensors (written
here byte by byte: an 8-byte little-endian header length, the JSON header padded with spaces,
the tensors' bytes), and the tokenizer files it is given (byte_vocabulary() gives GPT-2's 256 byte
symbols and <|endoftext|>, a token a byte). forward() is GPT-2's forward pass in float64 numpy,
written from the paper's and Hugging Face's definition, not from attnviz:

    x = wte[ids] + wpe[:T]
    per block:  a = LN(x; ln_1);  q|k|v = a @ c_attn.W + b;  per head A = softmax(q k^T / sqrt(d_k) + causal)
                x += concat(A v) @ attn.c_proj.W + b;  x += gelu_tanh(LN(x; ln_2) @ c_fc.W + b) @ mlp.c_proj.W + b
    logits = LN(x; ln_f)[-1] @ wte^T

Standard library and numpy only.
"""

import json
import math
import os
import struct

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16}


def random_weights(rng, n_layer, n_head, n_embd, n_positions, vocab, sharp=1.0):
    """float32 weights for GPT2LMHeadModel, named without the "transformer." prefix."""
    d, inner = n_embd, 4 * n_embd
    f = lambda *shape, s=0.02: (rng.standard_normal(shape) * s).astype(np.float32)
    w = {"wte.weight": f(vocab, d, s=0.5), "wpe.weight": f(n_positions, d, s=0.3)}
    for l in range(n_layer):
        p = f"h.{l}."
        w[p + "ln_1.weight"] = (1 + f(d, s=0.1)).astype(np.float32)
        w[p + "ln_1.bias"] = f(d, s=0.1)
        # Large enough that the heads' weights are far from uniform (the test must see patterns).
        w[p + "attn.c_attn.weight"] = f(d, 3 * d, s=sharp * 0.6 / math.sqrt(d) * 4)
        w[p + "attn.c_attn.bias"] = f(3 * d, s=0.2)
        w[p + "attn.c_proj.weight"] = f(d, d, s=0.3 / math.sqrt(d) * 4)
        w[p + "attn.c_proj.bias"] = f(d, s=0.05)
        w[p + "ln_2.weight"] = (1 + f(d, s=0.1)).astype(np.float32)
        w[p + "ln_2.bias"] = f(d, s=0.1)
        w[p + "mlp.c_fc.weight"] = f(d, inner, s=1.0 / math.sqrt(d))
        w[p + "mlp.c_fc.bias"] = f(inner, s=0.1)
        w[p + "mlp.c_proj.weight"] = f(inner, d, s=0.5 / math.sqrt(inner))
        w[p + "mlp.c_proj.bias"] = f(d, s=0.05)
        # The causal-mask buffers older checkpoints carry (attnviz ignores them).
        w[p + "attn.bias"] = np.tril(np.ones((n_positions, n_positions), np.float32)).reshape(1, 1, n_positions, n_positions)
        w[p + "attn.masked_bias"] = np.array(-1e4, np.float32)
    w["ln_f.weight"] = (1 + f(d, s=0.1)).astype(np.float32)
    w["ln_f.bias"] = f(d, s=0.1)
    return w


def safetensors_bytes(tensors, dtype="F32", metadata=None, align=8):
    """The file's bytes: tensors {name: array} stored as `dtype`, data in the order given."""
    header, chunks, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, array in tensors.items():
        stored = np.ascontiguousarray(array.astype(DTYPES[dtype]))
        raw = stored.tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((-(8 + len(text))) % align)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def stored(weights, dtype):
    """What the checkpoint holds, as float64: each weight rounded to `dtype`."""
    return {k: v.astype(DTYPES[dtype]).astype(np.float64) for k, v in weights.items()}


def config_json(n_layer, n_head, n_embd, n_positions, vocab, **extra):
    config = {
        "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
        "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": n_positions, "n_embd": n_embd,
        "n_head": n_head, "n_layer": n_layer, "n_positions": n_positions, "resid_pdrop": 0.1,
        "summary_activation": None, "summary_first_dropout": 0.1, "summary_proj_to_labels": True,
        "summary_type": "cls_index", "summary_use_proj": True, "vocab_size": vocab,
    }
    config.update(extra)
    return json.dumps(config, indent=2)


def write_checkpoint(folder, weights, config_text, tokenizer_files, dtype="F32", prefix=False, lm_head=False, order=None):
    """A Hugging Face folder: config.json, model.safetensors, and the tokenizer files
    (a {name: bytes} map, e.g. vocab.json and merges.txt)."""
    os.makedirs(folder, exist_ok=True)
    named = {}
    names = order or list(weights)
    for name in names:
        named[("transformer." + name) if prefix else name] = weights[name]
    if lm_head:
        named["lm_head.weight"] = weights["wte.weight"]
    with open(os.path.join(folder, "config.json"), "w") as f:
        f.write(config_text)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(safetensors_bytes(named, dtype, metadata={"format": "pt"}))
    for name, data in tokenizer_files.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)


def bytes_to_unicode():
    """GPT-2's map of the 256 bytes to printable characters (its encoder.py)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def byte_vocabulary():
    """vocab.json of the 256 byte symbols and <|endoftext|>, no merges: a token a byte."""
    vocab = {symbol: b for b, symbol in bytes_to_unicode().items()}
    vocab["<|endoftext|>"] = 256
    return json.dumps(vocab).encode(), b"#version: 0.2\n"


def layer_norm(x, g, b, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * g + b


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def hidden_mask(t, hide):
    """[T, T] True where the query may not read the key: causal, and the hidden tokens' columns."""
    mask = np.triu(np.ones((t, t), bool), 1)
    for token in hide:
        mask[:, token] = True
    return mask


def masked_softmax(s, mask):
    """Rows of softmax(s) over the open keys; a row with none open is all zeros (the what-if's
    query 0 with token 0 hidden)."""
    s = np.where(mask, -np.inf, s)
    top = s.max(axis=1, keepdims=True)
    e = np.where(mask, 0.0, np.exp(s - np.where(np.isfinite(top), top, 0.0)))
    total = e.sum(axis=1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def ablate(out, layer, head, zero, mean):
    """A head's output [T, d_h] zeroed ((layer, head) in zero) or replaced by its mean over the
    positions (in mean): the what-if hooks, before W_O (whose bias is still added)."""
    if (layer, head) in zero:
        return np.zeros_like(out)
    if (layer, head) in mean:
        return np.broadcast_to(out.mean(axis=0, keepdims=True), out.shape)
    return out


def forward(w, ids, n_layer, n_head, causal=True, zero=(), mean=(), hide=(), record=None):
    """float64: (attentions [layers, heads, T, T], next-token probabilities [vocab]). zero, mean:
    (layer, head) pairs whose outputs are ablated; hide: token positions no query reads. record (a
    dict) receives "streams" (the residual stream entering each layer, then after the last: L + 1
    arrays [T, d]), "heads" (per layer, each head's output through its rows of c_proj [T, d]),
    "attn_bias" (per layer, c_proj's bias [d]) and "mlp" (per layer, the MLP's output [T, d])."""
    t = len(ids)
    x = w["wte.weight"][ids] + w["wpe.weight"][:t]
    d = x.shape[1]
    dk = d // n_head
    mask = np.triu(np.ones((t, t), bool), 1)
    if hide:
        mask = hidden_mask(t, hide)
    attentions = []
    for l in range(n_layer):
        p = f"h.{l}."
        a = layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"])
        qkv = a @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
        heads, outs = [], []
        for h in range(n_head):
            s = q[:, h * dk:(h + 1) * dk] @ k[:, h * dk:(h + 1) * dk].T / math.sqrt(dk)
            if hide:
                A = masked_softmax(s, mask)
            else:
                if causal:
                    s = np.where(mask, -np.inf, s)
                s = s - s.max(axis=1, keepdims=True)
                e = np.exp(s)
                A = e / e.sum(axis=1, keepdims=True)
            heads.append(A)
            outs.append(ablate(A @ v[:, h * dk:(h + 1) * dk], l, h, zero, mean))
        attentions.append(heads)
        if record is not None:
            record.setdefault("streams", []).append(x)
            record.setdefault("heads", []).append([outs[h] @ w[p + "attn.c_proj.weight"][h * dk:(h + 1) * dk] for h in range(n_head)])
            record.setdefault("attn_bias", []).append(w[p + "attn.c_proj.bias"])
        x = x + np.concatenate(outs, axis=1) @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        m = gelu_tanh(layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"]) @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        if record is not None:
            record.setdefault("mlp", []).append(m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"])
        x = x + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    if record is not None:
        record.setdefault("streams", []).append(x)
    final = layer_norm(x, w["ln_f.weight"], w["ln_f.bias"])
    logits = final[-1] @ w["wte.weight"].T
    e = np.exp(logits - logits.max())
    return np.array(attentions), e / e.sum()
