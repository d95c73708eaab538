#!/usr/bin/env python3
"""Tiny BERT, DistilBERT, RoBERTa and ModernBERT checkpoints in Hugging Face's exact layout, and an
independent float64 forward pass of those encoders, masked-language-model head included.

Usage as a module:
    cfg = config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
    (or distilbert_config(dim=32, n_layers=2, n_heads=4, hidden_dim=128), roberta_config(32, 2, 4, 128),
    modernbert_config(32, 6, 4, 48, local_attention=8, config_form="v5"))
    weights = random_weights(cfg, seed)                  # {name: Lazy}: float32, made per tensor on demand
    write_folder(folder, cfg, weights, vocab_path, tokenizer="json", dtype="BF16", shards=3)
    ref = forward(stored(weights, "BF16"), cfg, ids)     # attentions [L, H, T, T], hidden [T, d], logits [T, V]
Usage as a script:
    bert_checkpoint.py --self-test       checks the definitions below against hand-computed values
    bert_checkpoint.py --write DIR --vocab VOCAB [--preset bert-base-uncased|distilbert-base-uncased|
                       roberta-base|modernbert-base] [--dtype BF16] [--tokenizer vocab|json] [--shards N]
                       [--seed N]
    (VOCAB: a vocab.txt; for roberta-base, roberta_vocab.files' folder; for modernbert-base,
    modernbert_vocab.files' folder, tokenizer.json alone)

config() is config.json's dict as transformers 4.x saves a BertConfig (model_type "bert",
architectures, hidden_act, layer_norm_eps, position_embedding_type, type_vocab_size, torch_dtype,
...); distilbert_config() a DistilBertConfig's (model_type "distilbert": dim, n_layers, n_heads,
hidden_dim, activation, sinusoidal_pos_embds, tie_weights_; no token types, every LayerNorm's eps
1e-12 fixed in the code); roberta_config() a RobertaConfig's (model_type "roberta": BertConfig's keys,
pad_token_id 1, type_vocab_size 1, layer_norm_eps 1e-5, max_position_embeddings 514 in roberta-base);
modernbert_config() a ModernBertConfig's (model_type "modernbert": hidden_activation, norm_eps,
norm_bias, attention_bias, mlp_bias, decoder_bias, classifier_bias, classifier_activation,
local_attention, global_attn_every_n_layers; transformers 4's global_rope_theta / local_rope_theta
and torch_dtype, or 5's rope_parameters per layer type, layer_types and dtype).
tie_word_embeddings=None leaves the field out, as save_pretrained does for its default (true); the
family's accessors (width, n_layers, n_heads, inner_size, hidden_act, head_act, layer_norm_eps,
position_offset, max_tokens, prefix, tied; ModernBERT's layer_types, rope_theta, window, visible)
read any of the four. The tensors are named and shaped as the architecture's safetensors (nn.Linear
stores [out, in]):
  BertForMaskedLM        bert.embeddings.*, bert.encoder.layer.N.*, the MLM head cls.predictions.*
  BertForPreTraining     the same, and bert.pooler.dense.* and the next-sentence head cls.seq_relationship.*
  BertModel              embeddings.*, encoder.layer.N.*, pooler.dense.*: no "bert." prefix, no head
  DistilBertForMaskedLM  distilbert.embeddings.{word_embeddings,position_embeddings,LayerNorm}.*,
                         distilbert.transformer.layer.N.attention.{q_lin,k_lin,v_lin,out_lin}.*,
                         .sa_layer_norm.*, .ffn.lin1.* [hidden_dim, dim], .ffn.lin2.* [dim, hidden_dim],
                         .output_layer_norm.*; the head vocab_transform.* [dim, dim], vocab_layer_norm.*,
                         vocab_projector.bias [V] (and vocab_projector.weight [V, dim] when untied)
  DistilBertModel        embeddings.*, transformer.layer.N.*: no "distilbert." prefix, no head
  RobertaForMaskedLM     roberta.embeddings.*, roberta.encoder.layer.N.* (BERT's names; no pooler), the head
                         lm_head.dense.*, lm_head.layer_norm.*, lm_head.bias [V] (the same parameter as
                         lm_head.decoder.bias; head_bias=("lm_head.decoder.bias",) writes that name
                         instead), lm_head.decoder.weight [V, d] when untied
  RobertaModel           embeddings.*, encoder.layer.N.*, pooler.dense.*: no "roberta." prefix, no head
  ModernBertForMaskedLM  model.embeddings.tok_embeddings.weight [V, d], model.embeddings.norm.*,
                         model.layers.N.attn_norm.* (none in layer 0), .attn.Wqkv.* [3d, d] (q, k, v
                         stacked), .attn.Wo.* [d, d], .mlp_norm.*, .mlp.Wi.* [2 inner, d] (input, gate
                         stacked), .mlp.Wo.* [d, inner], model.final_norm.*; the head head.dense.* [d, d],
                         head.norm.*, decoder.bias [V], decoder.weight [V, d] when untied. A LayerNorm
                         has .bias only with norm_bias, Wqkv and attn.Wo with attention_bias, Wi and
                         mlp.Wo with mlp_bias, head.dense with classifier_bias, the decoder with decoder_bias
  ModernBertModel        embeddings.*, layers.N.*, final_norm.*: no "model." prefix, no head
Tied (the default), save_pretrained drops the decoder's weight (the word embeddings); BERT's and
RoBERTa's decoder bias is the same tensor as cls.predictions.bias / lm_head.bias, which is kept
under that name (DistilBERT's vocab_projector.bias is the projector's own). The folder holds
config.json, model.safetensors or model-0000K-of-0000N shards with model.safetensors.index.json
(llama_checkpoint's writer: F32, F16 or BF16, streamed), and the tokenizer: BERT and DistilBERT
vocab.txt + tokenizer_config.json (BertTokenizer / DistilBertTokenizer, do_lower_case), or
bert-base-uncased's tokenizer.json + tokenizer_config.json (bert_vocab.py); RoBERTa vocab.json +
merges.txt + tokenizer_config.json, or tokenizer.json + tokenizer_config.json (roberta_vocab.py);
ModernBERT tokenizer.json + tokenizer_config.json (modernbert_vocab.py).

forward() is written from transformers' modeling_bert (BertEmbeddings, BertSelfAttention,
BertSelfOutput, BertIntermediate, BertOutput, BertPredictionHeadTransform, BertLMPredictionHead),
modeling_distilbert (Embeddings, MultiHeadSelfAttention, FFN, TransformerBlock,
DistilBertForMaskedLM), modeling_roberta (RobertaEmbeddings, create_position_ids_from_input_ids,
RobertaLMHead) and activations (ACT2FN), in float64, on the values the file holds:
    x = LN(word[ids] + token_type[type_ids] + position[o .. o + T))     LN(x) = w (x - mean) / sqrt(var + eps) + b
        (DistilBERT: no token type; o = 0, RoBERTa's o = pad_token_id + 1: T <= max_position_embeddings - o)
    per layer: q, k, v = x Wq^T + bq, x Wk^T + bk, x Wv^T + bv          [T, H, D], D = hidden / heads
               A = softmax(q k^T / sqrt(D)) per head: no mask, every query reads every key
               x = LN(concat_h(A v) Wo^T + bo + x)                      (attention.output.LayerNorm; sa_layer_norm)
               x = LN(act(x Wi^T + bi) Wout^T + bout + x)               (output.LayerNorm; output_layer_norm)
    logits = LN(act'(x Wt^T + bt)) E^T + bias  (every position; E = the word embeddings when tied,
             else the decoder's weight; act' = act for BERT and DistilBERT, gelu (erf) for RoBERTa)
act: hidden_act (DistilBERT's activation): "gelu" = x Phi(x) with erf (GELUActivation), "gelu_new" =
the tanh form (NewGELUActivation), "relu". DistilBERT's position table is read as stored, also when
sinusoidal_pos_embds is true (random_weights then writes sinusoidal_table there). The what-if hooks
are attnviz's: zero / mean (layer, head) pairs whose A v is zeroed or replaced by its mean over the
positions before the output dense, and hide: key positions no query of any layer reads (their
scores -inf; a query left with no key reads nothing).
ModernBERT's forward is modernbert_forward (modeling_modernbert: ModernBertEmbeddings,
ModernBertAttention, ModernBertMLP, ModernBertEncoderLayer, ModernBertModel, ModernBertPredictionHead,
ModernBertForMaskedLM): pre-norm layers, RoPE, the local layers' window, a gated MLP; see there.
Standard library and numpy only.
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
DISTILBERT_ARCHITECTURES = ("DistilBertForMaskedLM", "DistilBertModel")
ROBERTA_ARCHITECTURES = ("RobertaForMaskedLM", "RobertaModel")
MODERNBERT_ARCHITECTURES = ("ModernBertForMaskedLM", "ModernBertModel")
HEADLESS = ("BertModel", "DistilBertModel", "RobertaModel", "ModernBertModel")  # the bare encoders: no prefix, no head
PREFIXES = {"bert": "bert.", "distilbert": "distilbert.", "roberta": "roberta.",
            "modernbert": "model."}  # model_type: the models with heads'
FAMILIES = tuple(PREFIXES)
ACTIVATIONS = ("gelu", "gelu_new", "relu")
DTYPE_NAMES = lc.DTYPE_NAMES
CLS, SEP, MASK, PAD, UNK = 101, 102, 103, 0, 100
DISTILBERT_EPS = 1e-12  # DistilBERT's LayerNorms: eps fixed in the code, not a config field


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


def distilbert_config(dim, n_layers, n_heads, hidden_dim, activation="gelu", vocab_size=30522, max_position_embeddings=64,
                      architecture="DistilBertForMaskedLM", tie_word_embeddings=None, sinusoidal_pos_embds=False,
                      pad_token_id=0, tie_weights_=True, torch_dtype="float32"):
    """config.json's dict as transformers 4.x saves a DistilBertConfig (distilbert-base-uncased's keys,
    sorted). tie_weights_ is the legacy key distilbert-base-uncased's file carries (true); transformers
    reads nothing from it: the head is tied by tie_word_embeddings (absent: true), as for any model.
    None leaves either field out."""
    if architecture not in DISTILBERT_ARCHITECTURES:
        raise ValueError(f"architecture {architecture!r}: expected one of {DISTILBERT_ARCHITECTURES}")
    c = {"activation": activation, "architectures": [architecture], "attention_dropout": 0.1, "dim": dim, "dropout": 0.1,
         "hidden_dim": hidden_dim, "initializer_range": 0.02, "max_position_embeddings": max_position_embeddings,
         "model_type": "distilbert", "n_heads": n_heads, "n_layers": n_layers, "pad_token_id": pad_token_id,
         "qa_dropout": 0.1, "seq_classif_dropout": 0.2, "sinusoidal_pos_embds": sinusoidal_pos_embds,
         "torch_dtype": torch_dtype, "transformers_version": "4.51.3", "vocab_size": vocab_size}
    if tie_weights_ is not None:
        c["tie_weights_"] = tie_weights_
    if tie_word_embeddings is not None:
        c["tie_word_embeddings"] = tie_word_embeddings
    return dict(sorted(c.items()))


def roberta_config(hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, hidden_act="gelu",
                   vocab_size=50265, max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5,
                   architecture="RobertaForMaskedLM", tie_word_embeddings=None, position_embedding_type="absolute",
                   pad_token_id=1, bos_token_id=0, eos_token_id=2, torch_dtype="float32"):
    """config.json's dict as transformers 4.x saves a RobertaConfig (roberta-base's keys, sorted):
    pad_token_id 1 (the position ids start after it), type_vocab_size 1, layer_norm_eps 1e-5."""
    if architecture not in ROBERTA_ARCHITECTURES:
        raise ValueError(f"architecture {architecture!r}: expected one of {ROBERTA_ARCHITECTURES}")
    c = {"architectures": [architecture], "attention_probs_dropout_prob": 0.1, "bos_token_id": bos_token_id,
         "classifier_dropout": None, "eos_token_id": eos_token_id, "hidden_act": hidden_act, "hidden_dropout_prob": 0.1,
         "hidden_size": hidden_size, "initializer_range": 0.02, "intermediate_size": intermediate_size,
         "layer_norm_eps": layer_norm_eps, "max_position_embeddings": max_position_embeddings, "model_type": "roberta",
         "num_attention_heads": num_attention_heads, "num_hidden_layers": num_hidden_layers, "pad_token_id": pad_token_id,
         "position_embedding_type": position_embedding_type, "torch_dtype": torch_dtype,
         "transformers_version": "4.51.3", "type_vocab_size": type_vocab_size, "use_cache": True,
         "vocab_size": vocab_size}
    if tie_word_embeddings is not None:
        c["tie_word_embeddings"] = tie_word_embeddings
    return dict(sorted(c.items()))


MODERNBERT_THETAS = {"global": 160000.0, "local": 10000.0}  # ModernBertConfig's defaults (ModernBERT-base's)


def modernbert_config(hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, hidden_activation="gelu",
                      vocab_size=50368, max_position_embeddings=8192, norm_eps=1e-5, norm_bias=False,
                      global_rope_theta=160000.0, local_rope_theta=10000.0, local_attention=128,
                      global_attn_every_n_layers=3, attention_bias=False, mlp_bias=False, decoder_bias=True,
                      classifier_bias=False, classifier_activation="gelu", architecture="ModernBertForMaskedLM",
                      tie_word_embeddings=None, pad_token_id=50283, bos_token_id=50281, eos_token_id=50282,
                      cls_token_id=50281, sep_token_id=50282, torch_dtype="float32", config_form="v4", layer_types=None):
    """config.json's dict as transformers saves a ModernBertConfig (ModernBERT-base's keys, sorted).
    config_form "v4": 4.x's (global_rope_theta, local_rope_theta, global_attn_every_n_layers,
    torch_dtype); "v5": 5.x's, where the two thetas become rope_parameters {"full_attention":
    {"rope_theta": global, "rope_type": "default"}, "sliding_attention": {... local ...}}, layer_types
    is written (made from global_attn_every_n_layers unless given) beside global_attn_every_n_layers,
    and torch_dtype is dtype. tie_word_embeddings None leaves the field out (true)."""
    if architecture not in MODERNBERT_ARCHITECTURES:
        raise ValueError(f"architecture {architecture!r}: expected one of {MODERNBERT_ARCHITECTURES}")
    c = {"architectures": [architecture], "attention_bias": attention_bias, "attention_dropout": 0.0,
         "bos_token_id": bos_token_id, "classifier_activation": classifier_activation, "classifier_bias": classifier_bias,
         "classifier_dropout": 0.0, "classifier_pooling": "cls", "cls_token_id": cls_token_id, "decoder_bias": decoder_bias,
         "deterministic_flash_attn": False, "embedding_dropout": 0.0, "eos_token_id": eos_token_id,
         "global_attn_every_n_layers": global_attn_every_n_layers, "hidden_activation": hidden_activation,
         "hidden_size": hidden_size, "initializer_cutoff_factor": 2.0, "initializer_range": 0.02,
         "intermediate_size": intermediate_size, "local_attention": local_attention,
         "max_position_embeddings": max_position_embeddings, "mlp_bias": mlp_bias, "mlp_dropout": 0.0,
         "model_type": "modernbert", "norm_bias": norm_bias, "norm_eps": norm_eps, "num_attention_heads": num_attention_heads,
         "num_hidden_layers": num_hidden_layers, "pad_token_id": pad_token_id, "sep_token_id": sep_token_id,
         "sparse_pred_ignore_index": -100, "sparse_prediction": False, "vocab_size": vocab_size}
    if config_form == "v4":
        if layer_types is not None:
            raise ValueError("layer_types is a transformers 5 field (config_form v5)")
        c.update(global_rope_theta=global_rope_theta, local_rope_theta=local_rope_theta, repad_logits_with_grad=False,
                 torch_dtype=torch_dtype, transformers_version="4.51.3")
    elif config_form == "v5":
        if layer_types is None:
            layer_types = ["sliding_attention" if i % global_attn_every_n_layers else "full_attention"
                           for i in range(num_hidden_layers)]
        c.update(layer_types=list(layer_types), dtype=torch_dtype, transformers_version="5.0.0",
                 rope_parameters={"full_attention": {"rope_theta": global_rope_theta, "rope_type": "default"},
                                  "sliding_attention": {"rope_theta": local_rope_theta, "rope_type": "default"}})
    else:
        raise ValueError(f"config_form {config_form!r}: expected v4 or v5")
    if tie_word_embeddings is not None:
        c["tie_word_embeddings"] = tie_word_embeddings
    return dict(sorted(c.items()))


def family(cfg):
    """config.json's model_type: "bert", "distilbert", "roberta" or "modernbert"."""
    f = cfg.get("model_type", "bert")
    if f not in FAMILIES:
        raise ValueError(f"model_type {f!r}: expected one of {FAMILIES}")
    return f


def architecture(cfg):
    return cfg["architectures"][0]


def width(cfg):
    """hidden_size (DistilBERT's dim)."""
    return cfg["dim"] if family(cfg) == "distilbert" else cfg["hidden_size"]


def n_layers(cfg):
    return cfg["n_layers"] if family(cfg) == "distilbert" else cfg["num_hidden_layers"]


def n_heads(cfg):
    return cfg["n_heads"] if family(cfg) == "distilbert" else cfg["num_attention_heads"]


def inner_size(cfg):
    """intermediate_size (DistilBERT's hidden_dim): the MLP's width."""
    return cfg["hidden_dim"] if family(cfg) == "distilbert" else cfg["intermediate_size"]


def hidden_act(cfg):
    """The MLP's activation: hidden_act (DistilBERT's activation, ModernBERT's hidden_activation)."""
    return cfg[act_field(cfg)]


def act_field(cfg):
    """config.json's name for the MLP's activation."""
    return {"distilbert": "activation", "modernbert": "hidden_activation"}.get(family(cfg), "hidden_act")


def head_act(cfg):
    """The MLM head's activation after its dense: BERT's BertPredictionHeadTransform and
    DistilBertForMaskedLM take the config's (hidden_act, activation); RobertaLMHead calls gelu (erf)
    whatever hidden_act is; ModernBertPredictionHead takes classifier_activation (default gelu)."""
    fam = family(cfg)
    if fam == "modernbert":
        return cfg.get("classifier_activation", "gelu")
    return "gelu" if fam == "roberta" else hidden_act(cfg)


def layer_norm_eps(cfg):
    """Every LayerNorm's eps: layer_norm_eps (DistilBERT's fixed 1e-12, ModernBERT's norm_eps)."""
    fam = family(cfg)
    if fam == "modernbert":
        return cfg.get("norm_eps", 1e-5)
    return DISTILBERT_EPS if fam == "distilbert" else cfg["layer_norm_eps"]


def position_offset(cfg):
    """The position id of the first token: RoBERTa's create_position_ids_from_input_ids gives token i
    (no padding) padding_idx + 1 + i, padding_idx = pad_token_id (1: ids 2, 3, ...); 0 for the others."""
    return cfg.get("pad_token_id", 1) + 1 if family(cfg) == "roberta" else 0


def max_tokens(cfg):
    """The longest sentence the position table holds: max_position_embeddings, less RoBERTa's offset
    (roberta-base: 514 - 2 = 512). ModernBERT has no table (RoPE): its max_position_embeddings is
    returned, and forward() refuses no length, as transformers does not."""
    return cfg["max_position_embeddings"] - position_offset(cfg)


def layer_types(cfg):
    """ModernBERT's attention per layer, "full_attention" (global) or "sliding_attention" (local):
    config.json's layer_types (transformers 5 writes it, and 5's masks and RoPE follow it), else
    transformers 4's rule, layer l global iff l % global_attn_every_n_layers == 0 (absent: 3)."""
    n = n_layers(cfg)
    if cfg.get("layer_types") is not None:
        types = list(cfg["layer_types"])
        if len(types) != n or not set(types) <= {"full_attention", "sliding_attention"}:
            raise ValueError(f"layer_types {types}: expected {n} of full_attention / sliding_attention")
        return types
    every = cfg.get("global_attn_every_n_layers", 3)
    if not isinstance(every, int) or every < 1:
        raise ValueError(f"global_attn_every_n_layers {every!r}: expected a positive integer")
    return ["sliding_attention" if l % every else "full_attention" for l in range(n)]


def rope_theta(cfg, layer_type):
    """The RoPE base of a layer type: 5.x's rope_parameters[type]["rope_theta"] (rope_type default
    only); 4.x's global_rope_theta for full attention, local_rope_theta for sliding (null there:
    global_rope_theta, as 4.x's ModernBertAttention falls back; absent: ModernBertConfig's defaults)."""
    params = cfg.get("rope_parameters")
    if params is not None:
        p = params[layer_type]
        if p.get("rope_type", "default") != "default":
            raise ValueError(f"rope_parameters.{layer_type}.rope_type {p['rope_type']!r} is not modelled here")
        return float(p["rope_theta"])
    g = cfg.get("global_rope_theta", MODERNBERT_THETAS["global"])
    if layer_type == "full_attention":
        return float(g)
    local = cfg.get("local_rope_theta", MODERNBERT_THETAS["local"])
    return float(g if local is None else local)


def modernbert_inv_freq(cfg, layer_type):
    """[D/2]: RoPE's default inverse frequencies 1 / theta^(2i / D) for the layer type's theta (HF
    computes them in float32, here in float64: a ~1e-7 relative difference)."""
    d = head_dim(cfg)
    return 1.0 / rope_theta(cfg, layer_type) ** (np.arange(0, d, 2, dtype=np.int64).astype(np.float64) / d)


def window(cfg):
    """ModernBERT's sliding layers: key j visible to query i iff |i - j| <= local_attention // 2
    (4.x's window mask and flash-attn window (w, w); 5.x's config.sliding_window, inclusive)."""
    return cfg.get("local_attention", 128) // 2


def visible(cfg, layer, t):
    """[T, T] bool: the keys each query of `layer` may read (every key in a global layer)."""
    if layer_types(cfg)[layer] == "full_attention":
        return np.ones((t, t), bool)
    i, j = np.arange(t)[:, None], np.arange(t)[None, :]
    return np.abs(i - j) <= window(cfg)


def tied(cfg):
    """Whether the MLM head's decoder is the word embeddings (config.json's tie_word_embeddings;
    absent: true). DistilBERT's tie_weights_ is not read, as transformers does not read it."""
    return bool(cfg.get("tie_word_embeddings", True))


def has_mlm_head(cfg):
    return architecture(cfg) not in HEADLESS


def prefix(cfg):
    """"bert.", "distilbert.", "roberta.", "model." (ModernBERT) for the models with heads, "" for the
    bare encoders."""
    return "" if architecture(cfg) in HEADLESS else PREFIXES[family(cfg)]


def head_dim(cfg):
    return width(cfg) // n_heads(cfg)


# --- tensor names --------------------------------------------------------------------------------

Embeddings = namedtuple("Embeddings", "word position token_type norm")   # token_type None: DistilBERT
Layer = namedtuple("Layer", "query key value out norm1 fc1 fc2 norm2")    # modules: add .weight / .bias
Head = namedtuple("Head", "dense norm biases decoder")                    # biases: the names the bias may go by
# ModernBERT's layer: attn_norm None in layer 0 (nn.Identity), qkv the fused Wqkv, wi the fused Wi
ModernLayer = namedtuple("ModernLayer", "attn_norm qkv out mlp_norm wi wo")


def embedding_names(fam, p):
    """The word table, the position table (None: ModernBERT), the token types' (None: DistilBERT,
    ModernBERT) and the embedding LayerNorm's module."""
    e = p + "embeddings."
    if fam == "modernbert":
        return Embeddings(e + "tok_embeddings.weight", None, None, e + "norm")
    return Embeddings(e + "word_embeddings.weight", e + "position_embeddings.weight",
                      None if fam == "distilbert" else e + "token_type_embeddings.weight", e + "LayerNorm")


def final_norm_name(p):
    """ModernBERT's LayerNorm after the last layer (ModernBertModel.final_norm)."""
    return p + "final_norm"


def layer_names(fam, p, l):
    """Layer l's modules (the tensors are module + ".weight" and ".bias"); ModernBERT's a ModernLayer."""
    if fam == "modernbert":
        e = f"{p}layers.{l}."
        return ModernLayer(None if l == 0 else e + "attn_norm", e + "attn.Wqkv", e + "attn.Wo", e + "mlp_norm",
                           e + "mlp.Wi", e + "mlp.Wo")
    if fam == "distilbert":
        e = f"{p}transformer.layer.{l}."
        return Layer(e + "attention.q_lin", e + "attention.k_lin", e + "attention.v_lin", e + "attention.out_lin",
                     e + "sa_layer_norm", e + "ffn.lin1", e + "ffn.lin2", e + "output_layer_norm")
    e = f"{p}encoder.layer.{l}."
    return Layer(e + "attention.self.query", e + "attention.self.key", e + "attention.self.value",
                 e + "attention.output.dense", e + "attention.output.LayerNorm", e + "intermediate.dense",
                 e + "output.dense", e + "output.LayerNorm")


def head_names(fam):
    """The MLM head's modules, without the model's prefix. biases: the name save_pretrained keeps first,
    then its alias (the decoder's bias is the same parameter: BERT's cls.predictions.decoder.bias,
    RoBERTa's lm_head.decoder.bias); decoder: the [V, d] weight written only when untied."""
    if fam == "distilbert":
        return Head("vocab_transform", "vocab_layer_norm", ("vocab_projector.bias",), "vocab_projector.weight")
    if fam == "modernbert":  # ModernBertPredictionHead, then the decoder (its bias only with decoder_bias)
        return Head("head.dense", "head.norm", ("decoder.bias",), "decoder.weight")
    if fam == "roberta":
        return Head("lm_head.dense", "lm_head.layer_norm", ("lm_head.bias", "lm_head.decoder.bias"),
                    "lm_head.decoder.weight")
    return Head("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                ("cls.predictions.bias", "cls.predictions.decoder.bias"), "cls.predictions.decoder.weight")


def modernbert_shapes(cfg):
    """ModernBERT's {name: shape} in the module order: every LayerNorm's bias only with norm_bias,
    Wqkv's and Wo's with attention_bias, Wi's and mlp.Wo's with mlp_bias, head.dense's with
    classifier_bias, decoder.bias with decoder_bias; no attn_norm in layer 0; decoder.weight only
    untied (tied, save_pretrained drops it: it is model.embeddings.tok_embeddings.weight)."""
    p, d, inner, v = prefix(cfg), width(cfg), inner_size(cfg), cfg["vocab_size"]
    norm_bias = cfg.get("norm_bias", False)
    s = {}

    def module(name, shape, bias):
        s[name + ".weight"] = shape
        if bias:
            s[name + ".bias"] = shape[:1]

    emb = embedding_names("modernbert", p)
    s[emb.word] = (v, d)
    module(emb.norm, (d,), norm_bias)
    for l in range(n_layers(cfg)):
        n = layer_names("modernbert", p, l)
        if n.attn_norm:
            module(n.attn_norm, (d,), norm_bias)
        module(n.qkv, (3 * d, d), cfg.get("attention_bias", False))
        module(n.out, (d, d), cfg.get("attention_bias", False))
        module(n.mlp_norm, (d,), norm_bias)
        module(n.wi, (2 * inner, d), cfg.get("mlp_bias", False))
        module(n.wo, (d, inner), cfg.get("mlp_bias", False))
    module(final_norm_name(p), (d,), norm_bias)
    if has_mlm_head(cfg):
        h = head_names("modernbert")
        module(h.dense, (d, d), cfg.get("classifier_bias", False))
        module(h.norm, (d,), norm_bias)
        if not tied(cfg):
            s[h.decoder] = (v, d)
        if cfg.get("decoder_bias", True):
            s[h.biases[0]] = (v,)
    return s


def tensor_shapes(cfg, head_bias=None):
    """{name: shape} in the order written: embeddings, layers, pooler, MLM head, next-sentence head.
    head_bias: the names the MLM head's bias is written under (default: the first of head_names'
    biases, as save_pretrained keeps it; RoBERTa's ("lm_head.decoder.bias",) writes the alias alone).
    ModernBERT: modernbert_shapes (head_bias must be None)."""
    if family(cfg) == "modernbert":
        if head_bias is not None:
            raise ValueError("ModernBERT's decoder bias has one name")
        return modernbert_shapes(cfg)
    fam, arch, p = family(cfg), architecture(cfg), prefix(cfg)
    d, inner, v = width(cfg), inner_size(cfg), cfg["vocab_size"]
    emb = embedding_names(fam, p)
    s = {emb.word: (v, d), emb.position: (cfg["max_position_embeddings"], d)}
    if emb.token_type:
        s[emb.token_type] = (cfg["type_vocab_size"], d)
    s[emb.norm + ".weight"] = (d,)
    s[emb.norm + ".bias"] = (d,)
    for l in range(n_layers(cfg)):
        n = layer_names(fam, p, l)
        for m in (n.query, n.key, n.value):
            s[m + ".weight"] = (d, d)
            s[m + ".bias"] = (d,)
        s[n.out + ".weight"] = (d, d)
        s[n.out + ".bias"] = (d,)
        s[n.norm1 + ".weight"] = (d,)
        s[n.norm1 + ".bias"] = (d,)
        s[n.fc1 + ".weight"] = (inner, d)
        s[n.fc1 + ".bias"] = (inner,)
        s[n.fc2 + ".weight"] = (d, inner)
        s[n.fc2 + ".bias"] = (d,)
        s[n.norm2 + ".weight"] = (d,)
        s[n.norm2 + ".bias"] = (d,)
    if arch in ("BertForPreTraining", "BertModel", "RobertaModel"):  # RobertaForMaskedLM has no pooler
        s[p + "pooler.dense.weight"] = (d, d)
        s[p + "pooler.dense.bias"] = (d,)
    if has_mlm_head(cfg):
        h = head_names(fam)
        biases = h.biases[:1] if head_bias is None else tuple(head_bias)
        if fam == "bert":
            for b in biases:
                s[b] = (v,)
        s[h.dense + ".weight"] = (d, d)
        s[h.dense + ".bias"] = (d,)
        s[h.norm + ".weight"] = (d,)
        s[h.norm + ".bias"] = (d,)
        if fam != "bert":
            for b in biases:
                s[b] = (v,)
        if not tied(cfg):
            s[h.decoder] = (v, d)
    if arch == "BertForPreTraining":
        s["cls.seq_relationship.weight"] = (2, d)
        s["cls.seq_relationship.bias"] = (2,)
    return s


# --- weights -------------------------------------------------------------------------------------

def sinusoidal_table(n_pos, dim):
    """DistilBERT's create_sinusoidal_embeddings, float32: [pos, j] = sin(pos / 10000^(2 (j // 2) / dim))
    for even j, cos(...) for odd j. transformers writes it into the table at init; from_pretrained then
    loads the table the file holds, which is what attnviz must read."""
    enc = np.array([[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_pos)])
    out = np.empty((n_pos, dim), np.float32)
    out[:, 0::2] = np.sin(enc[:, 0::2])
    out[:, 1::2] = np.cos(enc[:, 1::2])
    return out


def random_weights(cfg, seed, sharp=1.0, head_bias=None):
    """{name: Lazy}. Each tensor's values depend on the seed and its name without the model's prefix
    ("bert.", "distilbert.", "roberta."), so a bare encoder and the model with a head of one seed
    share their encoder, and RoBERTa's lm_head.decoder.bias is lm_head.bias's values. Scales keep
    the scores q.k/sqrt(D) at a standard deviation of about 2 * sharp (x is layer-normed, so about
    unit variance), heads neither uniform nor one-hot (see the self-test), and the MLM logits at
    about 2.8; LayerNorm gains N(1, 0.15^2), every bias nonzero. DistilBERT with sinusoidal_pos_embds:
    the position table is sinusoidal_table (a plain array), as a trained checkpoint holds it."""
    fam = family(cfg)
    if fam == "modernbert":
        return modernbert_weights(cfg, seed, sharp, head_bias)
    d, inner = width(cfg), inner_size(cfg)
    qk = 1.4 * math.sqrt(sharp) / math.sqrt(d)
    emb = 2.8 / math.sqrt(d)  # the MLM logits' standard deviation about 2.8 whatever the width
    head = head_names(fam)
    decoders, head_biases = (head.decoder,), head.biases
    strip = PREFIXES[fam]
    out = {}
    for name, shape in tensor_shapes(cfg, head_bias).items():
        base = name[len(strip):] if name.startswith(strip) else name
        if base in head_biases:
            base = head_biases[0]
        key = [seed, zlib.crc32(base.encode())]
        if fam == "distilbert" and cfg.get("sinusoidal_pos_embds") and base == "embeddings.position_embeddings.weight":
            out[name] = sinusoidal_table(*shape)
        elif "LayerNorm.weight" in name or "layer_norm.weight" in name:
            out[name] = Lazy(shape, key, 0.15, 1.0)
        elif "LayerNorm.bias" in name or "layer_norm.bias" in name:
            out[name] = Lazy(shape, key, 0.1)
        elif name.endswith("embeddings.weight") or name in decoders:
            out[name] = Lazy(shape, key, emb)
        elif name in head_biases:
            out[name] = Lazy(shape, key, 0.5)
        elif name.endswith(".bias"):
            out[name] = Lazy(shape, key, 0.3)
        elif any(m in name for m in (".query.", ".key.", ".q_lin.", ".k_lin.")):
            out[name] = Lazy(shape, key, qk)
        elif "attention.output.dense" in name or ".out_lin." in name:
            out[name] = Lazy(shape, key, 0.8 / math.sqrt(d))
        elif ".output.dense" in name or ".ffn.lin2." in name:
            out[name] = Lazy(shape, key, 0.8 / math.sqrt(inner))
        else:  # value, intermediate / lin1, pooler, the head's dense, seq_relationship
            out[name] = Lazy(shape, key, 1.0 / math.sqrt(d))
    return out


def modernbert_weights(cfg, seed, sharp=1.0, head_bias=None):
    """random_weights for ModernBERT: values by seed and name without "model.", so ModernBertModel and
    ModernBertForMaskedLM of one seed share their encoder. Every input of Wqkv is layer-normed (the
    embedding norm before layer 0, attn_norm after), so the scale that keeps BERT's scores at about
    2 * sharp keeps these (Wqkv whole: q, k and v alike); LayerNorm gains N(1, 0.15^2), biases nonzero,
    the logits about 2.8 (the head's norm, then the table or decoder at 2.8 / sqrt(d))."""
    d, inner = width(cfg), inner_size(cfg)
    strip = PREFIXES["modernbert"]
    out = {}
    for name, shape in tensor_shapes(cfg, head_bias).items():
        base = name[len(strip):] if name.startswith(strip) else name
        key = [seed, zlib.crc32(base.encode())]
        if name.endswith("norm.weight"):
            out[name] = Lazy(shape, key, 0.15, 1.0)
        elif name.endswith("norm.bias"):
            out[name] = Lazy(shape, key, 0.1)
        elif name.endswith("tok_embeddings.weight") or name == "decoder.weight":
            out[name] = Lazy(shape, key, 2.8 / math.sqrt(d))
        elif name == "decoder.bias":
            out[name] = Lazy(shape, key, 0.5)
        elif name.endswith(".bias"):
            out[name] = Lazy(shape, key, 0.3)
        elif name.endswith("attn.Wqkv.weight"):
            out[name] = Lazy(shape, key, 1.4 * math.sqrt(sharp) / math.sqrt(d))
        elif name.endswith("attn.Wo.weight"):
            out[name] = Lazy(shape, key, 0.8 / math.sqrt(d))
        elif name.endswith("mlp.Wo.weight"):
            out[name] = Lazy(shape, key, 0.8 / math.sqrt(inner))
        else:  # mlp.Wi, head.dense
            out[name] = Lazy(shape, key, 1.0 / math.sqrt(d))
    return out


# --- files ---------------------------------------------------------------------------------------

def tokenizer_config(fam="bert"):
    """tokenizer_config.json as a BertTokenizer of bert-base-uncased saves it (DistilBERT:
    DistilBertTokenizer's, the same WordPiece)."""
    c = dict(bert_vocab.TOKENIZER_CONFIG, model_max_length=512, clean_up_tokenization_spaces=True,
             strip_accents=None, tokenize_chinese_chars=True)
    if fam == "distilbert":
        c["tokenizer_class"] = "DistilBertTokenizer"
    return c


ROBERTA_TOKENIZER_FILES = {"vocab": ("vocab.json", "merges.txt", "tokenizer_config.json"),
                           "json": ("tokenizer.json", "tokenizer_config.json")}


def write_folder(folder, cfg, weights, vocab_path, tokenizer="vocab", dtype="F32", shards=1):
    """A Hugging Face BERT, DistilBERT, RoBERTa or ModernBERT folder. weights: {name: float32 array or Lazy},
    written in that order (pass what tensor_shapes(cfg) names, or a deliberately broken variant of it).
    BERT and DistilBERT: vocab_path is a vocab.txt; tokenizer "vocab": vocab.txt +
    tokenizer_config.json; "json": tokenizer.json (bert-base-uncased's form over that vocabulary) +
    tokenizer_config.json. RoBERTa: vocab_path is a folder holding vocab.json, merges.txt,
    tokenizer.json and tokenizer_config.json (roberta_vocab.files); "vocab" copies vocab.json +
    merges.txt + tokenizer_config.json, "json" tokenizer.json + tokenizer_config.json. ModernBERT:
    vocab_path is a folder holding tokenizer.json and tokenizer_config.json (modernbert_vocab.files),
    copied with "json" (the only form). None: no tokenizer at all. config.json's torch_dtype (5.x's
    dtype, where cfg has that key) is the dtype written."""
    fam = family(cfg)
    os.makedirs(folder, exist_ok=True)
    dtype_field = "dtype" if "dtype" in cfg else "torch_dtype"
    lc.write_json(os.path.join(folder, "config.json"), dict(cfg, **{dtype_field: DTYPE_NAMES[dtype]}))
    if tokenizer not in ("vocab", "json", None):
        raise ValueError(f"tokenizer {tokenizer!r}: expected vocab, json or None")
    if fam == "modernbert":
        if tokenizer == "vocab":
            raise ValueError("ModernBERT's tokenizer is tokenizer.json alone (tokenizer=\"json\")")
        for name in ROBERTA_TOKENIZER_FILES["json"] if tokenizer else ():
            shutil.copyfile(os.path.join(vocab_path, name), os.path.join(folder, name))
    elif fam == "roberta":
        for name in ROBERTA_TOKENIZER_FILES.get(tokenizer, ()):
            shutil.copyfile(os.path.join(vocab_path, name), os.path.join(folder, name))
    else:
        if tokenizer == "vocab":
            shutil.copyfile(vocab_path, os.path.join(folder, "vocab.txt"))
        elif tokenizer == "json":
            tokens, _ = bert_vocab.read_vocab(vocab_path)
            with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
                json.dump(bert_vocab.tokenizer_json(tokens), f, ensure_ascii=False)
        if tokenizer is not None:
            lc.write_json(os.path.join(folder, "tokenizer_config.json"), tokenizer_config(fam))
    lc.write_weights(folder, weights, dtype, shards)


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


def weights_prefix(weights, fam="bert"):
    """The family's prefix ("bert.", "distilbert.", "roberta.", "model.") when the names carry it (a
    model with a head), else "" (the bare encoder)."""
    p = PREFIXES[fam]
    return p if embedding_names(fam, p).word in weights else ""


def _linear(x, w, module):
    """x W^T (+ b when the file holds module's bias)."""
    y = x @ w[module + ".weight"].T
    return y + w[module + ".bias"] if module + ".bias" in w else y


def _norm(x, w, module, eps):
    """nn.LayerNorm(bias=norm_bias): the bias only when the file holds it."""
    b = w.get(module + ".bias")
    return layer_norm(x, w[module + ".weight"], 0.0 if b is None else b, eps)


def modernbert_forward(weights, cfg, ids, zero=(), mean=(), hide=()):
    """ModernBERT in float64 (forward()'s contract), written from modeling_modernbert:
    x = LN(tok_embeddings[ids]) (ModernBertEmbeddings; no positions, no token types), then per layer
        h = x in layer 0 (attn_norm is nn.Identity), else LN(x) (attn_norm)
        q | k | v = h Wqkv^T (+b): the 3d outputs viewed [3, H, D] (q the first d, then k, then v)
        q, k = RoPE over positions 0 .. T-1 (rotate_half; base rope_theta of the layer's type)
        A = softmax(q k^T / sqrt(D)) over every key (global layer) or |i - j| <= local_attention // 2
        x = x + concat_h(A v) Wo^T (+b)
        input | gate = LN(x) Wi^T (+b) (mlp_norm; input the first intermediate_size outputs)
        x = x + (act(input) * gate) Wo^T (+b)                      act = hidden_activation
    hidden = LN(x) (final_norm); logits = LN(act'(hidden Wd^T (+bd))) E^T (+ decoder.bias), the
    head's dense, act' = classifier_activation, the head's norm; E the token table when tied, else
    decoder.weight. Every LayerNorm has eps norm_eps and a bias only with norm_bias. Dropout is off.
    No length is refused (no position table)."""
    w = {k: np.asarray(v, np.float64) for k, v in weights.items()}
    p, eps = weights_prefix(w, "modernbert"), layer_norm_eps(cfg)
    nh, d, dm, inner = n_heads(cfg), head_dim(cfg), width(cfg), inner_size(cfg)
    if dm % nh:
        raise ValueError(f"hidden_size {dm} is not a multiple of num_attention_heads {nh}")
    act, act_head = activation(hidden_act(cfg)), activation(head_act(cfg))
    types = layer_types(cfg)
    ids = np.asarray(ids, np.int64)
    t = len(ids)
    positions = np.arange(t)
    freqs = {kind: modernbert_inv_freq(cfg, kind) for kind in set(types)}
    emb = embedding_names("modernbert", p)
    x = _norm(w[emb.word][ids], w, emb.norm, eps)
    attentions = []
    for l in range(n_layers(cfg)):
        n = layer_names("modernbert", p, l)
        h = x if n.attn_norm is None else _norm(x, w, n.attn_norm, eps)
        qkv = _linear(h, w, n.qkv)
        q, k, v = (qkv[:, i * dm:(i + 1) * dm].reshape(t, nh, d) for i in range(3))
        q, k = lc.rope(q, positions, freqs[types[l]]), lc.rope(k, positions, freqs[types[l]])
        keys = visible(cfg, l, t)
        if hide:
            keys = keys.copy()
            keys[:, list(hide)] = False
        heads, outs = [], []
        for hd in range(nh):
            att = lc.masked_softmax((q[:, hd] @ k[:, hd].T) / math.sqrt(d), keys)
            heads.append(att)
            outs.append(lc.ablate(att @ v[:, hd], l, hd, zero, mean))
        attentions.append(heads)
        x = x + _linear(np.concatenate(outs, axis=1), w, n.out)
        u = _linear(_norm(x, w, n.mlp_norm, eps), w, n.wi)
        x = x + _linear(act(u[:, :inner]) * u[:, inner:], w, n.wo)
    x = _norm(x, w, final_norm_name(p), eps)
    logits = None
    head = head_names("modernbert")
    if head.dense + ".weight" in w:
        tr = _norm(act_head(_linear(x, w, head.dense)), w, head.norm, eps)
        logits = tr @ (w[emb.word] if tied(cfg) else w[head.decoder]).T
        if head.biases[0] in w:
            logits = logits + w[head.biases[0]]
    return Forward(np.array(attentions), x, logits)


def forward(weights, cfg, ids, type_ids=None, zero=(), mean=(), hide=()):
    """float64. weights: {name: array} as the file holds them (see stored()); ids: [T]; type_ids: [T]
    (None: all 0, as BertEmbeddings' and RobertaEmbeddings' buffer; DistilBERT has none). Returns
    Forward(attentions [L, H, T, T], hidden [T, d] (the last layer's output), logits [T, V] of every
    position, or None without an MLM head). The what-if hooks: zero, mean: (layer, head) pairs whose
    A v is zeroed or replaced by its mean over the positions before the output dense; hide: key
    positions no query reads in any layer."""
    fam = family(cfg)
    if fam == "modernbert":
        if type_ids is not None:
            raise ValueError("ModernBERT has no token types")
        return modernbert_forward(weights, cfg, ids, zero, mean, hide)
    w = {k: np.asarray(v, np.float64) for k, v in weights.items()}
    p, eps = weights_prefix(w, fam), layer_norm_eps(cfg)
    nh, d = n_heads(cfg), head_dim(cfg)
    if fam != "distilbert" and cfg.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"position_embedding_type {cfg['position_embedding_type']!r} is not modelled here")
    act, act_head = activation(hidden_act(cfg)), activation(head_act(cfg))
    ids = np.asarray(ids, np.int64)
    t = len(ids)
    if t > max_tokens(cfg):
        raise ValueError(f"{t} tokens, max_position_embeddings {cfg['max_position_embeddings']}"
                         + (f" less RoBERTa's offset {position_offset(cfg)}" if position_offset(cfg) else ""))
    if fam == "distilbert" and type_ids is not None:
        raise ValueError("DistilBERT has no token types")
    types = np.zeros(t, np.int64) if type_ids is None else np.asarray(type_ids, np.int64)
    positions = position_offset(cfg) + np.arange(t)
    # 1. embeddings: word + token type (none in DistilBERT) + absolute position, then LayerNorm
    emb = embedding_names(fam, p)
    x = w[emb.word][ids]
    if emb.token_type:
        x = x + w[emb.token_type][types]
    x = x + w[emb.position][positions]
    x = layer_norm(x, w[emb.norm + ".weight"], w[emb.norm + ".bias"], eps)
    open_keys = np.ones((t, t), bool)
    if hide:
        open_keys[:, list(hide)] = False
    attentions = []
    for l in range(n_layers(cfg)):
        n = layer_names(fam, p, l)
        # 2. self-attention: projections with biases, per-head scores over every key
        q, k, v = (x @ w[m + ".weight"].T + w[m + ".bias"] for m in (n.query, n.key, n.value))
        q, k, v = q.reshape(t, nh, d), k.reshape(t, nh, d), v.reshape(t, nh, d)
        heads, outs = [], []
        for h in range(nh):
            att = lc.masked_softmax((q[:, h] @ k[:, h].T) / math.sqrt(d), open_keys)
            heads.append(att)
            outs.append(lc.ablate(att @ v[:, h], l, h, zero, mean))
        attentions.append(heads)
        # 3. the output dense, residual, LayerNorm (BertSelfOutput; DistilBERT's out_lin, sa_layer_norm)
        a = np.concatenate(outs, axis=1) @ w[n.out + ".weight"].T + w[n.out + ".bias"]
        x = layer_norm(a + x, w[n.norm1 + ".weight"], w[n.norm1 + ".bias"], eps)
        # 4. the MLP: dense, act, dense, residual, LayerNorm (BertIntermediate + BertOutput; DistilBERT's FFN)
        hmid = act(x @ w[n.fc1 + ".weight"].T + w[n.fc1 + ".bias"])
        y = hmid @ w[n.fc2 + ".weight"].T + w[n.fc2 + ".bias"]
        x = layer_norm(y + x, w[n.norm2 + ".weight"], w[n.norm2 + ".bias"], eps)
    logits = None
    head = head_names(fam)
    bias = next((b for b in head.biases if b in w), None)
    if bias is not None:
        # 5. the MLM head: dense, act (RoBERTa's: gelu), LayerNorm, then the decoder and its bias
        tr = act_head(x @ w[head.dense + ".weight"].T + w[head.dense + ".bias"])
        tr = layer_norm(tr, w[head.norm + ".weight"], w[head.norm + ".bias"], eps)
        decoder = w[emb.word] if tied(cfg) else w[head.decoder]
        logits = tr @ decoder.T + w[bias]
    return Forward(np.array(attentions), x, logits)


def predicted_position(ids, mask=MASK):
    """The position of the first `mask` ([MASK] 103; RoBERTa: its <mask>; ModernBERT: its [MASK]), or None."""
    ids = list(ids)
    return ids.index(mask) if mask in ids else None


def mask_probs(ref, ids, mask=MASK):
    """softmax of the MLM logits at the first `mask`, or None (no mask token or no head)."""
    pos = predicted_position(ids, mask)
    if pos is None or ref.logits is None:
        return None
    return softmax(ref.logits[pos])


PRESETS = {
    # bert-base-uncased's shapes: 12 layers of 12 heads, hidden 768, 512 positions, tied
    "bert-base-uncased": (config, dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                       intermediate_size=3072, max_position_embeddings=512)),
    # distilbert-base-uncased's: 6 layers of 12 heads, dim 768, 512 positions, tied (bert-base-uncased's vocab.txt)
    "distilbert-base-uncased": (distilbert_config, dict(dim=768, n_layers=6, n_heads=12, hidden_dim=3072,
                                                        max_position_embeddings=512)),
    # roberta-base's: 12 layers of 12 heads, hidden 768, 514 positions (512 tokens), tied; the vocabulary
    # size of roberta_vocab.files' RoBERTa-shaped one (50,262; roberta-base's own is 50,265)
    "roberta-base": (roberta_config, dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                          intermediate_size=3072, max_position_embeddings=514, vocab_size=50262)),
    # ModernBERT-base's: 22 layers of 12 heads, hidden 768, GeGLU inner 1152, window 128, every third
    # layer global, tied; the vocabulary and special ids of modernbert_vocab.files' ModernBERT-shaped one
    # (50,304 rows; ModernBERT-base's own is 50,368, [CLS] 50281)
    "modernbert-base": (modernbert_config, dict(hidden_size=768, num_hidden_layers=22, num_attention_heads=12,
                                                intermediate_size=1152, vocab_size=50304, pad_token_id=50260,
                                                bos_token_id=50258, eos_token_id=50259, cls_token_id=50258,
                                                sep_token_id=50259)),
}


def main(argv):
    if argv[:1] == ["--self-test"]:
        import bert_checkpoint_selftest
        return bert_checkpoint_selftest.run()
    if argv[:1] == ["--write"] and len(argv) >= 2:
        args = dict(zip(argv[2::2], argv[3::2]))
        make, fields = PRESETS[args.get("--preset", "bert-base-uncased")]
        cfg = make(**fields)
        write_folder(argv[1], cfg, random_weights(cfg, int(args.get("--seed", "1"))), args["--vocab"],
                     tokenizer=args.get("--tokenizer", "json" if make is modernbert_config else "vocab"),
                     dtype=args.get("--dtype", "BF16"),
                     shards=int(args.get("--shards", "1")))
        return 0
    print(__doc__.split("\n\n")[1])
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
