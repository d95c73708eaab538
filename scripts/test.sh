#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite:
#   1. ctest on the Release build: core and state tests, the numpy oracle, figure export, and the
#      real app under a virtual display;
#   2. clang-tidy on the engine, the state and the views (scripts/tidy.sh: the files changed since the
#      last commit at which every one was clean), every warning an error, and every
#      source file laid out as .clang-format says;
#   3. the same ctest suite built with AddressSanitizer + UndefinedBehaviorSanitizer
#      (scripts/sanitize.sh);
#   4. each libFuzzer target for 60 s from its seed corpus (scripts/fuzz.sh).
# Usage: bash scripts/test.sh [--quick]    (--quick: step 1 only)
set -euo pipefail
cd "$(dirname "$0")/.."
QUICK=0
[ "${1:-}" = "--quick" ] && QUICK=1

step() { printf '\n== attnviz: %s\n' "$1"; }

if ((QUICK)); then
  bash scripts/setup.sh build
else
  bash scripts/setup.sh --checks build
fi
step "test suite (Release)"
ctest --test-dir build --output-on-failure -j "$(nproc)"
((QUICK)) && exit 0

step "clang-tidy on core/, app/state/ and app/views/"
bash scripts/tidy.sh build
step "layout (.clang-format)"
git ls-files -z '*.cpp' '*.hpp' | xargs -0 clang-format-14 --dry-run --Werror
echo "attnviz: every source file is laid out as .clang-format says"
step "test suite under AddressSanitizer + UndefinedBehaviorSanitizer"
bash scripts/sanitize.sh
step "fuzzing, 60 s per target"
bash scripts/fuzz.sh 60
step "all checks passed"
