#!/usr/bin/env python3
"""Self-test of bert_checkpoint.py, the float64 BERT oracle, on its own.

Usage: bert_checkpoint_selftest.py   (or bert_checkpoint.py --self-test)

Checks, against hand-computed values and properties rather than against the code under test:
LayerNorm on small vectors (the biased variance, eps inside the square root, a constant vector
giving the bias); GELU with erf at hand values (gelu(1) = Phi(1) = 0.8413447460685429, gelu(-1),
gelu(2)), the tanh GELU against its sigmoid form x sigma(2 sqrt(2/pi) (x + 0.044715 x^3)), ReLU;
a second forward written element by element with math (loops, no matrices) agreeing to 1e-12 on
a tiny model, attentions, hidden states and MLM logits; rows summing to 1 with no mask (query 0
reads the last key); hidden keys exactly 0 and the rows still summing to 1; token ids all equal
and no position embeddings giving uniform rows, positions and token types changing the output;
the longest sentence max_position_embeddings allows and one more refused; ablating a last-layer
head leaving that layer's maps and changing the logits, a mean over one position being no change;
the tied head equal to an untied one whose decoder is the word embeddings, cls.predictions.bias
added as it is; BertModel (no "bert." prefix, no head) sharing the encoder of the same seed; the
tensor names of each architecture; streamed and materialised writes giving the same bytes; a
3-shard folder reading back identical to the unsharded one with a consistent index; config.json
and both tokenizer forms; the random weights' heads neither uniform nor one-hot and the [MASK]
prediction not certain. Exits 1 on any failure.
"""

import json
import math
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bert_checkpoint as bc  # noqa: E402

FAILURES = []
CHECKS = [0]


def check(where, ok, detail=""):
    CHECKS[0] += 1
    if not ok:
        FAILURES.append(where)
        print(f"FAIL {where} {detail}", flush=True)


def near(where, got, want, tol=1e-12):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    err = float(np.max(np.abs(got - want))) if got.shape == want.shape else math.inf
    check(where, err <= tol, f"shape {got.shape} vs {want.shape}, max error {err:.3g}")


def tiny(**over):
    base = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, vocab_size=300,
                max_position_embeddings=16)
    base.update(over)
    return bc.config(**base)


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
    check("gelu and gelu_new differ (by under 5e-4)", 1e-4 < gap < 5e-4, f"{gap:.3g}")
    near("relu", bc.relu([-2.0, 0.0, 3.0]), [0.0, 0.0, 3.0], 0)
    check("unknown act refused", _raises(lambda: bc.activation("sine")))


def _raises(fn):
    try:
        fn()
    except ValueError:
        return True
    return False


def slow_forward(w, cfg, ids, type_ids):
    """BERT element by element with math: lists, loops, math.erf; no matrices."""
    d, nh, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
    dh, t = d // nh, len(ids)
    act = {"gelu": lambda u: u * 0.5 * (1 + math.erf(u / math.sqrt(2))),
           "gelu_new": lambda u: 0.5 * u * (1 + math.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u * u * u))),
           "relu": lambda u: max(u, 0.0)}[cfg["hidden_act"]]
    g = lambda name: w[name].tolist()  # noqa: E731

    def ln(row, wn, bn):
        m = sum(row) / len(row)
        var = sum((r - m) ** 2 for r in row) / len(row)
        return [wn[i] * (row[i] - m) / math.sqrt(var + eps) + bn[i] for i in range(len(row))]

    def linear(row, weight, bias):
        return [sum(weight[o][i] * row[i] for i in range(len(row))) + bias[o] for o in range(len(weight))]

    p = "bert."
    word, pos, typ = g(p + "embeddings.word_embeddings.weight"), g(p + "embeddings.position_embeddings.weight"), \
        g(p + "embeddings.token_type_embeddings.weight")
    x = [ln([word[ids[i]][j] + pos[i][j] + typ[type_ids[i]][j] for j in range(d)], g(p + "embeddings.LayerNorm.weight"),
            g(p + "embeddings.LayerNorm.bias")) for i in range(t)]
    maps = []
    for l in range(cfg["num_hidden_layers"]):
        e = f"{p}encoder.layer.{l}."
        q, k, v = ([linear(x[i], g(e + f"attention.self.{n}.weight"), g(e + f"attention.self.{n}.bias")) for i in range(t)]
                   for n in ("query", "key", "value"))
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
        a = [linear(ctx[i], g(e + "attention.output.dense.weight"), g(e + "attention.output.dense.bias")) for i in range(t)]
        x = [ln([u + r for u, r in zip(a[i], x[i])], g(e + "attention.output.LayerNorm.weight"),
                g(e + "attention.output.LayerNorm.bias")) for i in range(t)]
        mid = [[act(u) for u in linear(x[i], g(e + "intermediate.dense.weight"), g(e + "intermediate.dense.bias"))] for i in range(t)]
        y = [linear(mid[i], g(e + "output.dense.weight"), g(e + "output.dense.bias")) for i in range(t)]
        x = [ln([u + r for u, r in zip(y[i], x[i])], g(e + "output.LayerNorm.weight"), g(e + "output.LayerNorm.bias"))
             for i in range(t)]
    logits = []
    for i in range(t):
        dense = linear(x[i], g("cls.predictions.transform.dense.weight"), g("cls.predictions.transform.dense.bias"))
        tr = ln([act(u) for u in dense], g("cls.predictions.transform.LayerNorm.weight"),
                g("cls.predictions.transform.LayerNorm.bias"))
        decoder = word if bc.tied(cfg) else g("cls.predictions.decoder.weight")
        bias = g("cls.predictions.bias")
        logits.append([sum(decoder[r][c] * tr[c] for c in range(d)) + bias[r] for r in range(len(decoder))])
    return maps, x, logits


def test_against_loops():
    ids, types = [101, 7, 250, 103, 33, 102], [0, 0, 0, 1, 1, 1]
    for act, tie in (("gelu", True), ("gelu_new", False), ("relu", True)):
        cfg = tiny(hidden_size=8, num_attention_heads=2, intermediate_size=12, vocab_size=260, hidden_act=act,
                   tie_word_embeddings=tie)
        w = bc.stored(bc.random_weights(cfg, 21), "F32")
        ref = bc.forward(w, cfg, ids, types)
        maps, hidden, logits = slow_forward(w, cfg, ids, types)
        near(f"{act}: attentions = the loops'", ref.attentions, maps, 1e-12)
        near(f"{act}: hidden = the loops'", ref.hidden, hidden, 1e-12)
        near(f"{act}: logits = the loops' ({'tied' if tie else 'untied'})", ref.logits, logits, 1e-11)


def test_attention_properties():
    cfg = tiny()
    w = bc.stored(bc.random_weights(cfg, 3), "F32")
    ids = [101, 17, 250, 99, 103, 7, 7, 102]
    ref = bc.forward(w, cfg, ids)
    near("rows sum to 1", ref.attentions.sum(-1), np.ones(ref.attentions.shape[:-1]), 1e-12)
    check("no mask: every weight > 0", bool(np.all(ref.attentions > 0)))
    check("no mask: query 0 reads the last key", bool(np.all(ref.attentions[:, :, 0, -1] > 1e-6)))
    check("no mask: the upper triangle holds weight", float(np.triu(ref.attentions[0, 0], 1).sum()) > 0.1)
    check("logits of every position", ref.logits.shape == (len(ids), 300) and ref.hidden.shape == (len(ids), 32))
    near("mask_probs sum to 1", bc.mask_probs(ref, ids).sum(), 1.0, 1e-12)
    check("predicted position: the first [MASK]", bc.predicted_position([101, 5, 103, 6, 103, 102]) == 2)
    check("no [MASK]: no position", bc.predicted_position([101, 5, 102]) is None and bc.mask_probs(ref, [101, 5]) is None)
    # hiding keys
    hidden = bc.forward(w, cfg, ids, hide=(0, 4))
    check("hidden keys exactly 0", bool(np.all(hidden.attentions[:, :, :, [0, 4]] == 0)))
    near("hidden: rows still sum to 1", hidden.attentions.sum(-1), np.ones(hidden.attentions.shape[:-1]), 1e-12)
    check("hidden: the others read", bool(np.all(np.delete(hidden.attentions, [0, 4], axis=3) > 0)))
    near("hide nothing = plain", bc.forward(w, cfg, ids, hide=()).attentions, ref.attentions, 0)
    layer0 = ref.attentions[0][:, :, [1, 2, 3, 5, 6, 7]]
    near("layer 0 hidden: the other keys renormalised",
         hidden.attentions[0][:, :, [1, 2, 3, 5, 6, 7]], layer0 / layer0.sum(-1, keepdims=True), 1e-12)
    everything = bc.forward(w, cfg, ids[:3], hide=(0, 1, 2))
    check("every key hidden: rows of 0", bool(np.all(everything.attentions == 0)))
    # positions and token types are used
    same = [50] * 6
    flat = dict(w)
    flat["bert.embeddings.position_embeddings.weight"] = np.zeros_like(w["bert.embeddings.position_embeddings.weight"])
    near("equal tokens, no positions: uniform rows", bc.forward(flat, cfg, same).attentions, np.full((2, 4, 6, 6), 1 / 6), 1e-12)
    got = bc.forward(w, cfg, same).attentions
    check("equal tokens with positions: rows differ", float(np.abs(got - 1 / 6).max()) > 1e-2)
    types = bc.forward(w, cfg, ids, type_ids=[0, 0, 0, 0, 1, 1, 1, 1])
    check("token types change the maps", float(np.abs(types.attentions - ref.attentions).max()) > 1e-3)
    near("type_ids None = all 0", bc.forward(w, cfg, ids, type_ids=[0] * len(ids)).attentions, ref.attentions, 0)
    longest = bc.forward(w, cfg, [101] + [5] * 14 + [102])
    check("max_position_embeddings tokens run", longest.attentions.shape == (2, 4, 16, 16))
    check("one more is refused", _raises(lambda: bc.forward(w, cfg, [101] + [5] * 15 + [102])))
    check("relative_key is not modelled", _raises(lambda: bc.forward(w, dict(cfg, position_embedding_type="relative_key"), ids)))
    # the what-if hooks
    last = bc.forward(w, cfg, ids, zero={(1, 2)})
    near("ablating a last-layer head leaves that layer's maps", last.attentions, ref.attentions, 0)
    check("ablating a last-layer head changes the logits", float(np.abs(last.logits - ref.logits).max()) > 1e-3)
    first = bc.forward(w, cfg, ids, zero={(0, 1)})
    near("ablating a layer-0 head leaves layer 0", first.attentions[0], ref.attentions[0], 0)
    check("ablating a layer-0 head changes layer 1", float(np.abs(first.attentions[1] - ref.attentions[1]).max()) > 1e-3)
    mean = bc.forward(w, cfg, ids, mean={(0, 1)})
    check("mean-ablating differs from zeroing", float(np.abs(mean.attentions[1] - first.attentions[1]).max()) > 1e-4)
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
    check("the untied decoder is used", float(np.abs(untied.logits - tied.logits).max()) > 1e-2)
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
    check("BertModel has no logits", base.logits is None and bc.mask_probs(base, ids) is None)


def test_names():
    names = list(bc.tensor_shapes(tiny()))
    check("BertForMaskedLM: prefix", all(n.startswith(("bert.", "cls.predictions.")) for n in names))
    check("BertForMaskedLM: no pooler, no decoder when tied",
          not any("pooler" in n or "decoder" in n or "seq_relationship" in n for n in names))
    check("BertForMaskedLM: 16 encoder tensors a layer", sum(".layer.1." in n for n in names) == 16)
    shapes = bc.tensor_shapes(tiny(tie_word_embeddings=False, intermediate_size=40))
    check("untied: decoder [V, d]", shapes.get("cls.predictions.decoder.weight") == (300, 32))
    check("intermediate [inner, d], output [d, inner]", shapes["bert.encoder.layer.0.intermediate.dense.weight"] == (40, 32)
          and shapes["bert.encoder.layer.0.output.dense.weight"] == (32, 40))
    check("cls.predictions.bias [V]", shapes["cls.predictions.bias"] == (300,))
    pre = bc.tensor_shapes(tiny(architecture="BertForPreTraining"))
    check("BertForPreTraining: pooler and seq_relationship", pre.get("bert.pooler.dense.weight") == (32, 32)
          and pre.get("cls.seq_relationship.weight") == (2, 32))
    model = list(bc.tensor_shapes(tiny(architecture="BertModel")))
    check("BertModel: no prefix, no head", model[0] == "embeddings.word_embeddings.weight"
          and "encoder.layer.1.output.LayerNorm.bias" in model and "pooler.dense.bias" in model
          and not any(n.startswith(("bert.", "cls.")) for n in model))


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
            check("streamed and materialised writes are the same bytes", f.read() == g.read())
        whole, meta = bc.read_safetensors(os.path.join(one, "model.safetensors"))
        check("metadata format pt", meta == {"format": "pt"})
        check("names and order", list(whole) == list(bc.tensor_shapes(cfg)))
        check("shapes", all(whole[k][1] == s and whole[k][0] == "BF16" for k, s in bc.tensor_shapes(cfg).items()))
        expected = bc.stored(dense, "BF16")
        check("read back = stored()", all(np.array_equal(bc.widen(r, "BF16"), expected[k]) for k, (_, _, r) in whole.items()))
        with open(os.path.join(three, "model.safetensors.index.json")) as f:
            index = json.load(f)
        merged, total = {}, 0
        for file in bc.shard_names(3):
            part, _ = bc.read_safetensors(os.path.join(three, file))
            check(f"{file} is not empty", len(part) > 0)
            for k, value in part.items():
                check(f"{k} in one shard only", k not in merged)
                check(f"index names {file} for {k}", index["weight_map"].get(k) == file)
                merged[k] = value
                total += value[2].nbytes
        check("index covers every tensor", set(index["weight_map"]) == set(whole))
        check("index total_size", index["metadata"]["total_size"] == total)
        check("3 shards read back identical", set(merged) == set(whole) and all(
            merged[k][:2] == whole[k][:2] and np.array_equal(merged[k][2], whole[k][2]) for k in whole))
        with open(os.path.join(one, "config.json")) as f:
            c = json.load(f)
        check("config.json", c["model_type"] == "bert" and c["architectures"] == ["BertForPreTraining"]
              and c["torch_dtype"] == "bfloat16" and c["tie_word_embeddings"] is False and c["layer_norm_eps"] == 1e-12
              and c["position_embedding_type"] == "absolute" and c["type_vocab_size"] == 2 and c["hidden_act"] == "gelu", str(c))
        check("vocab form: vocab.txt and tokenizer_config.json", sorted(os.listdir(one)) ==
              ["config.json", "model.safetensors", "tokenizer_config.json", "vocab.txt"], str(os.listdir(one)))
        with open(os.path.join(one, "vocab.txt"), encoding="utf-8") as f:
            check("vocab.txt copied", f.read().split("\n")[:-1] == tokens)
        with open(os.path.join(one, "tokenizer_config.json")) as f:
            tc = json.load(f)
        check("tokenizer_config.json", tc["do_lower_case"] is True and tc["tokenizer_class"] == "BertTokenizer", str(tc))
        check("json form: tokenizer.json, no vocab.txt", sorted(os.listdir(js)) ==
              ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"], str(os.listdir(js)))
        with open(os.path.join(js, "tokenizer.json"), encoding="utf-8") as f:
            tj = json.load(f)
        check("tokenizer.json's WordPiece vocabulary", tj["model"]["type"] == "WordPiece"
              and tj["model"]["vocab"] == {t: i for i, t in enumerate(tokens)})
        with open(os.path.join(js, "config.json")) as f:
            check("tied: tie_word_embeddings true, torch_dtype float16", json.load(f)["torch_dtype"] == "float16")
    check("tie_word_embeddings None: left out", "tie_word_embeddings" not in tiny(tie_word_embeddings=None))


def test_entropy():
    """The random weights' heads: a spread of entropies, neither uniform nor one-hot."""
    rng = np.random.default_rng(11)
    for act in bc.ACTIVATIONS:
        cfg = bc.config(48, 3, 4, 96, hidden_act=act, vocab_size=30522)
        ids = [101] + list(rng.integers(1000, 30000, 14)) + [103, 102]
        out = bc.forward(bc.stored(bc.random_weights(cfg, 12), "BF16"), cfg, ids)
        lo, hi, mean = bc.entropy_range(out.attentions)
        top = float(bc.mask_probs(out, ids).max())
        print(f"  {act}: normalised entropy of rows {lo:.2f} ... {hi:.2f}, mean {mean:.2f}; top [MASK] probability {top:.3f}")
        check(f"{act}: heads are not uniform", lo < 0.6 and mean < 0.95, f"{lo:.3f} {mean:.3f}")
        check(f"{act}: heads are not one-hot", hi > 0.6 and mean > 0.3, f"{hi:.3f} {mean:.3f}")
        check(f"{act}: [MASK] prediction not certain", top < 0.9, f"{top:.3f}")


def run():
    for test in (test_layer_norm, test_activations, test_against_loops, test_attention_properties, test_heads, test_names,
                 test_files, test_entropy):
        test()
    if FAILURES:
        print(f"{len(FAILURES)} of {CHECKS[0]} self-checks failed")
        return 1
    print(f"all {CHECKS[0]} self-checks passed: LayerNorm, GELU (erf and tanh), the forward against loops, no mask, "
          "hidden keys, positions and token types, the what-if hooks, tied and untied heads, BertModel, safetensors shards, "
          "config.json and both tokenizer forms")
    return 0


if __name__ == "__main__":
    sys.exit(run())
