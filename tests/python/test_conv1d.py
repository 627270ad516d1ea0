"""Plots of the conv1d and conv1d_parts families, on tests/python/fixtures/run_conv1d (make_fixture.py
--conv1d) and on broken copies of it."""

import json
import os
import shutil
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.image as mpimg  # noqa: E402
import pytest  # noqa: E402

from convtune_plots import figures, load_run  # noqa: E402
from convtune_plots.analysis import crossover, fmt_dim, fmt_dims, problem_label  # noqa: E402
from test_plots import no_traceback, one_line_error, run_plot  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "fixtures", "run_conv1d")
SPATIAL = {"conv1d.direct", "conv1d.overlap_discard", "conv1d.overlap_add", "conv1d_parts.spatial"}
SPECTRAL = {"conv1d.overlap_discard_fft", "conv1d.overlap_add_fft", "conv1d.fused_fft", "conv1d_parts.spectral"}
# where the fixture's best own spectral variant first beats the best own spatial one, per panel
CROSSOVERS = {"n=2^20 valid": 1025, "n=2^26 valid": 129, "n=2^26 full": 129, "n=2^22 m=2^22": 4096}
EXPECTED = ["roofline_conv1d", "time_vs_m_conv1d", "best_map_conv1d", "convergence_conv1d",
            "sensitivity_conv1d.fused_fft_conv1d_m17_mode0_n67108864", "roofline_conv1d_parts",
            "time_vs_span_conv1d_parts", "best_map_conv1d_parts",
            "sensitivity_conv1d_parts.spectral_conv1d_parts_end4194559_m4194304_n4194304_start4194303"]


@pytest.fixture(scope="module")
def run():
    return load_run(FIXTURE)


def copy_fixture(tmp_path):
    dst = tmp_path / "run"
    shutil.copytree(FIXTURE, dst)
    return dst


def rewrite(d, edit):
    """records.jsonl of run folder d with edit(rec) applied to every record (None drops it)."""
    lines = (d / "records.jsonl").read_text().splitlines()
    out = [edit(json.loads(ln)) for ln in lines]
    (d / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in out if r is not None))


def panels(fig):
    return {ax.get_title(): ax for ax in fig.axes if ax.get_visible() and ax.get_title()}


def brute_crossover(run, family, group):
    """The crossover straight from the records: per x, min over ok records of each kind; first x where the
    spectral minimum is lower."""
    best = {"spatial": {}, "spectral": {}}
    for r in run.ok():
        if r["family"] != family or not group(r["problem"]):
            continue
        kind = "spatial" if r["variant"] in SPATIAL else "spectral" if r["variant"] in SPECTRAL else None
        p = r["problem"]
        x = p["m"] if family == "conv1d" else p["end"] - p["start"]
        if kind:
            best[kind][x] = min(r["time"]["median_ms"], best[kind].get(x, float("inf")))
    return next((x for x in sorted(best["spatial"]) if best["spectral"][x] < best["spatial"][x]), None)


# --- the fixture -----------------------------------------------------------------------------------


def test_fixture_is_what_make_fixture_writes(tmp_path):
    p = subprocess.run([sys.executable, os.path.join(HERE, "make_fixture.py"), "--conv1d", str(tmp_path / "gen")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    for name in ("summary.json", "records.jsonl"):
        assert (tmp_path / "gen" / name).read_bytes() == open(os.path.join(FIXTURE, name), "rb").read(), name


def test_fixture_is_plausible(run):
    """Spatial best times grow about linearly in m (×8 per step at large m), spectral ones stay flat."""
    assert run.families() == ["conv1d", "conv1d_parts"]
    assert {"ok", "skipped", "runtime_error", "wrong_result"} <= {r["status"] for r in run.records}
    for mode in (0, 1):
        def best(variants, m):
            return min(r["time"]["median_ms"] for r in run.ok() if r["variant"] in variants
                       and r["problem"] == {"family": "conv1d", "n": 1 << 26, "m": m, "mode": mode})
        assert 6 < best(SPATIAL, 8193) / best(SPATIAL, 1025) < 10
        assert 6 < best(SPATIAL, 1025) / best(SPATIAL, 129) < 10
        spectral = [best(SPECTRAL, m) for m in (17, 129, 1025, 8193)]
        assert max(spectral) / min(spectral) < 4


# --- analysis --------------------------------------------------------------------------------------


def test_crossover_rule():
    c = crossover({1: 1.0, 2: 2.0, 4: 4.0, 8: 8.0}, {1: 3.0, 2: 3.0, 4: 3.0, 8: 3.0})
    assert (c.before, c.at) == (2, 4)
    c = crossover({1: 1.0, 2: 2.0}, {1: 3.0, 2: 3.0})
    assert (c.before, c.at) == (2, None)  # spatial faster throughout
    c = crossover({1: 5.0, 2: 6.0}, {1: 3.0, 2: 3.0})
    assert (c.before, c.at) == (None, 1)  # spectral faster from the start
    c = crossover({1: 1.0, 2: 9.0, 3: 1.0}, {1: 2.0, 2: 2.0, 3: 2.0, 7: 0.1})
    assert (c.before, c.at, c.xs) == (1, 2, [1, 2, 3])  # the first win, on shared x only
    assert crossover({1: 1.0}, {2: 1.0}) is None


def test_labels():
    assert [fmt_dim(x) for x in (17, 1024, 65536, 1 << 26, (1 << 27) - 1, (1 << 26) + 1, 8193, 2.5)] == \
        ["17", "1024", "2^16", "2^26", "2^27-1", "2^26+1", "8193", "2.5"]
    assert fmt_dims([256, 4096, 65536]) == ["2^8", "2^12", "2^16"]
    assert fmt_dims([256, 4096]) == ["256", "4096"]
    rec = {"family": "conv1d", "problem_key": "conv1d/m=129,mode=0,n=67108864"}  # dims from the key
    assert problem_label(rec) == "n=2^26 m=129 valid"
    rec = {"problem": {"family": "conv1d_parts", "n": 1 << 22, "m": 1 << 22, "start": (1 << 22) - 1,
                       "end": (1 << 22) + 4095}, "problem_key": "conv1d_parts/x"}
    assert problem_label(rec) == "n=2^22 m=2^22 [2^22-1, +4096)"
    assert problem_label({"family": "conv1d", "problem_key": "conv1d/m=3"}) == "n=? m=3"


# --- figures ---------------------------------------------------------------------------------------


def test_time_vs_m(run):
    fig = figures.time_vs_shape(run, "conv1d")
    p = panels(fig)
    assert list(p) == ["n=2^20 valid", "n=2^26 valid", "n=2^26 full"]
    for title, ax in p.items():
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        assert [t.get_text() for t in ax.get_xticklabels()] == ["17", "129", "1025", "8193"]
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        assert "floor_ms (roofline bound)" in lines
        assert lines["fft (library)"].get_linestyle() == "--" and lines["cudnn (library)"].get_linestyle() == "--"
        assert lines["direct"].get_linestyle() == "-"
        assert list(lines["direct"].get_xdata()) == [17, 129, 1025, 8193]
        assert list(lines["fused_fft"].get_xdata()) == [17, 129, 1025]  # every fft_len too short at 8193
        # the crossover: a dotted line at the m where spectral first wins, and the annotation saying so
        at = CROSSOVERS[title]
        marks = [ln for ln in ax.get_lines() if ln.get_linestyle() == ":" and ln.get_label().startswith("_")]
        assert [list(ln.get_xdata()) for ln in marks] == [[at, at]]
        assert f"spectral faster\nfrom m={at}" in [t.get_text() for t in ax.texts]
    # the same answer straight from the records
    for title, group in (("n=2^20 valid", lambda d: d["n"] == 1 << 20),
                         ("n=2^26 valid", lambda d: d["n"] == 1 << 26 and d["mode"] == 0),
                         ("n=2^26 full", lambda d: d["mode"] == 1)):
        assert brute_crossover(run, "conv1d", group) == CROSSOVERS[title]


def test_time_vs_span_parts(run):
    fig = figures.time_vs_shape(run, "conv1d_parts")
    p = panels(fig)
    assert list(p) == ["n=2^22 m=2^22", "n=2^24 m=128"]
    a, b = p.values()
    assert [t.get_text() for t in a.get_xticklabels()] == ["2^8", "2^12", "2^16", "2^20"]
    assert "spectral faster\nfrom span=4096" in [t.get_text() for t in a.texts]
    assert brute_crossover(run, "conv1d_parts", lambda d: d["m"] == 1 << 22) == 4096
    assert brute_crossover(run, "conv1d_parts", lambda d: d["m"] == 128) is None
    assert [t.get_text() for t in b.texts] == ["spatial fastest at every span compared"]


def test_best_map_labels(run):
    ax = figures.best_map(run, "conv1d").axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["n=2^20 valid", "n=2^26 valid", "n=2^26 full"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["17", "129", "1025", "8193"]
    cells = [t.get_text().split("\n")[0] for t in ax.texts if "\nvs " in t.get_text()]
    assert len(cells) == 12 and cells.count("overlap_discard_fft") == 3  # the m=8193 row
    ax = figures.best_map(run, "conv1d_parts").axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["2^8", "2^12", "2^16", "2^20"]


def test_roofline_labels_are_readable_and_apart(run):
    fig = figures.roofline(run, "conv1d")
    ax = fig.axes[0]
    tags = [t for t in ax.texts if t.get_text().startswith("n=")]
    assert len(tags) == 12
    assert {"n=2^26 m=129 valid", "n=2^26 m=129 full", "n=2^20 m=8193 valid"} <= {t.get_text() for t in tags}
    fig.draw_without_rendering()
    boxes = [t.get_window_extent() for t in tags]
    inside = ax.get_window_extent()
    for i, b in enumerate(boxes):
        assert b.x1 <= inside.x1 + 1, tags[i].get_text()
        for c in boxes[i + 1:]:
            assert not b.overlaps(c), (tags[i].get_text(), b, c)


# --- plot.py end to end ----------------------------------------------------------------------------


def test_every_plot_is_written(tmp_path):
    p = run_plot(FIXTURE, "-o", tmp_path, "--format", "png")
    no_traceback(p)
    assert p.returncode == 0, p.stderr
    assert p.stderr == "", p.stderr  # a finished, clean run: no warning
    for name in EXPECTED:
        img = mpimg.imread(str(tmp_path / f"{name}.png"))
        assert img[..., :3].std() > 0.05, f"{name} looks blank"
    assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".png")) == sorted(n + ".png" for n in EXPECTED)
    html = (tmp_path / "report.html").read_text()
    assert html.count('src="data:image/png;base64,') == len(EXPECTED)
    assert "conv1d/m=129,mode=0,n=67108864" in html and "conv1d.fused_fft[fft_len=4096,threads=256]" in html


# --- malformed inputs ------------------------------------------------------------------------------


def test_missing_summary(tmp_path):
    d = copy_fixture(tmp_path)
    (d / "summary.json").unlink()
    one_line_error(run_plot(d, "-o", tmp_path / "out"), "summary.json", "not found")


def test_no_ok_records(tmp_path):
    d = copy_fixture(tmp_path)
    rewrite(d, lambda r: r if r["status"] != "ok" else None)
    one_line_error(run_plot(d, "-o", tmp_path / "out"), "no ok record")


def test_torn_and_garbage_lines(tmp_path):
    d = copy_fixture(tmp_path)
    with open(d / "records.jsonl", "a") as f:
        f.write('{"schema": 1, "problem_key": "conv1d/m=17,mode=0,n=1024", "candid')
    p = run_plot(d, "-o", tmp_path / "out", "--format", "png")
    no_traceback(p)
    assert p.returncode == 0 and "torn last line" in p.stderr, p.stderr
    (d / "records.jsonl").write_text("not json\n[1]\n")
    one_line_error(run_plot(d, "-o", tmp_path / "out"), "no readable records")


def test_dimensions_missing_or_not_numbers(tmp_path):
    """conv1d records without m, or with a mode that is text: the plots that need them are skipped with a
    warning, the rest is drawn; nothing raises."""
    d = copy_fixture(tmp_path)

    def edit(r):
        if r["family"] == "conv1d":
            r["problem"].pop("m")
            r["problem_key"] = r["problem_key"].replace("m=", "taps=")
            r["problem"]["mode"] = "valid"
        return r

    rewrite(d, edit)
    p = run_plot(d, "-o", tmp_path / "out", "--format", "png")
    no_traceback(p)
    assert p.returncode == 0, p.stderr
    assert "could not be drawn" not in p.stderr, p.stderr
    assert "time_vs_m_conv1d: no ok record with the dimensions" in p.stderr
    files = os.listdir(tmp_path / "out")
    assert "roofline_conv1d.png" in files and "time_vs_span_conv1d_parts.png" in files
    assert "time_vs_m_conv1d.png" not in files
