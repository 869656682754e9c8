#!/usr/bin/env bash
# Installs what divfuzz needs (idempotently) and builds it into build/.
# Debian packages: compilers, CMake, Abseil, GoogleTest, nlohmann-json, MPFR and GMP (the
# exact witness), ccache,
# chromium (headless, for the HTML report's rendering test), and python3-pyflakes (the
# ctest minimize_repro_harness_py lints the repro harness, minimize/harness/repro_harness.py,
# so an undefined name fails the suite rather than a user's repro.py).
# PyPI: torch==2.11.0, whose wheel carries libtorch's headers, libraries and
# CMake config (and which the emitted repro.py scripts import).
set -euo pipefail
cd "$(dirname "$0")/.."

TORCH_VERSION=2.11.0
PACKAGES=(cmake ninja-build clang libclang-rt-14-dev libabsl-dev libgtest-dev libgmock-dev
          libbenchmark-dev nlohmann-json3-dev libmpfr-dev libgmp-dev ccache python3-pip chromium
          python3-pyflakes)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! python3 -c "import torch, sys; sys.exit(0 if torch.__version__.startswith('$TORCH_VERSION') else 1)" 2>/dev/null; then
  echo "setup: installing torch==$TORCH_VERSION from PyPI (libtorch comes with it; a few GB)"
  python3 -m pip install -q "torch==$TORCH_VERSION" numpy
fi

TORCH_CMAKE=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  echo "setup: configuring $BUILD_DIR/ (clang, Release)"
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_PREFIX_PATH="$TORCH_CMAKE" >"$BUILD_DIR.configure.log" 2>&1 ||
    { cat "$BUILD_DIR.configure.log"; exit 1; }
fi
echo "setup: building (2 cores take a few minutes the first time; ccache makes later builds fast)"
ninja -C "$BUILD_DIR" ${NINJA_TARGETS:-}
