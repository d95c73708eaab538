#!/usr/bin/env python3
"""numpy as an independent oracle for attnviz's attention rollout (--rollout).

Usage: test_rollout.py PATH/TO/attnviz

Attention rollout (Abnar & Zuidema 2020), written here from the paper, not from attnviz:

    per layer l:  F = mean over heads of A_h (or the elementwise max)
                  A_hat = (F + I) / rowsum(F + I)          (= 0.5 F + 0.5 I, rows renormalised)
    R = A_hat[L] @ ... @ A_hat[0]                          (float64)

For a tiny GPT-2 checkpoint written here (4 layers x 3 heads, a byte-level vocabulary, a sentence
of 300 tokens: several blocks of rows of attnviz's product), `--model DIR --layer L --rollout
--export OUT.json` must export the rollout of the JSON's own every layer's weights up to L, for
both rules; --export-npy must write the same matrix as rollout.npy, and remove it from a folder
exported again without --rollout. For presets (one layer of heads) the rollout is the one layer's
A_hat. Misuse (--rollout-heads bad, --rollout-heads without --rollout) exits 2 with one line naming
the flag. Every comparison uses |got - want| <= 1e-5. Exits 1 on any failure.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_checkpoint as ckpt  # noqa: E402

TOL = 1e-5
N_LAYER, N_HEAD, N_EMBD, N_POSITIONS = 4, 3, 24, 512
FAILURES = []
WORST = [0.0]


def fail(where, what):
    FAILURES.append(f"{where}: {what}")
    print(f"FAIL {where}: {what}", flush=True)


def close(where, got, want, tol=TOL):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        fail(where, f"shape {got.shape}, expected {want.shape}")
        return
    err = float(np.max(np.abs(got - want))) if got.size else 0.0
    WORST[0] = max(WORST[0], err)
    if not err <= tol:
        fail(where, f"max |got - want| = {err:.3g} > {tol}")


def run(attnviz, *args, expect=0):
    p = subprocess.run([attnviz, *args], capture_output=True, text=True, timeout=600)
    if p.returncode != expect:
        fail(" ".join(args[:8]), f"exit {p.returncode}, expected {expect}: {p.stderr.strip()[-400:]}")
    return p


def rollout(layers, upto, rule):
    """layers: [L][H] of [T, T] weights; R of layers 0 … upto in float64."""
    t = np.asarray(layers[0][0]).shape[0]
    r = np.eye(t)
    for l in range(upto + 1):
        heads = np.asarray(layers[l], np.float64)
        fused = heads.max(axis=0) if rule == "max" else heads.mean(axis=0)
        a = fused + np.eye(t)
        a /= a.sum(axis=1, keepdims=True)
        r = a @ r
    return r


def bytes_to_unicode():
    """GPT-2's map of the 256 bytes to printable characters (its encoder.py)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def byte_vocabulary():
    """vocab.json of the 256 byte symbols and <|endoftext|>, no merges: a token a byte."""
    vocab = {symbol: b for b, symbol in bytes_to_unicode().items()}
    vocab["<|endoftext|>"] = 256
    return json.dumps(vocab).encode(), b"#version: 0.2\n"


def check_model(attnviz, tmp):
    folder = os.path.join(tmp, "tiny-gpt2")
    vocab, merges = byte_vocabulary()
    rng = np.random.default_rng(20261126)
    weights = ckpt.random_weights(rng, N_LAYER, N_HEAD, N_EMBD, N_POSITIONS, 257)
    ckpt.write_checkpoint(folder, weights, ckpt.config_json(N_LAYER, N_HEAD, N_EMBD, N_POSITIONS, 257),
                          {"vocab.json": vocab, "merges.txt": merges})
    sentence = ("the quick brown fox jumps over the lazy dog; " * 7)[:300]
    out = os.path.join(tmp, "model.json")
    npy = os.path.join(tmp, "model-npy")
    checked = 0
    for layer in (0, 2, 3):
        for rule in ("mean", "max"):
            where = f"--model --layer {layer} --rollout-heads {rule}"
            args = ["--model", folder, "--sentence", sentence, "--layer", str(layer), "--rollout", "--rollout-heads", rule,
                    "--export", out, "--export-npy", npy]
            if run(attnviz, *args).returncode:
                continue
            with open(out, encoding="utf-8") as f:
                j = json.load(f)
            layers = [[h["weights"] for h in l["heads"]] for l in j["layers"]]
            got = j.get("rollout")
            if got is None:
                fail(where, "no \"rollout\" object in the JSON")
                continue
            if len(j["tokens"]) != 300:
                fail(where, f"{len(j['tokens'])} tokens, expected 300 (a token a byte)")
            if got["layer"] != layer or got["heads"] != rule or got["skip_first_key"] is not False:
                fail(where, f"rollout says layer {got['layer']}, heads {got['heads']}, skip_first_key {got['skip_first_key']}")
            if (rule + " over heads") not in got["rule"]:
                fail(where, f"the rule does not name the {rule}: {got['rule']!r}")
            want = rollout(layers, layer, rule)
            close(where, got["matrix"], want)
            close(where + " rollout.npy", np.load(os.path.join(npy, "rollout.npy")), want)
            # the rule matters: mean and max differ on these heads
            other = rollout(layers, layer, "max" if rule == "mean" else "mean")
            if layer > 0 and np.max(np.abs(want - other)) < 1e-3:
                fail(where, "mean and max rollouts agree: the heads are too alike to tell the rules apart")
            checked += 1
    # a folder exported again without --rollout keeps no stale rollout.npy
    if run(attnviz, "--model", folder, "--sentence", "ab", "--export-npy", npy).returncode == 0:
        if os.path.exists(os.path.join(npy, "rollout.npy")):
            fail("--export-npy without --rollout", "rollout.npy from the earlier export is still there")
    return checked


def check_presets(attnviz, tmp):
    checked = 0
    out = os.path.join(tmp, "preset.json")
    for preset, extra in (("seed004-causal", []), ("seed000-four-heads", []), ("random-heads", ["--length", "130"])):
        for rule in ("mean", "max"):
            where = f"--preset {preset} --rollout-heads {rule}"
            if run(attnviz, "--preset", preset, *extra, "--rollout", "--rollout-heads", rule, "--export", out).returncode:
                continue
            with open(out, encoding="utf-8") as f:
                j = json.load(f)
            got = j.get("rollout")
            if got is None:
                fail(where, "no \"rollout\" object in the JSON")
                continue
            if got["layer"] != 0:
                fail(where, f"layer {got['layer']}, expected 0 (a scenario's one layer)")
            close(where, got["matrix"], rollout([[h["weights"] for h in j["heads"]]], 0, rule))
            checked += 1
    return checked


def check_misuse(attnviz):
    for args, flag in ((["--preset", "seed004-causal", "--rollout", "--rollout-heads", "bad", "--export", "-"], "--rollout-heads"),
                       (["--preset", "seed004-causal", "--rollout-heads", "max", "--export", "-"], "--rollout-heads")):
        p = run(attnviz, *args, expect=2)
        lines = p.stderr.strip().splitlines()
        if len(lines) != 1 or flag not in lines[0] or p.stdout:
            fail(" ".join(args), f"expected one error line naming {flag} and no output, got {p.stderr!r}")


def main():
    if len(sys.argv) != 2:
        print("usage: test_rollout.py PATH/TO/attnviz")
        return 2
    attnviz = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        model = check_model(attnviz, tmp)
        presets = check_presets(attnviz, tmp)
    check_misuse(attnviz)
    if FAILURES:
        print(f"{len(FAILURES)} failures")
        return 1
    print(f"all passed: {model} model rollouts (4 layers x 3 heads, T = 300) and {presets} preset rollouts matched numpy to {TOL} "
          f"(largest difference {WORST[0]:.2g}); misuse exits 2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
