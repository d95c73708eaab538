#!/usr/bin/env python3
"""attnviz --generate against a float64 numpy greedy loop, on tiny GPT-2 and Llama checkpoints.

Usage: test_generation.py PATH/TO/attnviz CACHE_DIR

The checkpoints are readout_models.py's GPT-2-shaped (F32) and Llama-shaped (F32) ones, whose final
gain spreads the logits so that greedy choices are not near ties. For each, `attnviz --model DIR
--sentence S --generate 32 --export OUT.json` must give: the prompt's ids, then 32 tokens equal token
for token to a numpy loop that runs the whole float64 forward over the ids so far and takes the most
likely next token (a step whose two best probabilities are within 1e-6 ends the comparison there,
said so); "generated_from" at the prompt's length; every layer's every head's map of the final
pass equal to the float64 forward over the final ids to 5e-4 (float32 against float64, sharp random
heads), and to attnviz's own whole pass over the same ids (a scenario file naming them as
"generated") to 1e-6. The figures mark the generated tokens: the last query's bars of generated
keys in amber and no other, the heatmap's two amber lines and each model-view tile's, and each
title or subtitle names the first.
Sampling: the same --sample-seed gives the same tokens, another seed other tokens (at
--sample-temperature 3), --top-k 1 the greedy ones. Refused in one line, exit 2: --sample-seed
without --generate, --top-k without --sample-seed, --generate beside --ablate, a scenario without a
model. Standard library and numpy. Exits 1 on any failure; the last line is the summary.
"""

import json
import os
import re
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402
from checks import FAILURES, WORST, fail, run  # noqa: E402
import readout_models  # noqa: E402

PROMPT = "The cat sat on the mat because"
STEPS = 32
TIE = 1e-6


def generated(attnviz, folder, tmp, *flags):
    out = os.path.join(tmp, "gen.json")
    if run(attnviz, "--model", folder, "--sentence", PROMPT, "--generate", str(STEPS), *flags, "--export", out).returncode:
        return None
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def check_model(attnviz, m, tmp):
    prompt = m.ids_of(attnviz, PROMPT, tmp)
    got = generated(attnviz, m.folder, tmp)
    if prompt is None or got is None:
        return
    ids = got["token_ids"]
    if ids[:len(prompt)] != prompt or len(ids) != len(prompt) + STEPS:
        fail(m.label, f"{len(ids)} ids, expected the prompt's {len(prompt)} then {STEPS}")
        return
    if got["generated_from"] != len(prompt):
        fail(m.label, f"generated_from {got['generated_from']}, expected {len(prompt)}")
    # the numpy greedy loop
    loop = list(prompt)
    for step in range(STEPS):
        _, probs = m.whole(loop)
        order = np.argsort(-probs, kind="stable")
        if probs[order[0]] - probs[order[1]] <= TIE:
            print(f"NOTE {m.label}: step {step} is a near tie; compared up to it")
            break
        want = int(order[0])
        if ids[len(prompt) + step] != want:
            fail(m.label, f"step {step}: attnviz wrote {ids[len(prompt) + step]}, numpy's greedy loop {want}")
            break
        loop.append(want)
    else:
        checks.CHECKS[0] += 1
    # the maps of the appended pass: the float64 forward's over the final ids (float32 against
    # float64 on these sharp random heads, 39 tokens deep: 5e-4), and attnviz's own whole pass over
    # the same ids (a scenario naming them as "generated": no pass to append to), to the bit
    att = np.array([[h["weights"] for h in layer["heads"]] for layer in got["layers"]])
    checks.close(m.label + " maps after generation", att, m.whole(ids)[0], 5e-4)
    scenario, whole = os.path.join(tmp, "whole.attnviz.json"), os.path.join(tmp, "whole.json")
    with open(scenario, "w", encoding="utf-8") as f:
        json.dump({"model": os.path.abspath(m.folder), "sentence": PROMPT, "generated": ids[len(prompt):]}, f)
    if not run(attnviz, scenario, "--export", whole).returncode:
        with open(whole, encoding="utf-8") as f:
            again = json.load(f)
        if again["token_ids"] != ids:
            fail(m.label, "the scenario's generated ids do not read back as the generated text")
        checks.close(m.label + " appended pass = whole pass", att, np.array([[h["weights"] for h in layer["heads"]] for layer in again["layers"]]),
                     1e-6)
    # sampling: reproducible by seed, another seed another text, top-1 the greedy one
    a = generated(attnviz, m.folder, tmp, "--sample-seed", "5", "--sample-temperature", "3")
    b = generated(attnviz, m.folder, tmp, "--sample-seed", "5", "--sample-temperature", "3")
    c = generated(attnviz, m.folder, tmp, "--sample-seed", "6", "--sample-temperature", "3")
    k1 = generated(attnviz, m.folder, tmp, "--sample-seed", "6", "--top-k", "1")
    if None in (a, b, c, k1):
        return
    if a["token_ids"] != b["token_ids"]:
        fail(m.label, "the same seed sampled different tokens")
    if a["token_ids"] == c["token_ids"]:
        fail(m.label, "seeds 5 and 6 sampled the same 32 tokens")
    if a["token_ids"] == ids:
        fail(m.label, "sampling at temperature 3 wrote the greedy text")
    if k1["token_ids"] != ids:
        fail(m.label, "--top-k 1 is not the greedy text")
    check_marked(attnviz, m, len(prompt), tmp)


AMBER = "#d97706"  # the figures' mark of generated tokens


def check_marked(attnviz, m, prompt_len, tmp):
    """The figures mark the generated tokens: the bars of the last query's generated keys in amber
    (every one, no other), the heatmap's amber lines before the first (one across each axis), the
    model view's in each tile, and each title or subtitle says from which token."""
    total = prompt_len + STEPS
    base = ["--model", m.folder, "--sentence", PROMPT, "--generate", str(STEPS), "--query", str(total - 1), "--head", "0"]
    svg = {}
    for flag in ("--export-bars", "--export-heatmap", "--export-model-view"):
        out = os.path.join(tmp, flag[9:] + ".svg")
        if run(attnviz, *base, flag, out).returncode:
            return
        with open(out, encoding="utf-8") as f:
            svg[flag] = f.read()
    bars = re.search(r'<g id="bars"[^>]*>(.*?)</g>', svg["--export-bars"], re.S)
    fills = re.findall(r'fill="(#[0-9a-f]{6})"', bars[1]) if bars else []
    if len(fills) != total or fills[prompt_len:] != [AMBER] * STEPS or AMBER in fills[:prompt_len]:
        fail(m.label + " bars", f"{fills.count(AMBER)} amber bars of {len(fills)}, expected the last {STEPS} of {total}")
    if f"generated (keys {prompt_len + 1} … {total})" not in svg["--export-bars"]:
        fail(m.label + " bars", "the subtitle does not say which keys were generated")
    lines = re.findall(r'<rect x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)" fill="' + AMBER + '"', svg["--export-heatmap"])
    if len(lines) != 2 or f"generated from token {prompt_len + 1}" not in svg["--export-heatmap"]:
        fail(m.label + " heatmap", f"{len(lines)} amber lines, expected 2 and the title's note")
    tiles = len(re.findall(r'<g id="tile-', svg["--export-model-view"]))
    marks = len(re.findall(r'fill="' + AMBER + '"', svg["--export-model-view"]))
    if tiles == 0 or marks != 2 * tiles or f"generated from token {prompt_len + 1}" not in svg["--export-model-view"]:
        fail(m.label + " model view", f"{marks} amber lines for {tiles} tiles")
    checks.CHECKS[0] += 1


def check_refused(attnviz, folder, tmp):
    cases = [(["--model", folder, "--sentence", "a", "--sample-seed", "3"], "--sample-seed", "only with --generate"),
             (["--model", folder, "--sentence", "a", "--generate", "2", "--top-k", "3"], "--top-k", "only with --sample-seed"),
             (["--model", folder, "--sentence", "a b", "--generate", "2", "--ablate", "0.1"], "--generate", "what-if"),
             (["--preset", "default", "--generate", "2"], "--generate", "needs a model"),
             (["--model", folder, "--sentence", "a", "--generate", "0"], "--generate", "")]
    for args, flag, words in cases:
        out = os.path.join(tmp, "x.json")
        p = run(attnviz, *args, "--export", out, expect=2)
        if flag not in p.stderr or words not in p.stderr or p.stderr.count("\n") != 1 or os.path.exists(out):
            fail(f"refused {' '.join(args[3:])}", f"message {p.stderr.strip()!r}")


def main():
    if len(sys.argv) != 3:
        print("usage: test_generation.py PATH/TO/attnviz CACHE_DIR")
        return 2
    attnviz, cache = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        models = [next(readout_models.gpt2_models(cache, tmp)), next(readout_models.llama_models(cache, tmp))]
        for m in models:
            check_model(attnviz, m, tmp)
        check_refused(attnviz, models[0].folder, tmp)
    if FAILURES:
        print(f"{len(FAILURES)} failures")
        return 1
    print(f"all passed: greedy generation of {STEPS} tokens equals numpy's greedy loop on GPT-2 and Llama checkpoints, the maps "
          f"after it equal the whole pass (largest difference {WORST[0]:.2g}); sampling reproducible by seed; refusals checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
