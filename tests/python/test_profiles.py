"""Nsight Compute profiles (profiles.jsonl) in the roofline and the report, on copies of the run_small fixture
with a profiles.jsonl written here."""

import json
import os
import shutil
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from convtune_plots import figures, load_run  # noqa: E402
from convtune_plots.analysis import achieved_gflops, latest_ok, select_best  # noqa: E402
from convtune_plots.report import best_table, html_report, markdown, spill_warnings  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PLOT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts", "plot.py")
FIXTURE = os.path.join(HERE, "fixtures", "run_small")

SPILLER = "conv2d/h=1024,r=3,w=1024"  # its best profile spills
THROTTLED = "conv2d/h=4096,r=1,w=4096"  # its best record was measured while the GPU throttled
BARE = "conv2d/h=1024,r=7,w=1024"  # its best profile has none of the optional keys
FAILED = "conv2d/h=4096,r=3,w=4096"  # its best profile failed
TOP_CAND = "conv2d.register_tiled[block_x=16,block_y=8,px=4,py=1]"  # profiled, not a best of any variant
LIMITER = "memory-bound at 84% of DRAM peak"


def profile(rec, why="best", over=1.25, spill=0, limiter=LIMITER):
    """A profile of a record as the C++ side writes it; measured bytes = modelled bytes / over."""
    measured = rec["bytes_model"] / over
    return {"schema": 1, "problem_key": rec["problem_key"], "candidate": rec["candidate"],
            "variant": rec["variant"], "family": rec["family"], "library": rec["library"], "why": why,
            "record_key": rec["problem_key"] + "|" + rec["candidate"], "timestamp": "2026-11-23T15:00:00Z",
            "device": "NVIDIA H100 80GB HBM3", "status": "ok",
            "ncu": {"version": "2025.3.1.0", "clock_control": "none", "report": "profiles/0001.ncu-rep"},
            "kernels": [{"id": 0, "name": "k", "grid": "(1024, 1, 1)", "block": "(256, 1, 1)",
                         "duration_ms": 0.18, "dram_bytes": measured}],
            "metrics": {"duration_ms": 0.18, "dram_read_bytes": measured * 0.6, "dram_write_bytes": measured * 0.4,
                        "dram_bytes": measured, "l2_hit_pct": 51.6, "achieved_occupancy_pct": 93.5,
                        "registers_per_thread": 77, "local_spill_bytes": spill, "spill_instructions": 8 * spill,
                        "stalls": [{"reason": "long_scoreboard", "cycles_per_issue": 381.3, "share": 0.95}],
                        "kernels": 1},
            "derived": {"bytes_measured": measured, "intensity_measured": rec["flops"] / measured,
                        "bytes_model_over_measured": over, "limiter": limiter, "limiter_kind": "memory"}}


def write_profiles(d, lines, torn_tail=True):
    text = "".join(json.dumps(p) + "\n" for p in lines)
    if torn_tail:  # a crash mid-write
        text += json.dumps(lines[0])[:60]
    (d / "profiles.jsonl").write_text(text)


def throttle(d, problem_key, candidate):
    lines = (d / "records.jsonl").read_text().split("\n")
    for i, line in enumerate(lines):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue  # the fixture's torn last line stays as it is
        if rec["problem_key"] == problem_key and rec["candidate"] == candidate:
            rec.update(throttled=True, throttle_reason="sw_thermal", clocks={"sm_mhz": 1410})
            lines[i] = json.dumps(rec)
    (d / "records.jsonl").write_text("\n".join(lines))


@pytest.fixture(scope="module")
def profiled_dir(tmp_path_factory):
    """A copy of run_small with a profiles.jsonl: every problem's best (one spilling, one failed, one bare, one
    profiled twice), one more candidate of a problem (why 'top'), a torn last line; one best throttled."""
    d = tmp_path_factory.mktemp("profiled") / "run"
    shutil.copytree(FIXTURE, d)
    run = load_run(str(d))
    best = select_best(run.records)
    lines = []
    for key, c in best.items():
        b = c.best
        why = "best_library" if b.get("library") else "best"
        if key == BARE:
            lines.append({"problem_key": key, "candidate": b["candidate"], "status": "ok", "metrics": None,
                          "derived": [1, 2]})
        elif key == FAILED:
            lines.append(profile(b, why, limiter="stale: replaced by the failure below"))
            lines.append({"problem_key": key, "candidate": b["candidate"], "why": why, "status": "failed",
                          "reason": "ERR_NVGPUCTRPERM: no permission to read the GPU's counters"})
        elif key == SPILLER:
            lines.append(profile(b, why, limiter="stale: replaced by the next line"))
            lines.append(profile(b, why, spill=3 * 2**20))
        else:
            lines.append(profile(b, why))
    top = latest_ok(run.records)["conv2d/h=1024,r=1,w=1024"][TOP_CAND]
    lines.append(profile(top, "top", over=0.8))
    lines.append({"candidate": "no problem key"})
    write_profiles(d, lines)
    throttle(d, THROTTLED, best[THROTTLED].best["candidate"])
    return d


@pytest.fixture(scope="module")
def prun(profiled_dir):
    return load_run(str(profiled_dir))


@pytest.fixture(scope="module")
def run_without_profiles():
    return load_run(FIXTURE)


# --- load.py ----------------------------------------------------------------------------------------


def test_profiles_are_loaded_later_lines_win(prun):
    best = select_best(prun.records)
    assert len(prun.profiles) == 7  # six bests and the 'top' one; duplicates merged, bad lines skipped
    spill = prun.profile_of(best[SPILLER].best)
    assert spill["derived"]["limiter"] == LIMITER and spill["metrics"]["local_spill_bytes"] == 3 * 2**20
    assert prun.profile_of(best[FAILED].best)["status"] == "failed"
    assert prun.profiles[("conv2d/h=1024,r=1,w=1024", TOP_CAND)]["why"] == "top"


def test_profiles_torn_and_bad_lines_are_warnings(prun):
    assert any(w.startswith("profiles.jsonl:") and "torn last line" in w for w in prun.warnings), prun.warnings
    assert any(w.startswith("profiles.jsonl:") and "profile without problem_key" in w for w in prun.warnings)


def test_no_profiles_file(run_without_profiles):
    assert run_without_profiles.profiles == {}


# --- roofline ---------------------------------------------------------------------------------------


def profiled_collections(fig):
    return [c for c in fig.axes[0].collections if c.get_gid() == "profiled"]


def legend_texts(fig):
    leg = fig.axes[0].get_legend()
    return {t.get_text() for t in leg.get_texts()} if leg else set()


def test_roofline_draws_measured_points(prun):
    fig = figures.roofline(prun, "conv2d")
    cols = profiled_collections(fig)
    assert len(cols) == 1
    got = sorted(map(tuple, cols[0].get_offsets().tolist()))
    ok = latest_ok(prun.records)
    want = []  # every ok profile with a measured intensity: not the bare one, not the failed one
    for (key, cand), p in prun.profiles.items():
        if p.get("status") == "ok" and isinstance(p.get("derived"), dict):
            rec = ok[key][cand]
            want.append((p["derived"]["intensity_measured"], achieved_gflops(rec)))
    assert len(want) == 5
    assert [c for pt in got for c in pt] == pytest.approx([c for pt in sorted(want) for c in pt])
    assert cols[0].get_facecolors().size == 0 or cols[0].get_facecolors()[:, 3].max() == 0  # hollow
    links = [ln for ln in fig.axes[0].get_lines() if ln.get_gid() == "profiled_link"]
    assert len(links) == 5
    for ln in links:  # from the measured intensity to the modelled one, at one GFLOP/s
        x, y = ln.get_xdata(), ln.get_ydata()
        assert y[0] == y[1] and x[0] != x[1]
    assert figures.PROFILED_LABEL in legend_texts(fig)
    assert fig.axes[0].get_xlim()[0] < min(w[0] for w in want)


def test_roofline_unchanged_without_profiles(run_without_profiles):
    fig = figures.roofline(run_without_profiles, "conv2d")
    assert not profiled_collections(fig)
    assert figures.PROFILED_LABEL not in legend_texts(fig)
    assert not [ln for ln in fig.axes[0].get_lines() if ln.get_gid() == "profiled_link"]


# --- report -----------------------------------------------------------------------------------------


def test_best_table_limiter_and_measured_bytes(prun):
    t = best_table(prun)
    assert t.headers[-2:] == ["limiter", "measured / model bytes"]
    rows = {r[0]: r for r in t.rows}
    assert rows["conv2d/h=1024,r=1,w=1024"][-2] == LIMITER
    assert rows["conv2d/h=1024,r=1,w=1024"][-1] == "32 MiB / 40 MiB"  # 41943040 / 1.25 and 41943040 bytes
    assert rows[BARE][-2:] == ["–", "– / 10.4 MiB"]
    assert rows[FAILED][-2:] == ["profile failed", "–"]
    assert rows[THROTTLED][1].endswith(" ⚠ throttled (sw_thermal)")
    assert sum("throttled" in r[1] for r in t.rows) == 1
    assert len(t.align) == len(t.headers)


def test_best_table_unchanged_without_profiles(run_without_profiles):
    t = best_table(run_without_profiles)
    assert "limiter" not in t.headers and len(t.headers) == 8
    assert not any("throttled" in r[1] for r in t.rows)


def test_spill_warnings(prun, run_without_profiles, tmp_path):
    best = select_best(prun.records)
    w = spill_warnings(prun)
    assert w == [f"⚠ {SPILLER}: best candidate {best[SPILLER].best['candidate']} spills registers to local memory "
                 "(3 MiB of local traffic measured by ncu)"]
    assert spill_warnings(run_without_profiles) == []
    # without a profile: from the timing record's kernel.local_bytes (per thread)
    d = tmp_path / "run"
    shutil.copytree(FIXTURE, d)
    key = "conv2d/h=4096,r=1,w=4096"
    cand = select_best(run_without_profiles.records)[key].best["candidate"]
    text = (d / "records.jsonl").read_text()
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if f'"candidate":"{cand}"' in line and f'"problem_key":"{key}"' in line:
            lines[i] = line.replace('"local_bytes":0', '"local_bytes":48')
    (d / "records.jsonl").write_text("\n".join(lines))
    w = spill_warnings(load_run(str(d)))
    assert w == [f"⚠ {key}: best candidate {cand} spills registers to local memory "
                 "(48 bytes of local memory per thread)"]


def test_report_profiles_section(prun):
    md = markdown(prun, [])
    assert "## Profiles\n" in md
    assert "| problem | candidate | why | median ms | model bytes | measured bytes | model / measured | " \
           "measured intensity | limiter | achieved occupancy | registers | spills |" in md
    top = next(ln for ln in md.splitlines() if ln.startswith("| conv2d/h=1024,r=1,w=1024 | " + TOP_CAND))
    cells = [c.strip() for c in top.strip("|").split("|")]
    rec = latest_ok(prun.records)["conv2d/h=1024,r=1,w=1024"][TOP_CAND]
    assert cells[2] == "top"
    assert cells[3] == f"{rec['time']['median_ms']:.4g}"
    assert cells[6] == "0.8" and cells[8] == LIMITER and cells[9] == "94%" and cells[10] == "77"
    assert cells[11] == "0 B"
    bare = next(ln for ln in md.splitlines() if ln.startswith(f"| {BARE} | ") and "| – | – | – | – |" in ln)
    assert bare.count("–") >= 6
    assert "## Register spills in chosen candidates" in md and "spills registers to local memory (3 MiB" in md
    assert "## Profiles that failed" in md and "ERR_NVGPUCTRPERM: no permission" in md
    assert "stale" not in md  # replaced lines are not shown
    assert "ncu 2025.3.1.0, clock control none" in md


def test_report_html_profiles(prun):
    html = html_report(prun, [])
    assert "<h2>Profiles</h2>" in html and "<th>measured / model bytes</th>" in html
    assert "32 MiB / 40 MiB" in html and LIMITER in html
    assert "⚠ throttled (sw_thermal)" in html
    assert "spills registers to local memory (3 MiB of local traffic measured by ncu)" in html
    assert "ERR_NVGPUCTRPERM" in html


def test_report_without_profiles_has_no_profile_sections(run_without_profiles):
    md = markdown(run_without_profiles, [])
    assert "## Profiles" not in md and "spills" not in md and "limiter" not in md


def test_plot_py_end_to_end_with_profiles(profiled_dir, tmp_path):
    p = subprocess.run([sys.executable, PLOT, str(profiled_dir), "-o", str(tmp_path), "--format", "png"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and "could not be drawn" not in p.stderr, p.stderr
    assert "profiles.jsonl:" in p.stderr and "torn last line" in p.stderr
    md = (tmp_path / "report.md").read_text()
    assert LIMITER in md and "32 MiB / 40 MiB" in md and "spills registers" in md
    assert (tmp_path / "roofline_conv2d.png").stat().st_size > 8000


def test_profiles_of_odd_shapes_do_not_crash(tmp_path):
    """Profiles with keys of the wrong type, of unknown candidates, or with nothing but the two keys."""
    d = tmp_path / "run"
    shutil.copytree(FIXTURE, d)
    run = load_run(str(d))
    b = select_best(run.records)["conv2d/h=1024,r=1,w=1024"].best
    odd = [{"problem_key": b["problem_key"], "candidate": b["candidate"], "status": "ok",
            "metrics": {"dram_bytes": "many", "achieved_occupancy_pct": None, "local_spill_bytes": float("nan")},
            "derived": {"limiter": 5, "intensity_measured": -1}, "ncu": "2025"},
           {"problem_key": "conv2d/h=1,r=1,w=1", "candidate": "conv2d.nope", "status": "ok", "derived":
            {"intensity_measured": 3.0}}, {"problem_key": "conv2d/h=1,r=1,w=1", "candidate": "conv2d.x",
                                          "status": "failed"}]
    write_profiles(d, odd, torn_tail=False)
    run = load_run(str(d))
    assert len(run.profiles) == 3
    fig = figures.roofline(run, "conv2d")
    assert not profiled_collections(fig)  # nothing with a usable measured intensity and a record
    assert any("1 profiles match no ok timing record" in w for w in run.warnings), run.warnings
    md = markdown(run, [])
    row = next(ln for ln in md.splitlines() if ln.startswith(f"| {b['problem_key']} | {b['candidate']} | – |"))
    assert row.count("–") >= 7
    assert "conv2d.x (–): (no reason given)" in md
    assert html_report(run, [])
