#!/usr/bin/env python3
"""Self-test of llama_checkpoint.py, the float64 Llama / Mistral / Qwen2 / Qwen3 oracle, on its own.

Usage: llama_checkpoint_selftest.py   (or llama_checkpoint.py --self-test)

Checks, against hand-computed values and properties rather than against the code under test:
RMSNorm on a 2-vector; RoPE at position 1 on a unit vector, norm preservation and q.k depending on
m - n only; the default, linear and llama3 inverse frequencies (factor 1 is the identity, the
three wavelength bands of Llama 3.1's 8/1/4/8192 scaling, low == high gives a step); grouped-query
attention equal to multi-head attention with the kv heads repeated; a sliding window >= T equal
to none and a window of 1 the identity; rows summing to 1 with masked keys exactly 0; BF16
rounding nearest-even on hand-picked bit patterns and by brute force against both neighbours;
streamed and materialised writes giving the same bytes; a 3-shard folder reading back identical to
the unsharded one with a consistent index; both config forms' fields; the entropy of the random
weights' heads (neither uniform nor one-hot) for every family. Exits 1 on any failure.
"""

import contextlib
import json
import math
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import expect, near, self_test_summary  # noqa: E402
import llama_checkpoint as lc  # noqa: E402


def tiny(family, **over):
    base = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, vocab_size=300, bos_token_id=1, eos_token_id=2)
    base.update(over)
    return lc.config(family, **base)


def test_rms_norm():
    # x = [3, 4]: mean(x^2) = 12.5, rms = 3.5355339; w = [1, 2]
    near("rms_norm [3,4]", lc.rms_norm(np.array([3.0, 4.0]), np.array([1.0, 2.0]), 0.0),
         [3 / math.sqrt(12.5), 8 / math.sqrt(12.5)])
    near("rms_norm eps", lc.rms_norm(np.array([0.0, 0.0]), np.array([1.0, 1.0]), 1e-6), [0.0, 0.0])


def test_rope():
    # D = 4, theta = 100: inv_freq = [1, 1/10]. x = e0 at position 1: first half (cos 1, 0), second (sin 1, 0)
    cfg = tiny("llama", hidden_size=16, num_attention_heads=4, rope_theta=100.0)
    near("inv_freq default", lc.inv_freq(cfg), [1.0, 0.1])
    x = np.zeros((2, 1, 4))
    x[:, 0, 0] = 1.0
    y = lc.rope(x, [0, 1], np.array([1.0, 0.1]))
    near("rope position 0", y[0, 0], [1, 0, 0, 0])
    near("rope position 1 e0", y[1, 0], [math.cos(1), 0, math.sin(1), 0])
    x = np.zeros((2, 1, 4))
    x[:, 0, 3] = 1.0  # e3: rotate_half gives (0, -1, 0, 0) at the second frequency
    near("rope position 1 e3", lc.rope(x, [0, 1], np.array([1.0, 0.1]))[1, 0], [0, -math.sin(0.1), 0, math.cos(0.1)])
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((1, 1, 16)), rng.standard_normal((1, 1, 16))
    f = lc.inv_freq(tiny("llama", hidden_size=64, num_attention_heads=4))
    near("rope keeps the norm", np.linalg.norm(lc.rope(q, [7], f)), np.linalg.norm(q))
    dots = [float(lc.rope(q, [m], f)[0, 0] @ lc.rope(k, [m - 3], f)[0, 0]) for m in (3, 5, 11)]
    near("rope: q.k depends on m - n only", dots, [dots[0]] * 3, 1e-12)


def test_rope_scaling():
    def cfg(scaling, theta=500000.0, d=128):
        return tiny("llama", hidden_size=d * 4, num_attention_heads=4, rope_theta=theta, rope_scaling=scaling,
                    max_position_embeddings=131072)
    default = lc.inv_freq(cfg(None))
    near("default inv_freq[i] = theta^(-2i/D)", default[[0, 1, 63]], [1.0, 500000.0 ** (-2 / 128), 500000.0 ** (-126 / 128)])
    near("linear = default / factor", lc.inv_freq(cfg({"type": "linear", "factor": 4.0})), default / 4)
    near("linear via rope_type", lc.inv_freq(cfg({"rope_type": "linear", "factor": 4.0})), default / 4)
    ident = {"rope_type": "llama3", "factor": 1.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
             "original_max_position_embeddings": 8192}
    near("llama3 factor 1 is the identity", lc.inv_freq(cfg(ident)), default, 1e-15)
    step = dict(ident, high_freq_factor=1.0)
    got = lc.inv_freq(cfg(step))
    expect("llama3 factor 1, low = high = 1: finite", bool(np.all(np.isfinite(got))))
    near("llama3 factor 1, low = high = 1: identity", got, default, 1e-15)
    wavelen = 2 * math.pi / default
    got = lc.inv_freq(cfg(dict(step, factor=8.0)))
    near("llama3 low = high: a step at 8192", got, np.where(wavelen > 8192, default / 8, default), 1e-15)
    # Llama 3.1: factor 8, low 1, high 4, 8192: wavelengths < 2048 kept, > 8192 divided by 8, between smoothed
    l31 = dict(ident, factor=8.0)
    got = lc.inv_freq(cfg(l31))
    high, low = wavelen < 2048, wavelen > 8192
    mid = ~high & ~low
    expect("llama3 has three bands", high.any() and low.any() and mid.any(), str((high.sum(), mid.sum(), low.sum())))
    near("llama3 high frequencies kept", got[high], default[high], 0)
    near("llama3 low frequencies / 8", got[low], default[low] / 8, 0)
    s = (8192 / wavelen[mid] - 1) / 3
    near("llama3 medium: (1-s) f/8 + s f", got[mid], (1 - s) * default[mid] / 8 + s * default[mid], 1e-18)
    expect("llama3 medium between f/8 and f", bool(np.all((got[mid] >= default[mid] / 8) & (got[mid] <= default[mid]))))
    # the hand value of one medium frequency: theta 10000, D 16, old 64 -> i = 1 has wavelength 2 pi 10^0.5
    small = tiny("llama", hidden_size=64, num_attention_heads=4, rope_theta=10000.0, max_position_embeddings=2048,
                 rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                               "original_max_position_embeddings": 64})
    f1, w1 = 10000 ** (-2 / 16), 2 * math.pi * 10000 ** (2 / 16)
    s1 = (64 / w1 - 1) / 3
    near("llama3 hand value i = 1", lc.inv_freq(small)[1], (1 - s1) * f1 / 8 + s1 * f1, 1e-16)
    near("llama3 hand value i = 0 (kept)", lc.inv_freq(small)[0], 1.0, 0)
    near("llama3 hand value i = 3 (/ 8)", lc.inv_freq(small)[3], 10000 ** (-6 / 16) / 8, 1e-18)


def test_attention_properties():
    for family in lc.FAMILIES:
        cfg = tiny(family, sliding_window=4 if family == "mistral" else None)
        w = lc.stored(lc.random_weights(cfg, 3), "F32")
        ids = list(np.random.default_rng(4).integers(0, 300, 9))
        out = lc.forward(w, cfg, ids)
        near(f"{family}: rows sum to 1", out.attentions.sum(-1), np.ones(out.attentions.shape[:-1]), 1e-12)
        visible = lc.attention_mask(9, 4 if family == "mistral" else None)
        expect(f"{family}: masked keys exactly 0", bool(np.all(out.attentions[..., ~visible] == 0)))
        near(f"{family}: probs sum to 1", out.probs.sum(), 1.0, 1e-12)
        expect(f"{family}: kv heads", out.kv_heads == [0, 0, 1, 1], str(out.kv_heads))
    near("mask window 2", lc.attention_mask(4, 2), [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]], 0)
    # GQA: the same model with each kv head's rows repeated per query head (repeat_kv) is plain MHA
    cfg = tiny("qwen2")
    w = lc.stored(lc.random_weights(cfg, 5), "F32")
    mha_cfg, mha = dict(cfg, num_key_value_heads=4), dict(w)
    d = lc.head_dim(cfg)
    for l in range(2):
        for n in ("k", "v"):
            for part in ("weight", "bias"):
                name = f"model.layers.{l}.self_attn.{n}_proj.{part}"
                blocks = np.split(w[name], 2, axis=0)
                mha[name] = np.concatenate([blocks[0], blocks[0], blocks[1], blocks[1]], axis=0)
                expect("GQA split", blocks[0].shape[0] == d)
    ids = [5, 17, 2, 99, 150, 7, 7, 31]
    a, b = lc.forward(w, cfg, ids), lc.forward(mha, mha_cfg, ids)
    near("GQA = MHA with repeated kv heads (attention)", a.attentions, b.attentions, 1e-13)
    near("GQA = MHA with repeated kv heads (probs)", a.probs, b.probs, 1e-13)
    expect("MHA kv heads", b.kv_heads == [0, 1, 2, 3])


def test_windows():
    ids = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]
    for family, extra in [("mistral", {}), ("qwen2", {"use_sliding_window": True, "max_window_layers": 0})]:
        full = tiny(family, **extra)
        w = lc.stored(lc.random_weights(full, 6), "F32")
        ref = lc.forward(w, dict(full, sliding_window=None, use_sliding_window=False), ids)
        for window in (len(ids), len(ids) + 5):
            got = lc.forward(w, dict(full, sliding_window=window), ids)
            near(f"{family}: window {window} >= T is no window", got.attentions, ref.attentions, 0)
        one = lc.forward(w, dict(full, sliding_window=1), ids)
        near(f"{family}: window 1 is the identity", one.attentions, np.broadcast_to(np.eye(len(ids)), one.attentions.shape), 0)
        smaller = lc.forward(w, dict(full, sliding_window=3), ids)
        expect(f"{family}: window 3 changes the maps", float(np.abs(smaller.attentions - ref.attentions).max()) > 1e-3)
    cfg = tiny("qwen2", num_hidden_layers=4, sliding_window=3, use_sliding_window=True, max_window_layers=2)
    expect("qwen2 max_window_layers 2 of 4", lc.layer_windows(cfg) == [None, None, 3, 3], str(lc.layer_windows(cfg)))
    expect("qwen2 sliding_window ignored without use_sliding_window",
           lc.layer_windows(dict(cfg, use_sliding_window=False)) == [None] * 4)
    expect("llama never slides", lc.layer_windows(tiny("llama")) == [None, None])


def test_bf16():
    bits = np.array([0x3F800000, 0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF, 0x7F7FFFFF, 0x7F800000,
                     0xFF800000, 0x00000001, 0x80000000, 0xBF818000], np.uint32)
    want = [0x3F80, 0x3F80, 0x3F82, 0x3F81, 0x3F80, 0x7F80, 0x7F80, 0xFF80, 0x0000, 0x8000, 0xBF82]
    got = lc.bf16_bits(bits.view(np.float32))
    expect("bf16 hand patterns (ties to even)", [int(x) for x in got] == want, str([hex(int(x)) for x in got]))
    nan = lc.bf16_bits(np.array([0x7F800001, 0xFFC00000, 0x7FFFFFFF], np.uint32).view(np.float32))
    expect("bf16 NaN stays NaN", bool(np.all(np.isnan(lc.widen(nan, "BF16")))), str([hex(int(x)) for x in nan]))
    # brute force: the chosen value is a nearest of the two neighbours, the even one on a tie
    x = np.random.default_rng(7).standard_normal(200000).astype(np.float32) * np.float32(3.0)
    x[:1000] = (np.random.default_rng(8).integers(0, 1 << 16, 1000, dtype=np.uint32) << 16 | 0x8000).view(np.float32)
    x = x[np.isfinite(x) & (np.abs(x) < 3e38)]  # finite, with a finite upper neighbour
    u = x.view(np.uint32)
    lo = (u >> 16).astype(np.int64)  # truncation toward zero in magnitude
    hi = lo + 1
    widen = lambda h: (h.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    dlo, dhi = np.abs(x - widen(lo)), np.abs(x - widen(hi))
    want = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(lo % 2 == 0, lo, hi)))
    expect("bf16 brute force against both neighbours", bool(np.all(lc.bf16_bits(x).astype(np.int64) == want)))
    near("F16 is numpy's cast", lc.widen(lc.encode(np.float32([1 / 3]), "F16"), "F16"), [np.float16(1 / 3)], 0)


def test_files(tokenizer_dir):
    cfg = tiny("qwen3", hidden_size=48, head_dim=16, num_hidden_layers=3, tie_word_embeddings=False)
    lazy = lc.random_weights(cfg, 9)
    dense = lc.materialize(lazy)
    with tempfile.TemporaryDirectory() as tmp:
        one, three, dense_dir = (os.path.join(tmp, n) for n in ("one", "three", "dense"))
        lc.write_folder(one, "qwen3", cfg, lazy, tokenizer_dir, dtype="BF16")
        lc.write_folder(dense_dir, "qwen3", cfg, dense, tokenizer_dir, dtype="BF16")
        lc.write_folder(three, "qwen3", cfg, lazy, tokenizer_dir, dtype="BF16", shards=3, config_form="v5")
        with open(os.path.join(one, "model.safetensors"), "rb") as f, open(os.path.join(dense_dir, "model.safetensors"), "rb") as g:
            expect("streamed and materialised writes are the same bytes", f.read() == g.read())
        whole, meta = lc.read_safetensors(os.path.join(one, "model.safetensors"))
        expect("metadata format pt", meta == {"format": "pt"})
        expect("names and order", list(whole) == list(lc.tensor_shapes(cfg)))
        with open(os.path.join(one, "model.safetensors"), "rb") as f:
            n = int.from_bytes(f.read(8), "little")
        expect("header padded to 8", (8 + n) % 8 == 0)
        expected = lc.stored(dense, "BF16")
        expect("read back = stored()", all(np.array_equal(lc.widen(r, "BF16"), expected[k]) for k, (_, _, r) in whole.items()))
        files = lc.shard_names(3) + ["config.json", "generation_config.json", "model.safetensors.index.json", "tokenizer.json",
                                     "tokenizer_config.json"]
        expect("shard files", sorted(os.listdir(three)) == sorted(files), str(os.listdir(three)))
        expect_shards(three, 3, whole)
        with open(os.path.join(one, "config.json")) as f:
            v4 = json.load(f)
        with open(os.path.join(three, "config.json")) as f:
            v5 = json.load(f)
        expect("v4 fields", v4["torch_dtype"] == "bfloat16" and "rope_theta" in v4 and "rope_scaling" in v4
               and "rope_parameters" not in v4 and v4["head_dim"] == 16 and v4["model_type"] == "qwen3", str(v4))
        expect("v5 fields", v5["dtype"] == "bfloat16" and "torch_dtype" not in v5 and "rope_theta" not in v5
               and v5["rope_parameters"] == {"rope_theta": 10000.0, "rope_type": "default"}
               and v5["layer_types"] == ["full_attention"] * 3, str(v5))
    v5 = lc.config_json(tiny("llama", rope_scaling={"type": "linear", "factor": 2.0}), "F16", "v5")
    expect("v5 linear rope_parameters", v5["rope_parameters"] == {"rope_theta": 10000.0, "rope_type": "linear", "factor": 2.0})
    expect("llama has no head_dim unless given", "head_dim" not in v5)


def expect_shards(folder, shards, whole):
    """A folder of `shards` safetensors files (bert_checkpoint_selftest's too): each one not empty,
    every tensor in one of them and named there by model.safetensors.index.json, the index's
    total_size their data's bytes, and the tensors (dtype, shape, bytes) those of `whole`, the
    unsharded file read back."""
    with open(os.path.join(folder, "model.safetensors.index.json")) as f:
        index = json.load(f)
    merged, total = {}, 0
    for file in lc.shard_names(shards):
        part, _ = lc.read_safetensors(os.path.join(folder, file))
        expect(f"{file} is not empty", len(part) > 0)
        for k, value in part.items():
            expect(f"{k} in one shard only", k not in merged)
            expect(f"index names {file} for {k}", index["weight_map"].get(k) == file)
            merged[k] = value
            total += value[2].nbytes
    expect("index covers every tensor", set(index["weight_map"]) == set(whole))
    expect("index total_size", index["metadata"]["total_size"] == total, f"{index['metadata']} vs {total}")
    expect(f"{shards} shards read back identical", set(merged) == set(whole) and all(
        merged[k][:2] == whole[k][:2] and np.array_equal(merged[k][2], whole[k][2]) for k in whole))


def test_entropy():
    """The random weights' heads: a spread of entropies, neither uniform nor one-hot."""
    rng = np.random.default_rng(11)
    for family in lc.FAMILIES:
        cfg = tiny(family, hidden_size=48, num_hidden_layers=3, vocab_size=2000,
                   head_dim=16 if family == "qwen3" else None)
        out = lc.forward(lc.stored(lc.random_weights(cfg, 12), "BF16"), cfg, list(rng.integers(0, 2000, 16)))
        expect_spread(family, out.attentions, out.probs.max())


def expect_spread(label, attentions, top, top_name="next-token", top_check="next token not certain"):
    """A random model's heads (every self-test's): the normalised entropies of their rows spread, neither
    uniform nor one-hot, and the most likely prediction (probability top) not certain."""
    lo, hi, mean = lc.entropy_range(attentions)
    print(f"  {label}: normalised entropy of rows {lo:.2f} ... {hi:.2f}, mean {mean:.2f}; top {top_name} probability {top:.3f}")
    expect(f"{label}: heads are not uniform", lo < 0.6 and mean < 0.95, f"{lo:.3f} {mean:.3f}")
    expect(f"{label}: heads are not one-hot", hi > 0.6 and mean > 0.3, f"{hi:.3f} {mean:.3f}")
    expect(f"{label}: {top_check}", top < 0.9, f"{top:.3f}")


@contextlib.contextmanager
def stand_in_tokenizer():
    """A folder whose tokenizer.json and tokenizer_config.json hold {}: what write_folder copies, where
    the checks are of the other files."""
    with tempfile.TemporaryDirectory() as tok:
        for name in ("tokenizer.json", "tokenizer_config.json"):
            with open(os.path.join(tok, name), "w") as f:
                f.write("{}\n")
        yield tok


def run():
    with stand_in_tokenizer() as tok:
        for test in (test_rms_norm, test_rope, test_rope_scaling, test_attention_properties, test_windows, test_bf16,
                     lambda: test_files(tok), test_entropy):
            test()
    return self_test_summary("RMSNorm, RoPE (default, linear, llama3), GQA, sliding windows, "
                             "BF16 rounding, safetensors shards and both config forms")


if __name__ == "__main__":
    sys.exit(run())
