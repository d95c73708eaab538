#!/usr/bin/env bash
# clang-tidy over the engine (core/), the state (app/state/) and the views (app/views/), every warning an error; the checks
# are in .clang-tidy. Only the files whose source or headers changed since the last commit at which every file was
# clean (.ci/tidy-clean; scripts/tidy_files.py says how it chooses), or every file with --full. A passing run on a tree
# without changes records its commit there (commit the file to keep it).
# Usage: bash scripts/tidy.sh [build-dir] [--full]   (a built tree: it reads compile_commands.json and the .d files)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=build
FULL=()
for arg in "$@"; do
  case $arg in
    --full) FULL=(--full) ;;
    *) BUILD_DIR=$arg ;;
  esac
done
TIDY=$(command -v clang-tidy-14 || command -v clang-tidy || true)
if [ -z "$TIDY" ]; then
  echo "attnviz: clang-tidy not found (Debian package clang-tidy)" >&2
  exit 1
fi
if [ ! -f "$BUILD_DIR/compile_commands.json" ]; then
  echo "attnviz: $BUILD_DIR/compile_commands.json is missing; configure first (bash scripts/setup.sh)" >&2
  exit 1
fi
FILES=$(/usr/bin/python3 scripts/tidy_files.py "$BUILD_DIR" "${FULL[@]}")
# GCC-only warning flags mean nothing to clang: keep its driver quiet about them. The
# "N warnings generated" lines count what the header filter suppressed (Eigen's, the standard
# library's); they are dropped.
if [ -n "$FILES" ]; then
  printf '%s\n' "$FILES" | xargs -P "$(nproc)" -n 1 "$TIDY" -p "$BUILD_DIR" --quiet --warnings-as-errors='*' \
    --extra-arg=-Wno-unknown-warning-option 2>&1 | sed -e '/^[0-9]* warnings\? generated\.$/d'
fi
echo "attnviz: clang-tidy: core, state and views are clean"
# Every file is clean at this commit when nothing differs from it (the files not checked are as
# they were at the recorded one).
if [ -z "$(git status --porcelain | grep -v ' \.ci/tidy-clean$' || true)" ]; then
  HEAD=$(git rev-parse HEAD)
  if [ "$(cat .ci/tidy-clean 2> /dev/null || true)" != "$HEAD" ]; then
    echo "$HEAD" > .ci/tidy-clean
    echo "attnviz: clang-tidy: recorded ${HEAD:0:10} in .ci/tidy-clean (commit it, and the next run checks only what changes after)"
  fi
fi
