#!/usr/bin/env python3
"""Self-test of bert_checkpoint.py, the float64 BERT / DistilBERT / RoBERTa / ModernBERT oracle, on its own.

Usage: bert_checkpoint_selftest.py   (or bert_checkpoint.py --self-test)

Checks, against hand-computed values and properties rather than against the code under test:
LayerNorm on small vectors (the biased variance, eps inside the square root, a constant vector
giving the bias); GELU with erf at hand values (gelu(1) = Phi(1) = 0.8413447460685429, gelu(-1),
gelu(2)), the tanh GELU against its sigmoid form x sigma(2 sqrt(2/pi) (x + 0.044715 x^3)), ReLU;
a second forward written element by element with math (loops, no matrices, each family's tensor
names spelled out here, the activations, eps and first position id given by hand) agreeing to
1e-12 on tiny BERT, DistilBERT (tied, untied, sinusoidal) and RoBERTa (its head's gelu under a
relu or gelu_new MLP) models, attentions, hidden states and MLM logits; rows summing to 1 with no
mask (query 0 reads the last key); hidden keys exactly 0 and the rows still summing to 1; token ids
all equal and no position embeddings giving uniform rows, positions and token types changing the
output; the longest sentence max_position_embeddings allows and one more refused; ablating a
last-layer head leaving that layer's maps and changing the logits, a mean over one position being
no change; the tied head equal to an untied one whose decoder is the word embeddings,
cls.predictions.bias added as it is; BertModel (no "bert." prefix, no head) sharing the encoder of
the same seed. DistilBERT equal to BERT's forward on its weights renamed with token types of 0 and
eps 1e-12, its longest sentence, token types refused, tie_weights_ not read, the untied
vocab_projector.weight used, DistilBertModel sharing the encoder; the sinusoidal table at hand
values (sin 0 = 0, cos 0 = 1, sin 1, cos 1, cos(15 / 10000^(30/32))) and the table read as stored.
RoBERTa equal to BERT's forward reading the position table from row 2 (pad_token_id 1 + 1), its
head's gelu against a relu MLP, max_position_embeddings - 2 tokens and one more refused, rows 0 and
1 never read, lm_head.decoder.bias alone as lm_head.bias, RobertaModel sharing the encoder.
ModernBERT: RoPE at position 1 by hand (D = 4, theta 100: cos 1, sin 1, cos 0.1, sin 0.1 on the
rotate_half pairs), position 0 unchanged; the layer types (every third layer global, every second,
5.x's layer_types as written; 0 and a wrong length refused); the window |i - j| <= local_attention
// 2 as a hand matrix (5 reads as 4), exactly 0 outside it, every key inside read; layer 0 with no
attn_norm (one in the file not read); a loop form of its own (element by element: RoPE pairs, the
window, the gated MLP's first half through the activation) agreeing to 1e-12 on v4 and v5 configs,
every bias, gelu_new / relu, layer_types local-global-local; local_rope_theta moving the local
layers only and global_rope_theta the global ones, null local_rope_theta = the global one (4.x),
the v5 config = the v4 one, yarn not modelled, no length refused; hidden keys, ablation, the bare
ModernBertModel sharing the encoder, the tied decoder, decoder.bias as it is. The tensor names and
shapes of each architecture; streamed and materialised writes giving the same
bytes; a 3-shard folder reading back identical to the unsharded one with a consistent index;
config.json and the tokenizer forms of each family; the random weights' heads neither uniform nor
one-hot and the mask's prediction not certain, for each family. Exits 1 on any failure.
"""

import json
import math
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import expect, near, self_test_summary  # noqa: E402
import bert_checkpoint as bc  # noqa: E402
from llama_checkpoint_selftest import expect_shards, expect_spread  # noqa: E402


def tiny(**over):
    return bc.config(**dict(dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                                 vocab_size=300, max_position_embeddings=16), **over))


def tiny_distil(**over):
    return bc.distilbert_config(**dict(dict(dim=32, n_layers=2, n_heads=4, hidden_dim=64, vocab_size=300,
                                            max_position_embeddings=16), **over))


def tiny_roberta(**over):
    return bc.roberta_config(**dict(dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                                         vocab_size=300, max_position_embeddings=18), **over))


def tiny_modern(**over):
    return bc.modernbert_config(**dict(dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
                                            vocab_size=300, max_position_embeddings=64, pad_token_id=0, bos_token_id=1,
                                            eos_token_id=2, cls_token_id=1, sep_token_id=2), **over))


def test_layer_norm():
    # x = [1, 2, 3, 4]: mean 2.5, biased variance 1.25
    s = math.sqrt(1.25)
    near("layer_norm [1,2,3,4]", bc.layer_norm(np.array([1.0, 2, 3, 4]), np.array([1.0, 1, 2, 2]), np.array([0.0, 0, 1, 1]), 0.0),
         [-1.5 / s, -0.5 / s, 2 * 0.5 / s + 1, 2 * 1.5 / s + 1])
    near("layer_norm of a constant is the bias",
         bc.layer_norm(np.array([7.0, 7.0]), np.array([3.0, 4.0]), np.array([0.5, -2.0]), 1e-12), [0.5, -2.0], 0)
    # x = [0, 2e-6]: variance 1e-12, so eps = 1e-12 doubles it: +-1e-6 / sqrt(2e-12)
    near("layer_norm eps inside the root", bc.layer_norm(np.array([0.0, 2e-6]), np.ones(2), np.zeros(2), 1e-12),
         [-1 / math.sqrt(2), 1 / math.sqrt(2)], 1e-9)
    near("layer_norm per row", bc.layer_norm(np.array([[1.0, 3.0], [10.0, 30.0]]), np.ones(2), np.zeros(2), 0.0),
         [[-1, 1], [-1, 1]], 1e-15)


def test_activations():
    near("gelu(1) = Phi(1)", bc.gelu(1.0), 0.8413447460685429, 1e-15)
    near("gelu(-1) = -Phi(-1)", bc.gelu(-1.0), -0.15865525393145707, 1e-15)
    near("gelu(2) = 2 Phi(2)", bc.gelu(2.0), 2 * 0.9772498680518208, 1e-15)
    near("gelu(0)", bc.gelu(0.0), 0.0, 0)
    near("gelu(-10) ~ 0", bc.gelu(-10.0), 0.0, 1e-20)
    x = np.linspace(-5, 5, 41)
    z = 2 * math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
    near("gelu_new = x sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3))", bc.gelu_new(x), x / (1 + np.exp(-z)), 1e-14)
    near("gelu_new(1)", bc.gelu_new(1.0), 0.8411919906082768, 1e-15)
    gap = float(np.abs(bc.gelu(x) - bc.gelu_new(x)).max())
    expect("gelu and gelu_new differ (by under 5e-4)", 1e-4 < gap < 5e-4, f"{gap:.3g}")
    near("relu", bc.relu([-2.0, 0.0, 3.0]), [0.0, 0.0, 3.0], 0)
    expect("unknown act refused", _raises(lambda: bc.activation("sine")))


def _raises(fn):
    try:
        fn()
    except ValueError:
        return True
    return False


# Each family's tensors as its model with a head names them, written out here rather than taken from
# bert_checkpoint: the embeddings, a layer's modules (after "layer.{l}."), the MLM head's.
NAMES = {
    "bert": dict(word="bert.embeddings.word_embeddings.weight", pos="bert.embeddings.position_embeddings.weight",
                 typ="bert.embeddings.token_type_embeddings.weight", norm="bert.embeddings.LayerNorm",
                 layer="bert.encoder.layer.{}.", q="attention.self.query", k="attention.self.key",
                 v="attention.self.value", o="attention.output.dense", n1="attention.output.LayerNorm",
                 f1="intermediate.dense", f2="output.dense", n2="output.LayerNorm",
                 dense="cls.predictions.transform.dense", hnorm="cls.predictions.transform.LayerNorm",
                 bias="cls.predictions.bias", decoder="cls.predictions.decoder.weight"),
    "distilbert": dict(word="distilbert.embeddings.word_embeddings.weight",
                       pos="distilbert.embeddings.position_embeddings.weight", typ=None,
                       norm="distilbert.embeddings.LayerNorm", layer="distilbert.transformer.layer.{}.",
                       q="attention.q_lin", k="attention.k_lin", v="attention.v_lin", o="attention.out_lin",
                       n1="sa_layer_norm", f1="ffn.lin1", f2="ffn.lin2", n2="output_layer_norm",
                       dense="vocab_transform", hnorm="vocab_layer_norm", bias="vocab_projector.bias",
                       decoder="vocab_projector.weight"),
    "roberta": dict(word="roberta.embeddings.word_embeddings.weight", pos="roberta.embeddings.position_embeddings.weight",
                    typ="roberta.embeddings.token_type_embeddings.weight", norm="roberta.embeddings.LayerNorm",
                    layer="roberta.encoder.layer.{}.", q="attention.self.query", k="attention.self.key",
                    v="attention.self.value", o="attention.output.dense", n1="attention.output.LayerNorm",
                    f1="intermediate.dense", f2="output.dense", n2="output.LayerNorm", dense="lm_head.dense",
                    hnorm="lm_head.layer_norm", bias="lm_head.bias", decoder="lm_head.decoder.weight"),
}

ACTS = {"gelu": lambda u: u * 0.5 * (1 + math.erf(u / math.sqrt(2))),
        "gelu_new": lambda u: 0.5 * u * (1 + math.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u * u * u))),
        "relu": lambda u: max(u, 0.0)}


def slow_forward(w, names, ids, type_ids, d, nh, layers, act, head_act, eps, first_position, tied):
    """An encoder element by element with math: lists, loops, math.erf; no matrices. names: NAMES'
    entry; act, head_act: the MLP's and the MLM head's activation; first_position: the position id of
    token 0; type_ids None: no token types (DistilBERT)."""
    dh, t = d // nh, len(ids)
    act, head_act = ACTS[act], ACTS[head_act]
    g = lambda name: w[name].tolist()  # noqa: E731

    def ln(row, module):
        wn, bn = g(module + ".weight"), g(module + ".bias")
        m = sum(row) / len(row)
        var = sum((r - m) ** 2 for r in row) / len(row)
        return [wn[i] * (row[i] - m) / math.sqrt(var + eps) + bn[i] for i in range(len(row))]

    def linear(row, module):
        weight, bias = g(module + ".weight"), g(module + ".bias")
        return [sum(weight[o][i] * row[i] for i in range(len(row))) + bias[o] for o in range(len(weight))]

    word, pos = g(names["word"]), g(names["pos"])
    typ = g(names["typ"]) if type_ids is not None else None
    x = [ln([word[ids[i]][j] + (typ[type_ids[i]][j] if typ else 0.0) + pos[first_position + i][j] for j in range(d)],
            names["norm"]) for i in range(t)]
    maps = []
    for l in range(layers):
        e = names["layer"].format(l)
        q, k, v = ([linear(x[i], e + names[n]) for i in range(t)] for n in ("q", "k", "v"))
        ctx = [[0.0] * d for _ in range(t)]
        heads = []
        for h in range(nh):
            cols = range(h * dh, (h + 1) * dh)
            att = []
            for i in range(t):
                scores = [sum(q[i][c] * k[j][c] for c in cols) / math.sqrt(dh) for j in range(t)]
                top = max(scores)
                ex = [math.exp(s - top) for s in scores]
                att.append([e_ / sum(ex) for e_ in ex])
                for c in cols:
                    ctx[i][c] = sum(att[i][j] * v[j][c] for j in range(t))
            heads.append(att)
        maps.append(heads)
        a = [linear(ctx[i], e + names["o"]) for i in range(t)]
        x = [ln([u + r for u, r in zip(a[i], x[i])], e + names["n1"]) for i in range(t)]
        mid = [[act(u) for u in linear(x[i], e + names["f1"])] for i in range(t)]
        y = [linear(mid[i], e + names["f2"]) for i in range(t)]
        x = [ln([u + r for u, r in zip(y[i], x[i])], e + names["n2"]) for i in range(t)]
    logits = []
    decoder = word if tied else g(names["decoder"])
    bias = g(names["bias"])
    for i in range(t):
        tr = ln([head_act(u) for u in linear(x[i], names["dense"])], names["hnorm"])
        logits.append([sum(decoder[r][c] * tr[c] for c in range(d)) + bias[r] for r in range(len(decoder))])
    return maps, x, logits


def test_against_loops():
    ids, types = [101, 7, 250, 103, 33, 102], [0, 0, 0, 1, 1, 1]
    small = dict(vocab_size=260)
    runs = []
    for act, tie in (("gelu", True), ("gelu_new", False), ("relu", True)):
        cfg = tiny(hidden_size=8, num_attention_heads=2, intermediate_size=12, hidden_act=act, tie_word_embeddings=tie, **small)
        runs.append((f"{act}", cfg, types, dict(act=act, head_act=act, eps=1e-12, first_position=0, tied=tie)))
    for act, tie, sinusoidal in (("gelu", True, False), ("relu", False, False), ("gelu", False, True)):
        cfg = tiny_distil(dim=8, n_heads=2, hidden_dim=12, activation=act, sinusoidal_pos_embds=sinusoidal,
                          tie_word_embeddings=None if tie else False, **small)
        runs.append((f"distilbert {act}{' sinusoidal' if sinusoidal else ''}", cfg, None,
                     dict(act=act, head_act=act, eps=1e-12, first_position=0, tied=tie)))
    for act, tie in (("gelu", True), ("relu", False), ("gelu_new", True)):
        cfg = tiny_roberta(hidden_size=8, num_attention_heads=2, intermediate_size=12, hidden_act=act,
                           tie_word_embeddings=None if tie else False, max_position_embeddings=8, **small)
        runs.append((f"roberta {act} (head gelu)", cfg, [0] * len(ids),
                     dict(act=act, head_act="gelu", eps=1e-5, first_position=2, tied=tie)))
    for label, cfg, type_ids, hyper in runs:
        fam = cfg["model_type"]
        d, nh = (cfg["dim"], cfg["n_heads"]) if fam == "distilbert" else (cfg["hidden_size"], cfg["num_attention_heads"])
        w = bc.stored(bc.random_weights(cfg, 21), "F32")
        ref = bc.forward(w, cfg, ids, type_ids if fam == "bert" else None)
        maps, hidden, logits = slow_forward(w, NAMES[fam], ids, type_ids, d, nh, 2, **hyper)
        near(f"{label}: attentions = the loops'", ref.attentions, maps, 1e-12)
        near(f"{label}: hidden = the loops'", ref.hidden, hidden, 1e-12)
        near(f"{label}: logits = the loops' ({'tied' if hyper['tied'] else 'untied'})", ref.logits, logits, 1e-11)


def test_attention_properties():
    cfg = tiny()
    w = bc.stored(bc.random_weights(cfg, 3), "F32")
    ids = [101, 17, 250, 99, 103, 7, 7, 102]
    ref = bc.forward(w, cfg, ids)
    near("rows sum to 1", ref.attentions.sum(-1), np.ones(ref.attentions.shape[:-1]), 1e-12)
    expect("no mask: every weight > 0", bool(np.all(ref.attentions > 0)))
    expect("no mask: query 0 reads the last key", bool(np.all(ref.attentions[:, :, 0, -1] > 1e-6)))
    expect("no mask: the upper triangle holds weight", float(np.triu(ref.attentions[0, 0], 1).sum()) > 0.1)
    expect("logits of every position", ref.logits.shape == (len(ids), 300) and ref.hidden.shape == (len(ids), 32))
    near("mask_probs sum to 1", bc.mask_probs(ref, ids).sum(), 1.0, 1e-12)
    expect("predicted position: the first [MASK]", bc.predicted_position([101, 5, 103, 6, 103, 102]) == 2)
    expect("no [MASK]: no position", bc.predicted_position([101, 5, 102]) is None and bc.mask_probs(ref, [101, 5]) is None)
    # hiding keys
    hidden = bc.forward(w, cfg, ids, hide=(0, 4))
    expect("hidden keys exactly 0", bool(np.all(hidden.attentions[:, :, :, [0, 4]] == 0)))
    near("hidden: rows still sum to 1", hidden.attentions.sum(-1), np.ones(hidden.attentions.shape[:-1]), 1e-12)
    expect("hidden: the others read", bool(np.all(np.delete(hidden.attentions, [0, 4], axis=3) > 0)))
    near("hide nothing = plain", bc.forward(w, cfg, ids, hide=()).attentions, ref.attentions, 0)
    layer0 = ref.attentions[0][:, :, [1, 2, 3, 5, 6, 7]]
    near("layer 0 hidden: the other keys renormalised",
         hidden.attentions[0][:, :, [1, 2, 3, 5, 6, 7]], layer0 / layer0.sum(-1, keepdims=True), 1e-12)
    everything = bc.forward(w, cfg, ids[:3], hide=(0, 1, 2))
    expect("every key hidden: rows of 0", bool(np.all(everything.attentions == 0)))
    # positions and token types are used
    same = [50] * 6
    flat = dict(w)
    flat["bert.embeddings.position_embeddings.weight"] = np.zeros_like(w["bert.embeddings.position_embeddings.weight"])
    near("equal tokens, no positions: uniform rows", bc.forward(flat, cfg, same).attentions, np.full((2, 4, 6, 6), 1 / 6), 1e-12)
    got = bc.forward(w, cfg, same).attentions
    expect("equal tokens with positions: rows differ", float(np.abs(got - 1 / 6).max()) > 1e-2)
    types = bc.forward(w, cfg, ids, type_ids=[0, 0, 0, 0, 1, 1, 1, 1])
    expect("token types change the maps", float(np.abs(types.attentions - ref.attentions).max()) > 1e-3)
    near("type_ids None = all 0", bc.forward(w, cfg, ids, type_ids=[0] * len(ids)).attentions, ref.attentions, 0)
    longest = bc.forward(w, cfg, [101] + [5] * 14 + [102])
    expect("max_position_embeddings tokens run", longest.attentions.shape == (2, 4, 16, 16))
    expect("one more is refused", _raises(lambda: bc.forward(w, cfg, [101] + [5] * 15 + [102])))
    expect("relative_key is not modelled", _raises(lambda: bc.forward(w, dict(cfg, position_embedding_type="relative_key"), ids)))
    # the what-if hooks
    last = bc.forward(w, cfg, ids, zero={(1, 2)})
    near("ablating a last-layer head leaves that layer's maps", last.attentions, ref.attentions, 0)
    expect("ablating a last-layer head changes the logits", float(np.abs(last.logits - ref.logits).max()) > 1e-3)
    first = bc.forward(w, cfg, ids, zero={(0, 1)})
    near("ablating a layer-0 head leaves layer 0", first.attentions[0], ref.attentions[0], 0)
    expect("ablating a layer-0 head changes layer 1", float(np.abs(first.attentions[1] - ref.attentions[1]).max()) > 1e-3)
    mean = bc.forward(w, cfg, ids, mean={(0, 1)})
    expect("mean-ablating differs from zeroing", float(np.abs(mean.attentions[1] - first.attentions[1]).max()) > 1e-4)
    near("a mean over one position is no change", bc.forward(w, cfg, [101], mean={(0, 0), (1, 3)}).logits,
         bc.forward(w, cfg, [101]).logits, 1e-12)


def test_heads():
    ids = [101, 17, 103, 102]
    cfg = tiny(tie_word_embeddings=False)
    w = bc.stored(bc.random_weights(cfg, 4), "F32")
    untied = bc.forward(w, cfg, ids)
    same = dict(w, **{"cls.predictions.decoder.weight": w["bert.embeddings.word_embeddings.weight"]})
    tied_w = {k: v for k, v in w.items() if k != "cls.predictions.decoder.weight"}
    tied = bc.forward(tied_w, dict(cfg, tie_word_embeddings=True), ids)
    near("tied = untied with the word embeddings as decoder", bc.forward(same, cfg, ids).logits, tied.logits, 0)
    expect("the untied decoder is used", float(np.abs(untied.logits - tied.logits).max()) > 1e-2)
    absent = {k: v for k, v in cfg.items() if k != "tie_word_embeddings"}
    near("tie_word_embeddings absent = true", bc.forward(tied_w, absent, ids).logits, tied.logits, 0)
    no_bias = dict(tied_w, **{"cls.predictions.bias": np.zeros(300)})
    near("cls.predictions.bias is added as it is", tied.logits - bc.forward(no_bias, dict(cfg, tie_word_embeddings=True), ids).logits,
         np.broadcast_to(tied_w["cls.predictions.bias"], (4, 300)), 1e-12)
    # BertModel: the same encoder under other names, no head
    mlm_cfg, model_cfg = tiny(), tiny(architecture="BertModel")
    mlm = bc.forward(bc.stored(bc.random_weights(mlm_cfg, 8), "F32"), mlm_cfg, ids)
    base = bc.forward(bc.stored(bc.random_weights(model_cfg, 8), "F32"), model_cfg, ids)
    near("BertModel shares the encoder of the seed", base.attentions, mlm.attentions, 0)
    expect("BertModel has no logits", base.logits is None and bc.mask_probs(base, ids) is None)


def as_bert(w, fam):
    """A DistilBERT's or RoBERTa's weights under BERT's names (a DistilBERT gets token types of 0)."""
    if fam == "distilbert":
        rename = [("distilbert.transformer.layer.", "bert.encoder.layer."), ("distilbert.", "bert."),
                  (".attention.q_lin.", ".attention.self.query."), (".attention.k_lin.", ".attention.self.key."),
                  (".attention.v_lin.", ".attention.self.value."), (".attention.out_lin.", ".attention.output.dense."),
                  (".sa_layer_norm.", ".attention.output.LayerNorm."), (".ffn.lin1.", ".intermediate.dense."),
                  (".ffn.lin2.", ".output.dense."), (".output_layer_norm.", ".output.LayerNorm."),
                  ("vocab_transform.", "cls.predictions.transform.dense."),
                  ("vocab_layer_norm.", "cls.predictions.transform.LayerNorm."),
                  ("vocab_projector.bias", "cls.predictions.bias"), ("vocab_projector.weight", "cls.predictions.decoder.weight")]
    else:
        rename = [("roberta.", "bert."), ("lm_head.dense.", "cls.predictions.transform.dense."),
                  ("lm_head.layer_norm.", "cls.predictions.transform.LayerNorm."), ("lm_head.bias", "cls.predictions.bias"),
                  ("lm_head.decoder.weight", "cls.predictions.decoder.weight")]
    out = {}
    for name, value in w.items():
        for old, new in rename:
            name = name.replace(old, new)
        out[name] = value
    if fam == "distilbert":
        out["bert.embeddings.token_type_embeddings.weight"] = np.zeros((2, w["distilbert.embeddings.word_embeddings.weight"].shape[1]))
    return out


def test_families():
    """DistilBERT and RoBERTa against BERT's forward: the same encoder under other names, DistilBERT
    with no token types and eps 1e-12, RoBERTa with its positions from pad_token_id + 1 and its head's
    gelu; each family's limits, heads and bare encoder."""
    ids = [101, 17, 250, 99, 103, 7, 7, 102]
    # DistilBERT = BERT with token types of 0 and layer_norm_eps 1e-12
    for act, tie in (("gelu", None), ("relu", False)):
        cfg = tiny_distil(activation=act, tie_word_embeddings=tie)
        w = bc.stored(bc.random_weights(cfg, 31), "F32")
        got = bc.forward(w, cfg, ids)
        bert_cfg = tiny(hidden_act=act, intermediate_size=64, tie_word_embeddings=tie is None, layer_norm_eps=1e-12)
        want = bc.forward(as_bert(w, "distilbert"), bert_cfg, ids)
        near(f"distilbert {act}: = BERT with no token types (maps)", got.attentions, want.attentions, 1e-12)
        near(f"distilbert {act}: = BERT with no token types (logits)", got.logits, want.logits, 1e-11)
    cfg = tiny_distil()
    w = bc.stored(bc.random_weights(cfg, 32), "F32")
    expect("distilbert: max_position_embeddings tokens run", bc.forward(w, cfg, [5] * 16).attentions.shape == (2, 4, 16, 16))
    expect("distilbert: one more is refused", _raises(lambda: bc.forward(w, cfg, [5] * 17)))
    expect("distilbert: token types are refused", _raises(lambda: bc.forward(w, cfg, ids, type_ids=[0] * len(ids))))
    expect("distilbert: eps 1e-12 whatever the config", bc.layer_norm_eps(dict(cfg, layer_norm_eps=1e-3)) == 1e-12)
    near("distilbert: tie_weights_ is not read", bc.forward(w, dict(cfg, tie_weights_=False), ids).logits,
         bc.forward(w, cfg, ids).logits, 0)
    untied_cfg = tiny_distil(tie_word_embeddings=False)
    untied = bc.stored(bc.random_weights(untied_cfg, 32), "F32")
    moved = np.abs(bc.forward(untied, untied_cfg, ids).logits - bc.forward(w, cfg, ids).logits).max()
    expect("distilbert: the untied vocab_projector.weight is used", moved > 1e-2, f"{moved:.3g}")
    model_cfg = tiny_distil(architecture="DistilBertModel")
    base = bc.forward(bc.stored(bc.random_weights(model_cfg, 32), "F32"), model_cfg, ids)
    near("DistilBertModel shares the encoder of the seed", base.attentions, bc.forward(w, cfg, ids).attentions, 0)
    expect("DistilBertModel has no logits", base.logits is None)
    # sinusoidal_pos_embds: the table written is DistilBERT's sinusoids, and the forward reads what is stored
    sin_cfg = tiny_distil(sinusoidal_pos_embds=True)
    sin_w = bc.materialize(bc.random_weights(sin_cfg, 32))
    table = sin_w["distilbert.embeddings.position_embeddings.weight"]
    expect("sinusoidal_pos_embds: the sinusoids are written", np.array_equal(table, bc.sinusoidal_table(16, 32)))
    near("sinusoidal: sin(0) = 0 and cos(0) = 1 at position 0", table[0], [0.0, 1.0] * 16, 0)
    near("sinusoidal: position 1, j = 0, 1", table[1, :2], [math.sin(1.0), math.cos(1.0)], 1e-7)
    near("sinusoidal: position 3, j = 4, 5", table[3, 4:6], [math.sin(3 / 10000 ** (4 / 32)), math.cos(3 / 10000 ** (4 / 32))],
         1e-7)
    near("sinusoidal: position 15, j = 31", table[15, 31], math.cos(15 / 10000 ** (30 / 32)), 1e-7)
    other = dict(sin_w, **{"distilbert.embeddings.position_embeddings.weight": table[::-1].copy()})
    moved = np.abs(bc.forward(other, sin_cfg, ids).attentions - bc.forward(sin_w, sin_cfg, ids).attentions).max()
    expect("sinusoidal: the stored table is what is read", moved > 1e-3, f"{moved:.3g}")
    # RoBERTa = BERT reading the position table from row pad_token_id + 1, type_vocab_size 1
    for act in ("gelu", "relu"):
        cfg = tiny_roberta(hidden_act=act)
        w = bc.stored(bc.random_weights(cfg, 33), "F32")
        got = bc.forward(w, cfg, ids)
        shifted = as_bert(w, "roberta")
        shifted["bert.embeddings.position_embeddings.weight"] = w["roberta.embeddings.position_embeddings.weight"][2:]
        bert_cfg = tiny(hidden_act=act, type_vocab_size=1, layer_norm_eps=1e-5, max_position_embeddings=16, tie_word_embeddings=None)
        want = bc.forward(shifted, bert_cfg, ids)
        near(f"roberta {act}: = BERT with the positions from 2 (maps)", got.attentions, want.attentions, 1e-12)
        if act == "gelu":
            near("roberta gelu: = BERT with the positions from 2 (logits)", got.logits, want.logits, 1e-11)
        else:
            moved = np.abs(got.logits - want.logits).max()
            expect("roberta relu: the head's act is gelu, not hidden_act", moved > 1e-2, f"{moved:.3g}")
            near("roberta relu: = BERT's logits with a gelu head", got.logits,
                 _bert_logits_with_head_act(shifted, bert_cfg, ids, "gelu"), 1e-11)
    cfg = tiny_roberta()
    w = bc.stored(bc.random_weights(cfg, 34), "F32")
    expect("roberta: position offset 2 (pad_token_id 1)", bc.position_offset(cfg) == 2 and bc.max_tokens(cfg) == 16)
    expect("roberta: pad_token_id 0 gives offset 1", bc.position_offset(dict(cfg, pad_token_id=0)) == 1)
    expect("roberta: max_position_embeddings - 2 tokens run", bc.forward(w, cfg, [5] * 16).attentions.shape == (2, 4, 16, 16))
    expect("roberta: one more is refused", _raises(lambda: bc.forward(w, cfg, [5] * 17)))
    moved_rows = dict(w, **{"roberta.embeddings.position_embeddings.weight":
                            w["roberta.embeddings.position_embeddings.weight"] * np.array([[0.0]] * 2 + [[1.0]] * 16)})
    near("roberta: rows 0 and 1 of the position table are never read", bc.forward(moved_rows, cfg, [5] * 16).attentions,
         bc.forward(w, cfg, [5] * 16).attentions, 0)
    alias = {("lm_head.decoder.bias" if k == "lm_head.bias" else k): v for k, v in w.items()}
    near("roberta: lm_head.decoder.bias alone = lm_head.bias", bc.forward(alias, cfg, ids).logits, bc.forward(w, cfg, ids).logits, 0)
    both = bc.random_weights(cfg, 34, head_bias=("lm_head.bias", "lm_head.decoder.bias"))
    expect("roberta: the alias gets lm_head.bias's values",
           np.array_equal(both["lm_head.bias"].array(), both["lm_head.decoder.bias"].array()))
    expect("roberta: type_vocab_size 1", w["roberta.embeddings.token_type_embeddings.weight"].shape == (1, 32))
    model_cfg = tiny_roberta(architecture="RobertaModel")
    base = bc.forward(bc.stored(bc.random_weights(model_cfg, 34), "F32"), model_cfg, ids)
    near("RobertaModel shares the encoder of the seed", base.attentions, bc.forward(w, cfg, ids).attentions, 0)
    expect("RobertaModel has no logits", base.logits is None)
    expect("mask_probs at the first given mask", bc.predicted_position([0, 5, 299, 6, 299, 2], 299) == 2
           and bc.mask_probs(bc.forward(w, cfg, [0, 299, 2]), [0, 299, 2], 299).shape == (300,))


def _bert_logits_with_head_act(w, cfg, ids, act):
    """BERT's logits with the head's activation `act` and the MLP's hidden_act: the hidden states of
    bc.forward, the head written out here."""
    ref = bc.forward(w, cfg, ids)
    f = {"gelu": bc.gelu, "relu": bc.relu, "gelu_new": bc.gelu_new}[act]
    tr = f(ref.hidden @ w["cls.predictions.transform.dense.weight"].T + w["cls.predictions.transform.dense.bias"])
    tr = bc.layer_norm(tr, w["cls.predictions.transform.LayerNorm.weight"], w["cls.predictions.transform.LayerNorm.bias"],
                       cfg["layer_norm_eps"])
    return tr @ w["bert.embeddings.word_embeddings.weight"].T + w["cls.predictions.bias"]


def test_names():
    names = list(bc.tensor_shapes(tiny()))
    expect("BertForMaskedLM: prefix", all(n.startswith(("bert.", "cls.predictions.")) for n in names))
    expect("BertForMaskedLM: no pooler, no decoder when tied",
           not any("pooler" in n or "decoder" in n or "seq_relationship" in n for n in names))
    expect("BertForMaskedLM: 16 encoder tensors a layer", sum(".layer.1." in n for n in names) == 16)
    shapes = bc.tensor_shapes(tiny(tie_word_embeddings=False, intermediate_size=40))
    expect("untied: decoder [V, d]", shapes.get("cls.predictions.decoder.weight") == (300, 32))
    expect("intermediate [inner, d], output [d, inner]", shapes["bert.encoder.layer.0.intermediate.dense.weight"] == (40, 32)
           and shapes["bert.encoder.layer.0.output.dense.weight"] == (32, 40))
    expect("cls.predictions.bias [V]", shapes["cls.predictions.bias"] == (300,))
    pre = bc.tensor_shapes(tiny(architecture="BertForPreTraining"))
    expect("BertForPreTraining: pooler and seq_relationship", pre.get("bert.pooler.dense.weight") == (32, 32)
           and pre.get("cls.seq_relationship.weight") == (2, 32))
    model = list(bc.tensor_shapes(tiny(architecture="BertModel")))
    expect("BertModel: no prefix, no head", model[0] == "embeddings.word_embeddings.weight"
           and "encoder.layer.1.output.LayerNorm.bias" in model and "pooler.dense.bias" in model
           and not any(n.startswith(("bert.", "cls.")) for n in model))
    # DistilBERT
    distil = bc.tensor_shapes(tiny_distil(hidden_dim=40, tie_word_embeddings=False))
    want = {"distilbert.embeddings.word_embeddings.weight": (300, 32), "distilbert.embeddings.position_embeddings.weight": (16, 32),
            "distilbert.embeddings.LayerNorm.weight": (32,), "distilbert.embeddings.LayerNorm.bias": (32,)}
    for m in ("q_lin", "k_lin", "v_lin", "out_lin"):
        want[f"distilbert.transformer.layer.1.attention.{m}.weight"] = (32, 32)
        want[f"distilbert.transformer.layer.1.attention.{m}.bias"] = (32,)
    for m in ("sa_layer_norm", "output_layer_norm"):
        want[f"distilbert.transformer.layer.1.{m}.weight"] = want[f"distilbert.transformer.layer.1.{m}.bias"] = (32,)
    want.update({"distilbert.transformer.layer.1.ffn.lin1.weight": (40, 32), "distilbert.transformer.layer.1.ffn.lin1.bias": (40,),
                 "distilbert.transformer.layer.1.ffn.lin2.weight": (32, 40), "distilbert.transformer.layer.1.ffn.lin2.bias": (32,),
                 "vocab_transform.weight": (32, 32), "vocab_transform.bias": (32,), "vocab_layer_norm.weight": (32,),
                 "vocab_layer_norm.bias": (32,), "vocab_projector.bias": (300,), "vocab_projector.weight": (300, 32)})
    expect("DistilBertForMaskedLM: names and shapes", all(distil.get(k) == v for k, v in want.items()),
           str([k for k, v in want.items() if distil.get(k) != v]))
    expect("DistilBertForMaskedLM: 16 tensors a layer, no token types", sum(".layer.1." in n for n in distil) == 16
           and not any("token_type" in n for n in distil) and len(distil) == 4 + 2 * 16 + 6)
    tied_distil = bc.tensor_shapes(tiny_distil())
    expect("DistilBertForMaskedLM tied: no vocab_projector.weight", "vocab_projector.weight" not in tied_distil
           and "vocab_projector.bias" in tied_distil)
    model = list(bc.tensor_shapes(tiny_distil(architecture="DistilBertModel")))
    expect("DistilBertModel: no prefix, no head", model[0] == "embeddings.word_embeddings.weight"
           and "transformer.layer.1.ffn.lin2.bias" in model and len(model) == 4 + 2 * 16)
    # RoBERTa
    rob = bc.tensor_shapes(tiny_roberta(tie_word_embeddings=False))
    expect("RobertaForMaskedLM: BERT's encoder names under roberta.", rob.get("roberta.encoder.layer.1.attention.self.query.weight")
           == (32, 32) and rob.get("roberta.embeddings.token_type_embeddings.weight") == (1, 32)
           and rob.get("roberta.embeddings.position_embeddings.weight") == (18, 32))
    expect("RobertaForMaskedLM: the head", rob.get("lm_head.dense.weight") == (32, 32) and rob.get("lm_head.layer_norm.bias") == (32,)
           and rob.get("lm_head.bias") == (300,) and rob.get("lm_head.decoder.weight") == (300, 32)
           and "lm_head.decoder.bias" not in rob)
    expect("RobertaForMaskedLM: no pooler", not any("pooler" in n for n in rob))
    expect("RobertaForMaskedLM tied: no lm_head.decoder.weight", "lm_head.decoder.weight" not in bc.tensor_shapes(tiny_roberta()))
    alias = bc.tensor_shapes(tiny_roberta(), head_bias=("lm_head.decoder.bias",))
    expect("head_bias: lm_head.decoder.bias alone", "lm_head.decoder.bias" in alias and "lm_head.bias" not in alias)
    model = list(bc.tensor_shapes(tiny_roberta(architecture="RobertaModel")))
    expect("RobertaModel: no prefix, a pooler, no head", model[0] == "embeddings.word_embeddings.weight"
           and "pooler.dense.weight" in model and not any(n.startswith(("roberta.", "lm_head.")) for n in model))


def test_files():
    cfg = tiny(tie_word_embeddings=False, architecture="BertForPreTraining", num_hidden_layers=3)
    lazy = bc.random_weights(cfg, 9)
    dense = bc.materialize(lazy)
    with tempfile.TemporaryDirectory() as tmp:
        vocab = os.path.join(tmp, "vocab.txt")
        tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "##s"]
        with open(vocab, "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in tokens))
        one, three, dense_dir, js = (os.path.join(tmp, n) for n in ("one", "three", "dense", "json"))
        bc.write_folder(one, cfg, lazy, vocab, dtype="BF16")
        bc.write_folder(dense_dir, cfg, dense, vocab, dtype="BF16")
        bc.write_folder(three, cfg, lazy, vocab, dtype="BF16", shards=3)
        bc.write_folder(js, tiny(), bc.random_weights(tiny(), 1), vocab, tokenizer="json", dtype="F16")
        with open(os.path.join(one, "model.safetensors"), "rb") as f, open(os.path.join(dense_dir, "model.safetensors"), "rb") as g:
            expect("streamed and materialised writes are the same bytes", f.read() == g.read())
        whole, meta = bc.read_safetensors(os.path.join(one, "model.safetensors"))
        expect("metadata format pt", meta == {"format": "pt"})
        expect("names and order", list(whole) == list(bc.tensor_shapes(cfg)))
        expect("shapes", all(whole[k][1] == s and whole[k][0] == "BF16" for k, s in bc.tensor_shapes(cfg).items()))
        expected = bc.stored(dense, "BF16")
        expect("read back = stored()", all(np.array_equal(bc.widen(r, "BF16"), expected[k]) for k, (_, _, r) in whole.items()))
        expect_shards(three, 3, whole)
        with open(os.path.join(one, "config.json")) as f:
            c = json.load(f)
        expect("config.json", c["model_type"] == "bert" and c["architectures"] == ["BertForPreTraining"]
               and c["torch_dtype"] == "bfloat16" and c["tie_word_embeddings"] is False and c["layer_norm_eps"] == 1e-12
               and c["position_embedding_type"] == "absolute" and c["type_vocab_size"] == 2 and c["hidden_act"] == "gelu", str(c))
        expect("vocab form: vocab.txt and tokenizer_config.json", sorted(os.listdir(one)) ==
               ["config.json", "model.safetensors", "tokenizer_config.json", "vocab.txt"], str(os.listdir(one)))
        with open(os.path.join(one, "vocab.txt"), encoding="utf-8") as f:
            expect("vocab.txt copied", f.read().split("\n")[:-1] == tokens)
        with open(os.path.join(one, "tokenizer_config.json")) as f:
            tc = json.load(f)
        expect("tokenizer_config.json", tc["do_lower_case"] is True and tc["tokenizer_class"] == "BertTokenizer", str(tc))
        expect("json form: tokenizer.json, no vocab.txt", sorted(os.listdir(js)) ==
               ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"], str(os.listdir(js)))
        with open(os.path.join(js, "tokenizer.json"), encoding="utf-8") as f:
            tj = json.load(f)
        expect("tokenizer.json's WordPiece vocabulary", tj["model"]["type"] == "WordPiece"
               and tj["model"]["vocab"] == {t: i for i, t in enumerate(tokens)})
        with open(os.path.join(js, "config.json")) as f:
            expect("tied: tie_word_embeddings true, torch_dtype float16", json.load(f)["torch_dtype"] == "float16")
    expect("tie_word_embeddings None: left out", "tie_word_embeddings" not in tiny(tie_word_embeddings=None))


def test_family_files():
    """DistilBERT's and RoBERTa's folders: config.json, the tensors read back, each tokenizer form."""
    with tempfile.TemporaryDirectory() as tmp:
        vocab = os.path.join(tmp, "vocab.txt")
        with open(vocab, "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the"]))
        cfg = tiny_distil(sinusoidal_pos_embds=True, tie_word_embeddings=False, activation="relu")
        lazy = bc.random_weights(cfg, 5)
        one, js = os.path.join(tmp, "distil-vocab"), os.path.join(tmp, "distil-json")
        bc.write_folder(one, cfg, lazy, vocab, dtype="BF16", shards=2)
        bc.write_folder(js, tiny_distil(), bc.random_weights(tiny_distil(), 5), vocab, tokenizer="json")
        with open(os.path.join(one, "config.json")) as f:
            c = json.load(f)
        expect("distilbert config.json", c["model_type"] == "distilbert" and c["architectures"] == ["DistilBertForMaskedLM"]
               and c["dim"] == 32 and c["n_layers"] == 2 and c["n_heads"] == 4 and c["hidden_dim"] == 64
               and c["activation"] == "relu" and c["sinusoidal_pos_embds"] is True and c["tie_weights_"] is True
               and c["tie_word_embeddings"] is False and c["torch_dtype"] == "bfloat16" and c["pad_token_id"] == 0
               and "hidden_size" not in c and "layer_norm_eps" not in c and "type_vocab_size" not in c, str(c))
        with open(os.path.join(js, "config.json")) as f:
            expect("distilbert tied: tie_word_embeddings left out, tie_weights_ true",
                   "tie_word_embeddings" not in (c2 := json.load(f)) and c2["tie_weights_"] is True, str(c2))
        with open(os.path.join(one, "model.safetensors.index.json")) as f:
            index = json.load(f)
        merged = {}
        for file in bc.shard_names(2):
            merged.update(bc.read_safetensors(os.path.join(one, file))[0])
        expect("distilbert: every tensor written, in BF16", set(merged) == set(bc.tensor_shapes(cfg)) == set(index["weight_map"])
               and all(v[0] == "BF16" for v in merged.values()))
        table = bc.widen(merged["distilbert.embeddings.position_embeddings.weight"][2], "BF16")
        near("distilbert: the sinusoidal table as BF16 holds it", table,
             bc.widen(bc.encode(bc.sinusoidal_table(16, 32), "BF16"), "BF16"), 0)
        with open(os.path.join(one, "tokenizer_config.json")) as f:
            tc = json.load(f)
        expect("distilbert: vocab.txt + DistilBertTokenizer's tokenizer_config.json", sorted(os.listdir(one)) ==
               ["config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
               "model.safetensors.index.json", "tokenizer_config.json", "vocab.txt"]
               and tc["tokenizer_class"] == "DistilBertTokenizer" and tc["do_lower_case"] is True, str(os.listdir(one)))
        expect("distilbert: tokenizer.json form", sorted(os.listdir(js)) ==
               ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"], str(os.listdir(js)))
        # RoBERTa: the tokenizer files are copied from a folder holding both forms
        source = os.path.join(tmp, "roberta-tokenizer")
        os.makedirs(source)
        for name in ("vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json"):
            with open(os.path.join(source, name), "w") as f:
                f.write(name + " stand-in\n")
        rcfg = tiny_roberta(tie_word_embeddings=False)
        rv, rj, none = (os.path.join(tmp, n) for n in ("roberta-vocab", "roberta-json", "roberta-none"))
        bc.write_folder(rv, rcfg, bc.random_weights(rcfg, 6, head_bias=("lm_head.decoder.bias",)), source, dtype="F16")
        bc.write_folder(rj, tiny_roberta(), bc.random_weights(tiny_roberta(), 6), source, tokenizer="json")
        bc.write_folder(none, tiny_roberta(), bc.random_weights(tiny_roberta(), 6), source, tokenizer=None)
        expect("roberta: vocab.json + merges.txt + tokenizer_config.json", sorted(os.listdir(rv)) ==
               ["config.json", "merges.txt", "model.safetensors", "tokenizer_config.json", "vocab.json"], str(os.listdir(rv)))
        expect("roberta: tokenizer.json + tokenizer_config.json", sorted(os.listdir(rj)) ==
               ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"], str(os.listdir(rj)))
        expect("roberta: no tokenizer", sorted(os.listdir(none)) == ["config.json", "model.safetensors"], str(os.listdir(none)))
        with open(os.path.join(rv, "merges.txt")) as f:
            expect("roberta: the files copied as they are", f.read() == "merges.txt stand-in\n")
        with open(os.path.join(rv, "config.json")) as f:
            c = json.load(f)
        expect("roberta config.json", c["model_type"] == "roberta" and c["architectures"] == ["RobertaForMaskedLM"]
               and c["pad_token_id"] == 1 and c["bos_token_id"] == 0 and c["eos_token_id"] == 2 and c["type_vocab_size"] == 1
               and c["layer_norm_eps"] == 1e-5 and c["hidden_act"] == "gelu" and c["tie_word_embeddings"] is False
               and c["torch_dtype"] == "float16" and c["max_position_embeddings"] == 18, str(c))
        names = list(bc.read_safetensors(os.path.join(rv, "model.safetensors"))[0])
        expect("roberta: the alias written alone", "lm_head.decoder.bias" in names and "lm_head.bias" not in names
               and "lm_head.decoder.weight" in names)


def slow_modernbert(w, ids, d, nh, inner, kinds, thetas, half, act, head_act, eps, tied, prefix="model."):
    """ModernBERT element by element with math, its tensor names spelled out here: kinds[l] "global"
    or "local" per layer (a local layer's query i reads keys |i - j| <= half), thetas {kind: base};
    each bias added when the weights hold it; the MLP's activation on the first half of Wi's outputs,
    times the second; RoPE pairs (c, c + D/2) rotated by position / theta^(2c / D)."""
    dh, t = d // nh, len(ids)
    act, head_act = ACTS[act], ACTS[head_act]
    g = lambda name: w[name].tolist()  # noqa: E731

    def ln(row, module):
        wn = g(module + ".weight")
        bn = g(module + ".bias") if module + ".bias" in w else [0.0] * len(row)
        m = sum(row) / len(row)
        var = sum((r - m) ** 2 for r in row) / len(row)
        return [wn[i] * (row[i] - m) / math.sqrt(var + eps) + bn[i] for i in range(len(row))]

    def linear(row, module):
        weight = g(module + ".weight")
        bias = g(module + ".bias") if module + ".bias" in w else [0.0] * len(weight)
        return [sum(weight[o][i] * row[i] for i in range(len(row))) + bias[o] for o in range(len(weight))]

    def rope(vec, pos, theta):
        out, half_d = list(vec), dh // 2
        for c in range(half_d):
            a = pos / theta ** (2 * c / dh)
            out[c] = vec[c] * math.cos(a) - vec[c + half_d] * math.sin(a)
            out[c + half_d] = vec[c + half_d] * math.cos(a) + vec[c] * math.sin(a)
        return out

    table = g(prefix + "embeddings.tok_embeddings.weight")
    x = [ln(table[i], prefix + "embeddings.norm") for i in ids]
    maps = []
    for l, kind in enumerate(kinds):
        e = f"{prefix}layers.{l}."
        h = x if l == 0 else [ln(row, e + "attn_norm") for row in x]
        qkv = [linear(row, e + "attn.Wqkv") for row in h]
        ctx = [[0.0] * d for _ in range(t)]
        heads = []
        for hd in range(nh):
            q = [rope(qkv[i][hd * dh:(hd + 1) * dh], i, thetas[kind]) for i in range(t)]
            k = [rope(qkv[i][d + hd * dh:d + (hd + 1) * dh], i, thetas[kind]) for i in range(t)]
            v = [qkv[i][2 * d + hd * dh:2 * d + (hd + 1) * dh] for i in range(t)]
            att = []
            for i in range(t):
                keys = [j for j in range(t) if kind == "global" or abs(i - j) <= half]
                scores = {j: sum(q[i][c] * k[j][c] for c in range(dh)) / math.sqrt(dh) for j in keys}
                top = max(scores.values())
                ex = {j: math.exp(sc - top) for j, sc in scores.items()}
                total = sum(ex.values())
                att.append([ex.get(j, 0.0) / total for j in range(t)])
                for c in range(dh):
                    ctx[i][hd * dh + c] = sum(att[i][j] * v[j][c] for j in range(t))
            heads.append(att)
        maps.append(heads)
        a = [linear(ctx[i], e + "attn.Wo") for i in range(t)]
        x = [[u + r for u, r in zip(a[i], x[i])] for i in range(t)]
        mid = [linear(ln(row, e + "mlp_norm"), e + "mlp.Wi") for row in x]
        y = [linear([act(m[c]) * m[inner + c] for c in range(inner)], e + "mlp.Wo") for m in mid]
        x = [[u + r for u, r in zip(y[i], x[i])] for i in range(t)]
    x = [ln(row, prefix + "final_norm") for row in x]
    if "head.dense.weight" not in w:
        return maps, x, None
    decoder = table if tied else g("decoder.weight")
    bias = g("decoder.bias") if "decoder.bias" in w else [0.0] * len(decoder)
    logits = []
    for row in x:
        tr = ln([head_act(u) for u in linear(row, "head.dense")], "head.norm")
        logits.append([sum(decoder[r][c] * tr[c] for c in range(d)) + bias[r] for r in range(len(decoder))])
    return maps, x, logits


def test_modernbert():
    """ModernBERT: RoPE at position 1 by hand, the window mask, layer 0 without attn_norm, the loop
    form above on several configurations (v4 and v5 configs, biases, activations, layer_types that
    are not every third layer), the thetas per layer type, the bare encoder, the heads."""
    # RoPE by hand: D = 4, theta 100: inverse frequencies 1 and 100^(-1/2) = 0.1; at position 1,
    # q = (1, 2, 3, 4) -> (cos 1 - 3 sin 1, 2 cos .1 - 4 sin .1, 3 cos 1 + sin 1, 4 cos .1 + 2 sin .1)
    cfg = tiny_modern(hidden_size=8, num_attention_heads=2, global_rope_theta=100.0, local_rope_theta=10000.0)
    freqs = bc.modernbert_inv_freq(cfg, "full_attention")
    near("inverse frequencies 1 / theta^(2i/D)", freqs, [1.0, 0.1], 1e-15)
    near("local layers: local_rope_theta", bc.modernbert_inv_freq(cfg, "sliding_attention"), [1.0, 0.01], 1e-15)
    q = np.array([[[0.0, 0.0, 0.0, 0.0]], [[1.0, 2.0, 3.0, 4.0]]])
    got = bc.lc.rope(q, [0, 1], freqs)[1, 0]
    c1, s1, c2, s2 = math.cos(1), math.sin(1), math.cos(0.1), math.sin(0.1)
    near("RoPE at position 1 (rotate_half)", got, [c1 - 3 * s1, 2 * c2 - 4 * s2, 3 * c1 + s1, 4 * c2 + 2 * s2], 1e-15)
    near("RoPE at position 0 is no change", bc.lc.rope(q[::-1].copy(), [0, 1], freqs)[0, 0], [1.0, 2.0, 3.0, 4.0], 0)
    # the layer types and the window: |i - j| <= local_attention // 2
    expect("layer types: every third layer global (v4)", bc.layer_types(tiny_modern(num_hidden_layers=7)) ==
           ["full_attention", "sliding_attention", "sliding_attention"] * 2 + ["full_attention"])
    expect("layer types: global_attn_every_n_layers 2", bc.layer_types(tiny_modern(num_hidden_layers=4, global_attn_every_n_layers=2))
           == ["full_attention", "sliding_attention"] * 2)
    custom = ["sliding_attention", "full_attention", "sliding_attention"]
    expect("layer types: v5's layer_types read as written", bc.layer_types(tiny_modern(num_hidden_layers=3, config_form="v5",
                                                                                       layer_types=custom)) == custom)
    expect("global_attn_every_n_layers 0 refused", _raises(lambda: bc.layer_types(tiny_modern(global_attn_every_n_layers=0))))
    expect("layer_types of another length refused",
           _raises(lambda: bc.layer_types(dict(tiny_modern(config_form="v5"), layer_types=["full_attention"]))))
    band = np.array([[abs(i - j) <= 2 for j in range(6)] for i in range(6)])
    expect("window: local_attention 4 lets |i - j| <= 2 read", np.array_equal(bc.visible(tiny_modern(local_attention=4), 1, 6),
                                                                              band))
    expect("window: local_attention 5 = 4 (5 // 2)", np.array_equal(bc.visible(tiny_modern(local_attention=5), 1, 6), band))
    expect("window: a global layer reads every key", bool(bc.visible(tiny_modern(local_attention=4), 0, 6).all()))
    cfg = tiny_modern(local_attention=4, num_hidden_layers=3)
    w = bc.stored(bc.random_weights(cfg, 41), "F32")
    ids = [1, 17, 250, 99, 4, 7, 7, 30, 2]
    ref = bc.forward(w, cfg, ids)
    outside = ~bc.visible(cfg, 1, len(ids))
    expect("local layer: keys outside the window exactly 0", not np.any(ref.attentions[1][:, outside])
           and not np.any(ref.attentions[2][:, outside]))
    expect("local layer: every key inside the window read", bool(np.all(ref.attentions[1][:, ~outside] > 0)))
    expect("global layer: every key read, the upper triangle too", bool(np.all(ref.attentions[0] > 0)))
    near("rows sum to 1", ref.attentions.sum(-1), np.ones(ref.attentions.shape[:-1]), 1e-12)
    # layer 0: no attn_norm (nn.Identity)
    names = bc.tensor_shapes(cfg)
    expect("layer 0 has no attn_norm, layer 1 has", "model.layers.0.attn_norm.weight" not in names
           and "model.layers.1.attn_norm.weight" in names)
    stray = dict(w, **{"model.layers.0.attn_norm.weight": np.full(32, 3.0)})
    near("a layer-0 attn_norm in the file is not read", bc.forward(stray, cfg, ids).logits, ref.logits, 0)
    # against the loops
    small = dict(hidden_size=8, num_attention_heads=2, intermediate_size=6, num_hidden_layers=3, vocab_size=260,
                 local_attention=2, global_rope_theta=1000.0, local_rope_theta=50.0)
    runs = [("v4 tied gelu", tiny_modern(**small), ["global", "local", "local"], "gelu", "gelu", True),
            ("v4 untied, biases, gelu_new, relu head, eps 1e-3",
             tiny_modern(**dict(small, tie_word_embeddings=False, norm_bias=True, attention_bias=True, mlp_bias=True,
                                classifier_bias=True, hidden_activation="gelu_new", classifier_activation="relu",
                                norm_eps=1e-3)), ["global", "local", "local"], "gelu_new", "relu", False),
            ("v5 layer_types local, global, local, no decoder bias",
             tiny_modern(**dict(small, config_form="v5", layer_types=custom, decoder_bias=False, hidden_activation="relu")),
             ["local", "global", "local"], "relu", "gelu", True),
            ("v4 every 2nd layer global", tiny_modern(**dict(small, global_attn_every_n_layers=2)), ["global", "local", "global"],
             "gelu", "gelu", True)]
    ids = [1, 7, 250, 99, 4, 33, 2]
    for label, cfg, kinds, act, head_act, tie in runs:
        w = bc.stored(bc.random_weights(cfg, 21), "F32")
        ref = bc.forward(w, cfg, ids)
        maps, hidden, logits = slow_modernbert(w, ids, 8, 2, 6, kinds, {"global": 1000.0, "local": 50.0}, 1, act, head_act,
                                               cfg["norm_eps"], tie)
        near(f"modernbert {label}: attentions = the loops'", ref.attentions, maps, 1e-12)
        near(f"modernbert {label}: hidden = the loops'", ref.hidden, hidden, 1e-12)
        near(f"modernbert {label}: logits = the loops'", ref.logits, logits, 1e-11)
    expect("modernbert: biases written with norm_bias, attention_bias, mlp_bias, classifier_bias",
           sum(n.endswith(".bias") for n in bc.tensor_shapes(runs[1][1])) == 8 + 6 + 6 + 1 + 1)  # norms, attn, mlp, dense, decoder
    expect("modernbert: no decoder.bias with decoder_bias false", "decoder.bias" not in bc.tensor_shapes(runs[2][1]))
    # the thetas: local_rope_theta moves the local layers only, global_rope_theta the global ones first
    cfg = tiny_modern(num_hidden_layers=3, local_attention=4)
    w = bc.stored(bc.random_weights(cfg, 42), "F32")
    ids = [1, 17, 250, 99, 4, 7, 7, 30, 2]
    ref = bc.forward(w, cfg, ids)
    local = bc.forward(w, dict(cfg, local_rope_theta=500.0), ids)
    near("local_rope_theta leaves the global layer 0", local.attentions[0], ref.attentions[0], 0)
    expect("local_rope_theta moves the local layer 1", float(np.abs(local.attentions[1] - ref.attentions[1]).max()) > 1e-3)
    glob = bc.forward(w, dict(cfg, global_rope_theta=500.0), ids)
    expect("global_rope_theta moves the global layer 0", float(np.abs(glob.attentions[0] - ref.attentions[0]).max()) > 1e-3)
    near("v4: local_rope_theta null = global_rope_theta", bc.forward(w, dict(cfg, local_rope_theta=None), ids).attentions,
         bc.forward(w, dict(cfg, local_rope_theta=cfg["global_rope_theta"]), ids).attentions, 0)
    v5 = tiny_modern(num_hidden_layers=3, local_attention=4, config_form="v5")
    near("v5 (rope_parameters, layer_types) = v4", bc.forward(w, v5, ids).logits, ref.logits, 0)
    yarn = dict(v5, rope_parameters=dict(v5["rope_parameters"], full_attention={"rope_theta": 1e4, "rope_type": "yarn",
                                                                                "factor": 2.0}))
    expect("rope_type yarn is not modelled", _raises(lambda: bc.forward(w, yarn, ids)))
    expect("no length refused (RoPE, no position table)", bc.forward(w, cfg, [5] * 70).attentions.shape == (3, 4, 70, 70))
    expect("token types refused", _raises(lambda: bc.forward(w, cfg, ids, type_ids=[0] * len(ids))))
    # the hooks, the bare encoder, the heads
    hidden = bc.forward(w, cfg, ids, hide=(0, 4))
    expect("modernbert: hidden keys exactly 0", not np.any(hidden.attentions[:, :, :, [0, 4]]))
    near("modernbert: hidden keys, the rows still sum to 1", hidden.attentions.sum(-1), np.ones(hidden.attentions.shape[:-1]), 1e-12)
    last = bc.forward(w, cfg, ids, zero={(2, 1)})
    near("modernbert: ablating a last-layer head leaves the maps", last.attentions, ref.attentions, 0)
    expect("modernbert: ablating a last-layer head changes the logits", float(np.abs(last.logits - ref.logits).max()) > 1e-3)
    model_cfg = tiny_modern(num_hidden_layers=3, local_attention=4, architecture="ModernBertModel")
    base_w = bc.stored(bc.random_weights(model_cfg, 42), "F32")
    expect("ModernBertModel: no \"model.\" prefix, no head", list(base_w)[0] == "embeddings.tok_embeddings.weight"
           and "final_norm.weight" in base_w and not any(n.startswith(("model.", "head.", "decoder.")) for n in base_w))
    base = bc.forward(base_w, model_cfg, ids)
    near("ModernBertModel shares the encoder of the seed (after final_norm)", base.hidden, ref.hidden, 0)
    expect("ModernBertModel has no logits", base.logits is None)
    untied_cfg = dict(cfg, tie_word_embeddings=False)
    same = dict(w, **{"decoder.weight": w["model.embeddings.tok_embeddings.weight"]})
    near("modernbert: tied = untied with the token table as decoder", bc.forward(same, untied_cfg, ids).logits, ref.logits, 0)
    no_bias = dict(w, **{"decoder.bias": np.zeros(300)})
    near("modernbert: decoder.bias is added as it is", ref.logits - bc.forward(no_bias, cfg, ids).logits,
         np.broadcast_to(w["decoder.bias"], (len(ids), 300)), 1e-12)


def test_modernbert_files():
    """ModernBERT's tensor names and shapes, config.json in transformers 4's and 5's forms, the
    tokenizer files copied as they are."""
    shapes = bc.tensor_shapes(tiny_modern())
    want = {"model.embeddings.tok_embeddings.weight": (300, 32), "model.embeddings.norm.weight": (32,),
            "model.layers.0.attn.Wqkv.weight": (96, 32), "model.layers.0.attn.Wo.weight": (32, 32),
            "model.layers.0.mlp_norm.weight": (32,), "model.layers.0.mlp.Wi.weight": (80, 32),
            "model.layers.0.mlp.Wo.weight": (32, 40), "model.layers.1.attn_norm.weight": (32,),
            "model.layers.1.attn.Wqkv.weight": (96, 32), "model.layers.1.attn.Wo.weight": (32, 32),
            "model.layers.1.mlp_norm.weight": (32,), "model.layers.1.mlp.Wi.weight": (80, 32),
            "model.layers.1.mlp.Wo.weight": (32, 40), "model.final_norm.weight": (32,), "head.dense.weight": (32, 32),
            "head.norm.weight": (32,), "decoder.bias": (300,)}
    expect("ModernBertForMaskedLM tied: names, shapes, order", list(shapes.items()) == list(want.items()), str(list(shapes)))
    biased = bc.tensor_shapes(tiny_modern(norm_bias=True, attention_bias=True, mlp_bias=True, classifier_bias=True,
                                          tie_word_embeddings=False))
    extra = {"model.embeddings.norm.bias": (32,), "model.layers.1.attn_norm.bias": (32,), "model.layers.0.attn.Wqkv.bias": (96,),
             "model.layers.1.attn.Wo.bias": (32,), "model.layers.0.mlp_norm.bias": (32,), "model.layers.1.mlp.Wi.bias": (80,),
             "model.layers.0.mlp.Wo.bias": (32,), "model.final_norm.bias": (32,), "head.dense.bias": (32,),
             "head.norm.bias": (32,), "decoder.weight": (300, 32)}
    expect("ModernBertForMaskedLM with every bias, untied", all(biased.get(k) == v for k, v in {**want, **extra}.items())
           and len(biased) == len(want) + 15 + 1 and "model.layers.0.attn_norm.bias" not in biased, str(list(biased)))
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "tokenizer")
        os.makedirs(source)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            with open(os.path.join(source, name), "w") as f:
                f.write(name + " stand-in\n")
        v4, v5, none = (os.path.join(tmp, n) for n in ("v4", "v5", "none"))
        cfg4 = tiny_modern(num_hidden_layers=3)
        cfg5 = tiny_modern(num_hidden_layers=3, config_form="v5", tie_word_embeddings=False, global_rope_theta=1e5)
        bc.write_folder(v4, cfg4, bc.random_weights(cfg4, 3), source, tokenizer="json", dtype="BF16")
        bc.write_folder(v5, cfg5, bc.random_weights(cfg5, 3), source, tokenizer="json", shards=2)
        bc.write_folder(none, cfg4, bc.random_weights(cfg4, 3), source, tokenizer=None)
        expect("modernbert: tokenizer.json + tokenizer_config.json", sorted(os.listdir(v4)) ==
               ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"], str(os.listdir(v4)))
        expect("modernbert: no tokenizer", sorted(os.listdir(none)) == ["config.json", "model.safetensors"])
        expect("modernbert: the vocab form is refused", _raises(lambda: bc.write_folder(os.path.join(tmp, "x"), cfg4,
                                                                                     {}, source, tokenizer="vocab")))
        with open(os.path.join(v4, "config.json")) as f:
            c = json.load(f)
        expect("modernbert v4 config.json", c["model_type"] == "modernbert" and c["architectures"] == ["ModernBertForMaskedLM"]
               and c["torch_dtype"] == "bfloat16" and c["global_rope_theta"] == 160000.0 and c["local_rope_theta"] == 10000.0
               and c["global_attn_every_n_layers"] == 3 and c["local_attention"] == 128 and c["hidden_activation"] == "gelu"
               and c["classifier_activation"] == "gelu" and c["norm_eps"] == 1e-5 and c["norm_bias"] is False
               and c["decoder_bias"] is True and c["cls_token_id"] == 1 and c["sep_token_id"] == 2
               and "tie_word_embeddings" not in c and "layer_types" not in c and "rope_parameters" not in c, str(c))
        with open(os.path.join(v5, "config.json")) as f:
            c = json.load(f)
        expect("modernbert v5 config.json", c["dtype"] == "float32" and "torch_dtype" not in c
               and "global_rope_theta" not in c and "local_rope_theta" not in c and c["tie_word_embeddings"] is False
               and c["layer_types"] == ["full_attention", "sliding_attention", "sliding_attention"]
               and c["rope_parameters"] == {"full_attention": {"rope_theta": 1e5, "rope_type": "default"},
                                           "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}}
               and c["transformers_version"].startswith("5."), str(c))
        merged = {}
        for file in bc.shard_names(2):
            merged.update(bc.read_safetensors(os.path.join(v5, file))[0])
        expect("modernbert v5: every tensor written", set(merged) == set(bc.tensor_shapes(cfg5)))
        with open(os.path.join(v4, "tokenizer.json")) as f:
            expect("modernbert: the tokenizer files copied as they are", f.read() == "tokenizer.json stand-in\n")
        whole, _ = bc.read_safetensors(os.path.join(v4, "model.safetensors"))
        expect("modernbert: the names and order read back", list(whole) == list(bc.tensor_shapes(cfg4)))


def test_entropy():
    """The random weights' heads: a spread of entropies, neither uniform nor one-hot, for each family."""
    rng = np.random.default_rng(11)
    runs = [(act, bc.config(48, 3, 4, 96, hidden_act=act, vocab_size=30522), bc.MASK) for act in bc.ACTIVATIONS]
    runs += [(f"distilbert {act}", bc.distilbert_config(48, 3, 4, 96, activation=act), bc.MASK) for act in ("gelu", "relu")]
    runs += [("distilbert sinusoidal", bc.distilbert_config(48, 3, 4, 96, sinusoidal_pos_embds=True), bc.MASK)]
    runs += [(f"roberta {act}", bc.roberta_config(48, 3, 4, 96, hidden_act=act, vocab_size=30522, max_position_embeddings=66),
              30000) for act in ("gelu", "relu")]
    runs += [(f"modernbert {act} window {window}", bc.modernbert_config(48, 4, 4, 72, hidden_activation=act, vocab_size=30522,
                                                                        local_attention=window), 30000)
             for act, window in (("gelu", 8), ("relu", 4), ("gelu_new", 128))]
    for label, cfg, mask in runs:
        ids = [101] + list(rng.integers(1000, 30000, 14)) + [mask, 102]
        out = bc.forward(bc.stored(bc.random_weights(cfg, 12), "BF16"), cfg, ids)
        expect_spread(label, out.attentions, float(bc.mask_probs(out, ids, mask).max()), "mask", "the mask's prediction not certain")


def run():
    for test in (test_layer_norm, test_activations, test_against_loops, test_attention_properties, test_heads,
                 test_families, test_names, test_files, test_family_files, test_modernbert, test_modernbert_files,
                 test_entropy):
        test()
    return self_test_summary("LayerNorm, GELU (erf and tanh), the forward of BERT, DistilBERT and RoBERTa against loops, "
                             "no mask, hidden keys, positions and token types, the what-if hooks, tied and untied heads, "
                             "DistilBERT and RoBERTa as BERT renamed (no token types; positions from pad_token_id + 1, the "
                             "head's gelu), ModernBERT against loops (RoPE by hand, the window, layer 0 without attn_norm, "
                             "the thetas per layer type), the bare encoders, safetensors shards, config.json and the "
                             "tokenizer forms")


if __name__ == "__main__":
    sys.exit(run())
