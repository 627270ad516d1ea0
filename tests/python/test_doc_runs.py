"""Run folders cited in README.md and docs/*.md are real: a results/<gpu>/<run> path in the README is a
folder shipped now; a run name elsewhere (docs/PERFORMANCE.md is a dated log) is shipped now or was
shipped once (it is in the git history). A misspelt name, such as a time off by a second, fails."""

import glob
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN_PATH = re.compile(r"results/([a-z0-9-]+)/([a-z0-9_-]+-\d{8}-\d{6})")
RUN_NAME = re.compile(r"`([a-z0-9_-]+-\d{8}-\d{6})`")


def read(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return f.read()


def docs():
    return ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))


def shipped_now():
    return {os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "results", "*", "*")) if os.path.isdir(p)}


def shipped_ever():
    """Every results/<gpu>/<run> the git history holds, or None without a git history (a copied tree)."""
    try:
        out = subprocess.run(["git", "log", "--all", "--name-only", "--format=", "--", "results/*/*/summary.json",
                              "results/*/*/dispatch.json"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    return {"/".join(line.split("/")[:3]) for line in out.stdout.splitlines() if line.count("/") >= 3}


def test_every_run_path_in_the_readme_is_shipped():
    now = shipped_now()
    cited = {m.group(0) for m in RUN_PATH.finditer(read("README.md"))}
    assert cited, "the README cites no shipped run"
    assert sorted(cited - now) == []


def test_every_run_cited_in_the_docs_was_shipped():
    now = shipped_now()
    names_now = {os.path.basename(p) for p in now}
    ever = shipped_ever()
    if ever is None:
        pytest.skip("no git history here: only the README's paths can be checked")
    names_ever = {os.path.basename(p) for p in ever}
    missing = []
    for doc in docs():
        text = read(doc)
        for m in RUN_PATH.finditer(text):
            if m.group(0) not in now and m.group(0) not in ever:
                missing.append(f"{doc}: {m.group(0)}")
        for m in RUN_NAME.finditer(text):
            said_unshipped = "not shipped" in text[m.end():m.end() + 20]
            if m.group(1) not in names_now and m.group(1) not in names_ever and not said_unshipped:
                missing.append(f"{doc}: {m.group(1)}")
    assert missing == []
