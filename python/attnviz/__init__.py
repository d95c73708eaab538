"""attnviz from Python: attention computed in a notebook or on a GPU server, in attnviz's window or
as its figures.

    import attnviz
    out = model(**inputs, output_attentions=True)
    tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])
    attnviz.show(out.attentions, tokens)                   # the window, on these maps
    attnviz.figure(out.attentions, tokens, view="model")   # the model view's SVG, inline in Jupyter

Attentions are what transformers returns with output_attentions=True (a tuple of per-layer tensors
[1, heads, T, T]), or one array of [layers, heads, T, T], [heads, T, T] or [T, T]: numpy arrays or
torch tensors (read with .detach().float().cpu()). They are written as the file `attnviz
--attention` reads (attentions.npy, float32, with tokens.txt beside it) in a temporary folder, and
the attnviz program does the rest: the figures are the command line's exports, byte for byte.
Errors come back as AttnvizError with the program's one line. Needs numpy (python3-numpy).
"""

import os
import shutil
import subprocess
import tempfile

__all__ = ["AttnvizError", "Figure", "figure", "show", "VIEWS"]

# A view's name -> the command line's export flag.
VIEWS = {
    "heatmap": "--export-heatmap",
    "bars": "--export-bars",
    "heads": "--export-heads",
    "model": "--export-model-view",
    "head-view": "--export-head-view",
    "distance": "--export-distance",
}


class AttnvizError(Exception):
    """What attnviz refused, in its own one line."""


def _binary():
    """The attnviz program: $ATTNVIZ_BINARY, the one installed with this module, or attnviz on the PATH."""
    if os.environ.get("ATTNVIZ_BINARY"):
        return os.environ["ATTNVIZ_BINARY"]
    try:
        from . import _installed  # written by the install: where the program went

        if os.path.exists(_installed.BINARY):
            return _installed.BINARY
    except ImportError:
        pass
    found = shutil.which("attnviz")
    if found is None:
        raise AttnvizError("the attnviz program was not found: install it, or set ATTNVIZ_BINARY to its path")
    return found


def _as_numpy(a):
    import numpy as np

    if hasattr(a, "detach"):  # a torch tensor
        a = a.detach().float().cpu().numpy()
    return np.asarray(a)


def _attentions(attentions):
    """[layers, heads, T, T] float32 (or [heads, T, T], [T, T]), C order, from any accepted form."""
    import numpy as np

    if isinstance(attentions, (tuple, list)):  # transformers: one tensor a layer, [batch, heads, T, T]
        if not attentions:
            raise AttnvizError("attentions: an empty list of layers")
        layers = [_as_numpy(a) for a in attentions]
        for n, a in enumerate(layers):
            if a.ndim == 4 and a.shape[0] == 1:
                layers[n] = a[0]
            elif a.ndim != 3:
                raise AttnvizError(f"attentions[{n}]: expected [1, heads, T, T] or [heads, T, T], got shape {list(a.shape)}")
        if len({a.shape for a in layers}) != 1:
            raise AttnvizError("attentions: the layers' shapes differ")
        array = np.stack(layers)
    else:
        array = _as_numpy(attentions)
        if array.ndim == 5 and array.shape[1] == 1:  # [layers, 1, heads, T, T]
            array = array[:, 0]
        if array.ndim not in (2, 3, 4):
            raise AttnvizError(f"attentions: expected [layers, heads, T, T], [heads, T, T] or [T, T], got shape {list(array.shape)}")
    if array.dtype.kind not in "fiu":
        raise AttnvizError(f"attentions: expected numbers, got {array.dtype}")
    return np.ascontiguousarray(array, dtype=np.float32)


def _write(folder, attentions, tokens):
    """attentions.npy (and tokens.txt) in `folder`; returns the .npy's path."""
    import numpy as np

    array = _attentions(attentions)
    path = os.path.join(folder, "attentions.npy")
    np.save(path, array)
    if tokens is not None:
        tokens = [str(t) for t in tokens]
        if len(tokens) != array.shape[-1]:
            raise AttnvizError(f"tokens: {len(tokens)} tokens for maps over {array.shape[-1]} keys")
        # one a line: a line break inside a token is written as the symbol attnviz draws for it
        lines = [t.replace("\r\n", "↵").replace("\n", "↵").replace("\r", "↵") or "∅" for t in tokens]
        with open(os.path.join(folder, "tokens.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    return path


def _flags(options):
    """Keyword options as command-line flags: layer=3 -> --layer 3, model_view_sort="induction" ->
    --model-view-sort induction, a True flag alone, None and False left out."""
    out = []
    for key, value in options.items():
        if value is None or (type(value).__name__ in ("bool", "bool_") and not value):  # numpy's False too
            continue
        flag = "--" + key.replace("_", "-")
        out.append(flag)
        if type(value).__name__ not in ("bool", "bool_"):
            out.append(str(value))
    return out


def _run(args):
    p = subprocess.run(args, capture_output=True, encoding="utf-8", errors="replace")
    if p.returncode != 0:
        lines = [line for line in p.stderr.strip().splitlines() if line.strip()]
        message = lines[-1] if lines else f"attnviz exited {p.returncode}"
        raise AttnvizError(message.removeprefix("attnviz: error: "))
    return p


class Figure:
    """An exported figure's bytes (SVG or PNG), shown inline by Jupyter."""

    def __init__(self, data, kind):
        self.data, self.kind = data, kind

    def _repr_svg_(self):
        return self.data.decode("utf-8") if self.kind == "svg" else None

    def _repr_png_(self):
        return self.data if self.kind == "png" else None

    def save(self, path):
        with open(path, "wb") as f:
            f.write(self.data)

    def __repr__(self):
        return f"<attnviz.Figure {self.kind}, {len(self.data)} bytes>"


def figure(attentions, tokens=None, view="model", format="svg", **options):
    """The figure `attnviz --attention FILE --export-<view> OUT.<format>` writes for these maps:
    view one of VIEWS ("model", "heatmap", "bars", "heads", "head-view", "distance"), format "svg" or
    "png", options the command line's (layer=, head=, query=, colormap=, model_view_sort=, ...)."""
    if view not in VIEWS:
        raise AttnvizError(f"view: expected one of {', '.join(VIEWS)}, got {view!r}")
    if format not in ("svg", "png"):
        raise AttnvizError(f"format: expected \"svg\" or \"png\", got {format!r}")
    with tempfile.TemporaryDirectory(prefix="attnviz-") as folder:
        path = _write(folder, attentions, tokens)
        out = os.path.join(folder, "figure." + format)
        _run([_binary(), "--attention", path, *_flags(options), VIEWS[view], out])
        with open(out, "rb") as f:
            return Figure(f.read(), format)


def show(attentions, tokens=None, **options):
    """Opens attnviz's window on these maps (options: the command line's, as for figure()) and
    returns the running process. The files stay in a temporary folder while the window is open."""
    binary = _binary()  # before any file is written: a missing program leaves nothing behind
    folder = tempfile.mkdtemp(prefix="attnviz-")
    try:
        path = _write(folder, attentions, tokens)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    # the window runs on its own; a small shell removes the folder once it closes
    script = '"$@"; status=$?; rm -rf -- "$ATTNVIZ_FOLDER"; exit $status'
    env = dict(os.environ, ATTNVIZ_FOLDER=folder)
    return subprocess.Popen(["/bin/sh", "-c", script, "attnviz", binary, "--attention", path, *_flags(options)], env=env)
