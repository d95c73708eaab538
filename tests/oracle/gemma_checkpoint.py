#!/usr/bin/env python3
"""Tiny Gemma 2 / Gemma 3 (text) / Phi-3 checkpoints in Hugging Face's exact layout, and an
independent float64 forward pass of those families.

Usage as a module:
    cfg = config("gemma3_text", hidden_size=32, head_dim=16, ...)   # config.json's fields, one canonical form
    weights = random_weights(cfg, seed)                              # {name: Lazy}: float32, made per tensor on demand
    write_folder(folder, "gemma3_text", cfg, weights, tokenizer_dir, dtype="BF16", shards=3, config_form="v5")
    ref = forward(stored(materialize(weights), "BF16"), cfg, ids)    # attentions [L, H, T, T], kv_heads, logits, probs
Usage as a script:
    gemma_checkpoint.py --self-test       checks the definitions below against hand-computed values
    gemma_checkpoint.py --write DIR --preset gemma-3-1b --tokenizer-dir TOK [--dtype BF16] [--seed N]
                        [--shards N] [--config-form v4|v5]   (presets: gemma-2-2b, gemma-3-1b, gemma-3-270m,
                        phi-3-mini-4k, phi-4-mini)

The folder is llama_checkpoint's (its safetensors writer, BF16 rounding, Lazy weights and shard
split are imported from there): config.json as transformers 4.x writes it ("v4": rope_theta,
rope_scaling, Gemma 3's rope_local_base_freq and sliding_window_pattern, torch_dtype) or as 5.x does
("v5": rope_parameters, layer_types, dtype), generation_config.json, the weights, and tokenizer.json +
tokenizer_config.json copied as they are (Gemma 3's and Llama 2's files put their BOS first already).

forward() is written from transformers' modeling_gemma2 / _gemma3 / _phi3, modeling_rope_utils and
masking_utils, in float64, on the values the file holds:
  Gemma 2 / 3   x = embed_tokens[ids] * sqrt(hidden_size)           (HF rounds the factor to the weights' dtype)
                RMSNorm(x) = x / sqrt(mean(x^2) + eps) * (1 + w)
                per layer: a = input_layernorm(x); q, k, v = a Wq^T, a Wk^T, a Wv^T (+ biases with attention_bias)
                           Gemma 3: q, k = q_norm(q), k_norm(k) per head over head_dim, before RoPE
                           q, k = RoPE(q), RoPE(k); s = q k^T * query_pre_attn_scalar^-0.5
                           Gemma 2: s = tanh(s / attn_logit_softcapping) * attn_logit_softcapping
                           (Gemma 3's attention never passes the cap to its kernel: set or not, it is unused)
                           A = softmax(s + mask); x += post_attention_layernorm(concat_h(A v) Wo^T)
                           x += post_feedforward_layernorm(down(gelu_tanh(gate(b)) * up(b))), b = pre_feedforward_layernorm(x)
                logits = model.norm(x)[-1] lm_head^T (embed_tokens when tied), then
                         tanh(logits / final_logit_softcapping) * final_logit_softcapping
                sliding layers: Gemma 2 the even ones, Gemma 3 layer i iff (i + 1) % sliding_window_pattern != 0,
                or config.json's layer_types; key j visible to query i iff j <= i and i - j < sliding_window
                Gemma 3's RoPE: sliding layers rope_local_base_freq, unscaled; full layers rope_theta with
                rope_scaling (linear: inv_freq / factor)
  Phi-3         x = embed_tokens[ids]; RMSNorm(x) = w * x / sqrt(mean(x^2) + eps)
                q, k, v = rows [0, H*D), [H*D, (H+KV)*D), [(H+KV)*D, (H+2KV)*D) of a qkv_proj^T
                RoPE on the first rotary_dim = int(D * partial_rotary_factor) dims of each head, the rest as
                they are; s = q k^T / sqrt(D); every layer slides when sliding_window is set
                x += concat_h(A v) Wo^T; x += down(up * silu(gate)), [gate | up] = b gate_up_proj^T,
                b = post_attention_layernorm(x); logits = model.norm(x)[-1] lm_head^T
                longrope: inv_freq = 1 / (ext * theta^(2i / rotary_dim)), ext = long_factor when the sequence
                (T tokens) is longer than original_max_position_embeddings, else short_factor; cos and sin
                times attention_factor (rope_scaling's, or sqrt(1 + ln s / ln original) with
                s = max_position_embeddings / original_max_position_embeddings, 1 when s <= 1)
  every family: head h reads kv head h // (H / KV); RoPE rotates halves (x cos + rotate_half(x) sin).
HF computes the inverse frequencies in float32, here in float64 (a ~1e-7 relative difference).
Standard library and numpy only.
"""

import math
import os
import shutil
import sys
from collections import namedtuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_checkpoint as lc  # noqa: E402
from llama_checkpoint import Lazy, materialize, stored  # noqa: E402,F401  (this module's interface too)

FAMILIES = ("gemma2", "gemma3_text", "phi3")
GEMMA = ("gemma2", "gemma3_text")
ARCHITECTURES = {"gemma2": "Gemma2ForCausalLM", "gemma3_text": "Gemma3ForCausalLM", "phi3": "Phi3ForCausalLM"}
DTYPE_NAMES = lc.DTYPE_NAMES
SLIDING, FULL = "sliding_attention", "full_attention"


# --- configuration -------------------------------------------------------------------------------

def config(family, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, num_key_value_heads,
           vocab_size, head_dim=None, rms_norm_eps=None, rope_theta=None, rope_scaling=None,
           rope_local_base_freq=10000.0, tie_word_embeddings=None, max_position_embeddings=None,
           sliding_window=None, sliding_window_pattern=6, layer_types=None, query_pre_attn_scalar=None,
           attn_logit_softcapping=None, final_logit_softcapping=None, partial_rotary_factor=1.0,
           original_max_position_embeddings=None, attention_bias=False, bos_token_id=None, eos_token_id=None,
           pad_token_id=None):
    """The canonical config: config.json's fields under transformers 4.x names. Defaults follow the
    families' config classes (Gemma 3: rope_theta 1e6, local base 1e4, pattern 6, tied; Phi-3: theta 1e4,
    eps 1e-5, untied, head_dim = hidden / heads), except query_pre_attn_scalar (head_dim here) and the
    soft-caps (none here; Gemma2Config's are 50 and 30, which config.json always spells out).
    layer_types (a list of "sliding_attention" / "full_attention") overrides the Gemma patterns.
    rope_scaling: Gemma 3's global layers {"rope_type": "linear", "factor": f} or None; Phi-3's
    {"type": "longrope", "short_factor": [...], "long_factor": [...]} or None."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}")
    gemma = family in GEMMA
    if family == "phi3" and head_dim not in (None, hidden_size // num_attention_heads):
        raise ValueError("Phi-3's head_dim is hidden_size / num_attention_heads")
    cfg = {"model_type": family, "hidden_size": hidden_size, "intermediate_size": intermediate_size,
           "num_hidden_layers": num_hidden_layers, "num_attention_heads": num_attention_heads,
           "num_key_value_heads": num_key_value_heads, "vocab_size": vocab_size,
           "rms_norm_eps": (1e-6 if gemma else 1e-5) if rms_norm_eps is None else rms_norm_eps,
           "rope_theta": (1000000.0 if family == "gemma3_text" else 10000.0) if rope_theta is None else rope_theta,
           "rope_scaling": rope_scaling,
           "tie_word_embeddings": gemma if tie_word_embeddings is None else tie_word_embeddings,
           "max_position_embeddings": max_position_embeddings or {"gemma2": 8192, "gemma3_text": 32768,
                                                                  "phi3": 4096}[family],
           "sliding_window": sliding_window, "layer_types": list(layer_types) if layer_types else None,
           "bos_token_id": (2 if gemma else 1) if bos_token_id is None else bos_token_id,
           "eos_token_id": (1 if gemma else 32000) if eos_token_id is None else eos_token_id,
           "pad_token_id": (0 if gemma else 32000) if pad_token_id is None else pad_token_id}
    if gemma:
        cfg["head_dim"] = head_dim or 256
        cfg.update(query_pre_attn_scalar=query_pre_attn_scalar or cfg["head_dim"],
                   attn_logit_softcapping=attn_logit_softcapping, final_logit_softcapping=final_logit_softcapping,
                   attention_bias=attention_bias)
    elif attention_bias or attn_logit_softcapping or final_logit_softcapping:
        raise ValueError("Phi-3 has no biases and no soft-caps")
    if family == "gemma3_text":
        cfg.update(rope_local_base_freq=rope_local_base_freq, sliding_window_pattern=sliding_window_pattern)
    if family == "phi3":
        cfg.update(partial_rotary_factor=partial_rotary_factor,
                   original_max_position_embeddings=original_max_position_embeddings or cfg["max_position_embeddings"])
    return cfg


def head_dim(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


def rotary_dim(cfg):
    """The dims of each head RoPE turns: Phi-3's int(D * partial_rotary_factor), all D for Gemma."""
    return int(head_dim(cfg) * cfg.get("partial_rotary_factor", 1.0))


def rope_type(cfg):
    """rope_scaling's type; Phi3Config reads "su" and "yarn" as "longrope" (its old names)."""
    s = cfg.get("rope_scaling") or {}
    kind = s.get("rope_type", s.get("type", "default"))
    return "longrope" if cfg["model_type"] == "phi3" and kind in ("su", "yarn") else kind


def layer_types(cfg):
    """Per layer "sliding_attention" or "full_attention", as the config classes derive them."""
    n, family = cfg["num_hidden_layers"], cfg["model_type"]
    if cfg.get("layer_types"):
        return list(cfg["layer_types"])
    if family == "gemma2":
        return [SLIDING if (i + 1) % 2 else FULL for i in range(n)]
    if family == "gemma3_text":
        p = cfg["sliding_window_pattern"]
        return [SLIDING if (i + 1) % p else FULL for i in range(n)]
    return [SLIDING if cfg.get("sliding_window") is not None else FULL] * n


def layer_windows(cfg):
    """Per layer: the sliding window (keys i - j < window visible) or None (full causal)."""
    w = cfg.get("sliding_window")
    return [w if t == SLIDING and w is not None else None for t in layer_types(cfg)]


def config_json(cfg, dtype="F32", form="v4"):
    """config.json's dict as transformers 4.x ("v4") or 5.x ("v5") saves this family."""
    family = cfg["model_type"]
    keep = ("bos_token_id", "eos_token_id", "pad_token_id", "hidden_size", "intermediate_size",
            "max_position_embeddings", "num_attention_heads", "num_hidden_layers", "num_key_value_heads",
            "rms_norm_eps", "sliding_window", "tie_word_embeddings", "vocab_size")
    c = {k: cfg[k] for k in keep}
    c.update(architectures=[ARCHITECTURES[family]], model_type=family, attention_dropout=0.0, initializer_range=0.02,
             use_cache=True)
    if family in GEMMA:
        c.update({k: cfg[k] for k in ("head_dim", "query_pre_attn_scalar", "attn_logit_softcapping",
                                       "final_logit_softcapping", "attention_bias")})
        c["hidden_activation"] = "gelu_pytorch_tanh"
        if family == "gemma2":
            c["hidden_act"] = "gelu_pytorch_tanh"  # Gemma 2's files carry both names
        else:
            c["cache_implementation"] = "hybrid"
    else:
        c.update(hidden_act="silu", attention_bias=False, embd_pdrop=0.0, resid_pdrop=0.0,
                 original_max_position_embeddings=cfg["original_max_position_embeddings"])
        if cfg["partial_rotary_factor"] != 1.0:
            c["partial_rotary_factor"] = cfg["partial_rotary_factor"]
    scaling = cfg.get("rope_scaling")
    if form == "v4":
        c.update(rope_theta=cfg["rope_theta"], rope_scaling=scaling, torch_dtype=DTYPE_NAMES[dtype],
                 transformers_version="4.51.3")
        if family == "gemma3_text":
            c.update(rope_local_base_freq=cfg["rope_local_base_freq"], sliding_window_pattern=cfg["sliding_window_pattern"])
        if cfg.get("layer_types"):
            c["layer_types"] = list(cfg["layer_types"])
    elif form == "v5":
        def params(theta, s):
            p = {"rope_type": (s or {}).get("rope_type", (s or {}).get("type", "default")), "rope_theta": theta}
            p.update({k: v for k, v in (s or {}).items() if k not in ("type", "rope_type")})
            return p
        if family == "gemma3_text":
            c["rope_parameters"] = {FULL: params(cfg["rope_theta"], scaling),
                                    SLIDING: params(cfg["rope_local_base_freq"], None)}
        else:
            c["rope_parameters"] = params(cfg["rope_theta"], scaling)
        if family == "phi3":
            # Phi3Config moves partial_rotary_factor into rope_parameters (and keeps a top-level copy
            # when config.json had one); standardize_rope_params copies original_max_position_embeddings in
            c["rope_parameters"]["partial_rotary_factor"] = cfg["partial_rotary_factor"]
            if rope_type(cfg) == "longrope":
                c["rope_parameters"]["rope_type"] = "longrope"
                c["rope_parameters"]["original_max_position_embeddings"] = cfg["original_max_position_embeddings"]
        if family in GEMMA:
            c["layer_types"] = layer_types(cfg)
        c.update(dtype=DTYPE_NAMES[dtype], transformers_version="5.0.0")
    else:
        raise ValueError(f"config_form {form!r}: expected v4 or v5")
    return dict(sorted(c.items()))


# --- weights -------------------------------------------------------------------------------------

def tensor_shapes(cfg):
    """{name: shape} in the order written (llama_checkpoint.decoder_shapes); a layer: Phi-3's
    input_layernorm, qkv_proj, o_proj, post_attention_layernorm, gate_up_proj and down_proj; Gemma's
    input_layernorm, q, k, v (each with its bias with attention_bias), Gemma 3's q_norm and k_norm,
    o_proj (its bias), the sandwich norms around the gated MLP."""
    d, inner, nh, kv, hd = (cfg["hidden_size"], cfg["intermediate_size"], cfg["num_attention_heads"],
                            cfg["num_key_value_heads"], head_dim(cfg))
    if cfg["model_type"] == "phi3":
        return lc.decoder_shapes(cfg, {"input_layernorm.weight": (d,), "self_attn.qkv_proj.weight": ((nh + 2 * kv) * hd, d),
                                       "self_attn.o_proj.weight": (d, nh * hd), "post_attention_layernorm.weight": (d,),
                                       "mlp.gate_up_proj.weight": (2 * inner, d), "mlp.down_proj.weight": (d, inner)})
    s = {"input_layernorm.weight": (d,)}
    for n, rows in (("q", nh * hd), ("k", kv * hd), ("v", kv * hd)):
        s[f"self_attn.{n}_proj.weight"] = (rows, d)
        if cfg["attention_bias"]:
            s[f"self_attn.{n}_proj.bias"] = (rows,)
    if cfg["model_type"] == "gemma3_text":
        s.update({"self_attn.q_norm.weight": (hd,), "self_attn.k_norm.weight": (hd,)})
    s["self_attn.o_proj.weight"] = (d, nh * hd)
    if cfg["attention_bias"]:
        s["self_attn.o_proj.bias"] = (d,)
    s.update({"post_attention_layernorm.weight": (d,), "pre_feedforward_layernorm.weight": (d,),
              "post_feedforward_layernorm.weight": (d,), "mlp.gate_proj.weight": (inner, d), "mlp.up_proj.weight": (inner, d),
              "mlp.down_proj.weight": (d, inner)})
    return lc.decoder_shapes(cfg, s)


def random_weights(cfg, seed, sharp=1.0):
    """{name: Lazy}. As llama_checkpoint's: the scores at a standard deviation of about 2 * sharp
    (times sqrt(D / query_pre_attn_scalar) for Gemma), heads neither uniform nor one-hot. Gemma's
    norms hold w with 1 + w ~ 1 (post norms ~2, q/k norms ~1.4 sqrt(sharp)); Phi-3's hold w ~ 1.
    Gemma's embedding rows have RMS 3 / sqrt(d), so the tied logits spread as the untied ones and
    the residual stream is not its input token alone."""
    d, inner = cfg["hidden_size"], cfg["intermediate_size"]
    nh, hd = cfg["num_attention_heads"], head_dim(cfg)
    gemma = cfg["model_type"] in GEMMA
    qk = 1.4 * math.sqrt(sharp) / math.sqrt(d)
    out = {}
    for i, (name, shape) in enumerate(tensor_shapes(cfg).items()):
        key = [seed, i]
        if name.endswith("norm.weight"):
            if "q_norm" in name or "k_norm" in name:
                out[name] = Lazy(shape, key, 0.1, 1.4 * math.sqrt(sharp) - 1.0)
            elif gemma and ("post_attention" in name or "post_feedforward" in name):
                out[name] = Lazy(shape, key, 0.1, 1.0)  # additions of RMS ~2: the embedding does not dominate
            else:
                out[name] = Lazy(shape, key, 0.1, 0.0 if gemma else 1.0)
        elif name.endswith(".bias"):
            out[name] = Lazy(shape, key, 0.3)
        elif any(n in name for n in ("q_proj", "k_proj", "qkv_proj")):
            out[name] = Lazy(shape, key, qk)
        elif "v_proj" in name or "gate_proj" in name or "up_proj" in name:
            out[name] = Lazy(shape, key, 1.0 / math.sqrt(d))
        elif "o_proj" in name:
            out[name] = Lazy(shape, key, 0.6 / math.sqrt(nh * hd))
        elif "down_proj" in name:
            out[name] = Lazy(shape, key, 0.6 / math.sqrt(inner))
        elif name == "model.embed_tokens.weight":  # Gemma's rows times sqrt(d) have RMS 3
            out[name] = Lazy(shape, key, 3.0 / math.sqrt(d) if gemma else 0.5)
        elif name == "lm_head.weight":
            out[name] = Lazy(shape, key, 3.0 / math.sqrt(d))
        else:
            raise AssertionError(name)
    return out


# --- files ---------------------------------------------------------------------------------------

def write_folder(folder, family, cfg, weights, tokenizer_dir, dtype="F32", shards=1, config_form="v4"):
    """A Hugging Face model folder. weights: {name: float32 array or Lazy}, written in that order
    (pass what tensor_shapes(cfg) names, or a deliberately broken variant of it)."""
    lc.write_configs(folder, family, cfg, config_json(cfg, dtype, config_form), config_form)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(tokenizer_dir, name), os.path.join(folder, name))
    lc.write_weights(folder, weights, dtype, shards)


# --- forward pass --------------------------------------------------------------------------------

Forward = namedtuple("Forward", "attentions kv_heads logits probs")


def gemma_rms_norm(x, w, eps):
    """x: [..., n]; w: [n]. x / sqrt(mean(x^2) + eps) * (1 + w) over the last axis."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * (1.0 + w)


def norm(cfg, x, w):
    """The family's RMSNorm: Gemma's (1 + w), Phi-3's w (llama_checkpoint.rms_norm)."""
    if cfg["model_type"] in GEMMA:
        return gemma_rms_norm(x, w, cfg["rms_norm_eps"])
    return lc.rms_norm(x, w, cfg["rms_norm_eps"])


def gelu_tanh(x):
    """gelu_pytorch_tanh: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def softcap(x, cap):
    """tanh(x / cap) * cap, or x when cap is None."""
    return x if cap is None else np.tanh(x / cap) * cap


def default_inv_freq(base, dim):
    """[dim / 2]: 1 / base^(2i / dim)."""
    return 1.0 / float(base) ** (np.arange(0, dim, 2, dtype=np.int64).astype(np.float64) / dim)


def longrope(cfg, t):
    """(inv_freq [rotary_dim / 2], attention_factor, "short" or "long") of Phi-3's longrope for T = t."""
    s, dim, old = cfg["rope_scaling"], rotary_dim(cfg), cfg["original_max_position_embeddings"]
    for name in ("short_factor", "long_factor"):
        if len(s[name]) != dim // 2:
            raise ValueError(f"{name}: {len(s[name])} values for rotary_dim {dim}")
    ratio = cfg["max_position_embeddings"] / old
    factor = s.get("attention_factor")
    if factor is None:
        factor = 1.0 if ratio <= 1.0 else math.sqrt(1.0 + math.log(ratio) / math.log(old))
    which = "long" if t > old else "short"
    ext = np.asarray(s[which + "_factor"], np.float64)
    return default_inv_freq(cfg["rope_theta"], dim) / ext, factor, which


def layer_rope(cfg, layer, t):
    """(inv_freq [rotary_dim / 2], attention_scaling) of one layer for a sequence of t tokens."""
    family, kind = cfg["model_type"], rope_type(cfg)
    if family == "gemma3_text" and layer_types(cfg)[layer] == SLIDING:
        return default_inv_freq(cfg["rope_local_base_freq"], head_dim(cfg)), 1.0
    if family == "phi3" and kind == "longrope":
        freqs, factor, _ = longrope(cfg, t)
        return freqs, factor
    base = default_inv_freq(cfg["rope_theta"], rotary_dim(cfg))
    if kind == "default":
        return base, 1.0
    if kind == "linear" and family in GEMMA:
        return base / cfg["rope_scaling"]["factor"], 1.0
    raise ValueError(f"rope type {kind!r} is not modelled for {family}")


def rope(x, positions, freqs, scaling=1.0):
    """x: [T, n, D]. The first 2 * len(freqs) dims turned (llama_checkpoint.rope) and times scaling
    (cos and sin both carry it), the rest passed through."""
    r = 2 * len(freqs)
    return np.concatenate([scaling * lc.rope(x[..., :r], positions, freqs), x[..., r:]], axis=-1)


def embeddings(w, cfg, ids):
    """[T, d]: the embedding rows, times sqrt(hidden_size) for Gemma."""
    x = np.asarray(w["model.embed_tokens.weight"], np.float64)[np.asarray(ids)]
    return x * math.sqrt(cfg["hidden_size"]) if cfg["model_type"] in GEMMA else x


def forward(weights, cfg, ids, zero=(), mean=(), hide=()):
    """float64. weights: {name: array} as the file holds them (see stored()); ids: [T].
    Returns Forward(attentions [L, H, T, T], kv_heads [H], logits [vocab] and probs [vocab] of the
    last position). What-if hooks as llama_checkpoint.forward's: zero, mean: (layer, head) pairs whose
    outputs (before o_proj) are zeroed or replaced by their mean over the positions; hide: positions
    no query reads."""
    w = {k: np.asarray(v, np.float64) for k, v in weights.items()}
    family = cfg["model_type"]
    gemma = family in GEMMA
    nh, kv, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], head_dim(cfg)
    kv_heads = [h // (nh // kv) for h in range(nh)]
    t = len(ids)
    scale = cfg["query_pre_attn_scalar"] ** -0.5 if gemma else d ** -0.5
    cap = cfg["attn_logit_softcapping"] if family == "gemma2" else None
    windows = layer_windows(cfg)
    x = embeddings(w, cfg, ids)
    attentions = []
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        # 1. attention input: norm, projections, (Gemma 3) per-head q/k norms, RoPE
        a = norm(cfg, x, w[p + "input_layernorm.weight"])
        if family == "phi3":
            qkv = a @ w[p + "self_attn.qkv_proj.weight"].T
            q, k, v = np.split(qkv, [nh * d, (nh + kv) * d], axis=1)
        else:
            q, k, v = (a @ w[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
            if cfg["attention_bias"]:
                q, k, v = (m + w[p + f"self_attn.{n}_proj.bias"] for m, n in zip((q, k, v), "qkv"))
        q, k, v = q.reshape(t, nh, d), k.reshape(t, kv, d), v.reshape(t, kv, d)
        if family == "gemma3_text":
            q = gemma_rms_norm(q, w[p + "self_attn.q_norm.weight"], cfg["rms_norm_eps"])
            k = gemma_rms_norm(k, w[p + "self_attn.k_norm.weight"], cfg["rms_norm_eps"])
        freqs, scaling = layer_rope(cfg, l, t)
        q, k = rope(q, np.arange(t), freqs, scaling), rope(k, np.arange(t), freqs, scaling)
        # 2. per head: scaled scores, (Gemma 2) soft-cap, mask (the window, the hidden keys), stable softmax,
        # weighted values
        keys = lc.attention_mask(t, windows[l])
        keys[:, list(hide)] = False
        heads, outs = [], []
        for h in range(nh):
            att = lc.masked_softmax(softcap((q[:, h] @ k[:, kv_heads[h]].T) * scale, cap), keys)
            heads.append(att)
            outs.append(lc.ablate(att @ v[:, kv_heads[h]], l, h, zero, mean))
        attentions.append(heads)
        o = np.concatenate(outs, axis=1) @ w[p + "self_attn.o_proj.weight"].T
        if gemma and cfg["attention_bias"]:
            o = o + w[p + "self_attn.o_proj.bias"]
        # 3. residuals and the gated MLP: Gemma's sandwich norms, Phi-3's pre-norm
        if gemma:
            x = x + norm(cfg, o, w[p + "post_attention_layernorm.weight"])
            b = norm(cfg, x, w[p + "pre_feedforward_layernorm.weight"])
            m = (gelu_tanh(b @ w[p + "mlp.gate_proj.weight"].T) * (b @ w[p + "mlp.up_proj.weight"].T)) \
                @ w[p + "mlp.down_proj.weight"].T
            x = x + norm(cfg, m, w[p + "post_feedforward_layernorm.weight"])
        else:
            x = x + o
            b = norm(cfg, x, w[p + "post_attention_layernorm.weight"])
            gate, up = np.split(b @ w[p + "mlp.gate_up_proj.weight"].T, 2, axis=1)
            x = x + (up * (gate / (1.0 + np.exp(-gate)))) @ w[p + "mlp.down_proj.weight"].T
    final = norm(cfg, x[-1], w["model.norm.weight"])
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    logits = softcap(head @ final, cfg.get("final_logit_softcapping"))
    e = np.exp(logits - logits.max())
    return Forward(np.array(attentions), kv_heads, logits, e / e.sum())


entropy_range = lc.entropy_range


# --- presets and the command line ----------------------------------------------------------------

def _phi4_factors(n):
    """Deterministic longrope factor lists of Phi-4-mini's length (not its values): short near 1,
    long rising from 1 to ~60 as the wavelengths grow."""
    i = np.arange(n, dtype=np.float64) / max(n - 1, 1)
    return [float(1.0 + 0.05 * v) for v in i], [float(1.0 + 59.0 * v ** 2) for v in i]


_SHORT, _LONG = _phi4_factors(48)
PRESETS = {
    # real shapes; Gemma 2's vocabulary widened to Gemma 3's 262,144 tokens, the tokenizer the tests fetch
    "gemma-2-2b": dict(family="gemma2", hidden_size=2304, intermediate_size=9216, num_hidden_layers=26,
                       num_attention_heads=8, num_key_value_heads=4, head_dim=256, vocab_size=262144,
                       query_pre_attn_scalar=256, sliding_window=4096, attn_logit_softcapping=50.0,
                       final_logit_softcapping=30.0, max_position_embeddings=8192),
    "gemma-3-1b": dict(family="gemma3_text", hidden_size=1152, intermediate_size=6912, num_hidden_layers=26,
                       num_attention_heads=4, num_key_value_heads=1, head_dim=256, vocab_size=262144,
                       query_pre_attn_scalar=256, sliding_window=512, sliding_window_pattern=6,
                       max_position_embeddings=32768),
    "gemma-3-270m": dict(family="gemma3_text", hidden_size=640, intermediate_size=2048, num_hidden_layers=18,
                         num_attention_heads=4, num_key_value_heads=1, head_dim=256, vocab_size=262144,
                         query_pre_attn_scalar=256, sliding_window=512, sliding_window_pattern=6,
                         max_position_embeddings=32768),
    "phi-3-mini-4k": dict(family="phi3", hidden_size=3072, intermediate_size=8192, num_hidden_layers=32,
                          num_attention_heads=32, num_key_value_heads=32, vocab_size=32064, sliding_window=2047,
                          max_position_embeddings=4096, original_max_position_embeddings=4096),
    "phi-4-mini": dict(family="phi3", hidden_size=3072, intermediate_size=8192, num_hidden_layers=32,
                       num_attention_heads=24, num_key_value_heads=8, vocab_size=200064, partial_rotary_factor=0.75,
                       tie_word_embeddings=True, max_position_embeddings=131072, original_max_position_embeddings=4096,
                       sliding_window=262144, bos_token_id=199999, eos_token_id=199999, pad_token_id=199999,
                       rope_scaling={"type": "longrope", "short_factor": _SHORT, "long_factor": _LONG}),
}


def main(argv):
    return lc.command_line(argv, sys.modules[__name__], "gemma_checkpoint_selftest", "gemma-3-1b")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
