#!/usr/bin/env python3
"""Checks that attnviz's maps made from a --qk file equal transformers' own output_attentions.

    python scripts/check_qk_import.py MODEL "some text" [--attnviz build/attnviz] [--heads 4]

Runs scripts/export_attention.py twice on MODEL over the text, the model in float32: once writing the maps
(output_attentions, the eager attention) and once writing the queries and keys (--qk
--qk-dtype float32). Then, for a few (layer, head) pairs spread over the model, asks attnviz for
that head's map from the queries and keys (--export-npy DIR --layer L --head H) and prints the
largest difference from transformers' map; exits 1 past --tolerance (default 1e-5). Needs
transformers, torch and numpy; not run by attnviz's tests, which check the same maps against a
numpy reference (tests/oracle/test_import_qk.py).
"""
import argparse
import os
import subprocess
import sys
import tempfile


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("text")
    p.add_argument("--attnviz", default="attnviz")
    p.add_argument("--heads", type=int, default=4, help="how many (layer, head) pairs to compare")
    p.add_argument("--tolerance", type=float, default=1e-5)
    a = p.parse_args()
    import numpy as np

    here = os.path.dirname(os.path.abspath(__file__))
    export = [sys.executable, os.path.join(here, "export_attention.py"), a.model, a.text]
    with tempfile.TemporaryDirectory() as tmp:
        maps, qk = os.path.join(tmp, "maps"), os.path.join(tmp, "qk")
        subprocess.run(export + [maps, "--model-dtype", "float32"], check=True)
        subprocess.run(export + [qk, "--qk", "--qk-dtype", "float32", "--model-dtype", "float32"], check=True)
        reference = np.load(os.path.join(maps, "attentions.npy"), mmap_mode="r")
        layers, heads = reference.shape[:2]
        pairs = sorted({(layers * n // a.heads, (heads * n // a.heads + n) % heads) for n in range(a.heads)})
        worst = 0.0
        for layer, head in pairs:
            out = os.path.join(tmp, f"one-{layer}-{head}")
            subprocess.run([a.attnviz, "--attention", os.path.join(qk, "qk.safetensors"), "--layer", str(layer), "--head", str(head),
                            "--export-npy", out], check=True)
            mine = np.load(os.path.join(out, "attentions.npy"))[0, 0]
            diff = float(np.abs(mine.astype(np.float64) - reference[layer, head].astype(np.float64)).max())
            worst = max(worst, diff)
            print(f"layer {layer} head {head}: largest difference {diff:.3g}")
        print(f"largest difference over {len(pairs)} maps: {worst:.3g} (tolerance {a.tolerance:g})")
        sys.exit(0 if worst <= a.tolerance else 1)


if __name__ == "__main__":
    main()
