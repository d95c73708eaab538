#!/usr/bin/env bash
# Installs what attnviz needs from Debian (only what is missing), then configures and builds.
# Usage: bash scripts/setup.sh [--checks] [build-dir]     (default: build)
#   --checks  also installs the checking tools the full test run uses: clang 14 with libFuzzer
#             and its OpenMP runtime (fuzz targets), clang-tidy, clang-format.
set -euo pipefail
cd "$(dirname "$0")/.."
CHECKS=0
if [ "${1:-}" = "--checks" ]; then
  CHECKS=1
  shift
fi
BUILD_DIR=${1:-build}

PACKAGES=(
  cmake g++ make pkg-config            # toolchain
  ccache                               # keeps the objects of the repeated builds (CMakeLists.txt)
  libeigen3-dev nlohmann-json3-dev     # core: matrices, scenario files
  libpcre2-dev                         # GPT-2's pre-tokenisation pattern: Unicode classes and look-ahead
  libicu-dev                           # NFC before Qwen's tokens (tokenizer.json's normalizer)
  libcli11-dev                         # command line
  libimgui-dev libglfw3-dev            # window and UI (ImGui 1.86 with GLFW + OpenGL3 backends)
  python3 python3-glad python3-jinja2  # OpenGL 3.3 loader generated at configure time
  libstb-dev                           # PNG writing and TrueType text for exported figures
  fonts-dejavu-core                    # DejaVu Sans: Greek and maths glyphs (α τ √ Σ)
  fonts-droid-fallback fonts-nanum     # tokens in Chinese and Japanese; Korean
  fonts-noto-core fonts-symbola        # Devanagari, Thai and other scripts; emoji (monochrome)
  libfribidi-dev                       # right-to-left tokens in visual order, Arabic letters joined
  libgl1-mesa-dri xvfb xauth           # software OpenGL and a virtual display for headless runs
  libgtest-dev libgmock-dev libbenchmark-dev  # tests and benchmarks
  python3-numpy                        # independent oracle in the tests
  python3-regex                        # GPT-2's own encoder.py, a reference for the tokenizer's test
  librsvg2-bin                         # the icon's PNG sizes, drawn from its SVG at build time
  desktop-file-utils appstream         # checks of the installed menu entry and metainfo (tests)
  shared-mime-info man-db              # the scenario file type and the manual page (tests)
  dpkg-dev lintian                     # the .deb: dependencies from the binary (dpkg-shlibdeps), its checks
)
# node and npm run gpt-3-encoder, the tokenizer test's other reference (npm fetches it once); a
# Node.js already installed (with its npm) is kept.
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
  PACKAGES+=(nodejs npm)
fi
if ((CHECKS)); then
  PACKAGES+=(
    clang-14 libclang-rt-14-dev libomp-14-dev  # libFuzzer targets (scripts/fuzz.sh)
    clang-tidy-14                              # static checks of the engine and the state (scripts/tidy.sh)
    clang-format-14                            # the layout of every source file (.clang-format)
  )
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "attnviz: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
