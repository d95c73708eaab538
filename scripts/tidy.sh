#!/usr/bin/env bash
# clang-tidy over the engine (core/), the state (app/state/) and the views (app/views/), every warning an error; the checks
# are in .clang-tidy.
# Usage: bash scripts/tidy.sh [build-dir]   (a configured build: it reads compile_commands.json)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
TIDY=$(command -v clang-tidy-14 || command -v clang-tidy || true)
if [ -z "$TIDY" ]; then
  echo "attnviz: clang-tidy not found (Debian package clang-tidy)" >&2
  exit 1
fi
if [ ! -f "$BUILD_DIR/compile_commands.json" ]; then
  echo "attnviz: $BUILD_DIR/compile_commands.json is missing; configure first (bash scripts/setup.sh)" >&2
  exit 1
fi
# GCC-only warning flags mean nothing to clang: keep its driver quiet about them. The
# "N warnings generated" lines count what the header filter suppressed (Eigen's, the standard
# library's); they are dropped.
find core app/state app/views -name "*.cpp" | sort | xargs -P "$(nproc)" -n 1 "$TIDY" -p "$BUILD_DIR" --quiet --warnings-as-errors='*' \
  --extra-arg=-Wno-unknown-warning-option 2>&1 | sed -e '/^[0-9]* warnings\? generated\.$/d'
echo "attnviz: clang-tidy: core, state and views are clean"
