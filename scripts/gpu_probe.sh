#!/usr/bin/env bash
# A short device call while developing a family: build, the GPU tests (optionally filtered), a sweep of one
# spec, and a table of each variant's best time per problem. Logs under $OUT.
# Usage: bash scripts/gpu_probe.sh <spec> [gtest filter]
set -uo pipefail
spec=$1
filter=${2:-*}
out=${OUT:-/tmp/convtune-out}
mkdir -p "$out" /tmp/results
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
t0=$(date +%s)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log" 2>&1 || { tail -20 "$out/cmake.log"; exit 1; }
cmake --build build -j "$(nproc)" >"$out/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$out/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout 420 ./build/tests/convtune_gpu_tests --gtest_filter="$filter" >"$out/gpu_tests.log" 2>&1
echo "gpu tests rc=$? in $(( $(date +%s) - t0 )) s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|^\[       OK" "$out/gpu_tests.log" | head -20
grep -E " on [a-z0-9_]+/" "$out/gpu_tests.log" | cut -c1-400 | head -60
[ "$spec" = none ] && exit 0
t0=$(date +%s)
timeout 480 ./build/convtune sweep "$spec" --results /tmp/results >"$out/sweep.log" 2>&1
echo "sweep rc=$? in $(( $(date +%s) - t0 )) s"; tail -3 "$out/sweep.log"
run=$(ls -d /tmp/results/*/*/ | head -1)
cp "$run/records.jsonl" "$run/summary.json" "$out/" 2>/dev/null
python3 - "$run/records.jsonl" <<'PY'
import json, sys, collections
best = collections.defaultdict(dict); bad = collections.Counter()
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["status"] != "ok":
        if r["status"] != "skipped": bad[(r["variant"], r["status"], r.get("reason", "")[:90])] += 1
        continue
    k = r["problem_key"]; v = r["variant"]; t = r["time"]["median_ms"]
    if v not in best[k] or t < best[k][v][0]: best[k][v] = (t, r["candidate"], r.get("roofline_fraction", 0), r.get("floor_ms", 0))
for k in sorted(best):
    print(k, " floor %.3f ms" % next(iter(best[k].values()))[3])
    for v, (t, c, f, _) in sorted(best[k].items(), key=lambda x: x[1][0]):
        print("   %8.3f ms  %5.0f%%  %s" % (t, 100 * f, c))
for (v, s, why), n in bad.items(): print("FAILED", n, v, s, why)
PY
