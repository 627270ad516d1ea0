#!/usr/bin/env bash
# The Python package on the GPU machine (docs/PYTHON.md), in one call: install it (reusing build/python-<tag>),
# its CPU and GPU tests, the per-call overhead against the C++ runtime (bench --overhead), the ResNet-18
# training check, and the benchmark against CuPy and PyTorch. From the repository root; logs and JSON under
# $OUT (default ./python-gpu-logs). Each step runs under its own time limit, and all of them within DEADLINE
# seconds (default 540), so that the table at the end is always printed: a step that would start too late is
# skipped and says so. pytest is stopped with SIGINT, so that it still prints its summary.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-python-gpu-logs}
DEADLINE=${DEADLINE:-540}
mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
# Compiled kernels and first-use tuning's choices in the ignored build folder: a warm machine keeps them for
# the next call.
export CONVTUNE_CACHE_DIR=${CONVTUNE_CACHE_DIR:-$PWD/build/python-cache}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1

names=()
declare -A rc secs
step() {  # step NAME LIMIT_S COMMAND...: COMMAND's output in $OUT/NAME.log, its status and seconds noted
  local name=$1 limit=$2
  shift 2
  names+=("$name")
  local left=$((DEADLINE - SECONDS - 15))
  if [ "$left" -lt 20 ]; then
    rc[$name]=skipped secs[$name]=0
    echo "skipped: ${SECONDS} s of the ${DEADLINE} s deadline gone" > "$OUT/$name.log"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local start=$SECONDS
  timeout -s INT -k 20 "$limit" "$@" > "$OUT/$name.log" 2>&1
  rc[$name]=$?
  secs[$name]=$((SECONDS - start))
  [ "${rc[$name]}" = 124 ] && rc[$name]="124 (stopped at ${limit} s)"
}

step pip 200 python3 -m pip install --no-build-isolation -v .
step pytest 300 python3 -m pytest -q -rfs tests/python/test_package.py tests/python/test_package_gpu.py
step overhead 60 python3 -m convtune.bench --overhead --json "$OUT/overhead.json"
# The training check before the benchmark, which takes what time is left (it prints each row as it goes).
step train_check 180 python3 -m convtune.train_check --json "$OUT/train_check.json"
step bench 240 python3 -m convtune.bench --json "$OUT/bench.json"

[ "${rc[pip]}" = 0 ] || { echo "== pip"; tail -20 "$OUT/pip.log"; }
echo "== pytest"
grep -E "^(FAILED|ERROR)" "$OUT/pytest.log" | head -20
tail -1 "$OUT/pytest.log"
for name in overhead train_check bench; do
  echo "== $name"
  tail -40 "$OUT/$name.log"
done
echo "== $(cat "$OUT/gpu.txt"); ${SECONDS} s in all"
printf '%-12s %-24s %7s  %s\n' step "exit status" seconds log
for name in "${names[@]}"; do
  printf '%-12s %-24s %7s  %s\n' "$name" "${rc[$name]}" "${secs[$name]}" "$OUT/$name.log"
done
