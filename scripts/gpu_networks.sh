#!/usr/bin/env bash
# One device call on a machine of several GPUs: the dispatch model's training data (sweeps/networks.json)
# and its unseen check (sweeps/networks_unseen.json), each spread over every GPU, packed under $OUT.
# Usage: bash scripts/gpu_networks.sh [train-timeout-s] [unseen-timeout-s]
set -uo pipefail
top=${OUT:-/tmp/convtune-out}
out=$top/logs
mkdir -p "$out" /tmp/results
export PATH=/usr/local/cuda/bin:$PATH CONVTUNE_CACHE_DIR=/tmp/convtune-jit NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$out/gpu.txt"
t0=$(date +%s)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log" 2>&1 || { tail -20 "$out/cmake.log"; exit 1; }
cmake --build build -j "$(nproc)" --target convtune >"$out/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$out/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
sweep() {  # sweep <spec> <timeout-s>
  local t=$(date +%s) label; label=$(basename "$1" .json)
  timeout -s INT "$2" ./build/convtune sweep "$1" --devices all --results /tmp/results >"$out/sweep-$label.log" 2>&1
  echo "sweep $label: rc=$? in $(( $(date +%s) - t )) s"
}
sweep sweeps/networks.json "${1:-330}"
[ "${2:-0}" -gt 0 ] && sweep sweeps/networks_unseen.json "$2"
for r in /tmp/results/*/*/; do
  echo "== $(basename "$r"): $(python3 -c "import json; s=json.load(open('$r/summary.json')); print(s.get('counts'), 'wall', round(s.get('measure_wall_s',0),1), 's, jit', s.get('jit'))")"
  ./build/convtune pack "$r" >>"$out/pack.log" 2>&1 || true
done
tar -C /tmp/results -czf "$top/results.tar.gz" .
tar -C "$top" -czf "$top/logs.tar.gz" logs && rm -rf "$out"
