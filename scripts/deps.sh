#!/usr/bin/env bash
# Installs what convtune needs and is missing. `deps.sh build`: the C++ toolchain and libraries;
# `deps.sh test`: those plus the Python packages of the plots and their tests. Installs only as root
# (apt-get, pip); otherwise prints the exact commands and fails. Where everything is present (the GPU
# machine), it installs nothing.
# For its tests: CONVTUNE_DEPS_DRY_RUN=1 prints what it would install and installs nothing;
# CONVTUNE_DEPS_HIDE=cudnn takes the machine's cuDNN for missing (nothing is uninstalled).
set -euo pipefail
what=${1:-build}

# `deps.sh muparser`: Debian's muparser (plug-in manifests' expressions) unpacked into .deps/muparser (git-ignored),
# where CMake finds it: for a machine that cannot download (the GPU machine), fetch here and carry the folder.
# Needs apt-get (any user: `apt-get download` writes into the current folder) and dpkg-deb.
if [ "$what" = muparser ]; then
  root=$(cd "$(dirname "$0")/.." && pwd)/.deps/muparser
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && apt-get download libmuparser-dev libmuparser2v5 >/dev/null) ||
    { echo "deps: apt-get download libmuparser-dev libmuparser2v5 failed (needs Debian/Ubuntu package lists)" >&2; exit 1; }
  for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$work/root"; done
  rm -rf "$root" && mkdir -p "$root/include" "$root/lib"
  cp "$work"/root/usr/include/muParser*.h "$root/include/"
  # Real files, no links: a carried folder keeps them. The soname (libmuparser.so.2) is what the binary asks for.
  lib=$(ls "$work"/root/usr/lib/*/libmuparser.so.2.* | head -1)
  cp "$lib" "$root/lib/libmuparser.so.2"
  cp "$lib" "$root/lib/libmuparser.so"
  echo "deps: muparser in $root (carry .deps/muparser; CMake finds it there)"
  exit 0
fi
dry_run=${CONVTUNE_DEPS_DRY_RUN:-0}

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
command -v nvcc >/dev/null 2>&1 || { echo "deps: the CUDA toolkit (nvcc, NVRTC, cuFFT, cuBLAS) is required: install CUDA 12.4+ and put nvcc on PATH" >&2; exit 1; }

apt_missing=()
have_header() { [ -e "/usr/include/$1" ] || [ -e "/usr/local/include/$1" ]; }
command -v cmake >/dev/null 2>&1 || apt_missing+=(cmake)
command -v ninja >/dev/null 2>&1 || apt_missing+=(ninja-build)
have_header nlohmann/json.hpp || apt_missing+=(nlohmann-json3-dev)
have_header CLI/CLI.hpp || apt_missing+=(libcli11-dev)
have_header gtest/gtest.h || apt_missing+=(libgtest-dev)
have_header benchmark/benchmark.h || apt_missing+=(libbenchmark-dev)
pip_missing=()
# cuDNN: a system package, CUDNN_ROOT, or Python's nvidia-cudnn wheel (CMakeLists.txt looks in all three).
have_cudnn() {
  [ "${CONVTUNE_DEPS_HIDE:-}" != cudnn ] || return 1
  have_header cudnn.h || [ -e /usr/local/cuda/include/cudnn.h ] || [ -e "${CUDNN_ROOT:-/nonexistent}/include/cudnn.h" ] ||
    python3 -c "import nvidia.cudnn" 2>/dev/null
}
# The apt package of the toolkit's CUDA major where apt can install it (NVIDIA's repository), else the wheel.
if ! have_cudnn; then
  cuda_major=$(nvcc --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
  if apt-cache policy "cudnn9-cuda-$cuda_major" 2>/dev/null | grep -q 'Candidate: [^(]'; then
    apt_missing+=("cudnn9-cuda-$cuda_major")
  else
    pip_missing+=("nvidia-cudnn-cu$cuda_major")
  fi
fi
# zlib1g-dev (packed run folders, records.jsonl.gz) is optional: installed with the rest when something else is
# missing too; alone, only a note, so that a machine that cannot download (the GPU machine) still builds.
if ! have_header zlib.h; then
  if [ ${#apt_missing[@]} -gt 0 ]; then apt_missing+=(zlib1g-dev)
  else echo "deps: zlib1g-dev missing (optional: without it convtune cannot read packed runs, records.jsonl.gz)"; fi
fi

# Optional packages that tests cover: installed where apt can (alone too, so that their tests run), else a note
# and the build goes on without them. install_optional <package> <what it gives>
install_optional() {
  if [ ${#apt_missing[@]} -gt 0 ]; then apt_missing+=("$1")
  elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && [ -z "${CONVTUNE_DEPS_DRY_RUN:-}" ]; then
    echo "deps: installing $1 ($2)"
    { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null 2>&1 ||
      { DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null 2>&1; }; } ||
      echo "deps: $1 could not be installed (optional: without it, no $2)"
  else echo "deps: $1 missing (optional: without it, no $2)"; fi
}
# libxgboost-dev fits the dispatch tables' performance models (convtune export); without it tables carry no model.
have_header xgboost/c_api.h || install_optional libxgboost-dev "performance models in exported tables"
# libmuparser-dev evaluates plug-in manifests (convtune --plugins); `deps.sh muparser` unpacks it into
# .deps/muparser for a machine without apt (the GPU machine: carry that folder).
if ! have_header muParser.h && [ ! -e "$(dirname "$0")/../.deps/muparser/include/muParser.h" ]; then
  install_optional libmuparser-dev "plug-in variants"
fi

if [ "$what" = test ]; then
  python3 -c "import matplotlib" 2>/dev/null || pip_missing+=(matplotlib)
  python3 -c "import numpy" 2>/dev/null || pip_missing+=(numpy)
  python3 -c "import pytest" 2>/dev/null || pip_missing+=(pytest)
fi

if [ "$dry_run" = 1 ]; then
  echo "deps: would install: apt: ${apt_missing[*]:-nothing}; pip: ${pip_missing[*]:-nothing}"
  exit 0
fi
if [ ${#apt_missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "deps: installing ${apt_missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_missing[@]}" >/dev/null
  else
    echo "deps: missing ${apt_missing[*]}; run: sudo apt-get install -y ${apt_missing[*]}" >&2
    exit 1
  fi
fi
if [ ${#pip_missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] || [ -n "${VIRTUAL_ENV:-}" ]; then
    echo "deps: installing Python packages ${pip_missing[*]}"
    python3 -m pip install -q "${pip_missing[@]}" 2>/dev/null ||
      python3 -m pip install -q --break-system-packages "${pip_missing[@]}"
  else
    echo "deps: missing Python packages ${pip_missing[*]}; run: python3 -m pip install --user ${pip_missing[*]}" >&2
    exit 1
  fi
fi
# Optional: pytest-xdist runs the plot tests on every core (the Makefile uses it when present). A machine
# that cannot download (the GPU machine) runs them serially.
if [ "$what" = test ] && ! python3 -c "import xdist" 2>/dev/null && { [ "$(id -u)" = 0 ] || [ -n "${VIRTUAL_ENV:-}" ]; }; then
  { python3 -m pip install -q pytest-xdist 2>/dev/null || python3 -m pip install -q --break-system-packages pytest-xdist 2>/dev/null; } ||
    echo "deps: pytest-xdist not installed (optional); the Python tests run serially"
fi
exit 0
