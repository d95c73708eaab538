#!/usr/bin/env python3
"""attnviz --export-attribution against a float64 numpy direct logit attribution, on tiny GPT-2 and Llama checkpoints.

Usage: test_attribution.py PATH/TO/attnviz CACHE_DIR

The checkpoints are readout_models.py's (GPT-2-shaped F32 and F16, Llama-shaped F32, Qwen3-shaped BF16
tied). The attribution is TransformerLens's (decompose_resid + apply_ln_to_stack), written here from its
definition apart from attnviz: the numpy forwards' record of what wrote into the residual stream at the
position (the embeddings, each head's z · W_O^h, each layer's W_O bias, each MLP's output), each
component c through the final norm with its divisor frozen at the final stream's value (LayerNorm:
(c − mean c) / √(var x + ε) ∘ g; RMSNorm: c / √(mean x² + ε) ∘ g), dotted with the target's
unembedding row (minus the other's). For each checkpoint, sentence and target (the default: the token
ranked first at the last position; a token's text at --query 3; a difference "A-B" at the last
position), `attnviz --model DIR --sentence S --export-attribution OUT.json` (and OUT.csv) must give
every term to 1e-4 of the largest, the pass's logit (difference), and terms that add up to the logit
minus the final norm's bias term to 1e-4 relative. On scripts/demo_llama.py's hand-built checkpoint and a
random segment followed by the start of its repeat, the token ranked first is the copied one and the
induction head carries the largest term, most of its logit; its model view ranked by attribution
(--model-view-rank attribution) places the heads in the order of their terms, each tile's bar as long
as its term against the largest, blue where it is negative. A scenario, a target of many tokens and a
.txt path are refused with exit 2 and one line. Standard library and numpy. Exits 1 on any failure; the last
line is the summary.
"""

import csv
import json
import os
import random
import re
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402
from checks import FAILURES, WORST, fail, run  # noqa: E402
import readout_models  # noqa: E402
import gpt2_vocab  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import demo_llama  # noqa: E402

TOL = 1e-4
SENTENCE = "When Mary and John went to the store, John gave a drink to"
# (flags, what the JSON's target must be: None for the top token)
TARGETS = [([], None), (["--query", "3", "--target", "went"], "one"), (["--target", "Mary-John"], "difference")]


def numpy_attribution(m, record, position, target, minus):
    x = record["streams"][-1][position]
    sigma = np.sqrt(((x - x.mean()) ** 2).mean() + m.eps) if m.norm == "layer" else np.sqrt((x ** 2).mean() + m.eps)
    u = m.unembed[target] - (m.unembed[minus] if minus is not None else 0)

    def term(c):
        centred = c - c.mean() if m.norm == "layer" else c
        return float((centred / sigma * m.gain) @ u)

    out = {"embeddings": term(record["streams"][0][position]),
           "heads": [[term(h[position]) for h in layer] for layer in record["heads"]],
           "attention_bias": [term(b) for b in record["attn_bias"]],
           "mlp": [term(c[position]) for c in record["mlp"]],
           "final_norm_bias": float(m.bias @ u),
           "logit": float(m.final_norm(x) @ u)}
    return out


def check_one(where, got, want):
    scale = max(1.0, abs(want["logit"]), abs(want["embeddings"]), max(abs(v) for layer in want["heads"] for v in layer),
                max(abs(v) for v in want["mlp"]))
    heads = {(h["layer"], h["head"]): h["term"] for h in got["heads"]}
    want_heads = [want["heads"][l][h] for l in range(len(want["heads"])) for h in range(len(want["heads"][l]))]
    got_heads = [heads.get((l, h), float("nan")) for l in range(len(want["heads"])) for h in range(len(want["heads"][l]))]
    checks.close(where + " head terms", np.array(got_heads) / scale, np.array(want_heads) / scale, TOL)
    checks.close(where + " MLP terms", np.array([r["mlp"] for r in got["layers"]]) / scale, np.array(want["mlp"]) / scale, TOL)
    checks.close(where + " W_O bias terms", np.array([r["attention_bias"] for r in got["layers"]]) / scale,
                 np.array(want["attention_bias"]) / scale, TOL)
    checks.close(where + " embeddings, final bias and logit", np.array([got["embeddings"], got["final_norm_bias"], got["logit"]]) / scale,
                 np.array([want["embeddings"], want["final_norm_bias"], want["logit"]]) / scale, TOL)
    # the terms add up to the logit minus the final norm's bias term (relative to the logit)
    parts = got["embeddings"] + sum(got_heads) + sum(r["mlp"] + r["attention_bias"] for r in got["layers"])
    if abs(parts - (got["logit"] - got["final_norm_bias"])) > TOL * max(1.0, abs(got["logit"])):
        fail(where, f"the terms add up to {parts:.6g}, the logit minus the bias term is {got['logit'] - got['final_norm_bias']:.6g}")
    if abs(got["sum"] - got["logit"]) > TOL * max(1.0, abs(got["logit"])):
        fail(where, f"sum {got['sum']:.6g} against the logit {got['logit']:.6g}")
    # the case can fail: its heads write something onto the target
    if max(abs(v) for v in want_heads) < 1e-2:
        fail(where, "the heads' terms are too small to test")


def check_csv(where, path, got):
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    heads = {(int(r["layer"]), int(r["head"])): float(r["term"]) for r in rows if r["component"] == "head"}
    for h in got["heads"]:
        if abs(heads.get((h["layer"], h["head"]), float("nan")) - h["term"]) > 1e-9 * max(1.0, abs(h["term"])):
            fail(where, f"CSV head {h['layer']}.{h['head']} differs from the JSON")
            return
    total = [float(r["term"]) for r in rows if r["component"] == "sum"]
    if len(total) != 1 or abs(total[0] - got["sum"]) > 1e-9 * max(1.0, abs(got["sum"])):
        fail(where, "CSV sum differs from the JSON")


def check_models(attnviz, models, tmp):
    first = None
    for m in models:
        first = first or m.folder
        ids = m.ids_of(attnviz, SENTENCE, tmp)
        if ids is None:
            continue
        record = m.forward(ids)
        for flags, kind in TARGETS:
            where = f"{m.label} {' '.join(flags) or 'default'}"
            out_json, out_csv = os.path.join(tmp, "dla.json"), os.path.join(tmp, "dla.csv")
            if run(attnviz, "--model", m.folder, "--sentence", SENTENCE, *flags, "--export-attribution", out_json).returncode:
                continue
            if run(attnviz, "--model", m.folder, "--sentence", SENTENCE, *flags, "--export-attribution", out_csv).returncode:
                continue
            with open(out_json, encoding="utf-8") as f:
                got = json.load(f)
            position = 3 if "--query" in flags else len(ids) - 1
            if got["position"] != position:
                fail(where, f"position {got['position']}, expected {position}")
                continue
            target, minus = got["target"]["id"], got.get("minus", {}).get("id")
            logits = m.final_norm(record["streams"][-1][position]) @ m.unembed.T
            if kind is None and (not got["target"]["ranked_first"] or logits[target] < logits.max() - 1e-4):
                fail(where, f"target {target} is not the token ranked first ({int(logits.argmax())})")
            if (kind == "difference") != (minus is not None):
                fail(where, f"minus {minus} for a target of kind {kind}")
            check_one(where, got, numpy_attribution(m, record, position, target, minus))
            check_csv(where, out_csv, got)
    return first


def check_demo(attnviz, cache, tmp):
    """scripts/demo_llama.py's small checkpoint (2 layers x 4 heads, hand-built: its induction head writes
    the copied token's code where the lm_head reads it) on a random segment and the start of its repeat:
    the token ranked first at the last position is the one that followed it in the first copy, and the
    induction head carries the largest term of all, most of the logit."""
    package = os.path.abspath(gpt2_vocab.fetch_package(cache))
    folder = os.path.join(tmp, "demo")
    kinds = demo_llama.write(folder, package, layers=2, heads=4, positions=512)
    induction = [lh for lh, k in kinds.items() if k == "induction"]
    words = demo_llama.word_ids(package)
    rng = random.Random(3)
    for trial in range(3):
        segment = [rng.choice(words) for _ in range(20)]
        cut = rng.randrange(4, 18)
        text = demo_llama.text_of(segment + segment[:cut], package)
        out = os.path.join(tmp, "demo.json")
        if run(attnviz, "--model", folder, "--sentence", text, "--export-attribution", out).returncode:
            continue
        with open(out, encoding="utf-8") as f:
            got = json.load(f)
        where = f"demo trial {trial}"
        if got["target"]["id"] != segment[cut]:
            fail(where, f"the top token is {got['target']['id']}, the copied one {segment[cut]}")
        terms = {("head", h["layer"], h["head"]): h["term"] for h in got["heads"]}
        terms.update({("mlp", r["layer"]): r["mlp"] for r in got["layers"]})
        terms.update({("bias", r["layer"]): r["attention_bias"] for r in got["layers"]})
        terms[("embeddings",)] = got["embeddings"]
        best = max(terms, key=lambda k: terms[k])
        if best[0] != "head" or (best[1], best[2]) not in induction:
            fail(where, f"the largest term is {best} ({terms[best]:.3g}), not an induction head's {induction}")
        if sum(terms[("head", l, h)] for l, h in induction) < 0.5 * got["logit"]:
            fail(where, f"the induction heads carry {sum(terms[('head', l, h)] for l, h in induction):.3g} of the logit {got['logit']:.3g}")
        checks.CHECKS[0] += 1
        if trial == 0:
            check_model_view(where + " model view", attnviz, folder, text, got, tmp)


def check_model_view(where, attnviz, folder, text, got, tmp):
    """--model-view-rank attribution: the model view's tiles ranked by each head's term (the largest
    first), each tint bar as long as its term's size against the largest, orange for and blue against."""
    out = os.path.join(tmp, "ranked.svg")
    if run(attnviz, "--model", folder, "--sentence", text, "--model-view-rank", "attribution", "--export-model-view", out).returncode:
        return
    with open(out, encoding="utf-8") as f:
        svg = f.read()
    tiles = re.findall(r'<g id="tile-(\d+)-(\d+)"[^>]*>(.*?)</g>', svg, re.S)
    terms = {(h["layer"], h["head"]): h["term"] for h in got["heads"]}
    if len(tiles) != len(terms):
        fail(where, f"{len(tiles)} tiles for {len(terms)} heads")
        return
    bars = {}
    for layer, head, body in tiles:
        bar = re.search(r'<rect class="tint" x="(\d+)" y="(\d+)" width="(\d+)" height="\d+" fill="(#[0-9a-f]{6})"', body)
        if bar is None:
            fail(where, f"tile {layer}.{head} has no tint bar")
            return
        bars[(int(layer) - 1, int(head) - 1)] = (int(bar[2]), int(bar[1]), int(bar[3]), bar[4])
    drawn = sorted(bars, key=lambda k: bars[k][:2])  # slots top to bottom, left to right
    ranked = sorted(terms, key=lambda k: -terms[k])
    if [terms[k] for k in drawn] != [terms[k] for k in ranked]:
        fail(where, f"tiles ranked {drawn}, terms rank {ranked}")
    largest = max(abs(v) for v in terms.values())
    widest = max(b[2] for b in bars.values())
    for k, (_, _, width, fill) in bars.items():
        if abs(width / widest - abs(terms[k]) / largest) > 1.0 / widest + 1e-9:
            fail(where, f"head {k}'s bar {width} of {widest} px for a term {terms[k]:.4g} of {largest:.4g}")
        if (fill == "#3b82f6") != (terms[k] < 0):
            fail(where, f"head {k}'s bar is {fill} for a term {terms[k]:.4g}")
    checks.CHECKS[0] += 1


def check_refused(attnviz, folder, tmp):
    bad = [(["--preset", "default"], "open a model"),
           (["--model", folder, "--sentence", "a b c", "--target", "this is many tokens"], "is not one token"),
           (["--model", folder, "--sentence", "a b c", "--query", "7"], "--query")]
    for args, words in bad:
        out = os.path.join(tmp, "x.json")
        p = run(attnviz, *args, "--export-attribution", out, expect=2)
        if words not in p.stderr or p.stderr.count("\n") != 1 or os.path.exists(out):
            fail(f"refused {' '.join(args[-2:])}", f"message {p.stderr.strip()!r}")
    p = run(attnviz, "--model", folder, "--sentence", "a", "--export-attribution", os.path.join(tmp, "x.txt"), expect=2)
    if "unknown type" not in p.stderr:
        fail("a .txt attribution", f"message {p.stderr.strip()!r}")


def main():
    if len(sys.argv) != 3:
        print("usage: test_attribution.py PATH/TO/attnviz CACHE_DIR")
        return 2
    attnviz, cache = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        gpt2 = check_models(attnviz, readout_models.gpt2_models(cache, tmp), tmp)
        check_models(attnviz, readout_models.llama_models(cache, tmp), tmp)
        check_refused(attnviz, gpt2, tmp)
        check_demo(attnviz, cache, tmp)
    if FAILURES:
        print(f"{len(FAILURES)} failures")
        return 1
    print(f"all passed: {checks.CHECKS[0]} checks of direct logit attribution (GPT-2 F32 and F16, Llama F32, Qwen3 BF16; the top "
          f"token, a token at a query, a difference) equal numpy's TransformerLens definition to {TOL} of the largest term "
          f"(largest difference {WORST[0]:.2g}), the terms add up to the logit; the hand-built demo's induction head carries the "
          f"copied token's logit; refusals checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
