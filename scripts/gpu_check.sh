#!/usr/bin/env bash
# One device call: build for the GPU present, run the GPU tests, sweep a spec exhaustively and with the
# search strategies, export the dispatch table, benchmark it, and pack everything under $OUT.
# Usage: bash scripts/gpu_check.sh [spec|none] [strategies...]
# TESTS=0 skips the GPU tests, SANITIZE=0 the compute-sanitizer runs (SMOKES="sweeps/smoke1d.json" picks them),
# SWEEP_TIMEOUT (s, default 420) bounds each sweep, BENCH_MIN_TIME (default 0.2s) is the dispatch benchmark's time per case, EXHAUSTIVE=0 runs only the strategies; spec "none" stops after the tests.
set -uo pipefail
spec=${1:-sweeps/default.json}
shift || true
strategies=("$@")
top=${OUT:-/tmp/convtune-out}
out=$top/logs   # packed into logs.tar.gz at the end: few files come back from the device
mkdir -p "$out" /tmp/results
export PATH=/usr/local/cuda/bin:$PATH CONVTUNE_CACHE_DIR=/tmp/convtune-jit
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv | tee "$out/gpu.txt"
t0=$(date +%s)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log" 2>&1 || { tail -20 "$out/cmake.log"; exit 1; }
cmake --build build -j "$(nproc)" >"$out/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$out/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
[ "${TESTS:-1}" = 1 ] && (cd build && timeout 300 ctest -L gpu --output-on-failure >"$out/gpu_tests.log" 2>&1; echo "ctest gpu rc=$?" >>"$out/gpu_tests.log")
[ "${TESTS:-1}" = 1 ] && (cd build && timeout 120 ctest -R export_app --output-on-failure >>"$out/gpu_tests.log" 2>&1)
[ "${TESTS:-1}" = 1 ] && { echo "gpu tests: $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |\[  FAILED|Failure|rc=|tests passed|export_app" "$out/gpu_tests.log" | head -30; }
# compute-sanitizer on smoke sweeps of our own kernels: out-of-bounds accesses and shared-memory races.
if command -v compute-sanitizer >/dev/null && [ "${SANITIZE:-1}" = 1 ]; then
  for smoke in ${SMOKES:-sweeps/smoke.json sweeps/smoke1d.json}; do
    for tool in memcheck racecheck; do
      t=$(date +%s); label=$(basename "$smoke" .json)-$tool
      timeout 240 compute-sanitizer --tool $tool --error-exitcode 9 --print-limit 20 ./build/convtune sweep "$smoke" \
        --in-process --quiet --no-ceilings --results /tmp/sanitize-$label >"$out/sanitize-$label.log" 2>&1
      echo "compute-sanitizer $label: rc=$? in $(( $(date +%s) - t )) s; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitize-$label.log" | tail -1)"
    done
  done
fi
if [ "$spec" = none ]; then tar -C "$top" -czf "$top/logs.tar.gz" logs && rm -rf "$out"; exit 0; fi
sweep() {  # sweep <spec> <label> [extra spec edits as a python expression]
  local s=$1 label=$2 t=$(date +%s)
  timeout "${SWEEP_TIMEOUT:-420}" ./build/convtune sweep "$s" --results /tmp/results >"$out/sweep-$label.log" 2>&1
  echo "sweep $label: rc=$? in $(( $(date +%s) - t )) s"
}
[ "${EXHAUSTIVE:-1}" = 1 ] && sweep "$spec" exhaustive
for st in "${strategies[@]}"; do
  python3 -c "import json,sys; d=json.load(open('$spec')); d['strategy']='$st'; d['name']=d['name']+'-$st'; json.dump(d,open('/tmp/spec-$st.json','w'))"
  sweep /tmp/spec-$st.json "$st"
done
# The newest run of this spec (a warm machine keeps earlier calls' runs in /tmp/results; ls sorts by name).
run=$(ls -dt /tmp/results/*/"$(basename "$spec" .json)"-2* 2>/dev/null | head -1)
[ -n "$run" ] || { run=$(ls -dt /tmp/results/*/* 2>/dev/null | head -1); echo "no run named after $spec: exporting the newest, $run"; }
./build/convtune export "$run" >>"$out/export.log" 2>&1 && echo "exported $run/dispatch.json"
[ -x build/convtune_bench ] && timeout 120 ./build/convtune_bench "$run/dispatch.json" --benchmark_min_time="${BENCH_MIN_TIME:-0.2s}" \
  --benchmark_out="$run/bench.json" --benchmark_out_format=json >"$out/bench.log" 2>&1; echo "bench rc=$?"
for r in /tmp/results/*/*; do echo "== $(basename "$r"): $(python3 -c "import json; s=json.load(open('$r/summary.json')); print(s.get('counts'), 'wall', round(s.get('measure_wall_s',0),1), 's, jit', s.get('jit'))")"; done
cp /tmp/convtune-gpu-test-*/log "$out/fault-sweep.log" 2>/dev/null
# Shipped runs are packed (records.jsonl.gz): they arrive that way; without zlib they stay plain.
for r in /tmp/results/*/*/; do ./build/convtune pack "$r" >>"$out/pack.log" 2>&1 || true; done
tar -C /tmp/results -czf "$top/results.tar.gz" .
./build/convtune best "$run" | tee "$out/best.txt"
tar -C "$top" -czf "$top/logs.tar.gz" logs && rm -rf "$out"
