"""What the `attnviz --model` tests share: running one pass and checking its export against a float64
reference, the ten most likely next tokens, a head's CSV, the what-ifs, a broken folder refused, and
the command line and last line of the tests that run one family at a time (main).

test_llama_model.py, test_gemma_model.py and test_bert_model.py check their passes with these;
test_gpt2_model.py reads its head CSVs with head_csv(). Every check is counted in checks.py's one
record, as the tests' own are.
"""
import csv
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np

from checks import CHECKS, FAILURES, WORST, close, expect, run

TOL = 1e-4  # next-token probabilities (and the decoders' maps)


# --- one pass ------------------------------------------------------------------------------------

def export(attnviz, folder, sentence, out_json, out_npy, *flags):
    """`attnviz --model FOLDER --sentence S [flags] --export OUT_JSON --export-npy OUT_NPY`, OUT_NPY
    emptied first: the JSON, or None when attnviz did not exit 0 (a failed check)."""
    shutil.rmtree(out_npy, ignore_errors=True)
    if run(attnviz, "--model", folder, "--sentence", sentence, *flags, "--export", out_json, "--export-npy", out_npy).returncode:
        return None
    with open(out_json, encoding="utf-8") as f:
        return json.load(f)


def check_layers(where, got, out_npy, ids, want_model, attentions, tol, kv_heads=None, tokens_txt=True):
    """One pass's export against the reference: the JSON's "model" holds want_model's fields (n_layer
    and n_head among them), a label per token, layers x heads, each head's "kv_head" (kv_heads: each
    head's kv head; None for an encoder, each head its own, the field optional), every map in the
    JSON and in attentions.npy [L, H, T, T] within tol of attentions, token_ids.npy the ids and
    (tokens_txt) tokens.txt the labels. Returns (the JSON's maps, attentions.npy), or None when the
    layers and heads are not the model's."""
    model = got["model"]
    expect(where, {k: model.get(k) for k in want_model} == want_model, f"model {model}, expected {want_model}")
    expect(where, len(got["tokens"]) == len(ids), f"{len(got['tokens'])} token labels for {len(ids)} ids")
    layers, n_layer, nh = got["layers"], want_model["n_layer"], want_model["n_head"]
    if not expect(where, len(layers) == n_layer and all(len(l["heads"]) == nh for l in layers), "layers × heads"):
        return None
    if kv_heads is None:
        kv = [[h.get("kv_head", i) for i, h in enumerate(l["heads"])] for l in layers]
        expect(where, kv == [list(range(nh))] * n_layer, f"kv_head {kv[0]}, expected each head its own")
    else:
        kv = [[h.get("kv_head") for h in l["heads"]] for l in layers]
        expect(where, kv == [kv_heads] * n_layer, f"kv_head {kv[0]}, expected {kv_heads}")
    att = np.array([[h["weights"] for h in l["heads"]] for l in layers], dtype=np.float64)
    close(where + " attention (JSON)", att, attentions, tol)
    npy = np.load(os.path.join(out_npy, "attentions.npy"))
    close(where + " attention (npy)", npy, attentions, tol)
    if npy.shape == attentions.shape and not np.allclose(npy, attentions, rtol=0, atol=tol):
        err = np.abs(npy - attentions).max(axis=(2, 3))
        print(f"  {where}: largest difference per layer x head\n{np.array2string(err, precision=2)}", flush=True)
    expect(where, list(np.load(os.path.join(out_npy, "token_ids.npy"))) == ids, "token_ids.npy differs from the ids")
    if tokens_txt:
        with open(os.path.join(out_npy, "tokens.txt"), encoding="utf-8") as f:
            expect(where, f.read().split("\n")[:-1] == got["tokens"], "tokens.txt differs from the JSON's tokens")
    return att, npy


def check_next_tokens(where, got, probs, tol=TOL):
    """The ten most likely, in order; where two are within tol either may come first or be tenth."""
    order = np.argsort(-probs, kind="stable")
    ids = [n["id"] for n in got]
    if not expect(where, len(ids) == 10 and len(set(ids)) == 10, f"{len(ids)} next tokens, {len(set(ids))} distinct"):
        return
    close(where + " next-token probabilities", [n["prob"] for n in got], probs[ids], tol)
    tenth = probs[order[9]]
    if ids != [int(i) for i in order[:10]]:
        ranked = all(probs[a] >= probs[b] - tol for a, b in zip(ids, ids[1:]))
        expect(where, ranked and all(probs[i] >= tenth - tol for i in ids),
               f"next tokens {ids}, expected {[int(i) for i in order[:10]]}")
    expect(where, all(isinstance(n.get("token"), str) for n in got), "a next token without its text")


# --- a head's CSV, the what-ifs --------------------------------------------------------------------

def head_csv(attnviz, folder, sentence, layer, head, out_csv, *flags):
    """One head's map as `--layer L --head H [flags] --export-csv` writes it ([T, T], the labels
    dropped), or None when attnviz did not exit 0 (a failed check)."""
    if run(attnviz, "--model", folder, "--sentence", sentence, "--layer", str(layer), "--head", str(head), *flags,
           "--export-csv", out_csv).returncode:
        return None
    with open(out_csv, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    return np.array([[float(x) for x in r[1:]] for r in rows[1:]])


def check_head_csvs(attnviz, folder, sentence, attentions, tmp, label, tol=TOL):
    """The CSVs of layer 0's head 1 and the last layer's head 3 against their maps in attentions [L, H, T, T]."""
    for layer, head in [(0, 1), (len(attentions) - 1, 3)]:
        got = head_csv(attnviz, folder, sentence, layer, head, os.path.join(tmp, "h.csv"))
        if got is not None:
            close(f"{label} --layer {layer} --head {head} --export-csv", got, attentions[layer][head], tol)


def check_what_ifs(attnviz, folder, sentence, cases, forward, tmp, label, tol=TOL):
    """A decoder's what-ifs: for each (flags, hooks) of cases, the pass with the flags against
    forward(**hooks) (.attentions, .probs): its maps, the hidden tokens read by no query, the next
    tokens after, and those before against forward()'s."""
    plain = forward()
    out_json, out_npy = os.path.join(tmp, "whatif.json"), os.path.join(tmp, "whatif-npy")
    for flags, hooks in cases:
        where = f"{label} what-if {' '.join(flags)}"
        got = export(attnviz, folder, sentence, out_json, out_npy, *flags)
        if got is None:
            continue
        ref = forward(**hooks)
        att = np.load(os.path.join(out_npy, "attentions.npy"))
        close(where + " attention (npy)", att, ref.attentions, tol)
        for token in hooks.get("hide", ()):
            expect(where, not np.any(att[:, :, :, token]), f"token {token} hidden but read")
        check_next_tokens(where + " after", got["next_tokens"], ref.probs, tol)
        before = got["what_if"]["next_tokens_before"]
        close(where + " before", [n["prob"] for n in before], plain.probs[[n["id"] for n in before]], tol)


# --- folders attnviz must refuse, or open --------------------------------------------------------

def check_refused(attnviz, folder, sentence, fragments, where, tmp, npy=False):
    """A broken folder (or a sentence too long for it): exit 2, one stderr line holding every
    fragment (a tuple: any one of it), and nothing written (--export, and --export-npy with npy)."""
    outputs = [os.path.join(tmp, "never.json")] + ([os.path.join(tmp, "never-npy")] if npy else [])
    for out in outputs:  # an earlier failure's output must not fail this folder too
        if os.path.isdir(out):
            shutil.rmtree(out)
        elif os.path.exists(out):
            os.remove(out)
    flags = ["--export", outputs[0]] + (["--export-npy", outputs[1]] if npy else [])
    p = run(attnviz, "--model", folder, "--sentence", sentence, *flags, expect=2)
    lines = p.stderr.strip().split("\n")
    ok = len(lines) == 1 and all(any(x in lines[0] for x in (f if isinstance(f, tuple) else (f,))) for f in fragments)
    expect(where, ok, f"expected one line with {fragments}, got {p.stderr.strip()[:300]!r}")
    expect(where, not any(os.path.exists(out) for out in outputs), "an output file was written")


def check_opens(attnviz, folder, sentence, tmp, family, label, checkpoints):
    """Whether attnviz opens a family's first folder at all: if not, one failure line says what it said
    and that the family's checkpoints and broken folders are not run. Its outputs are tmp/out.json and
    tmp/npy, as export() writes them for this sentence."""
    shutil.rmtree(os.path.join(tmp, "npy"), ignore_errors=True)
    p = subprocess.run([attnviz, "--model", folder, "--sentence", sentence, "--export", os.path.join(tmp, "out.json"),
                        "--export-npy", os.path.join(tmp, "npy")], capture_output=True, text=True, timeout=600)
    why = None if p.returncode == 0 else f"exit {p.returncode}: {(p.stderr.strip().splitlines() or ['(nothing)'])[0][:300]}"
    return expect(family, why is None, f"attnviz --model does not open {label} ({family}): {why}; "
                  f"its {checkpoints} checkpoints and broken folders were not run")


# --- tests that run one family at a time ---------------------------------------------------------

def main(argv, script, families, runs_of, matched):
    """main() of a test that runs one family at a time: `PATH/TO/attnviz CACHE_DIR [--families a,b]`
    (all of families without the flag). runs_of(attnviz, cache_dir, chosen) gives (family, run) for
    each chosen family, run(tmp) giving (passes, checkpoints, broken folders), or None when attnviz
    does not open the family at all; they run in one temporary folder. Then the last line: matched
    says how every pass matched the float64 forward, "{worst}" standing for the largest difference.
    Returns the exit status (2 after printing the usage)."""
    chosen = families
    if len(argv) == 4 and argv[2] == "--families":
        chosen, argv = tuple(argv[3].split(",")), argv[:2]
    if len(argv) != 2 or not chosen or not set(chosen) <= set(families):
        print(f"usage: {script} PATH/TO/attnviz CACHE_DIR [--families {','.join(families)}]")
        return 2
    runs = runs_of(argv[0], argv[1], chosen)
    done, skipped = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for family, run_one in runs:
            result = run_one(tmp)
            if result is None:
                skipped.append(family)
            else:
                done.append((family, *result))
    summary = "; ".join(f"{f}: {passes} passes of {n} checkpoints, {broken} broken folders" for f, passes, n, broken in done)
    if FAILURES:
        not_run = f"; not opened at all: {', '.join(skipped)}" if skipped else ""
        print(f"{len(FAILURES)} failures of {CHECKS[0]} checks (largest difference {WORST[0]:.2g}){not_run}; {summary}")
        return 1
    print(f"all {CHECKS[0]} checks passed: {summary}; every pass matched the float64 forward "
          f"{matched.format(worst=f'{WORST[0]:.2g}')}, with head CSVs and what-ifs")
    return 0
