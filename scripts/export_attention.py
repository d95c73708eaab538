#!/usr/bin/env python3
"""Writes a model's attention for attnviz --attention: run next to Hugging Face transformers.

    python scripts/export_attention.py gpt2 "The cat sat on the mat." OUT_DIR
    attnviz --attention OUT_DIR/attentions.npy

The model runs once with output_attentions=True and the eager attention (SDPA and flash attention
return no weights). transformers gives one [batch, heads, T, T] tensor a layer (grouped-query
models already repeat their kv heads); the first sequence of the batch is written layer by layer
into OUT_DIR/attentions.npy [layers, heads, T, T] through a memory map (never stacked in memory),
or with --format safetensors into OUT_DIR/attentions.safetensors as layer.0, layer.1, …
Beside it, tokens.txt holds the tokens, one a line, as the tokenizer names them (GPT-2's "Ġcat").
A model run in bfloat16 is widened: attnviz reads float32 and float16 (bfloat16's 8-bit mantissa
cannot keep rows summing to 1 within 1e-3). Not used by attnviz's tests (transformers is not a
test dependency); the import itself is tested with files numpy writes the same way.
"""
import argparse
import os
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="a model name or folder AutoModel reads (gpt2, meta-llama/Llama-3.2-1B, …)")
    p.add_argument("text", help="the input text")
    p.add_argument("out", help="the folder to write into")
    p.add_argument("--format", choices=["npy", "safetensors"], default="npy")
    p.add_argument("--dtype", choices=["float32", "float16"], default="float32")
    p.add_argument("--layers", default=None, help="a slice of the layers to keep, e.g. 0:12 (default: all)")
    a = p.parse_args()

    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(a.model)
    model = AutoModel.from_pretrained(a.model, attn_implementation="eager")
    model.eval()
    inputs = tokenizer(a.text, return_tensors="pt")
    with torch.no_grad():
        outputs = model(**inputs, output_attentions=True)
    attentions = outputs.attentions
    if attentions is None or any(x is None for x in attentions):
        sys.exit("the model returned no attention weights: it needs attn_implementation='eager'")
    if attentions[0].dim() != 4 or attentions[0].shape[0] != inputs["input_ids"].shape[0]:
        sys.exit(f"attention of shape {tuple(attentions[0].shape)} is not [batch, heads, T, T] (windowed models such as Swin are not supported)")
    if a.layers:
        start, _, stop = a.layers.partition(":")
        attentions = attentions[int(start or 0):int(stop) if stop else None]

    os.makedirs(a.out, exist_ok=True)
    torch_dtype = torch.float32 if a.dtype == "float32" else torch.float16
    layers, (heads, t_q, t_k) = len(attentions), attentions[0].shape[1:]
    if a.format == "npy":
        path = os.path.join(a.out, "attentions.npy")
        mm = np.lib.format.open_memmap(path, mode="w+", dtype=a.dtype, shape=(layers, heads, t_q, t_k))
        for layer, x in enumerate(attentions):
            mm[layer] = x[0].to(torch_dtype).cpu().numpy()
        mm.flush()
        del mm
    else:
        from safetensors.torch import save_file
        path = os.path.join(a.out, "attentions.safetensors")
        save_file({f"layer.{layer}": x[0].to(torch_dtype).contiguous() for layer, x in enumerate(attentions)}, path)

    # The tokens one by one, as the tokenizer names them; a token holding a line break (rare in
    # byte-level vocabularies, which write it as Ċ) is written with the break escaped.
    ids = inputs["input_ids"][0].tolist()
    tokens = tokenizer.convert_ids_to_tokens(ids)
    with open(os.path.join(a.out, "tokens.txt"), "w", encoding="utf-8") as f:
        for token in tokens:
            f.write(str(token).replace("\r", "\\r").replace("\n", "\\n") + "\n")
    print(f"wrote {path} ([{layers}, {heads}, {t_q}, {t_k}] {a.dtype}) and tokens.txt; open it with: attnviz --attention {path}")


if __name__ == "__main__":
    main()
