#!/usr/bin/env bash
# Mutation testing of the harness's rule files (`make mutate`; slow, not in CI). See docs/MUTATION.md.
#
# C++: universalmutator (PyPI `universalmutator`, command `mutate`) writes one-line mutants of each file;
# a sample of them is tried, one at a time, in a copy of the tree with its own build folder: the CPU test
# binary is rebuilt (a mutant that does not compile is not counted) and the CPU suite runs without the
# NVRTC compile tests under a time limit. A mutant is killed when the suite fails or runs past the limit.
# Python: mutmut over scripts/convtune_plots, with the tests of tests/python.
#
# Settings (environment or make variables):
#   FILES     C++ files to mutate, relative to the repository (default: the rule files below)
#   SAMPLE    mutants tried per file, drawn with SEED (default 15; 0: every mutant, hours per file)
#   SEED      the sample's seed (default 1), so that a rerun tries the same mutants
#   LINES     only mutants of these lines, "a-b" (default: every line)
#   TIMEOUT   seconds per mutant for the suite (default 300)
#   WORK      the copy of the tree and its build (default build-mutate/)
#   PYTHON    1: also run mutmut over scripts/convtune_plots (default 0; about an hour)
#   REPORT    where the summary goes (default $WORK/report.md)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
default_files="harness/select.cpp harness/dispatch.cpp harness/fleet.cpp harness/shard.cpp harness/records.cpp
  harness/spec.cpp harness/replay.cpp $(ls harness/strategies/*.cpp | tr '\n' ' ')
  variants/conv2d/direct.cpp variants/conv2d/jit_conv2d.cpp variants/conv1d/spatial.cpp
  variants/conv1d_parts/parts_common.cpp variants/layer_common/layer_variant.cpp
  $(ls variants/*/family.c* | tr '\n' ' ')"
FILES=${FILES:-$default_files}
SAMPLE=${SAMPLE:-15}
SEED=${SEED:-1}
LINES=${LINES:-}
TIMEOUT=${TIMEOUT:-300}
WORK=${WORK:-$repo/build-mutate}
PYTHON=${PYTHON:-0}
REPORT=${REPORT:-$WORK/report.md}
# Every test that compiles kernels with NVRTC (minutes each on 2 cores; they test no rule).
SLOW_TESTS='Nvrtc.*:*Compile.*:*.EveryKernelCompilesOverItsSpace:*.KernelsCompileOverASampleOfTheirSpace:*.SpatialProgramsCompileForSm90'

command -v mutate >/dev/null || python3 -m pip install -q universalmutator
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$repo")}

# The copy: the working tree's files (committed or not, ignored ones left out), so that the mutants never
# touch the checkout.
tree=$WORK/tree
mkdir -p "$tree"
# Only files whose bytes differ are written (with a new time): a file restored with its old time would
# leave a mutant's object file in place.
git ls-files -co --exclude-standard -z | python3 -c '
import os, shutil, sys
tree = sys.argv[1]
for name in sys.stdin.read().split("\0"):
    if not name or name.startswith("build") or not os.path.isfile(name):
        continue
    target = os.path.join(tree, name)
    if os.path.exists(target) and open(name, "rb").read() == open(target, "rb").read():
        continue
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    shutil.copyfile(name, target)
' "$tree"
# The copy keeps the commit it was first made at as its version (.git-sha): a later commit changes no
# object file of the copy, so that its build stays warm across runs.
[ -f "$tree/.git-sha" ] || git rev-parse --short=12 HEAD >"$tree/.git-sha"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S "$tree" -B "$tree/build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
build() { cmake --build "$tree/build" -j "$(nproc)" --target convtune_cpu_tests >"$WORK/build.log" 2>&1; }
suite() { (cd "$tree/build" && timeout "$TIMEOUT" ./tests/convtune_cpu_tests --gtest_filter="-$SLOW_TESTS" \
  >"$WORK/suite.log" 2>&1); }

# A run stopped while a mutant was in the copy: that file gets a new time, so that it is built again.
[ -f "$WORK/mutated" ] && touch "$tree/$(cat "$WORK/mutated")" && rm -f "$WORK/mutated"
echo "mutate: building the copy in $tree/build"
build || { echo "mutate: the unmutated copy does not build (see $WORK/build.log)"; exit 1; }
suite || { echo "mutate: the unmutated suite fails (see $WORK/suite.log)"; exit 1; }

# Mutants of one file, sampled with the seed (sorted by number first, so that the sample does not depend
# on the directory's order). Mutants of comment lines (which --noCheck leaves in) are equivalent: left out.
sample() {
  python3 - "$1" "$SAMPLE" "$SEED" "$2" <<'EOF'
import os, random, re, sys
folder, n, seed, source = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
original = open(source).read().splitlines()
def in_comment(name):
    mutant = open(os.path.join(folder, name)).read().splitlines()
    changed = next((i for i, (a, b) in enumerate(zip(original, mutant)) if a != b), min(len(original), len(mutant)))
    line = original[changed].strip() if changed < len(original) else ""
    return line.startswith("//") or line.startswith("/*") or line.startswith("*")
names = sorted(os.listdir(folder), key=lambda f: int(re.search(r"\.mutant\.(\d+)\.", f).group(1)))
names = [f for f in names if not in_comment(f)]
if 0 < n < len(names):
    names = sorted(random.Random(seed).sample(names, n), key=names.index)
print("\n".join(os.path.join(folder, f) for f in names))
EOF
}

killed=0 survived=0 invalid=0
survivors=()
for file in $FILES; do
  dir=$WORK/mutants/${file//\//_}
  rm -rf "$dir"
  mkdir -p "$dir"
  lines_arg=()
  if [ -n "$LINES" ]; then
    seq "${LINES%-*}" "${LINES#*-}" >"$dir.lines"
    lines_arg=(--lines "$dir.lines")
  fi
  (cd "$dir" && mutate "$repo/$file" cpp --noCheck --mutantDir "$dir" "${lines_arg[@]}" >/dev/null 2>&1) || true
  total=$(ls "$dir" | wc -l)
  file_killed=0 file_survived=0 file_invalid=0
  for mutant in $(sample "$dir" "$repo/$file"); do
    echo "$file" >"$WORK/mutated"
    cp "$mutant" "$tree/$file"
    if ! build; then
      file_invalid=$((file_invalid + 1))
    elif suite; then
      file_survived=$((file_survived + 1))
      survivors+=("$file: $(diff "$repo/$file" "$mutant" | grep '^[0-9<>]' | tr '\n' ' ' || true)")
    else
      file_killed=$((file_killed + 1))
    fi
    cp "$repo/$file" "$tree/$file"
    rm -f "$WORK/mutated"
  done
  echo "mutate: $file: $((file_killed + file_survived + file_invalid)) of $total mutants tried, $file_killed killed, $file_survived survived, $file_invalid did not compile"
  killed=$((killed + file_killed)) survived=$((survived + file_survived)) invalid=$((invalid + file_invalid))
done
build >/dev/null || true  # leave the copy's build unmutated

score=$(python3 -c "k, s = $killed, $survived; print(f'{100 * k / (k + s):.1f}%' if k + s else 'n/a')")
{
  echo "# Mutation run $(date -u +%Y-%m-%dT%H:%MZ) at $(git rev-parse --short HEAD)"
  echo
  echo "Command: make mutate FILES=\"$(echo $FILES)\" SAMPLE=$SAMPLE SEED=$SEED${LINES:+ LINES=$LINES} TIMEOUT=$TIMEOUT"
  echo
  echo "C++: $killed killed, $survived survived, $invalid did not compile: score $score of the compiled mutants"
  echo
  echo "Surviving mutants (< original, > mutant):"
  for s in "${survivors[@]+"${survivors[@]}"}"; do echo "- $s"; done
} | tee "$REPORT"

if [ "$PYTHON" = 1 ]; then
  python3 -c "import mutmut" 2>/dev/null || python3 -m pip install -q "mutmut<3"
  # mutmut 2 mutates in place and restores each file; it runs in the copy, never in the checkout.
  (cd "$tree" && rm -f .mutmut-cache &&
   python3 -m mutmut run --paths-to-mutate scripts/convtune_plots --tests-dir tests/python \
     --runner "python3 -m pytest -x -q -p no:cacheprovider tests/python" --no-progress || true;
   python3 -m mutmut results) | tee -a "$REPORT"
fi
