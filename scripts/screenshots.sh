#!/usr/bin/env bash
# Regenerates the README's pictures with the app's own --screenshot and --export-heatmap.
# Usage: bash scripts/screenshots.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build}/attnviz
OUT=docs/screenshots
mkdir -p "$OUT"
shot() { xvfb-run -a -s "-screen 0 1920x1200x24" "$BIN" --fresh "$@"; }
shot --preset default --screenshot "$OUT/default.png"
shot --preset seed004-causal --screenshot "$OUT/causal-heatmap.png" --panel heatmap --size 1400x900
shot --preset seed004-swap --positional sinusoidal --screenshot "$OUT/swap-positional.png" --panel swap
shot --preset seed000-characters --causal --presenter --screenshot "$OUT/presenter.png" --size 1400x860
shot --preset random-heads --theme light --screenshot "$OUT/light-eight-heads.png"
shot --preset seed004-causal --lab linear --screenshot "$OUT/lab-linear.png" --panel linear
shot --preset default --lab cost --screenshot "$OUT/lab-cost.png" --panel cost
shot --lesson attention --presenter --screenshot "$OUT/lesson.png" --size 1400x860
"$BIN" --preset seed004-causal --export-heatmap "$OUT/figure-causal.png"
"$BIN" --preset seed004-causal --export-heatmap "$OUT/figure-causal.svg"
