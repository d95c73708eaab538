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
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402
from checks import one_error_line, FAILURES, WORST, fail, run  # noqa: E402
import gpt2_checkpoint as ckpt  # noqa: E402

TOL = 1e-5
N_LAYER, N_HEAD, N_EMBD, N_POSITIONS = 4, 3, 24, 512


def close(where, got, want, tol=TOL):
    checks.close(where, got, want, tol)


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



def check_model(attnviz, tmp):
    folder = os.path.join(tmp, "tiny-gpt2")
    vocab, merges = ckpt.byte_vocabulary()
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
        one_error_line(attnviz, args, flag)


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
