#!/usr/bin/env bash
# Installs what is missing, builds, and opens attnviz on the default demo.
# Extra arguments go to attnviz, e.g. bash scripts/run.sh --preset seed004-causal
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh build
exec ./build/attnviz "$@"
