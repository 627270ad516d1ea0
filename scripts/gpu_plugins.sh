#!/usr/bin/env bash
# Plug-in variants on the GPU, in one device call (issue 37). Carry .deps/muparser (made here by
# `bash scripts/deps.sh muparser`) unless the machine has libmuparser-dev. It builds, writes the new-variant
# templates of conv2d, conv1d and layer_fwd, runs the plug-in GPU tests, sweeps the conv2d and conv1d plug-ins
# beside the built-in kernels they imitate, examples/plugins/conv2d_constant (conv2d.constant's kernel as a
# plug-in) beside conv2d.constant, and the layer plug-in (every candidate verified against the float64
# reference), exports the table, plots and profiles the run, sweeps the plug-ins alone and runs their table's
# choices through the runtime library on shapes measured and not, then prints a table.
# Logs under $OUT (default /tmp/convtune-plugins-out): plugins-logs.tar.gz and table.txt.
set -uo pipefail
top=${OUT:-/tmp/convtune-plugins-out}
out=$top/logs
work=/tmp/convtune-plugins
rm -rf "$work" && mkdir -p "$out" "$work"
export PATH=/usr/local/cuda/bin:$PATH CONVTUNE_CACHE_DIR=/tmp/convtune-jit
step() { echo "== $*" | tee -a "$out/steps.log"; }
t0=$(date +%s)
step build
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log" 2>&1 || { tail -20 "$out/cmake.log"; exit 1; }
grep -i muparser "$out/cmake.log" | tee -a "$out/steps.log"
if grep -q "muparser not found" "$out/cmake.log"; then
  echo "muparser is missing here: run 'bash scripts/deps.sh muparser' on a machine with apt and carry .deps/muparser"; exit 1
fi
cmake --build build -j "$(nproc)" >"$out/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$out/build.log" | head -40; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s" | tee -a "$out/steps.log"
ct=./build/convtune

step "new-variant conv2d my2d, conv1d my1d, layer_fwd mylayer"
$ct new-variant conv2d my2d -o "$work/my2d" && $ct new-variant conv1d my1d -o "$work/my1d" &&
  $ct new-variant layer_fwd mylayer -o "$work/mylayer" || exit 1
$ct list --family conv2d --plugins "$work/my2d" | grep -A3 "conv2d.my2d" | tee -a "$out/steps.log"

step "GPU tests of plug-ins"
timeout 240 ./build/tests/convtune_gpu_tests --gtest_filter='GpuPlugins.*' >"$out/gpu_tests.log" 2>&1
echo "gpu tests rc=$?" | tee -a "$out/steps.log"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |\[  FAILED|\[       OK" "$out/gpu_tests.log" | tee -a "$out/steps.log"

# The plug-ins beside the built-ins they imitate (conv2d.constant: one thread an output, filter in constant
# memory; conv1d.direct), awkward and real sizes, both conv1d modes; the layer template alone (with and without ReLU).
cat >"$work/spec.json" <<JSON
{"name": "plugins", "plugins": ["$work/my2d", "$work/my1d", "$work/mylayer", "$PWD/examples/plugins/conv2d_constant"],
 "problems": [{"family": "conv2d", "h": 1000, "w": 999, "r": [1, 3]}, {"family": "conv2d", "h": 4096, "w": 4096, "r": [1, 3, 7]},
              {"family": "conv1d", "n": [100003, 16777216], "m": 129, "mode": [0, 1]},
              {"family": "layer_fwd", "n": 8, "c": 64, "h": 28, "w": 28, "k": 64, "r": 3, "s": 3, "pad_h": 1, "pad_w": 1,
               "relu": [0, 1]}],
 "variants": ["conv2d.my2d", "conv2d.constant", "conv2d.constant_plugin", "conv1d.my1d", "conv1d.direct", "layer_fwd.mylayer"],
 "params": {"conv2d.constant": {"block_x": [32, 64], "block_y": [4, 8]},
            "conv2d.constant_plugin": {"block_x": [32, 64], "block_y": [4, 8]}},
 "measure": {"cold": true, "max_rel_stderr": 0.02, "time_cap_s": 0.3}}
JSON
step "sweep plug-ins beside built-ins"
t=$(date +%s)
timeout 300 $ct sweep "$work/spec.json" --results "$work/results" >"$out/sweep.log" 2>&1
echo "sweep rc=$? in $(( $(date +%s) - t )) s" | tee -a "$out/steps.log"
run=$(ls -d "$work"/results/*/plugins-* 2>/dev/null | head -1)
[ -n "$run" ] || { tail -20 "$out/sweep.log"; exit 1; }
$ct best "$run" >"$out/best.txt" 2>&1
timeout 120 $ct plot "$run" >"$out/plot.log" 2>&1; echo "plot rc=$?" | tee -a "$out/steps.log"
cp "$run/dispatch.json" "$out/dispatch-mixed.json"
if command -v ncu >/dev/null || [ -x /usr/local/cuda/bin/ncu ]; then
  timeout 150 $ct profile "$run" --candidate my2d --problem h=4096,r=3 --no-libraries >"$out/profile.log" 2>&1
  echo "profile rc=$?" | tee -a "$out/steps.log"
fi

# The plug-ins alone: their table names only them, so the runtime must run a plug-in candidate.
python3 - "$work/spec.json" "$work/alone.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); s["name"] = "alone"; s["variants"] = ["conv2d.my2d", "conv1d.my1d", "layer_fwd.mylayer"]
s["problems"] = [{"family": "conv2d", "h": 1024, "w": 1024, "r": 2}, {"family": "conv1d", "n": 1000000, "m": 33, "mode": 1},
                 {"family": "layer_fwd", "n": 4, "c": 32, "h": 28, "w": 28, "k": 32, "r": 3, "s": 3, "pad_h": 1, "pad_w": 1}]
json.dump(s, open(sys.argv[2], "w"))
PY
step "sweep the plug-ins alone, then the runtime library on their table"
timeout 120 $ct sweep "$work/alone.json" --results "$work/results" >"$out/sweep-alone.log" 2>&1
alone=$(ls -d "$work"/results/*/alone-* 2>/dev/null | head -1)
cp "$alone/dispatch.json" "$out/dispatch-alone.json" 2>/dev/null
python3 -c "import json,sys; t=json.load(open(sys.argv[1])); print('dispatch.json carries plug-ins:', [p['variant'] for p in t.get('plugins', [])])" "$alone/dispatch.json" | tee -a "$out/steps.log"
# A fresh process and an empty JIT cache: the table alone must be enough (its plug-in sources are in it).
rt_rc=0
for args in "conv2d h=1024 w=1024 r=2 --expect conv2d.my2d" "conv2d h=777 w=1500 r=2 --expect conv2d.my2d" \
            "conv1d n=1000000 m=33 mode=1 --expect conv1d.my1d" \
            "layer_fwd n=2 c=8 h=17 w=19 k=5 r=3 s=3 pad_h=1 pad_w=1 --expect layer_fwd.mylayer"; do
  CONVTUNE_CACHE_DIR=/tmp/convtune-jit-fresh ./build/plugin_runtime_app "$alone/dispatch.json" $args 2>&1 | tee -a "$out/runtime.log" || rt_rc=1
done
echo "runtime rc=$rt_rc" | tee -a "$out/steps.log"

python3 - "$run" "$alone" <<'PY' | tee "$out/table.txt"
import json, sys, collections
def records(run):
    return [json.loads(l) for l in open(run + "/records.jsonl") if l.strip()]
rows = collections.defaultdict(collections.Counter)
best = {}
for run in sys.argv[1:]:
    for r in records(run):
        rows[(r["variant"], "plug-in" if "plugin" in r else "built-in")][r["status"]] += 1
        if r["status"] == "ok":
            k = (r["problem_key"], r["variant"])
            best[k] = min(best.get(k, 1e9), r["time"]["median_ms"])
print("%-22s %-9s %5s %7s %6s %8s" % ("variant", "kind", "ok", "skipped", "wrong", "other"))
for (v, kind), c in sorted(rows.items()):
    print("%-22s %-9s %5d %7d %6d %8d" % (v, kind, c["ok"], c["skipped"], c["wrong_result"],
          sum(c.values()) - c["ok"] - c["skipped"] - c["wrong_result"]))
pairs = [("conv2d.my2d", "conv2d.constant"), ("conv1d.my1d", "conv1d.direct")]
print("\n%-34s %12s %12s" % ("problem", "plug-in ms", "built-in ms"))
for p in sorted({k[0] for k in best}):
    for a, b in pairs:
        if (p, a) in best and (p, b) in best:
            print("%-34s %12.4f %12.4f" % (p, best[(p, a)], best[(p, b)]))
# conv2d.constant against the same kernel as a plug-in, candidate by candidate: same statuses, times within noise.
by = collections.defaultdict(dict)
for r in records(sys.argv[1]):
    if r["variant"] in ("conv2d.constant", "conv2d.constant_plugin"):
        by[(r["problem_key"], json.dumps(r["config"], sort_keys=True))][r["variant"]] = r
same = [v for v in by.values() if len(v) == 2]
statuses = sum(v["conv2d.constant"]["status"] == v["conv2d.constant_plugin"]["status"] for v in same)
ratios = sorted(v["conv2d.constant_plugin"]["time"]["median_ms"] / v["conv2d.constant"]["time"]["median_ms"]
                for v in same if v["conv2d.constant"]["status"] == "ok" and v["conv2d.constant_plugin"]["status"] == "ok")
if ratios:
    print("\nconv2d.constant vs its plug-in: %d candidates, %d same status; time ratio median %.4f, range %.4f..%.4f"
          % (len(same), statuses, ratios[len(ratios) // 2], ratios[0], ratios[-1]))
d = json.load(open(sys.argv[1] + "/dispatch.json"))
print("\nmixed table entries naming a plug-in:", sum(1 for e in d["entries"] if e["variant"] in ("conv2d.my2d", "conv1d.my1d")),
      "of", len(d["entries"]), "; carried:", [p["variant"] for p in d.get("plugins", [])])
PY
cp "$out/table.txt" "$top/table.txt"
tar -C "$top" -czf "$top/plugins-logs.tar.gz" logs && rm -rf "$out"
echo "total: $(( $(date +%s) - t0 )) s"
