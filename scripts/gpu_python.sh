#!/usr/bin/env bash
# The Python package on the GPU machine (docs/PYTHON.md): install it, run its CPU and GPU tests, benchmark it
# against CuPy and PyTorch. From the repository root; logs under $OUT (default ./python-gpu-logs); the last
# lines printed are a short table. About 2-3 minutes of build on 16 cores, then the tests and the benchmark,
# each under a time limit so that the table is always printed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-python-gpu-logs}
mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}

start=$SECONDS
pip install --no-build-isolation -v . > "$OUT/pip.log" 2>&1
pip_rc=$?
build_s=$((SECONDS - start))

start=$SECONDS
timeout 300 python3 -m pytest -q -rs tests/python/test_package.py tests/python/test_package_gpu.py \
  > "$OUT/pytest.log" 2>&1
test_rc=$?
test_s=$((SECONDS - start))

start=$SECONDS
timeout 150 python3 -m convtune.bench --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
bench_rc=$?
bench_s=$((SECONDS - start))

echo "== pip install: rc $pip_rc, ${build_s} s (log $OUT/pip.log)"
[ $pip_rc -eq 0 ] || tail -20 "$OUT/pip.log"
echo "== pytest: rc $test_rc, ${test_s} s (log $OUT/pytest.log)"
grep -E "^(FAILED|ERROR)" "$OUT/pytest.log" | head -20
tail -1 "$OUT/pytest.log"
echo "== bench: rc $bench_rc, ${bench_s} s (table $OUT/bench.txt, JSON $OUT/bench.json)"
cat "$OUT/bench.txt" | tail -20
