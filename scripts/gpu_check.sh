#!/usr/bin/env bash
# One device call: build for the GPU present, run the GPU tests, run a sweep spec, pack the run folder.
# Usage: bash scripts/gpu_check.sh [spec] [sweep seconds]; writes logs and run.tar.gz under $OUT.
set -uo pipefail
spec=${1:-sweeps/default.json}
budget=${2:-400}
out=${OUT:-/tmp/convtune-out}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH CONVTUNE_CACHE_DIR=/tmp/convtune-jit
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$out/gpu.txt"
t0=$(date +%s)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log" 2>&1 || { tail -20 "$out/cmake.log"; exit 1; }
cmake --build build -j "$(nproc)" >"$out/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$out/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout 300 ./build/tests/convtune_gpu_tests >"$out/gpu_tests.log" 2>&1
echo "gpu tests: rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|error" "$out/gpu_tests.log" | head -30
t0=$(date +%s)
timeout "$budget" ./build/convtune sweep "$spec" --results /tmp/results >"$out/sweep.log" 2>&1
echo "sweep: rc=$? in $(( $(date +%s) - t0 )) s"
run=$(ls -d /tmp/results/*/* 2>/dev/null | tail -1)
if [ -n "$run" ]; then
  tar -C "$(dirname "$run")" -czf "$out/run.tar.gz" "$(basename "$run")"
  ./build/convtune best "$run" | tee "$out/best.txt"
fi
grep -E "^(kernels|measuring|NVIDIA|run folder)" "$out/sweep.log" | head; tail -3 "$out/sweep.log"
