#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite: core and state tests, the
# numpy oracle, figure export, and the real app under a virtual display.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh build
ctest --test-dir build --output-on-failure -j "$(nproc)"
