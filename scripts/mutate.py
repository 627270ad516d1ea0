#!/usr/bin/env python3
"""Mutation testing of the harness's rule files (`make mutate`; slow, not in CI). See docs/MUTATION.md.

  plan    universalmutator writes the one-line mutants of each file; a seeded sample of them (comment lines
          left out) is stored under WORK/plan, so that another machine can try the same mutants.
  run     tries the plan's mutants in parallel workers on one build of a copy of the tree: each worker compiles
          the mutated file alone (its compile command from compile_commands.json), links its own CPU test
          binary and CLI, and runs the CPU suite without the NVRTC compile tests. A mutant that does not
          compile is not counted; one whose suite fails, crashes or runs past the limit is killed.
  report  the score (killed / (killed + survived)) per file and in all, and every survivor as a diff.
  all     plan, run and report; plots: mutmut 2 over scripts/convtune_plots with tests/python's tests;
  package plan and run over the Python package's argument checks, fast path and table choice (PACKAGE_FILES, or
          --files), each mutant in place in a worker's copy of the tree with the package's CPU tests.

A header is not mutated: every file that includes it would have to be rebuilt per mutant. Nor is device code
(the bodies of __global__ and __device__ functions, e.g. a family's float64 GPU reference) or GPU-only host code
(plans' bind and run, prepare, the timing loop, launches; gpu_host_lines): the CPU suite cannot run it; the GPU
suite checks it. Nor a family's example() and test_problems(): test data, not rules. A mutant whose object file is byte-identical to the unmutated file's (compiled
at the same path) is counted as equivalent, not as a survivor: the compiler proved it changes nothing (a space,
a line inside an #ifdef this build leaves out, a constant folded alike).
"""
import argparse
import concurrent.futures as futures
import difflib
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Every test that compiles kernels with NVRTC: minutes each on a small machine, and they test no rule.
SLOW_TESTS = ("Nvrtc.*:*Compile.*:*.EveryKernelCompilesOverItsSpace:*.KernelsCompileOverASampleOfTheirSpace:"
              "*.SpatialProgramsCompileForSm90")
RULE_FILES = """harness/select.cpp harness/dispatch.cpp harness/dispatch_table.cpp harness/fleet.cpp harness/shard.cpp
harness/merge.cpp harness/records.cpp harness/run_folder.cpp harness/sweep_plan.cpp harness/spec.cpp harness/replay.cpp
harness/runner.cpp harness/measure.cpp harness/problem.cpp harness/params.cpp harness/perf_model.cpp
harness/strategies/common.cpp harness/strategies/exhaustive.cpp harness/strategies/halving.cpp
harness/strategies/random.cpp harness/strategies/warm.cpp
variants/conv2d/direct.cpp variants/conv2d/jit_conv2d.cpp variants/conv1d/spatial.cpp variants/conv1d/window.cpp
variants/conv1d_parts/parts_common.cpp variants/conv1d_parts/schedule.cpp variants/layer_common/layer_variant.cpp
variants/layer_common/implicit_gemm.cpp variants/layer_pool/pool_variants.cpp""".split()


# The Python package's rules that its CPU tests can reach: argument checks, the fast path, table choice.
PACKAGE_FILES = ["python/convtune/_arrays.py", "python/convtune/_fast.py", "python/convtune/_dispatch.py"]
PACKAGE_TESTS = "tests/python/test_package.py"


def default_files():
    families = sorted(str(p.relative_to(REPO)) for p in REPO.glob("variants/*/family.c*"))
    return [f for f in RULE_FILES + families if (REPO / f).is_file()]


def changed_line(original, mutant):
    """The first line where a mutant differs from the original (0-based)."""
    for i, (a, b) in enumerate(zip(original, mutant)):
        if a != b:
            return i
    return min(len(original), len(mutant))


def _code_only(text):
    """text with comments and string and character literals blanked (newlines kept), so that their braces,
    semicolons and words do not count."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', blank, text, flags=re.S)


def _body_lines(text, start):
    """0-based lines from the one holding `start` through the end of the body whose brace follows it, or
    None where a ';' comes first (a declaration or a variable: no body)."""
    brace, semi = text.find("{", start), text.find(";", start)
    if brace < 0 or 0 <= semi < brace:
        return None
    depth, i = 0, brace
    while i < len(text):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            break
        i += 1
    if depth:
        raise ValueError(f"unbalanced braces after line {text.count(chr(10), 0, start) + 1}")
    return range(text.count("\n", 0, start), text.count("\n", 0, i) + 1)


def device_lines(lines):
    """0-based indices of the lines of a __global__ or __device__ (not __host__) function, signature included."""
    text = _code_only("\n".join(lines))
    inside = set()
    for m in re.finditer(r"\b__(global|device)__\b", text):
        head = text.rfind("\n", 0, m.start()) + 1
        if "__host__" in text[head:text.find("\n", m.end())]:
            continue
        inside.update(_body_lines(text, m.start()) or ())
    return inside


def test_data_lines(lines):
    """0-based indices of a family's example() and test_problems(): the shapes the tests run, data rather than
    rules (a changed shape is another test, still as awkward as the table's comment asks, not a bug)."""
    text = _code_only("\n".join(lines))
    inside = set()
    for m in re.finditer(r"\b(example|test_problems)\(\) const override", text):
        inside.update(_body_lines(text, m.start()) or ())
    return inside


_PLAN_CLASS = re.compile(r"\b(?:class|struct)\s+(\w+)(?:\s+final)?\s*:\s*public\s+(?:\w+::)*\w*Plan\b")
_plan_classes_of_repo = None


def plan_classes(text=""):
    """Names of the classes derived from a Plan, in the repository's sources and in `text`."""
    global _plan_classes_of_repo
    if _plan_classes_of_repo is None:
        _plan_classes_of_repo = set()
        for folder in ("harness", "variants", "runtime"):
            for path in (REPO / folder).rglob("*"):
                if path.suffix in (".h", ".cpp", ".cu", ".cuh"):
                    _plan_classes_of_repo.update(_PLAN_CLASS.findall(path.read_text(errors="replace")))
    return _plan_classes_of_repo | set(_PLAN_CLASS.findall(text))


def gpu_host_lines(lines):
    """0-based indices of host code that only runs with a GPU object in hand: the bodies of Plan classes (binding
    and launching), in the class or defined outside it (Name::member), of functions and lambdas that take a
    Plan&, a ProblemBuffers&, a JitCache& (prepare: a plan of loaded modules) or a cudaStream_t (measuring,
    launching), and kernel launches (<<<...>>>). The CPU suite cannot call them; the GPU suite does (every
    output poisoned, then verified against float64)."""
    text = _code_only("\n".join(lines))
    inside = set()
    for m in _PLAN_CLASS.finditer(text):
        inside.update(_body_lines(text, m.start()) or ())
    names = plan_classes(text)
    if names:
        for m in re.finditer(r"\b(?:%s)::~?\w+\s*\(" % "|".join(sorted(names)), text):
            inside.update(_body_lines(text, m.start()) or ())
    for m in re.finditer(r"\(((?:[^()]|\([^()]*\))*)\)[\s\w]*\{", text):  # a parameter list may hold (...)
        if re.search(r"\b(?:Plan|ProblemBuffers|JitCache)\s*&|\bcudaStream_t\b", m.group(1)):
            inside.update(_body_lines(text, m.start()) or ())
    for i, line in enumerate(text.split("\n")):
        if "<<<" in line:
            inside.add(i)
    return inside


def docstring_lines(text):
    """0-based lines of a Python file's docstrings (string literals standing alone as statements)."""
    import ast
    lines = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None), ast.Constant) and \
                isinstance(node.value.value, str):
            lines.update(range(node.lineno - 1, node.end_lineno))
    return lines


def plan(args):
    """Mutants of each file, a sample drawn with the seed, as WORK/plan/plan.json."""
    if not shutil.which("mutate"):
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "universalmutator"], check=True)
    out = Path(args.work) / "plan"
    shutil.rmtree(out, ignore_errors=True)
    entries = []
    for name in args.files:
        source = REPO / name
        folder = out / name.replace("/", "_")
        folder.mkdir(parents=True)
        python = name.endswith(".py")
        subprocess.run(["mutate", str(source), "python" if python else "cpp", "--noCheck", "--mutantDir", str(folder)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=folder)
        original = source.read_text().splitlines()
        if python:  # no device code; docstrings and comments are no rules
            gpu_only, test_data = set(), docstring_lines(source.read_text())
        else:
            gpu_only, test_data = device_lines(original) | gpu_host_lines(original), test_data_lines(original)
        mutants = sorted(folder.iterdir(), key=lambda p: int(re.search(r"\.mutant\.(\d+)\.", p.name).group(1)))
        kept, on_gpu, data = [], 0, 0
        for m in mutants:
            line = changed_line(original, m.read_text().splitlines())
            text = original[line].strip() if line < len(original) else ""
            if text.startswith(("//", "/*", "*", "#include")) or (python and text.startswith(("#", "import ", "from "))):
                continue
            if line in gpu_only:
                on_gpu += 1
                continue
            if line in test_data:
                data += 1
                continue
            kept.append((m, line + 1))
        total = len(kept)
        if 0 < args.sample < len(kept):
            kept = sorted(random.Random(f"{args.seed}:{name}").sample(kept, args.sample), key=lambda k: k[1])
        for m, line in kept:
            entries.append({"file": name, "mutant": str(m.relative_to(out)), "line": line})
        sampled = {m for m, _ in kept}
        for m in mutants:  # only the sample is kept: a plan travels to other machines
            if m not in sampled:
                m.unlink()
        left_out = [f"{on_gpu} in device or GPU-only host code"] * bool(on_gpu) + \
                   [f"{data} in {'docstrings' if python else 'test data'}"] * bool(data)
        print(f"plan: {name}: {len(kept)} of {total} mutants" + (f" ({', '.join(left_out)} left out)" if left_out else ""),
              flush=True)
    (out / "plan.json").write_text(json.dumps({"seed": args.seed, "sample": args.sample, "files": args.files,
                                               "mutants": entries}, indent=1))


def copy_tree(tree):
    """The working tree's files (committed or not, ignored ones left out), rewritten only where they differ."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True)
    if listed.returncode == 0:
        names = listed.stdout.decode().split("\0")
    else:  # a copy of the tree without its git folder (a lent machine): every file but the build folders
        names = [str(p.relative_to(REPO)) for p in REPO.rglob("*")
                 if p.is_file() and not p.relative_to(REPO).parts[0].startswith(("build", ".git"))]
    for name in names:
        src = REPO / name
        if not name or name.startswith("build") or not src.is_file():
            continue
        dst = tree / name
        if dst.exists() and dst.read_bytes() == src.read_bytes():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    for extra in (".git-sha", ".deps"):
        if (REPO / extra).exists() and not (tree / extra).exists():
            (shutil.copytree if (REPO / extra).is_dir() else shutil.copyfile)(REPO / extra, tree / extra)
    if not (tree / ".git-sha").exists():
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO, capture_output=True, text=True)
        (tree / ".git-sha").write_text(sha.stdout)


class Build:
    """One build of the copy, and the commands that rebuild a file's object and relink the two binaries."""

    def __init__(self, tree, jobs):
        self.tree, self.dir = tree, tree / "build"
        launcher = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"] \
            if shutil.which("ccache") else []
        subprocess.run(["cmake", "-S", tree, "-B", self.dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                        "-DCONVTUNE_UNITY=OFF", *launcher], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", self.dir, "-j", str(jobs), "--target", "convtune_cpu_tests",
                        "convtune"], check=True, stdout=subprocess.DEVNULL)
        self.compile = {Path(e["file"]).resolve(): e for e in json.loads((self.dir / "compile_commands.json").read_text())}
        self.links = {t: self.link_command(t) for t in ("tests/convtune_cpu_tests", "convtune")}

    def link_command(self, target):
        lines = subprocess.run(["ninja", "-C", self.dir, "-t", "commands", target], check=True, capture_output=True,
                               text=True).stdout.strip().splitlines()
        return lines[-1]

    def object_of(self, source):
        """The file's object as the link lines name it (relative to the build folder)."""
        entry = self.compile[(self.tree / source).resolve()]
        obj = entry["output"] if "output" in entry else re.search(r" -o (\S+)", entry["command"]).group(1)
        obj = Path(entry["directory"]) / obj
        return os.path.relpath(obj, self.dir)

    def compile_mutant(self, source, mutant_path, obj):
        entry = self.compile[(self.tree / source).resolve()]
        cmd = shlex.split(entry["command"])
        cmd = [a for a in cmd if a not in ("-MD",)]
        for flag in ("-MT", "-MF"):
            while flag in cmd:
                i = cmd.index(flag)
                del cmd[i:i + 2]
        cmd[cmd.index("-o") + 1] = str(obj)
        cmd[cmd.index("-c") + 1] = str(mutant_path)
        r = subprocess.run(cmd, cwd=entry["directory"], capture_output=True, text=True)
        (obj.parent / "compile.log").write_text(r.stderr)
        return r.returncode == 0

    def relink(self, target, original_obj, obj, out):
        cmd = self.links[target].replace(f" {original_obj} ", f" {obj} ")
        cmd = re.sub(r" -o \S+", f" -o {out}", cmd, count=1)
        return subprocess.run(cmd, shell=True, cwd=self.dir, capture_output=True).returncode == 0


_unmutated = {}  # (worker folder, source) -> sha256 of the unmutated source's object, compiled at the worker's mutant path


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def unmutated_object(build, source, mutant_path, worker_dir):
    """The object of the unmutated source compiled as the worker compiles its mutants (the same path, so that
    the names a compiler derives from it agree), for the identical-object check."""
    key = (str(worker_dir), source)
    if key not in _unmutated:
        text = mutant_path.read_text()
        mutant_path.write_text((build.tree / source).read_text())
        obj = worker_dir / "unmutated.o"
        _unmutated[key] = _digest(obj) if build.compile_mutant(source, mutant_path, obj) else None
        mutant_path.write_text(text)
    return _unmutated[key]


def try_mutant(build, entry, plan_dir, worker_dir, timeout):
    """killed | survived | invalid | same object, and seconds taken."""
    start = time.time()
    source = entry["file"]
    text = (plan_dir / entry["mutant"]).read_text()
    # Beside the original, so that its quoted includes resolve the same way.
    mutant_path = build.tree / Path(source).parent / f".mutant-{worker_dir.name}-{Path(source).name}"
    mutant_path.write_text(text)
    obj = worker_dir / "mutant.o"
    try:
        if not build.compile_mutant(source, mutant_path, obj):
            return "invalid", time.time() - start
        if _digest(obj) == unmutated_object(build, source, mutant_path, worker_dir):
            return "same object", time.time() - start
        original_obj = build.object_of(source)
        if any(f" {original_obj} " not in build.links[t] for t in build.links):
            raise RuntimeError(f"{source}: its object {original_obj} is not in the links")
        tests, cli = worker_dir / "convtune_cpu_tests", worker_dir / "convtune"
        if not (build.relink("tests/convtune_cpu_tests", original_obj, obj, tests) and
                build.relink("convtune", original_obj, obj, cli)):
            return "invalid", time.time() - start
        env = dict(os.environ, CONVTUNE_TEST_CLI=str(cli), TMPDIR=str(worker_dir / "tmp"))
        (worker_dir / "tmp").mkdir(exist_ok=True)
        try:
            rc = subprocess.run([tests, f"--gtest_filter=-{SLOW_TESTS}", "--gtest_fail_fast"], cwd=build.dir / "tests",
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = -1
        return ("survived" if rc == 0 else "killed"), time.time() - start
    finally:
        mutant_path.unlink(missing_ok=True)
        shutil.rmtree(worker_dir / "tmp", ignore_errors=True)


def baseline(build, worker_dir, timeout):
    """The unmutated suite in a worker's setting must pass, else no mutant's result means anything."""
    env = dict(os.environ, CONVTUNE_TEST_CLI=str(build.dir / "convtune"), TMPDIR=str(worker_dir))
    r = subprocess.run([build.dir / "tests" / "convtune_cpu_tests", f"--gtest_filter=-{SLOW_TESTS}"],
                       cwd=build.dir / "tests", env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        sys.exit("mutate: the unmutated suite fails:\n" + "\n".join(r.stdout.splitlines()[-20:]))


def try_python_mutant(entry, plan_dir, tree, timeout):
    """killed | survived | invalid, and seconds taken: the mutant in place in a worker's own copy of the tree,
    the package's CPU tests run, the original put back."""
    start = time.time()
    target = tree / entry["file"]
    original = target.read_bytes()
    text = (plan_dir / entry["mutant"]).read_text()
    try:
        compile(text, entry["file"], "exec")
    except SyntaxError:
        return "invalid", time.time() - start
    target.write_text(text)
    try:
        r = subprocess.run(shlex.split(killing_runner(PACKAGE_TESTS)), cwd=tree, env=python_mutant_env(),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
        rc = r.returncode
    except subprocess.TimeoutExpired:
        rc = -1
    finally:
        target.write_bytes(original)
    return ("survived" if rc == 0 else "killed"), time.time() - start


def python_workers(args, work, plan_dir):
    """Each worker's own copy of the tree (a Python mutant is written in place), and how a mutant is tried."""
    trees = []
    for i in range(args.workers):
        t = work / f"worker{i}" / "tree"
        t.mkdir(parents=True, exist_ok=True)
        copy_tree(t)
        drop_bytecode(t)
        trees.append(t)
    r = subprocess.run(shlex.split(killing_runner(PACKAGE_TESTS)), cwd=trees[0], env=python_mutant_env(),
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("mutate: the unmutated package tests fail:\n" + r.stdout[-2000:])
    return trees, lambda entry, tree: try_python_mutant(entry, plan_dir, tree, args.timeout)


def cpp_workers(args, work, plan_dir, count):
    """One build of a copy of the tree, a scratch folder a worker, and how a mutant is tried."""
    tree = work / "tree"
    tree.mkdir(parents=True, exist_ok=True)
    copy_tree(tree)
    t0 = time.time()
    build = Build(tree, os.cpu_count())
    print(f"mutate: copy built in {time.time() - t0:.0f} s; {count} mutants, {args.workers} workers", flush=True)
    workers = []
    for i in range(args.workers):
        d = work / f"worker{i}"
        d.mkdir(exist_ok=True)
        workers.append(d)
    t0 = time.time()
    with futures.ThreadPoolExecutor(args.workers) as pool:
        list(pool.map(lambda d: baseline(build, d, args.timeout), workers[:2]))
    print(f"mutate: baseline suite passes ({time.time() - t0:.0f} s for two at once)", flush=True)
    return workers, lambda entry, d: try_mutant(build, entry, plan_dir, d, args.timeout)


def run(args):
    work = Path(args.work)
    plan_dir = work / "plan"
    entries = json.loads((plan_dir / "plan.json").read_text())["mutants"]
    if args.limit:
        entries = entries[:args.limit]
    if all(e["file"].endswith(".py") for e in entries):
        slots, attempt = python_workers(args, work, plan_dir)
    else:
        slots, attempt = cpp_workers(args, work, plan_dir, len(entries))
    results_path = work / "results.jsonl"
    done = {}
    if results_path.exists() and args.resume:
        for line in results_path.read_text().splitlines():
            r = json.loads(line)
            done[r["mutant"]] = r
    todo = [e for e in entries if e["mutant"] not in done]
    # Round robin over the files, so that a time budget reaches every file rather than the first ones.
    seen = {}
    rank = [seen.setdefault(e["file"], []).append(e) or len(seen[e["file"]]) for e in todo]
    todo = [e for _, _, e in sorted(zip(rank, range(len(todo)), todo), key=lambda t: (t[0], t[1]))]
    free = list(slots)
    deadline = time.time() + args.budget if args.budget else None
    with open(results_path, "a" if args.resume else "w") as out, futures.ThreadPoolExecutor(args.workers) as pool:
        def one(entry):
            slot = free.pop()
            try:
                if deadline and time.time() > deadline:
                    return None
                outcome, seconds = attempt(entry, slot)
                return dict(entry, outcome=outcome, seconds=round(seconds, 1))
            finally:
                free.append(slot)
        for r in pool.map(one, todo):
            if r is None:
                continue
            out.write(json.dumps(r) + "\n")
            out.flush()
            print(f"mutate: {r['file']}:{r['line']} {r['outcome']} ({r['seconds']} s)", flush=True)
    report(args)


def report(args):
    work = Path(args.work)
    plan_dir = work / "plan"
    results = [json.loads(l) for l in (work / "results.jsonl").read_text().splitlines()]
    by_file = {}
    for r in results:
        by_file.setdefault(r["file"], {"killed": 0, "survived": 0, "invalid": 0, "same object": 0})[r["outcome"]] += 1
    killed = sum(c["killed"] for c in by_file.values())
    survived = sum(c["survived"] for c in by_file.values())
    invalid = sum(c["invalid"] for c in by_file.values())
    same = sum(c["same object"] for c in by_file.values())
    lines = ["| file | killed | survived | did not compile | same object |", "|---|---|---|---|---|"]
    lines += [f"| {f} | {c['killed']} | {c['survived']} | {c['invalid']} | {c['same object']} |"
              for f, c in sorted(by_file.items())]
    score = f"{100 * killed / (killed + survived):.1f}%" if killed + survived else "n/a"
    lines += ["", f"{killed} killed, {survived} survived, {invalid} did not compile, {same} compiled to the unmutated "
              f"object (equivalent): score {score}", "",
              "Surviving mutants:"]
    for r in results:
        if r["outcome"] != "survived":
            continue
        original = (REPO / r["file"]).read_text().splitlines()
        mutant = (plan_dir / r["mutant"]).read_text().splitlines()
        diff = [d for d in difflib.unified_diff(original, mutant, lineterm="", n=0) if d[:1] in "+-" and d[:3] not in ("---", "+++")]
        lines.append(f"- {r['file']}:{r['line']}: " + "  ".join(d.strip() for d in diff))
    text = "\n".join(lines)
    (work / "report.md").write_text(text + "\n")
    print(text)


def python_mutant_env():
    """The environment of mutmut's test runs: the copy's python/ (not an installed convtune) and no bytecode. A
    mutant of the same size as the line it replaces, written within the second its .pyc was made, would
    otherwise run as the stale .pyc (the source's size and mtime in seconds match) and count as a survivor."""
    env = {k: v for k, v in os.environ.items() if k != "CONVTUNE_EXTENSION"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def killing_runner(tests):
    """mutmut 2 counts a mutant killed only when its runner exits with 1 (`tests_pass`: returncode != 1), so a
    mutant that breaks an import (pytest's collection error, exit 2) or crashes would count as a survivor: every
    failure is made 1."""
    return f"bash -c '{sys.executable} -m pytest -x -q -p no:cacheprovider {tests} || exit 1'"


def drop_bytecode(tree):
    for cache in list(tree.rglob("__pycache__")):
        shutil.rmtree(cache, ignore_errors=True)


def plots(args):
    """mutmut 2 over scripts/convtune_plots with the tests of tests/python, in the copy (it mutates in place)."""
    tree = Path(args.work) / "tree"
    tree.mkdir(parents=True, exist_ok=True)
    copy_tree(tree)
    if subprocess.run([sys.executable, "-c", "import mutmut"]).returncode != 0:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "mutmut<3"], check=True)
    (tree / ".mutmut-cache").unlink(missing_ok=True)
    drop_bytecode(tree)
    subprocess.run([sys.executable, "-m", "mutmut", "run", "--paths-to-mutate", "scripts/convtune_plots",
                    "--tests-dir", "tests/python", "--no-progress",
                    "--runner", killing_runner("tests/python")], cwd=tree,
                   env=python_mutant_env())
    subprocess.run([sys.executable, "-m", "mutmut", "results"], cwd=tree)


def package(args):
    """plan and run over the Python package's files (PACKAGE_FILES, or --files) with its CPU tests."""
    if not args.files_given:
        args.files = PACKAGE_FILES
    plan(args)
    run(args)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("step", choices=["plan", "run", "report", "all", "plots", "package"])
    p.add_argument("--files", nargs="*", default=None, help="files to mutate, C++ or (package) Python (default: the rule files; package: PACKAGE_FILES)")
    p.add_argument("--sample", type=int, default=15, help="mutants per file (0: all)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    p.add_argument("--timeout", type=int, default=300, help="seconds per mutant's suite")
    p.add_argument("--budget", type=int, default=0, help="stop starting mutants after this many seconds (0: none)")
    p.add_argument("--limit", type=int, default=0, help="try only the plan's first N mutants")
    p.add_argument("--resume", action="store_true", help="keep earlier results and try only the rest")
    p.add_argument("--work", default=str(REPO / "build-mutate"))
    args = p.parse_args()
    args.files_given = bool(args.files)
    args.files = args.files or default_files()
    if args.step in ("plan", "all"):
        plan(args)
    if args.step in ("run", "all"):
        run(args)
    if args.step == "report":
        report(args)
    if args.step == "plots":
        plots(args)
    if args.step == "package":
        package(args)


if __name__ == "__main__":
    main()
