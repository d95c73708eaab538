#!/usr/bin/env python3
"""Tiny BERT checkpoints in Hugging Face's exact layout, and an independent float64 forward pass of
BERT, masked-language-model head included.

Usage as a module:
    cfg = config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
    weights = random_weights(cfg, seed)                  # {name: Lazy}: float32, made per tensor on demand
    write_folder(folder, cfg, weights, vocab_path, tokenizer="json", dtype="BF16", shards=3)
    ref = forward(stored(weights, "BF16"), cfg, ids)     # attentions [L, H, T, T], hidden [T, d], logits [T, V]
Usage as a script:
    bert_checkpoint.py --self-test       checks the definitions below against hand-computed values
    bert_checkpoint.py --write DIR --vocab VOCAB_TXT [--preset bert-base-uncased] [--dtype BF16]
                       [--tokenizer vocab|json] [--shards N] [--seed N]

config() is config.json's dict as transformers 4.x saves a BertConfig (model_type "bert",
architectures, hidden_act, layer_norm_eps, position_embedding_type, type_vocab_size, torch_dtype,
...); tie_word_embeddings=None leaves the field out, as save_pretrained does for its default (true).
The tensors are named and shaped as the architecture's safetensors (nn.Linear stores [out, in]):
  BertForMaskedLM     bert.embeddings.*, bert.encoder.layer.N.*, the MLM head cls.predictions.*
  BertForPreTraining  the same, and bert.pooler.dense.* and the next-sentence head cls.seq_relationship.*
  BertModel           embeddings.*, encoder.layer.N.*, pooler.dense.*: no "bert." prefix, no head
Tied (the default), save_pretrained drops cls.predictions.decoder.weight (the word embeddings) and
cls.predictions.decoder.bias (the same tensor as cls.predictions.bias, which is kept); untied,
cls.predictions.decoder.weight [V, d] is written. The folder holds config.json, model.safetensors
or model-0000K-of-0000N shards with model.safetensors.index.json (llama_checkpoint's writer: F32,
F16 or BF16, streamed), and the tokenizer: vocab.txt + tokenizer_config.json (BertTokenizer,
do_lower_case), or bert-base-uncased's tokenizer.json + tokenizer_config.json (bert_vocab.py).

forward() is written from transformers' modeling_bert (BertEmbeddings, BertSelfAttention,
BertSelfOutput, BertIntermediate, BertOutput, BertPredictionHeadTransform, BertLMPredictionHead)
and activations (ACT2FN), in float64, on the values the file holds:
    x = LN(word[ids] + position[0 .. T) + token_type[type_ids])        LN(x) = w (x - mean) / sqrt(var + eps) + b
    per layer: q, k, v = x Wq^T + bq, x Wk^T + bk, x Wv^T + bv          [T, H, D], D = hidden / heads
               A = softmax(q k^T / sqrt(D)) per head: no mask, every query reads every key
               x = LN(concat_h(A v) Wo^T + bo + x)                      (attention.output.LayerNorm)
               x = LN(act(x Wi^T + bi) Wout^T + bout + x)               (output.LayerNorm)
    logits = LN(act(x Wt^T + bt)) E^T + cls.predictions.bias  (every position; E = the word
             embeddings when tied, else cls.predictions.decoder.weight; act = hidden_act here too)
act: "gelu" = x Phi(x) with erf (GELUActivation), "gelu_new" = the tanh form (NewGELUActivation),
"relu". The what-if hooks are attnviz's: zero / mean (layer, head) pairs whose A v is zeroed or
replaced by its mean over the positions before the output dense, and hide: key positions no query
of any layer reads (their scores -inf; a query left with no key reads nothing). Standard library
and numpy only.
"""

import json
import math
import os
import shutil
import sys
import zlib
from collections import namedtuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bert_vocab  # noqa: E402
import llama_checkpoint as lc  # noqa: E402

# llama_checkpoint's, as they are: the lazily made tensors, the F16 / BF16 encoding and widening,
# what a checkpoint of a dtype holds, reading a file back, shard names, the maps' entropies
Lazy, encode, widen, stored, materialize = lc.Lazy, lc.encode, lc.widen, lc.stored, lc.materialize
read_safetensors, shard_names, entropy_range = lc.read_safetensors, lc.shard_names, lc.entropy_range

ARCHITECTURES = ("BertForMaskedLM", "BertForPreTraining", "BertModel")
ACTIVATIONS = ("gelu", "gelu_new", "relu")
DTYPE_NAMES = lc.DTYPE_NAMES
CLS, SEP, MASK, PAD, UNK = 101, 102, 103, 0, 100


# --- configuration -------------------------------------------------------------------------------

def config(hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, hidden_act="gelu", vocab_size=30522,
           max_position_embeddings=64, type_vocab_size=2, layer_norm_eps=1e-12, architecture="BertForMaskedLM",
           tie_word_embeddings=True, position_embedding_type="absolute", pad_token_id=0, torch_dtype="float32"):
    """config.json's dict, as transformers 4.x saves a BertConfig (keys sorted). tie_word_embeddings
    None leaves the field out (save_pretrained writes it only when it differs from true)."""
    if architecture not in ARCHITECTURES:
        raise ValueError(f"architecture {architecture!r}: expected one of {ARCHITECTURES}")
    c = {"architectures": [architecture], "attention_probs_dropout_prob": 0.1, "classifier_dropout": None,
         "hidden_act": hidden_act, "hidden_dropout_prob": 0.1, "hidden_size": hidden_size, "initializer_range": 0.02,
         "intermediate_size": intermediate_size, "layer_norm_eps": layer_norm_eps,
         "max_position_embeddings": max_position_embeddings, "model_type": "bert",
         "num_attention_heads": num_attention_heads, "num_hidden_layers": num_hidden_layers, "pad_token_id": pad_token_id,
         "position_embedding_type": position_embedding_type, "torch_dtype": torch_dtype,
         "transformers_version": "4.51.3", "type_vocab_size": type_vocab_size, "use_cache": True,
         "vocab_size": vocab_size}
    if tie_word_embeddings is not None:
        c["tie_word_embeddings"] = tie_word_embeddings
    return dict(sorted(c.items()))


def architecture(cfg):
    return cfg["architectures"][0]


def tied(cfg):
    """Whether the MLM head's decoder is the word embeddings (config.json's default: true)."""
    return bool(cfg.get("tie_word_embeddings", True))


def has_mlm_head(cfg):
    return architecture(cfg) != "BertModel"


def prefix(cfg):
    """"bert." for the models with heads (BertForMaskedLM, BertForPreTraining), "" for BertModel."""
    return "" if architecture(cfg) == "BertModel" else "bert."


def head_dim(cfg):
    return cfg["hidden_size"] // cfg["num_attention_heads"]


def tensor_shapes(cfg):
    """{name: shape} in the order written: embeddings, layers, pooler, MLM head, next-sentence head."""
    d, inner, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    arch, p = architecture(cfg), prefix(cfg)
    s = {p + "embeddings.word_embeddings.weight": (v, d),
         p + "embeddings.position_embeddings.weight": (cfg["max_position_embeddings"], d),
         p + "embeddings.token_type_embeddings.weight": (cfg["type_vocab_size"], d),
         p + "embeddings.LayerNorm.weight": (d,), p + "embeddings.LayerNorm.bias": (d,)}
    for l in range(cfg["num_hidden_layers"]):
        e = f"{p}encoder.layer.{l}."
        for n in ("query", "key", "value"):
            s[e + f"attention.self.{n}.weight"] = (d, d)
            s[e + f"attention.self.{n}.bias"] = (d,)
        s[e + "attention.output.dense.weight"] = (d, d)
        s[e + "attention.output.dense.bias"] = (d,)
        s[e + "attention.output.LayerNorm.weight"] = (d,)
        s[e + "attention.output.LayerNorm.bias"] = (d,)
        s[e + "intermediate.dense.weight"] = (inner, d)
        s[e + "intermediate.dense.bias"] = (inner,)
        s[e + "output.dense.weight"] = (d, inner)
        s[e + "output.dense.bias"] = (d,)
        s[e + "output.LayerNorm.weight"] = (d,)
        s[e + "output.LayerNorm.bias"] = (d,)
    if arch in ("BertForPreTraining", "BertModel"):
        s[p + "pooler.dense.weight"] = (d, d)
        s[p + "pooler.dense.bias"] = (d,)
    if has_mlm_head(cfg):
        s["cls.predictions.bias"] = (v,)
        s["cls.predictions.transform.dense.weight"] = (d, d)
        s["cls.predictions.transform.dense.bias"] = (d,)
        s["cls.predictions.transform.LayerNorm.weight"] = (d,)
        s["cls.predictions.transform.LayerNorm.bias"] = (d,)
        if not tied(cfg):
            s["cls.predictions.decoder.weight"] = (v, d)
    if arch == "BertForPreTraining":
        s["cls.seq_relationship.weight"] = (2, d)
        s["cls.seq_relationship.bias"] = (2,)
    return s


# --- weights -------------------------------------------------------------------------------------

def random_weights(cfg, seed, sharp=1.0):
    """{name: Lazy}. Each tensor's values depend on the seed and its name without the "bert." prefix,
    so a BertModel and a BertForMaskedLM of one seed share their encoder. Scales keep the scores
    q.k/sqrt(D) at a standard deviation of about 2 * sharp (x is layer-normed, so about unit
    variance), heads neither uniform nor one-hot (see the self-test), and the MLM logits at about
    2.8; LayerNorm gains N(1, 0.15^2), every bias nonzero."""
    d, inner = cfg["hidden_size"], cfg["intermediate_size"]
    qk = 1.4 * math.sqrt(sharp) / math.sqrt(d)
    emb = 2.8 / math.sqrt(d)  # the MLM logits' standard deviation about 2.8 whatever the width
    out = {}
    for name, shape in tensor_shapes(cfg).items():
        base = name[len("bert."):] if name.startswith("bert.") else name
        key = [seed, zlib.crc32(base.encode())]
        if "LayerNorm.weight" in name:
            out[name] = Lazy(shape, key, 0.15, 1.0)
        elif "LayerNorm.bias" in name:
            out[name] = Lazy(shape, key, 0.1)
        elif name.endswith("embeddings.weight") or name == "cls.predictions.decoder.weight":
            out[name] = Lazy(shape, key, emb)
        elif name == "cls.predictions.bias":
            out[name] = Lazy(shape, key, 0.5)
        elif name.endswith(".bias"):
            out[name] = Lazy(shape, key, 0.3)
        elif ".query." in name or ".key." in name:
            out[name] = Lazy(shape, key, qk)
        elif "attention.output.dense" in name:
            out[name] = Lazy(shape, key, 0.8 / math.sqrt(d))
        elif ".output.dense" in name:
            out[name] = Lazy(shape, key, 0.8 / math.sqrt(inner))
        else:  # value, intermediate, pooler, transform, seq_relationship
            out[name] = Lazy(shape, key, 1.0 / math.sqrt(d))
    return out


# --- files ---------------------------------------------------------------------------------------

def write_weights(folder, weights, dtype="F32", shards=1):
    """model.safetensors, or `shards` files and model.safetensors.index.json (llama_checkpoint's
    writer and split), the tensors in the order given."""
    if shards == 1:
        lc.write_safetensors(os.path.join(folder, "model.safetensors"), weights, dtype, {"format": "pt"})
        return
    total, weight_map = 0, {}
    for file, group in zip(shard_names(shards), lc.split_shards(weights, dtype, shards)):
        total += lc.write_safetensors(os.path.join(folder, file), {k: weights[k] for k in group}, dtype, {"format": "pt"})
        weight_map.update({k: file for k in group})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2, sort_keys=True)
        f.write("\n")


def tokenizer_config():
    """tokenizer_config.json as a BertTokenizer of bert-base-uncased saves it."""
    return dict(bert_vocab.TOKENIZER_CONFIG, model_max_length=512, clean_up_tokenization_spaces=True,
                strip_accents=None, tokenize_chinese_chars=True)


def write_folder(folder, cfg, weights, vocab_path, tokenizer="vocab", dtype="F32", shards=1):
    """A Hugging Face BERT folder. weights: {name: float32 array or Lazy}, written in that order (pass
    what tensor_shapes(cfg) names, or a deliberately broken variant of it); vocab_path: a vocab.txt.
    tokenizer "vocab": vocab.txt + tokenizer_config.json; "json": tokenizer.json (bert-base-uncased's
    form over that vocabulary) + tokenizer_config.json; None: no tokenizer at all.
    config.json's torch_dtype is the dtype written."""
    os.makedirs(folder, exist_ok=True)
    c = dict(cfg, torch_dtype=DTYPE_NAMES[dtype])
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
        f.write("\n")
    if tokenizer == "vocab":
        shutil.copyfile(vocab_path, os.path.join(folder, "vocab.txt"))
    elif tokenizer == "json":
        tokens, _ = bert_vocab.read_vocab(vocab_path)
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(bert_vocab.tokenizer_json(tokens), f, ensure_ascii=False)
    elif tokenizer is not None:
        raise ValueError(f"tokenizer {tokenizer!r}: expected vocab, json or None")
    if tokenizer is not None:
        with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
            json.dump(tokenizer_config(), f, indent=2)
            f.write("\n")
    write_weights(folder, weights, dtype, shards)


# --- forward pass --------------------------------------------------------------------------------

Forward = namedtuple("Forward", "attentions hidden logits")

_erf = np.vectorize(math.erf, otypes=[np.float64])


def layer_norm(x, w, b, eps):
    """nn.LayerNorm over the last axis: w (x - mean) / sqrt(var + eps) + b, the variance biased (/ n)."""
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return w * ((x - mu) / np.sqrt(var + eps)) + b


def gelu(x):
    """GELUActivation: x Phi(x) = x (1 + erf(x / sqrt 2)) / 2, exact (math.erf)."""
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def gelu_new(x):
    """NewGELUActivation: x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2."""
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def relu(x):
    return np.maximum(np.asarray(x, np.float64), 0.0)


def activation(name):
    fns = {"gelu": gelu, "gelu_new": gelu_new, "relu": relu}
    if name not in fns:
        raise ValueError(f"hidden_act {name!r} is not modelled here (expected one of {ACTIVATIONS})")
    return fns[name]


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def weights_prefix(weights):
    """"bert." when the names carry it (a model with heads), else "" (BertModel)."""
    return "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""


def forward(weights, cfg, ids, type_ids=None, zero=(), mean=(), hide=()):
    """float64. weights: {name: array} as the file holds them (see stored()); ids: [T]; type_ids: [T]
    (None: all 0, as BertEmbeddings' buffer). Returns Forward(attentions [L, H, T, T], hidden [T, d]
    (the last layer's output), logits [T, V] of every position, or None without an MLM head).
    The what-if hooks: zero, mean: (layer, head) pairs whose A v is zeroed or replaced by its mean
    over the positions before the output dense; hide: key positions no query reads in any layer."""
    w = {k: np.asarray(v, np.float64) for k, v in weights.items()}
    p, eps = weights_prefix(w), cfg["layer_norm_eps"]
    nh, d = cfg["num_attention_heads"], head_dim(cfg)
    if cfg.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"position_embedding_type {cfg['position_embedding_type']!r} is not modelled here")
    act = activation(cfg["hidden_act"])
    ids = np.asarray(ids, np.int64)
    t = len(ids)
    if t > cfg["max_position_embeddings"]:
        raise ValueError(f"{t} tokens, max_position_embeddings {cfg['max_position_embeddings']}")
    types = np.zeros(t, np.int64) if type_ids is None else np.asarray(type_ids, np.int64)
    # 1. embeddings: word + token type + absolute position, then LayerNorm
    x = (w[p + "embeddings.word_embeddings.weight"][ids] + w[p + "embeddings.token_type_embeddings.weight"][types]
         + w[p + "embeddings.position_embeddings.weight"][np.arange(t)])
    x = layer_norm(x, w[p + "embeddings.LayerNorm.weight"], w[p + "embeddings.LayerNorm.bias"], eps)
    open_keys = np.ones((t, t), bool)
    if hide:
        open_keys[:, list(hide)] = False
    attentions = []
    for l in range(cfg["num_hidden_layers"]):
        e = f"{p}encoder.layer.{l}."
        # 2. self-attention: projections with biases, per-head scores over every key
        q, k, v = (x @ w[e + f"attention.self.{n}.weight"].T + w[e + f"attention.self.{n}.bias"]
                   for n in ("query", "key", "value"))
        q, k, v = q.reshape(t, nh, d), k.reshape(t, nh, d), v.reshape(t, nh, d)
        heads, outs = [], []
        for h in range(nh):
            s = (q[:, h] @ k[:, h].T) / math.sqrt(d)
            if hide:
                s = np.where(open_keys, s, -np.inf)
                top = s.max(axis=1, keepdims=True)
                ex = np.where(open_keys, np.exp(s - np.where(np.isfinite(top), top, 0.0)), 0.0)
                total = ex.sum(axis=1, keepdims=True)
                att = np.divide(ex, total, out=np.zeros_like(ex), where=total > 0)
            else:
                att = softmax(s)
            heads.append(att)
            out = att @ v[:, h]
            if (l, h) in zero:
                out = np.zeros_like(out)
            elif (l, h) in mean:
                out = np.broadcast_to(out.mean(axis=0, keepdims=True), out.shape)
            outs.append(out)
        attentions.append(heads)
        # 3. BertSelfOutput: dense, residual, LayerNorm
        a = np.concatenate(outs, axis=1) @ w[e + "attention.output.dense.weight"].T + w[e + "attention.output.dense.bias"]
        x = layer_norm(a + x, w[e + "attention.output.LayerNorm.weight"], w[e + "attention.output.LayerNorm.bias"], eps)
        # 4. BertIntermediate and BertOutput: dense, act, dense, residual, LayerNorm
        hmid = act(x @ w[e + "intermediate.dense.weight"].T + w[e + "intermediate.dense.bias"])
        y = hmid @ w[e + "output.dense.weight"].T + w[e + "output.dense.bias"]
        x = layer_norm(y + x, w[e + "output.LayerNorm.weight"], w[e + "output.LayerNorm.bias"], eps)
    logits = None
    if "cls.predictions.bias" in w:
        # 5. the MLM head: transform (dense, act, LayerNorm), then the decoder and its bias
        tr = act(x @ w["cls.predictions.transform.dense.weight"].T + w["cls.predictions.transform.dense.bias"])
        tr = layer_norm(tr, w["cls.predictions.transform.LayerNorm.weight"], w["cls.predictions.transform.LayerNorm.bias"], eps)
        decoder = w[p + "embeddings.word_embeddings.weight"] if tied(cfg) else w["cls.predictions.decoder.weight"]
        logits = tr @ decoder.T + w["cls.predictions.bias"]
    return Forward(np.array(attentions), x, logits)


def predicted_position(ids):
    """The position of the first [MASK] (103), or None."""
    ids = list(ids)
    return ids.index(MASK) if MASK in ids else None


def mask_probs(ref, ids):
    """softmax of the MLM logits at the first [MASK], or None (no [MASK] or no head)."""
    pos = predicted_position(ids)
    if pos is None or ref.logits is None:
        return None
    return softmax(ref.logits[pos])


PRESETS = {
    # bert-base-uncased's shapes: 12 layers of 12 heads, hidden 768, 512 positions, tied
    "bert-base-uncased": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                              max_position_embeddings=512),
}


def main(argv):
    if argv[:1] == ["--self-test"]:
        import bert_checkpoint_selftest
        return bert_checkpoint_selftest.run()
    if argv[:1] == ["--write"] and len(argv) >= 2:
        args = dict(zip(argv[2::2], argv[3::2]))
        cfg = config(**PRESETS[args.get("--preset", "bert-base-uncased")])
        write_folder(argv[1], cfg, random_weights(cfg, int(args.get("--seed", "1"))), args["--vocab"],
                     tokenizer=args.get("--tokenizer", "vocab"), dtype=args.get("--dtype", "BF16"),
                     shards=int(args.get("--shards", "1")))
        return 0
    print(__doc__.split("\n\n")[1])
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
