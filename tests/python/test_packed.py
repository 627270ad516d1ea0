"""Packed run folders (`convtune pack`: records.jsonl.gz and profiles.jsonl.gz instead of the plain files):
the plots, the report and library_table.py come out the same as from the plain run."""

import gzip
import json
import os
import shutil
import subprocess
import sys

from convtune_plots import load_run  # noqa: E402
from convtune_plots.analysis import select_best  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PLOT = os.path.join(ROOT, "scripts", "plot.py")
LIBRARY_TABLE = os.path.join(ROOT, "scripts", "library_table.py")
FIXTURE = os.path.join(HERE, "fixtures", "run_small")
H100_FIXTURE = os.path.join(HERE, "fixtures", "run_h100")


def pack(d):
    """What `convtune pack` leaves: each .jsonl gzipped to <name>.gz, the plain file gone."""
    for name in ("records.jsonl", "profiles.jsonl"):
        if (d / name).exists():
            with gzip.open(d / (name + ".gz"), "wb") as f:
                f.write((d / name).read_bytes())
            (d / name).unlink()


def plain_and_packed(tmp_path):
    """Two copies of run_small, each named run (the name is in the plots), with a profiles.jsonl of each
    problem's best; the second one packed."""
    runs = []
    for which in ("plain", "packed"):
        d = tmp_path / which / "run"
        shutil.copytree(FIXTURE, d)
        runs.append(d)
    best = select_best(load_run(str(runs[0])).records)
    profiles = "".join(json.dumps({"problem_key": k, "candidate": c.best["candidate"], "status": "ok",
                                   "metrics": {"dram_bytes": 1e8, "local_spill_bytes": 0},
                                   "derived": {"limiter": "dram", "bytes_measured": 1e8}}) + "\n"
                       for k, c in best.items())
    for d in runs:
        (d / "profiles.jsonl").write_text(profiles)
    pack(runs[1])
    assert not (runs[1] / "records.jsonl").exists() and (runs[1] / "records.jsonl.gz").exists()
    return runs


def test_a_packed_run_loads_as_the_plain_one(tmp_path):
    plain, packed = (load_run(str(d)) for d in plain_and_packed(tmp_path))
    assert len(packed.records) == len(plain.records) > 40
    assert packed.records == plain.records
    assert packed.profiles == plain.profiles and len(packed.profiles) == 6
    # The same warnings (the fixture's torn last line among them), naming the file that was read.
    assert [w.replace("records.jsonl.gz", "records.jsonl") for w in packed.warnings] == plain.warnings
    assert any(w.startswith("records.jsonl.gz:") and "torn last line" in w for w in packed.warnings)


def test_plot_py_draws_the_same_plots_and_report(tmp_path):
    outputs = []
    for d in plain_and_packed(tmp_path):
        p = subprocess.run([sys.executable, PLOT, str(d), "-o", str(d.parent / "plots")], capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0, p.stderr

        def same_words(text):  # the folder and the file read are the only differences
            return text.replace(str(d.parent), "<dir>").replace("records.jsonl.gz", "records.jsonl")

        plots = d.parent / "plots"
        pngs = {f.name: f.read_bytes() for f in sorted(plots.glob("*.png"))}
        outputs.append((same_words(p.stderr), same_words((plots / "report.md").read_text()), pngs))
    assert len(outputs[0][2]) == 5
    assert "records.jsonl.gz:49: torn last line" in (tmp_path / "packed/plots/report.md").read_text()
    assert outputs[1][0] == outputs[0][0]
    assert outputs[1][1] == outputs[0][1]
    for name, png in outputs[0][2].items():
        assert outputs[1][2].get(name) == png, name


def test_plot_py_without_records_names_both_forms(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(FIXTURE, d)
    (d / "records.jsonl").unlink()
    p = subprocess.run([sys.executable, PLOT, str(d), "-o", str(tmp_path / "out")], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    error = [ln for ln in p.stderr.splitlines() if ln.startswith("error:")]
    assert len(error) == 1 and "records.jsonl: not found, nor records.jsonl.gz" in error[0], p.stderr


def test_a_truncated_gzip_is_a_one_line_error(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(FIXTURE, d)
    pack(d)
    gz = (d / "records.jsonl.gz").read_bytes()
    (d / "records.jsonl.gz").write_bytes(gz[: len(gz) // 2])
    p = subprocess.run([sys.executable, PLOT, str(d), "-o", str(tmp_path / "out")], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    error = [ln for ln in p.stderr.splitlines() if ln.startswith("error:")]
    assert len(error) == 1 and "records.jsonl.gz: cannot be read" in error[0], p.stderr


def test_library_table_reads_a_packed_run(tmp_path):
    tables = []
    for which in ("plain", "packed"):
        d = tmp_path / which / "run"
        shutil.copytree(H100_FIXTURE, d)  # run_small's torn last line stops library_table.py
        if which == "packed":
            pack(d)
        p = subprocess.run([sys.executable, LIBRARY_TABLE, str(d)], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        tables.append(p.stdout)
    assert tables[0].count("\n| conv2d") == 4
    assert tables[1] == tables[0]


def test_library_table_refuses_a_missing_run_and_an_unknown_family(tmp_path):
    missing = subprocess.run([sys.executable, LIBRARY_TABLE, str(tmp_path / "nope")], capture_output=True, text=True,
                             timeout=60)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr, missing.stderr
    assert "not found" in missing.stderr and missing.stdout == ""
    d = tmp_path / "run"
    shutil.copytree(H100_FIXTURE, d)
    unknown = subprocess.run([sys.executable, LIBRARY_TABLE, str(d), "--family", "layer_fwdd"], capture_output=True,
                             text=True, timeout=60)
    assert unknown.returncode == 2 and "--family layer_fwdd" in unknown.stderr, unknown.stderr
