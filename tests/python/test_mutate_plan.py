"""scripts/mutate.py's choices of what to mutate and how to count it, without a compiler."""
import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("mutate", REPO / "scripts" / "mutate.py")
mutate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mutate)

SOURCE = """\
#include "x.h"
__constant__ float c_filter[4];
__device__ int counter;
__device__ float twice(float v);
__global__ void kernel(const float* a,
                       float* b) {
  if (threadIdx.x == 0) {
    b[0] = a[0];
  }
}
__host__ __device__ inline int both(int v) {
  return v + 1;
}
int host_rule(int v) { return v > 2 ? 1 : 0; }
__device__ float square(float v) { return v * v; }
int after(int v) {
  return v;
}
"""


def test_device_lines_are_the_kernels_and_device_functions_whole():
    lines = SOURCE.splitlines()
    inside = mutate.device_lines(lines)
    # kernel: its signature (both lines) through its closing brace; square: its one line.
    assert sorted(i + 1 for i in inside) == [5, 6, 7, 8, 9, 10, 15]


@pytest.mark.parametrize("line", [2, 3, 4, 11, 12, 13, 14, 16, 17, 18])
def test_host_code_variables_declarations_and_host_device_functions_stay_mutable(line):
    assert line - 1 not in mutate.device_lines(SOURCE.splitlines())


def test_every_family_reference_kernel_is_left_out_and_every_rule_file_keeps_its_lines():
    for name in mutate.default_files():
        lines = (REPO / name).read_text().splitlines()
        inside = mutate.device_lines(lines)
        kernels = sum(1 for l in lines if "__global__" in l)
        if name.endswith(".cpp"):
            assert not inside, name
        for i, l in enumerate(lines):
            if "__global__" in l:
                assert i in inside, f"{name}:{i + 1}"
        if kernels:
            assert 0 < len(inside) < len(lines), name


GPU_HOST = """\
class TiledPlan final : public Plan {
 public:
  void run(cudaStream_t s) override {
    launch(fn_, grid(), s);
  }
};
double cost_rule(int n) { return 2.0 * n; }
Timing Timer::measure(const std::function<void(cudaStream_t)>& work, cudaStream_t stream) {
  work(stream);
}
std::unique_ptr<Plan> V::prepare(const Problem& p, const Config& c, JitCache& jit) const {
  return make(p, c);
}
bool can_run(const Problem& p) {
  if (p.n > 2) {
    kernel<<<1, 1>>>(p.n);
  }
  return p.n > 0;
}
TiledPlan::TiledPlan(int n, std::shared_ptr<Module> m)
    : n_(n) {
  if (n < 0) throw std::logic_error("n");
}
int SweepPlan::count() const { return 3; }
"""


def test_gpu_host_lines_are_plans_launches_and_what_takes_a_stream_or_a_plan():
    inside = mutate.gpu_host_lines(GPU_HOST.splitlines())
    # the Plan class whole, the timer (its parameter list holds parentheses), prepare, the launch line, and
    # the Plan's constructor defined outside the class (not SweepPlan's member: no Plan)
    assert sorted(i + 1 for i in inside) == [1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 16, 20, 21, 22, 23]


def test_every_rule_files_plan_classes_are_left_out_and_its_rules_kept():
    kept_rules = re.compile(r"\b(cost|tolerance|can_implement|space|select|lookup|verification_verdict)\(")
    for name in mutate.default_files():
        lines = (REPO / name).read_text().splitlines()
        inside = mutate.gpu_host_lines(lines)
        for i, line in enumerate(lines):
            if re.search(r"class \w+ (final )?: public \w*Plan\b", line):
                assert i in inside, f"{name}:{i + 1}"
            if kept_rules.search(line) and re.match(r"^[A-Za-z].*\)( const)?( override)? \{$", line):
                assert i not in inside, f"{name}:{i + 1} {line}"


def test_the_report_counts_an_identical_object_apart_from_the_score(tmp_path, capsys):
    work = tmp_path
    (work / "plan").mkdir()
    rows = [{"file": "harness/select.cpp", "mutant": "m1", "line": 3, "outcome": "killed"},
            {"file": "harness/select.cpp", "mutant": "m2", "line": 4, "outcome": "killed"},
            {"file": "harness/select.cpp", "mutant": "m3", "line": 5, "outcome": "killed"},
            {"file": "harness/select.cpp", "mutant": "m4", "line": 6, "outcome": "same object"},
            {"file": "harness/select.cpp", "mutant": "m5", "line": 7, "outcome": "invalid"}]
    (work / "results.jsonl").write_text("".join(__import__("json").dumps(r) + "\n" for r in rows))

    class Args:
        pass
    args = Args()
    args.work = str(work)
    mutate.report(args)
    text = (work / "report.md").read_text()
    assert "3 killed, 0 survived, 1 did not compile, 1 compiled to the unmutated object (equivalent): score 100.0%" in text
    assert "| harness/select.cpp | 3 | 0 | 1 | 1 |" in text


FAMILY = """\
class F : public Family {
  Problem example() const override { return {kF, {{"n", 8}}}; }
  std::vector<Problem> test_problems() const override {
    return {{kF, {{"n", 1}}},
            {kF, {{"n", 7}}}};
  }
  void validate(const Problem& p) const override {
    if (p.at("n") < 1) throw InputError("n");
  }
  std::vector<Problem> test_problems() const;
};
"""


def test_test_data_is_example_and_test_problems_only():
    assert sorted(i + 1 for i in mutate.test_data_lines(FAMILY.splitlines())) == [2, 3, 4, 5, 6]


def test_every_family_has_its_test_shapes_left_out_and_its_validation_kept():
    for name in mutate.default_files():
        lines = (REPO / name).read_text().splitlines()
        data = mutate.test_data_lines(lines)
        for i, l in enumerate(lines):
            if "test_problems() const override" in l:
                assert i in data and i + 1 in data, f"{name}:{i + 1}"
            if "validate(" in l or "tolerance(" in l:
                assert i not in data, f"{name}:{i + 1}"


TRICKY = """\
// a comment naming __global__ void f() { in prose
const char* text = "__device__ int g() {";
int host(int v) {  // not device code; a brace in a comment: {
  return v;
}
__global__ void k(int a /* a } in a comment */) {
  const char brace = '}';
  if (a) { a = 1; }
}
int after() { return 2; }
"""


def test_comments_and_literals_do_not_count():
    inside = mutate.device_lines(TRICKY.splitlines())
    assert sorted(i + 1 for i in inside) == [6, 7, 8, 9]


def test_unbalanced_braces_are_an_error_not_a_silent_cut():
    with pytest.raises(ValueError, match="unbalanced"):
        mutate.device_lines(["__global__ void k() {", "  int a = 1;"])


class _CopyingBuild:
    """A stand-in build whose 'object' of a source is its text: equal objects mean equal sources."""

    def __init__(self, tree):
        self.tree = tree

    def compile_mutant(self, source, mutant_path, obj):
        obj.write_text(mutant_path.read_text())
        return True


def test_the_unmutated_object_is_compiled_at_the_mutant_path_and_the_mutant_put_back(tmp_path):
    (tmp_path / "rule.cpp").write_text("int limit = 8;\n")
    worker = tmp_path / "w0"
    worker.mkdir()
    mutant_path = tmp_path / ".mutant-w0-rule.cpp"
    mutant_path.write_text("int limit = 9;\n")
    build = _CopyingBuild(tmp_path)
    digest = mutate.unmutated_object(build, "rule.cpp", mutant_path, worker)
    assert mutant_path.read_text() == "int limit = 9;\n"  # the mutant is back where the worker compiles it
    (worker / "same.o").write_text("int limit = 8;\n")
    (worker / "other.o").write_text("int limit = 9;\n")
    assert mutate._digest(worker / "same.o") == digest
    assert mutate._digest(worker / "other.o") != digest
    (tmp_path / "rule.cpp").write_text("int limit = 7;\n")  # cached per worker and source: not compiled again
    assert mutate.unmutated_object(build, "rule.cpp", mutant_path, worker) == digest


def test_python_mutants_count_every_failing_suite_as_a_kill(tmp_path):
    # mutmut 2 kills a mutant only when the runner exits with 1; pytest exits 2 on a collection error (a mutant
    # that breaks an import) and 4 on a usage error: the runner must turn both into 1.
    import shlex
    import subprocess
    broken = tmp_path / "test_broken.py"
    broken.write_text("import a_module_that_does_not_exist\n\ndef test_x():\n    pass\n")
    raw = subprocess.run(["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", str(broken)], capture_output=True)
    assert raw.returncode == 2
    run = subprocess.run(shlex.split(mutate.killing_runner(str(broken))), capture_output=True)
    assert run.returncode == 1
    passing = tmp_path / "test_passing.py"
    passing.write_text("def test_x():\n    pass\n")
    assert subprocess.run(shlex.split(mutate.killing_runner(str(passing))), capture_output=True).returncode == 0
    assert mutate.python_mutant_env()["PYTHONDONTWRITEBYTECODE"] == "1"
