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

With --qk, the maps are not written at all: every layer's queries and keys as the scores see them
(after biases, q/k norms and RoPE), caught where the model hands them to its attention function,
go into OUT_DIR/qk.safetensors as layer.N.q [heads, T, d_h] and layer.N.k [kv_heads, T, d_h]
(BF16 by default: the model's own precision for most checkpoints), with the scores' scaling, the
mask, each layer's sliding window and the scores' soft-cap (Gemma 2's) in its metadata. The
model runs its family's own eager attention meanwhile, so that what later layers receive is what
output_attentions would have computed. attnviz makes every map from them on demand: for 32 layers
× 32 heads at 32,768 tokens about 10 GiB, against 2.2 TB of maps. Not read this way: a model whose
windows read both ways (ModernBERT's local attention) or whose layers scale their scores
differently (GPT-2's scale_attn_by_inverse_layer_idx).

    python scripts/export_attention.py meta-llama/Llama-3.1-8B "$(cat long.txt)" OUT_DIR --qk
    attnviz --attention OUT_DIR/qk.safetensors
"""
import argparse
import os
import sys


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="a model name or folder AutoModel reads (gpt2, meta-llama/Llama-3.2-1B, …)")
    p.add_argument("text", help="the input text")
    p.add_argument("out", help="the folder to write into")
    p.add_argument("--format", choices=["npy", "safetensors"], default="npy")
    p.add_argument("--dtype", choices=["float32", "float16"], default="float32")
    p.add_argument("--layers", default=None, help="a slice of the layers to keep, e.g. 0:12 (default: all)")
    p.add_argument("--qk", action="store_true", help="write every layer's queries and keys (qk.safetensors), not the maps")
    p.add_argument("--qk-dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    p.add_argument("--device", default="cpu", help="where the model runs (cpu, cuda)")
    p.add_argument("--model-dtype", choices=["auto", "float32", "float64"], default=None,
                   help="the precision the model runs in (default: float32 for the maps, the checkpoint's own for --qk)")
    a = p.parse_args(argv)
    if a.qk:
        return export_qk(a)

    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(a.model)
    model = AutoModel.from_pretrained(a.model, attn_implementation="eager", **model_dtype(a.model_dtype or "float32"))
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


def model_dtype(name):
    """from_pretrained's keyword for the precision asked for."""
    import torch
    return {"dtype" if transformers_major() >= 5 else "torch_dtype": {"auto": "auto", "float32": torch.float32, "float64": torch.float64}[name]}


def transformers_major():
    import transformers
    return int(transformers.__version__.split(".")[0])


def family_eager(module):
    """The eager attention function of the module's own family (modeling_llama's, modeling_gemma2's
    with its soft-cap, …), or None where the family has none."""
    return getattr(sys.modules.get(type(module).__module__), "eager_attention_forward", None)


def module_scaling(module):
    """The scores' factor where the attention function is given none: the module's own, or GPT-2's
    1/sqrt(d_h) (scale_attn_weights), divided by layer + 1 with scale_attn_by_inverse_layer_idx."""
    scaling = getattr(module, "scaling", None)
    if scaling is None and hasattr(module, "scale_attn_weights"):
        scaling = module.head_dim ** -0.5 if module.scale_attn_weights else 1.0
        if getattr(module, "scale_attn_by_inverse_layer_idx", False):
            scaling /= float(module.layer_idx + 1)
    return scaling


def write_tokens(tokenizer, ids, out):
    """The tokens one by one, as the tokenizer names them, a line break in one escaped."""
    with open(os.path.join(out, "tokens.txt"), "w", encoding="utf-8") as f:
        for token in tokenizer.convert_ids_to_tokens(ids):
            f.write(str(token).replace("\r", "\\r").replace("\n", "\\n") + "\n")


def export_qk(a):
    """Every layer's queries and keys as its attention function receives them, into qk.safetensors."""
    import torch
    from safetensors.torch import save_file
    from transformers import AttentionInterface, AutoModel, AutoTokenizer

    caught = {}  # layer -> (query [heads, T, d], key [kv_heads, T, d], scaling, window, softcap, causal)
    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[a.qk_dtype]

    order = {}  # a module without layer_idx (DistilBERT's): its layer is the order of its first call

    def catch(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
        layer = getattr(module, "layer_idx", None)
        if layer is None:
            layer = order.setdefault(id(module), len(order))
        given = scaling
        if scaling is None:
            scaling = module_scaling(module)
        if scaling is None:
            sys.exit(f"layer {layer}: the attention function was given no scaling and the module has none")
        caught[int(layer)] = (query[0].detach().to(dtype).cpu().contiguous(), key[0].detach().to(dtype).cpu().contiguous(),
                              float(scaling), int(kwargs.get("sliding_window") or 0), float(kwargs.get("softcap") or 0.0),
                              bool(getattr(module, "is_causal", True)))
        eager = family_eager(module)
        if eager is None:
            sys.exit(f"layer {layer}: {type(module).__module__} has no eager_attention_forward: this family is not read by --qk")
        return eager(module, query, key, value, attention_mask, scaling=given, dropout=dropout, **kwargs)

    AttentionInterface.register("attnviz_qk", catch)
    # The mask is made by a second table keyed by the same name: without an entry a new name's
    # prefill would read both ways. The computation is the eager one, so is its mask.
    try:
        from transformers.masking_utils import AttentionMaskInterface, eager_mask
    except ImportError:
        sys.exit("--qk needs transformers 4.53 or later (transformers.masking_utils.AttentionMaskInterface)")
    AttentionMaskInterface.register("attnviz_qk", eager_mask)
    tokenizer = AutoTokenizer.from_pretrained(a.model)
    model = AutoModel.from_pretrained(a.model, attn_implementation="attnviz_qk", **model_dtype(a.model_dtype or "auto")).to(a.device)
    model.eval()
    if getattr(model.config, "local_attention", None) and getattr(model.config, "model_type", "") == "modernbert":
        sys.exit("ModernBERT's local attention reads a window both ways, which a file of queries and keys does not hold")
    inputs = tokenizer(a.text, return_tensors="pt").to(a.device)
    with torch.no_grad():
        model(**inputs)
    if not caught:
        sys.exit("the model called no attention function: its family does not use transformers' AttentionInterface")
    layers = sorted(caught)
    if a.layers:
        start, _, stop = a.layers.partition(":")
        layers = layers[int(start or 0):int(stop) if stop else None]
    softcaps = {caught[l][4] for l in layers}
    if len(softcaps) != 1:
        sys.exit("the layers soft-cap their scores differently: not read yet")
    causal = {caught[l][5] for l in layers}
    if len(causal) != 1:
        sys.exit("the layers disagree on the causal mask")
    os.makedirs(a.out, exist_ok=True)
    tensors = {}
    for n, l in enumerate(layers):
        tensors[f"layer.{n}.q"], tensors[f"layer.{n}.k"] = caught[l][0], caught[l][1]
    scalings = {caught[l][2] for l in layers}
    if len(scalings) != 1:
        sys.exit("the layers scale their scores differently (GPT-2's scale_attn_by_inverse_layer_idx): not read yet")
    metadata = {"format": "attnviz-qk", "scaling": repr(scalings.pop()), "causal": "true" if causal.pop() else "false",
                "sliding_windows": ",".join(str(caught[l][3]) for l in layers), "model": str(a.model)}
    softcap = softcaps.pop()
    if softcap > 0:
        metadata["softcap"] = repr(softcap)
    path = os.path.join(a.out, "qk.safetensors")
    save_file(tensors, path, metadata=metadata)
    write_tokens(tokenizer, inputs["input_ids"][0].tolist(), a.out)
    q, k = tensors["layer.0.q"], tensors["layer.0.k"]
    print(f"wrote {path} ({len(layers)} layers: q {list(q.shape)}, k {list(k.shape)} {a.qk_dtype}) and tokens.txt; "
          f"open it with: attnviz --attention {path}")


if __name__ == "__main__":
    main()
