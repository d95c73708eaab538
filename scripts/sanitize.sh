#!/usr/bin/env bash
# Builds with AddressSanitizer + UndefinedBehaviorSanitizer (ATTNVIZ_SANITIZE) in build-asan and
# runs the whole test suite there: core and state tests, the numpy oracle, and the real app under
# a virtual display. Any sanitizer report (memory error, leak, undefined behaviour) fails its test
# and the script exits non-zero. Needs what scripts/setup.sh installs.
# Usage: bash scripts/sanitize.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=build-asan

# Every test and every program a test starts (the app under the oracle and the screenshot tests)
# inherits these. halt_on_error: the first report ends the process with a failure.
# detect_leaks: LeakSanitizer at exit. The initialisation-order and stack-use-after-return checks
# are off by default. allocator_may_return_null: an allocation no memory can hold fails as it does
# in the release build (Eigen throws std::bad_alloc, which attnviz reports), instead of ASan
# ending the process. print_stacktrace: UBSan reports say where the call came from.
export ASAN_OPTIONS="allocator_may_return_null=1:halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

# Debug for assertions (Eigen checks every index), at -O1 so the suite runs in minutes; line tables
# only (-g1): a report still names each frame's file and line, and the build takes a fifth less time
# than with full debugging information.
cmake -S . -B "$BUILD_DIR" -DATTNVIZ_SANITIZE=ON -DATTNVIZ_BUILD_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DCMAKE_C_FLAGS_DEBUG="-O1 -g1" > /dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)"
