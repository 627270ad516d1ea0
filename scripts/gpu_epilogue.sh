#!/usr/bin/env bash
# Bias and activation measured (issue 39, part 4), in one device call from the repository root (16 cores,
# under 8 minutes): build; the GPU tests of the epilogue (every forward variant with a bias and each
# activation against the float64 reference, the GPU reference against the CPU one on the family's test
# shapes, the layer_fwd plug-in template); then, on the default spec's C >= 64 forward layers and one
# few-channel layer, for each activation (none = the bias alone, ReLU, sigmoid, tanh):
#   plain     our best kernel on the layer without bias and activation (exhaustive, default.json's spaces)
#   fused     our kernels with the epilogue fused, each variant at its best plain config
#   separate  the same configs followed by the separate epilogue kernel (and im2col_gemm, always separate)
#   cuDNN fused (cudnnConvolutionBiasActivationForward) and unfused (convolution, cudnnAddTensor,
#   cudnnActivationForward), every algorithm, strict fp32
# median times, and a table last. Logs and the runs' records under $OUT (default /tmp/convtune-epilogue-out).
#
# PLANT_BUG=1: instead, computes sigmoid as tanh in the kernels' shared epilogue, rebuilds, and checks that
# the GPU epilogue test and the CPU activation test fail (then restores the file and rebuilds).
set -uo pipefail
top=${OUT:-/tmp/convtune-epilogue-out}
out=$top/logs
work=/tmp/convtune-epilogue
rm -rf "$work" && mkdir -p "$out" "$work"
export PATH=/usr/local/cuda/bin:$PATH CONVTUNE_CACHE_DIR=/tmp/convtune-jit
step() { echo "== $*" | tee -a "$out/steps.log"; }
t0=$(date +%s)

build() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log" 2>&1 || { tail -20 "$out/cmake.log"; exit 1; }
  cmake --build build -j16 --target convtune convtune_gpu_tests "$@" >"$out/build.log" 2>&1 ||
    { grep -E "error|FAILED" -A3 "$out/build.log" | head -40; exit 1; }
}

if [ "${PLANT_BUG:-0}" = 1 ]; then
  epilogue=variants/layer_common/kernels/layer_epilogue.cuh
  cp "$epilogue" "$work/epilogue.orig"
  trap 'cp "$work/epilogue.orig" "$epilogue"' EXIT
  sed -i 's|if constexpr (Act == 2) return .*;|if constexpr (Act == 2) return tanhf(v);  // planted bug|' "$epilogue"
  [ "$(grep -c "planted bug" "$epilogue")" = 2 ] || { echo "the sigmoid lines (device, host) were not found"; exit 1; }
  step "build with sigmoid computed as tanh"
  build convtune_cpu_tests
  timeout 300 ./build/tests/convtune_gpu_tests --gtest_filter='GpuLayerEpilogue.*' >"$out/gpu_tests_bug.log" 2>&1
  gpu_rc=$?
  ./build/tests/convtune_cpu_tests --gtest_filter='LayerEpilogue.KernelActivationIsTheReferences' >"$out/cpu_test_bug.log" 2>&1
  cpu_rc=$?
  grep -E "^\[  FAILED|wrong_result" "$out/gpu_tests_bug.log" | cut -c1-300 | head -8 | tee -a "$out/steps.log"
  echo "planted bug: GpuLayerEpilogue rc=$gpu_rc, LayerEpilogue.KernelActivationIsTheReferences rc=$cpu_rc (both must be 1)" |
    tee -a "$out/steps.log"
  cp "$work/epilogue.orig" "$epilogue" && trap - EXIT
  step "rebuild without the bug"
  build convtune_cpu_tests
  echo "total: $(( $(date +%s) - t0 )) s"
  [ $gpu_rc -ne 0 ] && [ $cpu_rc -ne 0 ]
  exit $?
fi

nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader | tee -a "$out/steps.log"
step build
build
echo "build: $(( $(date +%s) - t0 )) s" | tee -a "$out/steps.log"
ct=./build/convtune

step "GPU tests: GpuLayerEpilogue.*, GpuReference.*, GpuPlugins.EveryTemplateVerifiesOnEveryTestShape"
t=$(date +%s)
timeout 300 ./build/tests/convtune_gpu_tests \
  --gtest_filter='GpuLayerEpilogue.*:GpuReference.*:GpuPlugins.EveryTemplateVerifiesOnEveryTestShape' \
  >"$out/gpu_tests.log" 2>&1
echo "gpu tests rc=$? in $(( $(date +%s) - t )) s" | tee -a "$out/steps.log"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^\[       OK" "$out/gpu_tests.log" | tee -a "$out/steps.log"
grep -E " on layer_fwd/" "$out/gpu_tests.log" | cut -c1-400 | head -20 | tee -a "$out/steps.log"

# Phase 1, the plain layers: default.json's C >= 64 forward layers and the seed's few-channel layer
# (N8 C1 1024x1024 K16 5x5), every forward variant with default.json's restrictions.
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
default = json.load(open("sweeps/default.json"))
shapes = [p for p in default["problems"]
          if p["family"] == "layer_fwd" and p["c"] >= 64 and not p.get("bias") and not p.get("relu")]
shapes.append({"family": "layer_fwd", "n": 8, "c": 1, "h": 1024, "w": 1024, "k": 16, "r": 5, "s": 5, "pad_h": 2, "pad_w": 2})
params = {k: v for k, v in default["params"].items() if k.startswith("layer_fwd.")}
spec = {"name": "epilogue-plain", "problems": shapes, "variants": ["layer_fwd.*"], "params": params,
        "measure": default["measure"]}
json.dump(spec, open(work + "/plain.json", "w"), indent=1)
json.dump(shapes, open(work + "/shapes.json", "w"))
PY
step "sweep the plain layers"
t=$(date +%s)
timeout 240 $ct sweep "$work/plain.json" --results "$work/results" --no-ceilings >"$out/sweep-plain.log" 2>&1
echo "sweep rc=$? in $(( $(date +%s) - t )) s" | tee -a "$out/steps.log"
plain=$(ls -d "$work"/results/*/epilogue-plain-* 2>/dev/null | head -1)
[ -n "$plain" ] || { tail -20 "$out/sweep-plain.log"; exit 1; }
$ct best "$plain" >"$out/best-plain.txt" 2>&1

# Phase 2, per shape: the layer with a bias and each activation; each of our variants restricted to its best
# plain config (fused and separate), cuDNN's two paths over every algorithm.
python3 - "$work" "$plain/records.jsonl" <<'PY'
import json, sys
work, records = sys.argv[1], sys.argv[2]
shapes = json.load(open(work + "/shapes.json"))
default = json.load(open("sweeps/default.json"))
best = {}  # (shape index, variant) -> (ms, config)
def same_shape(problem, shape):
    return all(problem.get(k) == v for k, v in shape.items())
for line in open(records):
    r = json.loads(line)
    if r["status"] != "ok" or r.get("library"):
        continue
    i = next(i for i, s in enumerate(shapes) if same_shape(r["problem"], s))
    key = (i, r["variant"])
    if key not in best or r["time"]["median_ms"] < best[key][0]:
        best[key] = (r["time"]["median_ms"], r["config"])
for i, shape in enumerate(shapes):
    params, variants = {}, ["layer_fwd.cudnn", "layer_fwd.cudnn_fused"]
    for (j, v), (_, config) in best.items():
        if j != i:
            continue
        variants.append(v)
        params[v] = {k: [x] for k, x in config.items()}
        if v != "layer_fwd.im2col_gemm":
            params[v]["epilogue"] = ["fused", "separate"]
    problem = dict(shape, bias=1, relu=[0, 1, 2, 3])
    spec = {"name": "epilogue-%d" % i, "problems": [problem], "variants": sorted(variants), "params": params,
            "measure": default["measure"]}
    json.dump(spec, open("%s/epilogue-%d.json" % (work, i), "w"), indent=1)
PY
for spec in "$work"/epilogue-[0-9].json; do
  name=$(basename "$spec" .json)
  step "sweep $name: bias and each activation"
  t=$(date +%s)
  timeout 150 $ct sweep "$spec" --results "$work/results" --no-ceilings >"$out/sweep-$name.log" 2>&1
  echo "sweep rc=$? in $(( $(date +%s) - t )) s" | tee -a "$out/steps.log"
done
for run in "$work"/results/*/epilogue-*; do
  mkdir -p "$top/runs/$(basename "$run")" && cp "$run/records.jsonl" "$run/summary.json" "$top/runs/$(basename "$run")/"
done

python3 - "$work" <<'PY' | tee "$out/table.txt"
import glob, json, sys
work = sys.argv[1]
shapes = json.load(open(work + "/shapes.json"))
acts = ["none", "relu", "sigmoid", "tanh"]
recs = [json.loads(l) for f in glob.glob(work + "/results/*/epilogue-*/records.jsonl") for l in open(f) if l.strip()]
def shape_of(problem):
    return next((i for i, s in enumerate(shapes) if all(problem.get(k) == v for k, v in s.items())), None)
def best(rows):
    ok = [r for r in rows if r["status"] == "ok"]
    return min(ok, key=lambda r: r["time"]["median_ms"]) if ok else None
def ms(r):
    return "%.4f" % r["time"]["median_ms"] if r else "-"
def kind(r):
    if r["variant"] == "layer_fwd.cudnn": return "cudnn"
    if r["variant"] == "layer_fwd.cudnn_fused": return "cudnn_fused"
    if r["variant"] == "layer_fwd.im2col_gemm" or r["config"].get("epilogue") == "separate": return "separate"
    return "fused"
failed = [r for r in recs if r["status"] not in ("ok", "skipped")]
refusals = sorted({r["reason"] for r in recs if r["variant"] == "layer_fwd.cudnn_fused" and r["status"] == "skipped"
                   and "fuses only" in r.get("reason", "")})
rows = []
for i, s in enumerate(shapes):
    name = "N%d C%d %dx%d K%d %dx%d" % (s["n"], s["c"], s["h"], s["w"], s["k"], s["r"], s["s"])
    mine = [r for r in recs if shape_of(r["problem"]) == i]
    plain = best([r for r in mine if not r["problem"].get("bias") and not r.get("library")])
    for a, act in enumerate(acts):
        here = [r for r in mine if r["problem"].get("bias") == 1 and r["problem"].get("relu") == a]
        fused = best([r for r in here if kind(r) == "fused"])
        # The plain winner's own kernel and config with the epilogue fused: what fusing costs that kernel.
        same = best([r for r in here if plain and kind(r) == "fused" and r["variant"] == plain["variant"]])
        rows.append((name, act, ms(plain), ms(fused),
                     "%.3f" % (fused["time"]["median_ms"] / plain["time"]["median_ms"]) if fused and plain else "-",
                     "%.3f" % (same["time"]["median_ms"] / plain["time"]["median_ms"]) if same and plain else "-",
                     ms(best([r for r in here if kind(r) == "separate"])),
                     ms(best([r for r in here if kind(r) == "cudnn_fused"])) if act in ("none", "relu") else "refused",
                     ms(best([r for r in here if kind(r) == "cudnn"]))))
print("records: %d, failed (not ok, not skipped): %d" % (len(recs), len(failed)))
for r in failed[:10]:
    print("  FAILED %s on %s: %s %s" % (r["candidate"], r["problem_key"], r["status"], r.get("reason", "")[:160]))
for reason in refusals:
    print("cuDNN fused refused: " + reason)
print("plain = our best on the layer without bias/activation; fused/plain = best fused over best plain; same kernel = the")
print("plain winner's variant and config, fused, over plain; separate = our conv then the epilogue kernel; median ms")
head = ("shape", "act", "plain ms", "fused ms", "fused/plain", "same kernel", "separate ms", "cuDNN fused ms", "cuDNN unfused ms")
widths = [max(len(str(x[k])) for x in rows + [head]) for k in range(len(head))]
for row in [head] + rows:
    print("  ".join(str(x).rjust(w) if k > 1 else str(x).ljust(w) for k, (x, w) in enumerate(zip(row, widths))))
PY
cp "$out/table.txt" "$top/table.txt"
echo "total: $(( $(date +%s) - t0 )) s" | tee -a "$out/steps.log"
cat "$top/table.txt"
