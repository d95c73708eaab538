#!/usr/bin/env python3
"""Self-test of gemma_checkpoint.py, the float64 Gemma 2 / Gemma 3 / Phi-3 oracle, on its own.

Usage: gemma_checkpoint_selftest.py   (or gemma_checkpoint.py --self-test)

Checks, against hand-computed values and properties rather than against the code under test:
Gemma's (1 + w) RMSNorm on a 2-vector; gelu_tanh at hand values and within 5e-4 of the erf GELU;
the soft-cap at hand values, saturating at the cap and vanishing as the cap grows (a Gemma 2 forward
with a cap of 1e12 equals one without; Gemma 3's attention ignores its cap, as transformers' does);
the embedding normaliser sqrt(hidden); the sandwich norms (post norms of weight -1 silence a layer,
so the logits are the hand-computed ones, and scaling o_proj and down_proj changes nothing); the
sliding patterns (Gemma 2's even layers, Gemma 3's (i + 1) % pattern, layer_types, Phi-3's every
layer); Gemma 3's two RoPE bases and its linear factor on full layers only; query_pre_attn_scalar
as a rescaling of q; partial rotary on unit vectors (the pass-through dims untouched); longrope's
short / long choice at T = original and original + 1 with its attention factor (sqrt 2 at ratio 8,
1 at ratio <= 1, config's when given), the causal prefix property broken exactly there; Phi-3 equal
to llama_checkpoint's Llama (and Mistral, windowed) with qkv_proj and gate_up_proj split; GQA equal
to MHA with repeated kv heads; rows summing to 1 with masked keys exactly 0; the tensor names,
3-shard folders and both config forms' fields; the random weights' heads neither uniform nor
one-hot. Exits 1 on any failure.
"""

import json
import math
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import expect, near, self_test_summary  # noqa: E402
import gemma_checkpoint as gc  # noqa: E402
import llama_checkpoint as lc  # noqa: E402
from llama_checkpoint_selftest import expect_spread, stand_in_tokenizer  # noqa: E402


def differ(where, a, b, by=1e-3):
    err = float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
    expect(where, err > by, f"max difference {err:.3g}, expected > {by:.3g}")


def tiny(family, **over):
    base = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, vocab_size=300)
    if family != "phi3":
        base["head_dim"] = 16
    base.update(over)
    return gc.config(family, **base)


def weights(cfg, seed=3):
    return gc.stored(gc.random_weights(cfg, seed), "F32")


IDS = [2, 17, 5, 99, 150, 7, 7, 31, 250, 4, 60, 12]


def test_pointwise():
    # x = [3, 4]: mean(x^2) = 12.5; Gemma's weight w = [0, 1] scales by [1, 2]
    near("gemma rms_norm [3,4]", gc.gemma_rms_norm(np.array([3.0, 4.0]), np.array([0.0, 1.0]), 0.0),
         [3 / math.sqrt(12.5), 8 / math.sqrt(12.5)])
    near("gemma rms_norm of 0", gc.gemma_rms_norm(np.zeros(2), np.zeros(2), 1e-6), [0.0, 0.0])
    near("gemma rms_norm eps", gc.gemma_rms_norm(np.array([1.0, 1.0]), np.zeros(2), 3.0), [0.5, 0.5])
    near("phi3 norm is w x / rms", gc.norm(tiny("phi3"), np.array([3.0, 4.0]), np.array([1.0, 2.0])),
         [3 / math.sqrt(12.5 + 1e-5), 8 / math.sqrt(12.5 + 1e-5)])
    near("gelu_tanh(1)", gc.gelu_tanh(np.array(1.0)), 0.8411919906082768, 1e-15)
    near("gelu_tanh(-1)", gc.gelu_tanh(np.array(-1.0)), -0.15880800939172324, 1e-15)
    near("gelu_tanh(0)", gc.gelu_tanh(np.array(0.0)), 0.0, 0)
    xs = np.linspace(-6, 6, 1201)
    erf = np.array([0.5 * x * (1 + math.erf(x / math.sqrt(2))) for x in xs])
    near("gelu_tanh within 5e-4 of the erf GELU", gc.gelu_tanh(xs), erf, 5e-4)
    near("softcap(3, 3) = 3 tanh 1", gc.softcap(np.array(3.0), 3.0), 2.2847824678672946, 1e-15)
    near("softcap saturates at the cap", gc.softcap(np.array([1e6, -1e6]), 5.0), [5.0, -5.0], 0)
    near("softcap of a small score is the score", gc.softcap(np.array(1e-3), 50.0), 1e-3, 1e-12)
    near("softcap None is the identity", gc.softcap(np.array([7.0]), None), [7.0], 0)
    cfg = tiny("gemma2")
    w = weights(cfg)
    near("gemma embedding times sqrt(hidden)", gc.embeddings(w, cfg, [5, 9]),
         w["model.embed_tokens.weight"][[5, 9]] * math.sqrt(32), 1e-14)
    cfg = tiny("phi3")
    w = weights(cfg)
    near("phi3 embedding as stored", gc.embeddings(w, cfg, [5, 9]), w["model.embed_tokens.weight"][[5, 9]], 0)


def test_patterns():
    w = lambda cfg: gc.layer_windows(cfg)
    expect("gemma2 even layers slide", w(tiny("gemma2", num_hidden_layers=5, sliding_window=4)) == [4, None, 4, None, 4])
    g3 = tiny("gemma3_text", num_hidden_layers=12, sliding_window=7)
    expect("gemma3 pattern 6: layers 5 and 11 full",
           [i for i, x in enumerate(w(g3)) if x is None] == [5, 11], str(w(g3)))
    expect("gemma3 pattern 3 of 4 layers", w(dict(g3, num_hidden_layers=4, sliding_window_pattern=3)) == [7, 7, None, 7])
    types = ["full_attention", "sliding_attention", "full_attention"]
    expect("layer_types override the pattern", w(tiny("gemma3_text", num_hidden_layers=3, sliding_window=2,
                                                     layer_types=types)) == [None, 2, None])
    expect("gemma without a window never slides", w(tiny("gemma2", num_hidden_layers=3)) == [None] * 3)
    expect("phi3 every layer slides", w(tiny("phi3", num_hidden_layers=3, sliding_window=5)) == [5] * 3)
    expect("phi3 without a window", w(tiny("phi3", num_hidden_layers=3)) == [None] * 3)
    near("mask window 2", lc.attention_mask(4, 2), [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]], 0)
    # a window >= T is none; a window of 1 is the identity in the sliding layers only
    cfg = tiny("gemma3_text", num_hidden_layers=3, sliding_window_pattern=2)
    ww = weights(cfg)
    ref = gc.forward(ww, dict(cfg, sliding_window=None), IDS)
    near("gemma3 window >= T is no window", gc.forward(ww, dict(cfg, sliding_window=len(IDS)), IDS).attentions,
         ref.attentions, 0)
    one = gc.forward(ww, dict(cfg, sliding_window=1), IDS).attentions
    near("window 1: sliding layers are the identity", one[[0, 2]], np.broadcast_to(np.eye(len(IDS)), one[[0, 2]].shape), 0)
    differ("window 1: the full layer is not", one[1], np.broadcast_to(np.eye(len(IDS)), one[1].shape))


def test_rope():
    # Gemma 3, D = 4: local base 100 -> [1, 1/10]; global theta 10000 with linear 8 -> [1/8, 1/800]
    cfg = tiny("gemma3_text", hidden_size=16, head_dim=4, num_hidden_layers=2, sliding_window_pattern=2,
               rope_local_base_freq=100.0, rope_theta=10000.0, rope_scaling={"rope_type": "linear", "factor": 8.0})
    f0, s0 = gc.layer_rope(cfg, 0, 5)
    f1, s1 = gc.layer_rope(cfg, 1, 5)
    near("gemma3 sliding layer: local base, no scaling", f0, [1.0, 0.1])
    near("gemma3 full layer: rope_theta / factor", f1, [1 / 8, 1 / 800])
    expect("gemma3 attention scaling 1", s0 == 1.0 and s1 == 1.0)
    near("old 'type' key", gc.layer_rope(dict(cfg, rope_scaling={"type": "linear", "factor": 2.0}), 1, 5)[0], [0.5, 0.005])
    near("gemma2: one base for every layer", gc.layer_rope(tiny("gemma2", hidden_size=16, head_dim=4, rope_theta=100.0),
                                                            0, 5)[0], [1.0, 0.1])
    # partial rotary: D = 8, rotary 4 (freqs [1, 0.1]); e0 at position 1 turns, e5 passes
    x = np.zeros((2, 2, 8))
    x[:, 0, 0] = 1.0
    x[:, 1, 5] = 1.0
    y = gc.rope(x, [0, 1], np.array([1.0, 0.1]), 2.0)
    near("partial rope position 0 (times the scaling)", y[0, 0], [2, 0, 0, 0, 0, 0, 0, 0])
    near("partial rope e0 at position 1", y[1, 0], [2 * math.cos(1), 0, 2 * math.sin(1), 0, 0, 0, 0, 0])
    near("partial rope: the pass-through dims untouched", y[1, 1], [0, 0, 0, 0, 0, 1, 0, 0], 0)
    expect("phi3 rotary_dim", gc.rotary_dim(tiny("phi3", partial_rotary_factor=0.75)) == 6)
    # longrope: D = 8, partial 0.5 -> rotary 4, theta 100, original 8 of 64 positions
    scaling = {"type": "longrope", "short_factor": [2.0, 4.0], "long_factor": [3.0, 5.0]}
    cfg = tiny("phi3", partial_rotary_factor=0.5, rope_theta=100.0, rope_scaling=scaling,
               max_position_embeddings=64, original_max_position_embeddings=8)
    f, a, which = gc.longrope(cfg, 8)
    near("longrope T = original: short factors", f, [1 / 2, 1 / 40])
    expect("longrope T = original is short", which == "short")
    f, a, which = gc.longrope(cfg, 9)
    near("longrope T = original + 1: long factors", f, [1 / 3, 1 / 50])
    expect("longrope T = original + 1 is long", which == "long")
    near("longrope attention factor at ratio 8: sqrt(1 + ln 8 / ln 8)", a, math.sqrt(2.0), 1e-15)
    near("layer_rope carries it", gc.layer_rope(cfg, 1, 9)[1], math.sqrt(2.0), 1e-15)
    near("ratio 1: factor 1", gc.longrope(dict(cfg, max_position_embeddings=8), 3)[1], 1.0, 0)
    near("ratio < 1: factor 1", gc.longrope(dict(cfg, max_position_embeddings=4), 3)[1], 1.0, 0)
    near("ratio 4 of 16", gc.longrope(dict(cfg, max_position_embeddings=64, original_max_position_embeddings=16), 3)[1],
         math.sqrt(1 + math.log(4) / math.log(16)), 1e-15)
    near("the config's attention_factor", gc.longrope(dict(cfg, rope_scaling=dict(scaling, attention_factor=0.7)), 3)[1],
         0.7, 0)
    expect("phi3 reads su and yarn as longrope", gc.rope_type(dict(cfg, rope_scaling=dict(scaling, type="su"))) == "longrope"
           and gc.rope_type(dict(cfg, rope_scaling=dict(scaling, type="yarn"))) == "longrope")
    bad = dict(cfg, rope_scaling=dict(scaling, short_factor=[1.0, 1.0, 1.0]))
    try:
        gc.longrope(bad, 3)
        expect("short_factor of the wrong length refused", False)
    except ValueError:
        expect("short_factor of the wrong length refused", True)
    # causality: a T <= 8 forward is the first rows of a longer one, until the long factors take over
    w = weights(cfg)
    seven, eight, nine = (gc.forward(w, cfg, IDS[:n]).attentions for n in (7, 8, 9))
    near("short: T = 7 is the prefix of T = 8", seven, eight[:, :, :7, :7], 1e-13)
    differ("long: T = 9 is not a continuation of T = 8", nine[:, :, :8, :8], eight)
    same = dict(cfg, rope_scaling=dict(scaling, long_factor=[2.0, 4.0]))
    near("short = long: causal again", gc.forward(w, same, IDS[:9]).attentions[:, :, :8, :8],
         gc.forward(w, same, IDS[:8]).attentions, 1e-13)


def test_scaling_and_caps():
    # query_pre_attn_scalar 4 D is the same model as D with q halved
    cfg = tiny("gemma2", sliding_window=4, attn_logit_softcapping=3.0)
    w = weights(cfg)
    half = dict(w)
    for l in range(2):
        half[f"model.layers.{l}.self_attn.q_proj.weight"] = w[f"model.layers.{l}.self_attn.q_proj.weight"] / 2
    a, b = gc.forward(w, dict(cfg, query_pre_attn_scalar=64), IDS), gc.forward(half, cfg, IDS)
    near("gemma2 query_pre_attn_scalar 4D = q / 2", a.attentions, b.attentions, 1e-13)
    near("gemma2 query_pre_attn_scalar 4D = q / 2 (probs)", a.probs, b.probs, 1e-13)
    g3 = tiny("gemma3_text", sliding_window=4, sliding_window_pattern=2)
    w3 = weights(g3)
    half = dict(w3)
    for l in range(2):  # the q norm's effective weight 1 + w halved
        name = f"model.layers.{l}.self_attn.q_norm.weight"
        half[name] = (1 + w3[name]) / 2 - 1
    near("gemma3 query_pre_attn_scalar 4D = q_norm / 2", gc.forward(w3, dict(g3, query_pre_attn_scalar=64), IDS).attentions,
         gc.forward(half, g3, IDS).attentions, 1e-13)
    differ("query_pre_attn_scalar matters", gc.forward(w3, dict(g3, query_pre_attn_scalar=64), IDS).attentions,
           gc.forward(w3, g3, IDS).attentions)
    # soft-caps
    capped, wide, none = (gc.forward(w, dict(cfg, attn_logit_softcapping=c), IDS) for c in (3.0, 1e12, None))
    near("attention cap 1e12 = no cap", wide.attentions, none.attentions, 1e-12)
    differ("attention cap 3 changes the maps", capped.attentions, none.attentions)
    near("gemma3 ignores attn_logit_softcapping", gc.forward(w3, dict(g3, attn_logit_softcapping=1.0), IDS).attentions,
         gc.forward(w3, g3, IDS).attentions, 0)
    final = gc.forward(w, dict(cfg, final_logit_softcapping=2.0), IDS)
    expect("final cap bounds the logits", bool(np.all(np.abs(final.logits) < 2.0)), f"{np.abs(final.logits).max()}")
    near("final cap 2: tanh(l / 2) 2 of the uncapped logits", final.logits, 2 * np.tanh(capped.logits / 2), 1e-13)
    near("final cap 1e12 = none", gc.forward(w, dict(cfg, final_logit_softcapping=1e12), IDS).probs, capped.probs, 1e-12)


def test_sandwich():
    cfg = tiny("gemma2", num_hidden_layers=2, sliding_window=3, rms_norm_eps=0.0)
    w = dict(weights(cfg))
    silent = dict(w)
    for l in range(2):  # post norms of weight -1 multiply by 1 + w = 0: every layer adds nothing
        for n in ("post_attention_layernorm", "post_feedforward_layernorm"):
            silent[f"model.layers.{l}.{n}.weight"] = np.full(32, -1.0)
    e, last = w["model.embed_tokens.weight"], IDS[-1]
    x = e[last] * math.sqrt(32)
    x = x / math.sqrt(float(np.mean(x * x))) * (1 + w["model.norm.weight"])
    near("silenced layers: logits = E (1 + w) x / rms(x)", gc.forward(silent, cfg, IDS).logits, e @ x, 1e-12)
    scaled = dict(w)
    for l in range(2):
        for n in ("self_attn.o_proj", "mlp.down_proj"):
            scaled[f"model.layers.{l}.{n}.weight"] = w[f"model.layers.{l}.{n}.weight"] * 7.0
    a, b = gc.forward(w, cfg, IDS), gc.forward(scaled, cfg, IDS)
    near("post norms: o_proj and down_proj x 7 change nothing", a.attentions, b.attentions, 1e-12)
    near("post norms: ... nor the probabilities", a.probs, b.probs, 1e-12)


def test_against_llama():
    """Phi-3 without partial rotary or longrope is Llama (Mistral with a window) with fused projections."""
    for window in (None, 4):
        cfg = tiny("phi3", num_key_value_heads=2, sliding_window=window, rms_norm_eps=1e-5)
        w = weights(cfg)
        family = "mistral" if window else "llama"
        llama = lc.config(family, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, vocab_size=300, rms_norm_eps=1e-5, sliding_window=window)
        lw = {k: v for k, v in w.items() if "qkv_proj" not in k and "gate_up_proj" not in k}
        for l in range(2):
            p = f"model.layers.{l}."
            q, k, v = np.split(w[p + "self_attn.qkv_proj.weight"], [32, 48])
            lw.update({p + "self_attn.q_proj.weight": q, p + "self_attn.k_proj.weight": k, p + "self_attn.v_proj.weight": v})
            gate, up = np.split(w[p + "mlp.gate_up_proj.weight"], 2)
            lw.update({p + "mlp.gate_proj.weight": gate, p + "mlp.up_proj.weight": up})
        a, b = gc.forward(w, cfg, IDS), lc.forward(lw, llama, IDS)
        near(f"phi3 = {family} (attention)", a.attentions, b.attentions, 1e-13)
        near(f"phi3 = {family} (probs)", a.probs, b.probs, 1e-13)


def test_attention_properties():
    cases = {"gemma2": dict(sliding_window=4, attn_logit_softcapping=5.0, final_logit_softcapping=10.0),
             "gemma3_text": dict(sliding_window=4, sliding_window_pattern=2,
                                 rope_scaling={"rope_type": "linear", "factor": 4.0}),
             "phi3": dict(sliding_window=4, partial_rotary_factor=0.5, max_position_embeddings=64,
                          original_max_position_embeddings=8,
                          rope_scaling={"type": "longrope", "short_factor": [1.0, 2.0], "long_factor": [4.0, 8.0]})}
    for family, extra in cases.items():
        cfg = tiny(family, **extra)
        out = gc.forward(weights(cfg), cfg, IDS)
        near(f"{family}: rows sum to 1", out.attentions.sum(-1), np.ones(out.attentions.shape[:-1]), 1e-12)
        for l, window in enumerate(gc.layer_windows(cfg)):
            visible = lc.attention_mask(len(IDS), window)
            expect(f"{family} layer {l}: masked keys exactly 0", bool(np.all(out.attentions[l][..., ~visible] == 0)))
        near(f"{family}: probs sum to 1", out.probs.sum(), 1.0, 1e-12)
        expect(f"{family}: kv heads", out.kv_heads == [0, 0, 1, 1], str(out.kv_heads))
    # GQA: the same model with each kv head's rows repeated per query head is plain MHA
    cfg = tiny("gemma3_text", sliding_window=4, sliding_window_pattern=2)
    w = weights(cfg)
    mha = dict(w)
    for l in range(2):
        for n in ("k", "v"):
            name = f"model.layers.{l}.self_attn.{n}_proj.weight"
            b0, b1 = np.split(w[name], 2, axis=0)
            mha[name] = np.concatenate([b0, b0, b1, b1], axis=0)
    a, b = gc.forward(w, cfg, IDS), gc.forward(mha, dict(cfg, num_key_value_heads=4), IDS)
    near("GQA = MHA with repeated kv heads (attention)", a.attentions, b.attentions, 1e-13)
    near("GQA = MHA with repeated kv heads (probs)", a.probs, b.probs, 1e-13)


def test_files(tokenizer_dir):
    scaling = {"rope_type": "linear", "factor": 8.0}
    g3 = tiny("gemma3_text", num_hidden_layers=3, sliding_window=4, sliding_window_pattern=3, rope_scaling=scaling,
              tie_word_embeddings=False)
    longrope = {"type": "longrope", "short_factor": [1.0, 2.0, 3.0], "long_factor": [4.0, 5.0, 6.0]}
    phi = tiny("phi3", partial_rotary_factor=0.75, rope_scaling=longrope, max_position_embeddings=64,
               original_max_position_embeddings=8, tie_word_embeddings=True)
    with tempfile.TemporaryDirectory() as tmp:
        one, three, p5 = (os.path.join(tmp, n) for n in ("one", "three", "phi"))
        lazy = gc.random_weights(g3, 9)
        gc.write_folder(one, "gemma3_text", g3, lazy, tokenizer_dir, dtype="BF16")
        gc.write_folder(three, "gemma3_text", g3, lazy, tokenizer_dir, dtype="BF16", shards=3, config_form="v5")
        gc.write_folder(p5, "phi3", phi, gc.random_weights(phi, 4), tokenizer_dir, config_form="v5")
        whole, meta = lc.read_safetensors(os.path.join(one, "model.safetensors"))
        names = list(gc.tensor_shapes(g3))
        expect("gemma3 names and order", list(whole) == names)
        for n in ("model.layers.2.self_attn.q_norm.weight", "model.layers.0.pre_feedforward_layernorm.weight",
                  "model.layers.1.post_feedforward_layernorm.weight", "lm_head.weight"):
            expect(f"gemma3 has {n}", n in whole)
        expect("gemma3 q_norm over head_dim", whole["model.layers.0.self_attn.q_norm.weight"][1] == (16,))
        expected = gc.stored(gc.materialize(lazy), "BF16")
        expect("read back = stored()", all(np.array_equal(lc.widen(r, "BF16"), expected[k]) for k, (_, _, r) in whole.items()))
        with open(os.path.join(three, "model.safetensors.index.json")) as f:
            index = json.load(f)
        merged = {}
        for file in lc.shard_names(3):
            part, _ = lc.read_safetensors(os.path.join(three, file))
            expect(f"{file} is not empty", len(part) > 0)
            merged.update(part)
            expect(f"index names {file}", all(index["weight_map"][k] == file for k in part))
        expect("3 shards read back identical", set(merged) == set(whole) and all(
            np.array_equal(merged[k][2], whole[k][2]) for k in whole))
        phi_names, _ = lc.read_safetensors(os.path.join(p5, "model.safetensors"))
        expect("phi3 fused tensors", phi_names["model.layers.0.self_attn.qkv_proj.weight"][1] == (64, 32)
               and phi_names["model.layers.1.mlp.gate_up_proj.weight"][1] == (128, 32) and "lm_head.weight" not in phi_names
               and "model.layers.0.self_attn.q_proj.weight" not in phi_names)
        with open(os.path.join(one, "config.json")) as f:
            v4 = json.load(f)
        with open(os.path.join(three, "config.json")) as f:
            v5 = json.load(f)
        with open(os.path.join(p5, "config.json")) as f:
            phi5 = json.load(f)
    expect("gemma3 v4 fields", v4["torch_dtype"] == "bfloat16" and v4["rope_theta"] == 1e6 and v4["rope_scaling"] == scaling
           and v4["rope_local_base_freq"] == 10000.0 and v4["sliding_window_pattern"] == 3 and "layer_types" not in v4
           and v4["hidden_activation"] == "gelu_pytorch_tanh" and v4["query_pre_attn_scalar"] == 16
           and v4["model_type"] == "gemma3_text" and v4["architectures"] == ["Gemma3ForCausalLM"], str(v4))
    expect("gemma3 v5 fields", v5["dtype"] == "bfloat16" and "torch_dtype" not in v5 and "rope_theta" not in v5
           and "sliding_window_pattern" not in v5 and "rope_local_base_freq" not in v5 and "rope_scaling" not in v5
           and v5["layer_types"] == ["sliding_attention", "sliding_attention", "full_attention"]
           and v5["rope_parameters"] == {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                                        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}, str(v5))
    expect("phi3 v5 fields", phi5["rope_parameters"] == dict(
        rope_type="longrope", rope_theta=10000.0, partial_rotary_factor=0.75, short_factor=[1.0, 2.0, 3.0],
        long_factor=[4.0, 5.0, 6.0], original_max_position_embeddings=8)
        and phi5["original_max_position_embeddings"] == 8 and phi5["partial_rotary_factor"] == 0.75
        and phi5["tie_word_embeddings"] is True and "head_dim" not in phi5 and phi5["hidden_act"] == "silu", str(phi5))
    g2 = gc.config_json(tiny("gemma2", num_hidden_layers=3, sliding_window=4, attn_logit_softcapping=50.0,
                             final_logit_softcapping=30.0), "F32", "v5")
    expect("gemma2 v5 fields", g2["rope_parameters"] == {"rope_type": "default", "rope_theta": 10000.0}
           and g2["layer_types"] == ["sliding_attention", "full_attention", "sliding_attention"]
           and g2["attn_logit_softcapping"] == 50.0 and g2["final_logit_softcapping"] == 30.0, str(g2))
    g2 = gc.config_json(tiny("gemma2"), "F32", "v4")
    expect("gemma2 v4 writes null caps", g2["attn_logit_softcapping"] is None and g2["final_logit_softcapping"] is None
           and "layer_types" not in g2 and g2["hidden_act"] == "gelu_pytorch_tanh", str(g2))
    phi4 = gc.config_json(tiny("phi3"), "BF16", "v4")
    expect("phi3 v4 fields", phi4["rope_scaling"] is None and "partial_rotary_factor" not in phi4
           and phi4["original_max_position_embeddings"] == 4096 and "rope_parameters" not in phi4, str(phi4))


def test_entropy():
    """The random weights' heads: a spread of entropies, neither uniform nor one-hot."""
    rng = np.random.default_rng(11)
    for family in gc.FAMILIES:
        cfg = tiny(family, hidden_size=48, num_hidden_layers=3, vocab_size=2000)
        out = gc.forward(gc.stored(gc.random_weights(cfg, 12), "BF16"), cfg, list(rng.integers(0, 2000, 16)))
        expect_spread(family, out.attentions, out.probs.max())


def run():
    with stand_in_tokenizer() as tok:
        for test in (test_pointwise, test_patterns, test_rope, test_scaling_and_caps, test_sandwich, test_against_llama,
                     test_attention_properties, lambda: test_files(tok), test_entropy):
            test()
    return self_test_summary("Gemma's (1 + w) RMSNorm, gelu_tanh, soft-caps, sandwich norms, "
                             "sliding patterns, Gemma 3's two RoPE bases, query_pre_attn_scalar, partial rotary, longrope, "
                             "Phi-3 = Llama, GQA, shards and both config forms")


if __name__ == "__main__":
    sys.exit(run())
