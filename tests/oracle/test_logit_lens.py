#!/usr/bin/env python3
"""attnviz --export-logit-lens against a float64 numpy logit lens, on tiny GPT-2 and Llama checkpoints.

Usage: test_logit_lens.py PATH/TO/attnviz CACHE_DIR

The checkpoints are written here with random weights (gpt2_checkpoint.py with GPT-2's real
50,257-token vocabulary; llama_checkpoint.py with Llama 2's and Qwen 3's real tokenizer.json, from
hf_tokenizers.fetch), F32 and BF16, tied and untied. The lens, written from its definition
(nostalgebraist 2020) apart from attnviz: the residual stream entering each layer and after the last
(the numpy forwards' record["streams"]) through the model's final norm (GPT-2's ln_f, the Llama
family's RMSNorm) and the unembedding, softmax at temperature 1. For each checkpoint and sentence,
`attnviz --model DIR --sentence S --export-logit-lens OUT.json` (and OUT.csv) must give, for every
layer and position, the five most likely tokens (ids in order, up to near ties) and their
probabilities, and the target's (the token the last layer ranks first at that position) probability
and rank, to 1e-4; the last layer's row at the last position must be the next-token panel's
(`--export OUT.json`'s next_tokens), to the bit. A lens of a scenario without a model and a .txt path are
refused with exit 2 and one line. With `--lens-target next --lens-colour rank`, the first checkpoint
of each family gives each position's next input token as its target (none at the last) with
numpy's probability and rank, and the figure draws. Standard library and numpy. Exits 1 on any failure; the last line
is the summary.
"""

import csv
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402
from checks import FAILURES, WORST, fail, run  # noqa: E402
import readout_models  # noqa: E402

TOL = 1e-4  # as the model tests: float32 against float64
TIE = 1e-6  # two probabilities this close may be ranked either way
SENTENCES = ["The cat sat on the mat because it was tired.", "When Mary and John went to the store, John gave a drink to", "a"]


def softmax(logits):
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def numpy_lens(streams, final_norm, unembed):
    """[layers, T, vocab] probabilities: each stream through the final norm and the unembedding."""
    return np.array([softmax(final_norm(x) @ unembed.T) for x in streams])


def check_lens(where, got, probs, k=5):
    """got: attnviz's JSON; probs: [layers, T, vocab] from numpy."""
    layers, t = probs.shape[0], probs.shape[1]
    if (got["layers"], got["positions"], got["first_position"]) != (layers, t, 0):
        fail(where, f"layers {got['layers']} positions {got['positions']}, expected {layers} x {t}")
        return
    records = {(r["layer"], r["position"]): r for r in got["records"]}
    if len(records) != layers * t:
        fail(where, f"{len(records)} records for {layers} x {t} cells")
        return
    targets = probs[-1].argmax(axis=-1)
    # the case can fail: its cells' top tokens stand well above uniform and apart from the next
    top2 = np.sort(probs, axis=-1)[..., -2:]
    if top2[..., 1].max() < 100.0 / probs.shape[-1] or np.median(top2[..., 1] - top2[..., 0]) < 100 * TIE:
        fail(where, f"the lens is too flat to test (largest top probability {top2[..., 1].max():.3g})")
    for l in range(layers):
        for p in range(t):
            r = records[(l, p)]
            want = probs[l, p]
            order = np.argsort(-want, kind="stable")[:k]
            ids = [e["id"] for e in r["top"]]
            # ids in order, except where neighbours tie
            for j, (a, b) in enumerate(zip(ids, order)):
                if a != b and abs(want[a] - want[b]) > TIE:
                    fail(f"{where} layer {l} position {p}", f"top {j + 1} is {a}, numpy's is {int(b)}")
                    break
            checks.close(f"{where} layer {l} position {p} top-{k} probabilities", [e["prob"] for e in r["top"]], want[ids], TOL)
            target = int(targets[p])
            if r["target"]["id"] != target and abs(probs[-1, p, r["target"]["id"]] - probs[-1, p, target]) > TIE:
                fail(f"{where} layer {l} position {p}", f"target {r['target']['id']}, numpy's last layer ranks {target} first")
                continue
            target = r["target"]["id"]
            checks.close(f"{where} layer {l} position {p} target probability", [r["target"]["prob"]], [want[target]], TOL)
            rank = int((want > want[target]).sum()) + 1
            near = int((np.abs(want - want[target]) <= TIE).sum()) - 1
            if not rank <= r["target"]["rank"] <= rank + near:
                fail(f"{where} layer {l} position {p}", f"target rank {r['target']['rank']}, numpy's {rank}")
    checks.CHECKS[0] += 1


def check_csv(where, path, got):
    """The CSV holds the JSON's records: one row per layer, position and rank."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    if len(rows) != len(got["records"]) * 5:
        fail(where, f"{len(rows)} CSV rows for {len(got['records'])} cells of 5")
        return
    by = {(int(r["layer"]), int(r["position"]), int(r["rank"])): r for r in rows}
    for rec in got["records"]:
        for j, e in enumerate(rec["top"]):
            row = by.get((rec["layer"], rec["position"], j + 1))
            if row is None or int(row["id"]) != e["id"] or abs(float(row["prob"]) - e["prob"]) > 1e-7 or row["text"] != e["text"]:
                fail(where, f"CSV row layer {rec['layer']} position {rec['position']} rank {j + 1} differs from the JSON")
                return


def check_next_tokens(where, attnviz, folder, sentence, got, tmp):
    out = os.path.join(tmp, "pass.json")
    if run(attnviz, "--model", folder, "--sentence", sentence, "--export", out).returncode:
        return
    with open(out, encoding="utf-8") as f:
        nxt = json.load(f)["next_tokens"][:5]
    last = next(r for r in got["records"] if r["layer"] == got["layers"] - 1 and r["position"] == got["positions"] - 1)
    if [e["id"] for e in last["top"]] != [n["id"] for n in nxt]:
        fail(where, f"last layer's last row {[e['id'] for e in last['top']]}, next-token panel {[n['id'] for n in nxt]}")
    checks.close(where + " last row = next tokens", [e["prob"] for e in last["top"]], [n["prob"] for n in nxt], 1e-7)


def export(attnviz, folder, sentence, tmp, where):
    out_json, out_csv = os.path.join(tmp, "lens.json"), os.path.join(tmp, "lens.csv")
    if run(attnviz, "--model", folder, "--sentence", sentence, "--export-logit-lens", out_json).returncode:
        return None
    if run(attnviz, "--model", folder, "--sentence", sentence, "--export-logit-lens", out_csv).returncode:
        return None
    with open(out_json, encoding="utf-8") as f:
        got = json.load(f)
    check_csv(where, out_csv, got)
    return got


def check_models(attnviz, models, tmp):
    """Every sentence through each model: attnviz's lens against numpy's."""
    first = None
    for m in models:
        if first is None:
            check_next_input_target(attnviz, m, tmp)
        first = first or m.folder
        for sentence in SENTENCES:
            where = f"{m.label} {sentence[:20]!r}"
            got = export(attnviz, m.folder, sentence, tmp, where)
            ids = m.ids_of(attnviz, sentence, tmp) if got is not None else None
            if ids is None:
                continue
            probs = numpy_lens(m.forward(ids)["streams"], m.final_norm, m.unembed)
            check_lens(where, got, probs)
            check_next_tokens(where, attnviz, m.folder, sentence, got, tmp)
    return first


def check_next_input_target(attnviz, m, tmp):
    """--lens-target next: each position's target is the next input token (none at the last), its
    probability and rank numpy's; --lens-colour rank draws the figure coloured by it."""
    sentence = SENTENCES[1]
    where = f"{m.label} next-input target"
    out = os.path.join(tmp, "next.json")
    flags = ["--lens-colour", "rank", "--lens-target", "next"]
    if run(attnviz, "--model", m.folder, "--sentence", sentence, *flags, "--export-logit-lens", out).returncode:
        return
    ids = m.ids_of(attnviz, sentence, tmp)
    if ids is None:
        return
    with open(out, encoding="utf-8") as f:
        got = json.load(f)
    if "next input token" not in got["rule"]:
        fail(where, f"rule {got['rule']!r} does not say the target is the next input token")
    probs = numpy_lens(m.forward(ids)["streams"], m.final_norm, m.unembed)
    for r in got["records"]:
        l, p = r["layer"], r["position"]
        if p == len(ids) - 1:
            if "target" in r:
                fail(where, f"the last position has a target {r['target']['id']}")
            continue
        want = int(ids[p + 1])
        if r.get("target", {}).get("id") != want:
            fail(f"{where} layer {l} position {p}", f"target {r.get('target')}, the next input token is {want}")
            return
        checks.close(f"{where} layer {l} position {p} probability", [r["target"]["prob"]], [probs[l, p, want]], TOL)
        rank = int((probs[l, p] > probs[l, p, want]).sum()) + 1
        near = int((np.abs(probs[l, p] - probs[l, p, want]) <= TIE).sum()) - 1
        if not rank <= r["target"]["rank"] <= rank + near:
            fail(f"{where} layer {l} position {p}", f"rank {r['target']['rank']}, numpy's {rank}")
    png = os.path.join(tmp, "next.png")
    if run(attnviz, "--model", m.folder, "--sentence", sentence, *flags, "--export-logit-lens", png).returncode == 0:
        with open(png, "rb") as f:
            if f.read(8) != b"\x89PNG\r\n\x1a\n":
                fail(where, "the rank-coloured figure is not a PNG")
    for flag, value in (("--lens-colour", "ranks"), ("--lens-target", "previous")):
        p = run(attnviz, "--model", m.folder, "--sentence", "a", flag, value, "--export-logit-lens", os.path.join(tmp, "bad.json"),
                expect=2)
        if flag not in p.stderr or p.stderr.count("\n") != 1 or os.path.exists(os.path.join(tmp, "bad.json")):
            fail(f"{flag} {value}", f"message {p.stderr.strip()!r}")
    checks.CHECKS[0] += 1


def check_refused(attnviz, folder, tmp):
    p = run(attnviz, "--preset", "default", "--export-logit-lens", os.path.join(tmp, "x.json"), expect=2)
    if "--export-logit-lens" not in p.stderr or "open a model" not in p.stderr or p.stderr.count("\n") != 1:
        fail("a scenario's lens", f"message {p.stderr.strip()!r}")
    p = run(attnviz, "--model", folder, "--sentence", "a", "--export-logit-lens", os.path.join(tmp, "x.txt"), expect=2)
    if "x.txt" not in p.stderr or "unknown type" not in p.stderr:
        fail("a .txt lens", f"message {p.stderr.strip()!r}")
    if os.path.exists(os.path.join(tmp, "x.json")) or os.path.exists(os.path.join(tmp, "x.txt")):
        fail("refused lenses", "a file was written")


def main():
    if len(sys.argv) != 3:
        print("usage: test_logit_lens.py PATH/TO/attnviz CACHE_DIR")
        return 2
    attnviz, cache = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        gpt2 = check_models(attnviz, readout_models.gpt2_models(cache, tmp), tmp)
        check_models(attnviz, readout_models.llama_models(cache, tmp), tmp)
        check_refused(attnviz, gpt2, tmp)
    if FAILURES:
        print(f"{len(FAILURES)} failures")
        return 1
    print(f"all passed: {checks.CHECKS[0]} checks of lenses (GPT-2 F32 and F16 untied, Llama F32, Qwen3 BF16 tied) equal the float64 numpy "
          f"lens to {TOL} (largest difference {WORST[0]:.2g}); the last row is the next-token panel's; refusals checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
