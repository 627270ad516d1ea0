#!/usr/bin/env bash
# A new user's first `make sweep` on a bare GPU machine, timed (issue 40: at most 6 minutes on one H100/H200).
# Runs `make sweep` from the repository root as typed, with a fresh build folder and an empty JIT cache (what a
# new user has), stamps every line of its output with the seconds since the start, copies the run folder and
# the log to $OUT, and prints the phases' times last: deps, configure, build, the sweep's ceilings and NVRTC
# compiles, measuring, best + export, plots.
# Usage: bash scripts/gpu_first_sweep.sh [make variables, e.g. SPEC=sweeps/full.json]
set -uo pipefail
cd "$(dirname "$0")/.."
top=${OUT:-/tmp/convtune-out}
mkdir -p "$top"
# A build folder left by an earlier call on this machine would make the build free: use a new one.
build=$(mktemp -d /tmp/convtune-first-build.XXXXXX)
# The JIT's disk cache (~/.cache/convtune/jit by default) may hold an earlier call's kernels: an empty one.
export CONVTUNE_CACHE_DIR
CONVTUNE_CACHE_DIR=$(mktemp -d /tmp/convtune-first-jit.XXXXXX)
log=$top/first_sweep.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -4 | sed 's/^/gpu: /'
echo "cores: $(nproc)   build folder: $build   JIT cache: $CONVTUNE_CACHE_DIR"
before=$(ls -d results/*/*/ 2>/dev/null | sort)

# --trace names each recipe line as it starts (the @-silenced ones too): the phase boundaries.
# Stamps in tenths of a second from $EPOCHREALTIME (bash 5): no process per line, no bc on a bare machine.
now_ds() { local t=${EPOCHREALTIME/./}; echo $(( t / 100000 )); }
stamp() { local d=$(( $(now_ds) - start )); printf '%6d.%d' $(( d / 10 )) $(( d % 10 )); }
start=$(now_ds)
line_buffered=(); command -v stdbuf >/dev/null && line_buffered=(stdbuf -oL -eL)
"${line_buffered[@]}" make --trace sweep BUILD="$build" "$@" 2>&1 | while IFS= read -r line; do
  printf '%s %s\n' "$(stamp)" "$line"
done | tee "$log"
rc=${PIPESTATUS[0]}
total=$(stamp); total=${total// /}

run=$(comm -13 <(echo "$before") <(ls -d results/*/*/ 2>/dev/null | sort) | tail -1)
if [ -n "$run" ]; then
  mkdir -p "$top/run" && cp -r "$run" "$top/run/" && echo "run folder: $run (copied to \$OUT/run/)"
else
  echo "no new run folder under results/"
fi

# The time of the first line matching a pattern ('' when none).
at() { grep -m1 -E "$1" "$log" | awk '{print $1}'; }
last() { grep -E "$1" "$log" | tail -1 | awk '{print $1}'; }
span() {  # span <label> <from> <to>
  if [ -n "$2" ] && [ -n "$3" ]; then printf '  %-32s %7.1f s\n' "$1" "$(awk -v a="$2" -v b="$3" 'BEGIN {print b - a}')"
  else printf '  %-32s %9s\n' "$1" "n/a"; fi
}
t_deps=$(at "scripts/deps.sh build"); t_cfg=$(at "cmake -S"); t_build=$(at "cmake --build")
t_sweep=$(at "convtune sweep"); t_kernels=$(at "kernels: [0-9]+ compiled")
t_first=$(at "\[gpu[0-9]+ 1/"); t_lastrec=$(last "\[gpu[0-9]+ [0-9]+/")
t_records=$(at "records: "); t_dispatch=$(at "dispatch table: "); t_plots=$(last "plots and report:|plots were not drawn")
echo
echo "make sweep: rc=$rc, $total s in all on $(nproc) cores"
span "deps (scripts/deps.sh build)" "$t_deps" "$t_cfg"
span "configure (cmake -S)" "$t_cfg" "$t_build"
span "build (cmake --build)" "$t_build" "$t_sweep"
span "ceilings + NVRTC compiles" "$t_sweep" "${t_kernels:-$t_first}"
grep -m1 -E "kernels: [0-9]+ compiled" "$log" | sed 's/^ *[0-9.]* /    /'
span "measuring (first to last record)" "$t_first" "$t_lastrec"
[ -n "$run" ] && python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print('    summary.json: measure_wall_s', round(s.get('measure_wall_s', 0), 1), '| jit', s.get('jit'), '| counts', s.get('counts'))" "$run/summary.json" 2>/dev/null
span "best + export" "$t_records" "$t_dispatch"
span "plots (--plot)" "$t_dispatch" "$t_plots"
exit "$rc"
