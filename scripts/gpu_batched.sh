#!/usr/bin/env bash
# Batched conv2d (issue 39, part 3) in one device call from the repository root (16 cores, about 7 minutes):
# build; the GPU tests that verify every variant on the awkward shapes (batches included), the references
# and the plug-in templates; a sweep of sweeps/conv2d_batched.json; the Python package's batched rows against
# PyTorch and CuPy (PYTHON=0 skips them). Ends with a table: per shape our best and its fraction of the floor,
# cuDNN's and cuFFT's best, the speed-up. Logs and the run's records under $OUT.
set -uo pipefail
top=${OUT:-/tmp/convtune-batched-out}
out=$top/logs
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH CONVTUNE_CACHE_DIR=/tmp/convtune-jit
step() { echo "== $*" | tee -a "$out/steps.log"; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader | tee -a "$out/steps.log"
step build
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log" 2>&1 || { tail -20 "$out/cmake.log"; exit 1; }
cmake --build build -j"$(nproc)" --target convtune convtune_gpu_tests >"$out/build.log" 2>&1 ||
  { grep -E "error|FAILED" -A3 "$out/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s" | tee -a "$out/steps.log"

step "GPU tests: GpuReference.*, GpuVariants.EveryVariantIsCorrectOnAwkwardShapes, GpuPlugins.EveryTemplateVerifiesOnEveryTestShape"
t=$(date +%s)
timeout 300 ./build/tests/convtune_gpu_tests \
  --gtest_filter='GpuReference.*:GpuVariants.EveryVariantIsCorrectOnAwkwardShapes:GpuPlugins.EveryTemplateVerifiesOnEveryTestShape' \
  >"$out/gpu_tests.log" 2>&1
echo "gpu tests rc=$? in $(( $(date +%s) - t )) s" | tee -a "$out/steps.log"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^\[       OK" "$out/gpu_tests.log" | tee -a "$out/steps.log"
grep -E "Failure|b=[0-9]" "$out/gpu_tests.log" | cut -c1-300 | head -12 | tee -a "$out/steps.log"

step "sweep sweeps/conv2d_batched.json"
t=$(date +%s)
timeout "${SWEEP_S:-200}" ./build/convtune sweep sweeps/conv2d_batched.json --results /tmp/results >"$out/sweep.log" 2>&1
echo "sweep rc=$? in $(( $(date +%s) - t )) s" | tee -a "$out/steps.log"
run=$(ls -d /tmp/results/*/conv2d-batched-* 2>/dev/null | head -1)
[ -n "$run" ] && mkdir -p "$top/run" && cp "$run/records.jsonl" "$run/summary.json" "$top/run/"

if [ "${PYTHON:-1}" = 1 ]; then
  step "python: install, batched tests, bench rows"
  t=$(date +%s)
  timeout 150 python3 -m pip install --no-build-isolation . >"$out/pip.log" 2>&1 || tail -5 "$out/pip.log"
  timeout -s INT 60 python3 -m pytest -q tests/python/test_package_gpu.py -k "batch or four_axes" >"$out/pytest.log" 2>&1
  tail -1 "$out/pytest.log" | tee -a "$out/steps.log"
  timeout 90 python3 -m convtune.bench --only "conv2d " --json "$top/bench.json" >"$out/bench.log" 2>&1
  grep -E "^conv2d|^problem" "$out/bench.log" | tee -a "$out/steps.log"
  echo "python: $(( $(date +%s) - t )) s" | tee -a "$out/steps.log"
fi

python3 - "$run" <<'PY' | tee "$top/table.txt"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1] + "/records.jsonl") if l.strip()] if len(sys.argv) > 1 and sys.argv[1] else []
failed = [r for r in recs if r["status"] not in ("ok", "skipped")]
print("records: %d, ok %d, failed %d" % (len(recs), sum(r["status"] == "ok" for r in recs), len(failed)))
for r in failed[:8]:
    print("  FAILED %s on %s: %s %s" % (r["candidate"], r["problem_key"], r["status"], r.get("reason", "")[:160]))
def best(rows):
    ok = [r for r in rows if r["status"] == "ok"]
    return min(ok, key=lambda r: r["time"]["median_ms"]) if ok else None
print("%-28s %-40s %9s %8s %7s %11s %11s %8s" % ("problem", "our best", "ms", "GB/s", "%floor", "cuDNN ms", "cuFFT ms", "speed-up"))
for key in sorted({r["problem_key"] for r in recs}, key=lambda k: (len(k), k)):
    here = [r for r in recs if r["problem_key"] == key]
    ours, dnn, fft = best([r for r in here if not r["library"]]), best([r for r in here if r["variant"] == "conv2d.cudnn"]), \
        best([r for r in here if r["variant"] == "conv2d.fft"])
    if not ours:
        continue
    ms = ours["time"]["median_ms"]
    lib = min([x["time"]["median_ms"] for x in (dnn, fft) if x] or [float("nan")])
    print("%-28s %-40s %9.4f %8.0f %6.1f%% %11s %11s %7.2fx" % (
        key.replace("conv2d/", ""), ours["candidate"][:40], ms, ours["bytes_min"] / ms / 1e6, 100 * ours["floor_ms"] / ms,
        "%.4f" % dnn["time"]["median_ms"] if dnn else "-", "%.4f" % fft["time"]["median_ms"] if fft else "-", lib / ms))
PY
echo "total: $(( $(date +%s) - t0 )) s" | tee -a "$out/steps.log"
