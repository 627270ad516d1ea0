"""The tensor-core ceilings in the plots and the report: the TF32 and 3xTF32 roofs where summary.json has
tf32_gflops, each point against the roof of its own math, runs from before the TF32 ceiling, and a device
without tensor cores. Numbers worked by hand: copy 3000 GB/s, FP32 60 TFLOP/s, TF32 480 TFLOP/s (3xTF32
160 TFLOP/s), one problem of 1e11 flops at 200 FLOP/byte."""

import json
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from convtune_plots import figures, load_run  # noqa: E402
from convtune_plots.analysis import math_fraction, math_of  # noqa: E402
from convtune_plots.report import device_table, math_table  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PLOT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts", "plot.py")
CEILINGS = {"copy_gbps": 3000.0, "fp32_gflops": 60000.0}
NO_TENSOR_CORES = "no TF32 tensor cores: compute capability 7.5 (TF32 needs 8.0 or later)"


def record(variant, math, ms, new=True, library=False):
    """An ok layer_fwd record of 1e11 flops at 200 FLOP/byte taking `ms`; `new`: as written since the TF32
    ceiling (math stated, floor_math_ms and roofline_fraction_math where the ceiling is known)."""
    rec = {"schema": 1, "problem": {"family": "layer_fwd", "n": 32}, "problem_key": "layer_fwd/n=32",
           "family": "layer_fwd", "variant": variant, "library": library, "config": {"math": math},
           "candidate": f"{variant}[math={math}]", "flops": 1e11, "flops_variant": 1e11, "bytes_min": 5e8,
           "bytes_model": 5e8, "intensity_min": 200.0, "intensity_model": 200.0, "floor_ms": 1e11 / 60e12 * 1e3,
           "floor_own_ms": 1e11 / 60e12 * 1e3, "complexity": 5, "status": "ok",
           "time": {"median_ms": ms, "rel_stderr": 0.002}}
    rec["roofline_fraction_own"] = rec["floor_own_ms"] / ms
    if new:
        rate = {"fp32": 60e12, "tf32": 480e12, "3xtf32": 160e12}[math]
        rec.update(math=math, floor_math_ms=1e11 / rate * 1e3, roofline_fraction_math=1e11 / rate * 1e3 / ms)
    return rec


# 40, 100 and 250 TFLOP/s: the 3xTF32 and TF32 points pass the FP32 roof but not their own.
def records(new=True):
    return [record("layer_fwd.direct_tiled", "fp32", 2.5, new),
            record("layer_fwd.implicit_gemm_wgmma_ws", "3xtf32", 1.0, new),
            record("layer_fwd.cudnn", "tf32", 0.4, new, library=True)]


def write_run(path, ceilings, recs):
    path.mkdir()
    (path / "summary.json").write_text(json.dumps({"schema": 1, "spec": {"name": "tensor"},
                                                   "device": {"name": "Test GPU"}, "ceilings": ceilings,
                                                   "finished": "2026-12-01T12:00:00Z"}))
    (path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return load_run(str(path))


@pytest.fixture
def tensor_run(tmp_path):
    return write_run(tmp_path / "tensor", dict(CEILINGS, tf32_gflops=480000.0), records())


@pytest.fixture
def old_run(tmp_path):
    return write_run(tmp_path / "old", CEILINGS, records(new=False))


def lines_by_gid(fig, prefix):
    return [ln for ax in fig.axes for ln in ax.get_lines() if (ln.get_gid() or "").startswith(prefix)]


def footnote(fig):
    return " ".join(t.get_text().replace("\n", " ") for t in fig.axes[0].texts)


def test_math_ceilings(tensor_run, old_run):
    assert tensor_run.math_ceilings == {"fp32": 60000.0, "tf32": 480000.0, "3xtf32": 160000.0}
    assert old_run.math_ceilings == {"fp32": 60000.0}


def test_math_and_fraction_of_a_record():
    new_split, new_tf32 = records()[1], records()[2]
    assert math_of(new_split) == "3xtf32" and math_fraction(new_split) == pytest.approx(0.625)  # 0.625 ms / 1 ms
    assert math_fraction(new_tf32) == pytest.approx(0.5208333)  # (1e11 / 480e12 s) / 0.4 ms
    old_split, old_fp32 = records(new=False)[1], records(new=False)[0]
    assert math_of(old_split) == "3xtf32" and math_fraction(old_split) is None  # no ceiling of its math
    assert math_of(old_fp32) == "fp32" and math_fraction(old_fp32) == pytest.approx(2 / 3)  # (1e11 / 60e12) / 2.5 ms
    assert math_of({"details": {"math": "tf32"}, "config": {"math": "fp32"}}) == "tf32"
    assert math_of({"config": {"tile": 8}}) == "fp32"
    assert math_fraction({"math": "3xtf32", "floor_math_ms": 7.5, "time": {"median_ms": 25.0}}) == pytest.approx(0.3)


def test_roofline_draws_the_tensor_roofs(tensor_run):
    fig = figures.roofline(tensor_run, "layer_fwd")
    roofs = {ln.get_gid(): max(ln.get_ydata()) for ln in lines_by_gid(fig, "roof_")}
    assert roofs == {"roof_tf32": pytest.approx(480000.0), "roof_3xtf32": pytest.approx(160000.0)}
    labels = {t.get_text() for t in fig.axes[0].get_legend().get_texts()}
    assert "roof of TF32 math: min(TF32, copy bandwidth × I)" in labels
    assert "roof of 3xTF32 math: min(3xTF32, copy bandwidth × I)" in labels
    assert fig.axes[0].get_ylim()[1] > 480000.0


def test_each_point_joins_its_own_maths_roof(tensor_run):
    fig = figures.roofline(tensor_run, "layer_fwd")
    links = {ln.get_gid(): (list(ln.get_xdata()), list(ln.get_ydata())) for ln in lines_by_gid(fig, "own_roof_link")}
    # From the point up to its own roof at its intensity (200 FLOP/B: both roofs are flat there); FP32 has none.
    assert links == {"own_roof_link_3xtf32": ([200.0, 200.0], [pytest.approx(100000.0), pytest.approx(160000.0)]),
                     "own_roof_link_tf32": ([200.0, 200.0], [pytest.approx(250000.0), pytest.approx(480000.0)])}
    # Below their own roofs, the tensor points are not "above the roof", as they are against FP32's.
    text = footnote(fig)
    assert "above their math's roof" not in text
    assert "no tensor-core roof" not in text


def test_run_from_before_the_tensor_ceiling(old_run):
    fig = figures.roofline(old_run, "layer_fwd")
    assert fig is not None
    assert not lines_by_gid(fig, "roof_") and not lines_by_gid(fig, "own_roof_link")
    text = footnote(fig)
    assert "3xtf32, tf32 points: no tensor-core roof" in text
    assert "a run from before the TF32 ceiling" in text
    # The best, cuDNN's tf32 record, has no ceiling of its math to be judged against.
    assert math_table(old_run).rows == [["layer_fwd/n=32", "layer_fwd.cudnn[math=tf32]", "tf32", "250,000", "–", "–"]]


def test_report_states_each_best_against_its_maths_ceiling(tensor_run):
    rows = math_table(tensor_run).rows
    assert rows == [["layer_fwd/n=32", "layer_fwd.cudnn[math=tf32]", "tf32", "250,000", "480,000", "52.1%"]]
    device = dict(device_table(tensor_run).rows)
    assert device["measured TF32 tensor-core throughput"] == "480,000 GFLOP/s (3xTF32: a third, 160,000)"


def test_device_without_tensor_cores(tmp_path):
    run = write_run(tmp_path / "turing", dict(CEILINGS, tf32_unavailable=NO_TENSOR_CORES), records(new=False)[:1])
    assert dict(device_table(run).rows)["measured TF32 tensor-core throughput"] == NO_TENSOR_CORES
    fig = figures.roofline(run, "layer_fwd")
    assert fig is not None and not lines_by_gid(fig, "roof_")
    split = write_run(tmp_path / "turing_split", dict(CEILINGS, tf32_unavailable=NO_TENSOR_CORES),
                      records(new=False)[:2])
    assert NO_TENSOR_CORES in footnote(figures.roofline(split, "layer_fwd"))


def test_plot_script_end_to_end(tensor_run, tmp_path):
    p = subprocess.run([sys.executable, PLOT, tensor_run.path, "-o", str(tmp_path / "out"), "--format", "png"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    md = (tmp_path / "out" / "report.md").read_text()
    assert "## Best candidate per problem against the ceiling of its math" in md
    assert "| layer_fwd/n=32 | layer_fwd.cudnn[math=tf32] | tf32 | 250,000 | 480,000 | 52.1% |" in md
    assert (tmp_path / "out" / "roofline_layer_fwd.png").stat().st_size > 5000
