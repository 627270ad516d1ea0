"""report.md and a self-contained report.html (plots embedded as base64 PNG) for a run folder."""

from __future__ import annotations

import base64
import html
import json
from dataclasses import dataclass, field
from typing import Optional

from .analysis import (
    achieved_gflops, fmt_margin, gbps, latest_ok, local_memory, math_fraction, math_of, measured_bytes,
    measured_intensity, model_over_measured, roofline_fraction, select_best, short_variant,
)
from .load import Run, count_statuses, family_of, median_ms, num, pmetric, profile_ok, ptext, variant_of


@dataclass
class Plot:
    """A drawn figure: its base name, a one-line caption, files written (format -> path relative to the
    report) and the PNG bytes for embedding."""

    name: str
    caption: str
    files: dict = field(default_factory=dict)
    png: bytes = b""


@dataclass
class Table:
    headers: list
    rows: list
    align: str = ""  # one char per column: l or r


# --- content ---------------------------------------------------------------------------------------


def _fmt(x, digits=3, unit=""):
    v = num(x)
    if v is None:
        return "–"
    s = f"{v:.{digits}g}" if abs(v) < 10 ** digits else f"{v:,.0f}"
    return s + unit


def _bytes(x):
    v = num(x)
    if v is None:
        return "–"
    for div, u in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if v >= div:
            return f"{v / div:.3g} {u}"
    return f"{v:.0f} B"


def _cuda_version(v):
    """12040 -> '12.4 (12040)' (CUDA's 1000 * major + 10 * minor)."""
    if isinstance(v, int) and not isinstance(v, bool) and v >= 1000:
        return f"{v // 1000}.{v % 1000 // 10} ({v})"
    return str(v)


def _cudnn_version(v):
    """90100 -> '9.1.0 (90100)'; 8902 -> '8.9.2 (8902)'."""
    if isinstance(v, int) and not isinstance(v, bool) and v >= 1000:
        major, rest = (v // 10000, v % 10000) if v >= 90000 else (v // 1000, v % 1000)
        return f"{major}.{rest // 100}.{rest % 100} ({v})"
    return str(v)


def _fraction(rf):
    """floor_ms / time as a percentage; as '×12.3' from ten times up, where a method doing less arithmetic than
    direct convolution (FFT) beats the direct-FLOP floor and '1234.5%' reads badly."""
    if rf is None:
        return "–"
    return f"×{rf:.3g}" if rf >= 10 else f"{100 * rf:.1f}%"


def device_table(run: Run) -> Table:
    d = run.device
    rows = []
    fields = [
        ("name", "GPU", str), ("arch", "architecture", str), ("compute_capability", "compute capability", str),
        ("sms", "SMs", str), ("global_mem_bytes", "global memory", _bytes), ("l2_bytes", "L2 cache", _bytes),
        ("max_smem_per_block_optin", "shared memory per block (opt-in)", _bytes),
        ("max_smem_per_sm", "shared memory per SM", _bytes), ("regs_per_sm", "registers per SM", str),
        ("sm_clock_khz", "SM clock", lambda v: f"{v / 1000:.0f} MHz" if num(v) else str(v)),
        ("mem_clock_khz", "memory clock", lambda v: f"{v / 1000:.0f} MHz" if num(v) else str(v)),
        ("mem_bus_bits", "memory bus", lambda v: f"{v} bit"),
        ("driver_version", "driver (CUDA version)", _cuda_version),
        ("runtime_version", "CUDA runtime", _cuda_version),
        ("cudnn_version", "cuDNN", _cudnn_version), ("cufft_version", "cuFFT", str), ("nvrtc_version", "NVRTC", str),
    ]
    for key, label, f in fields:
        if key in d and d[key] is not None:
            try:
                rows.append([label, f(d[key])])
            except (TypeError, ValueError):
                rows.append([label, str(d[key])])
    bw, fp = run.ceilings
    rows.append(["measured copy bandwidth", f"{bw:,.0f} GB/s" if bw else "not measured"])
    rows.append(["measured FP32 throughput", f"{fp:,.0f} GFLOP/s" if fp else "not measured"])
    if bw and fp:
        rows.append(["ridge intensity", f"{fp / bw:.3g} FLOP/byte"])
    tf32 = run.math_ceilings.get("tf32")
    rows.append(["measured TF32 tensor-core throughput",
                 f"{tf32:,.0f} GFLOP/s (3xTF32: a third, {tf32 / 3:,.0f})" if tf32
                 else run.tf32_unavailable or "not measured"])
    return Table(["", ""], rows, "ll")


def run_table(run: Run) -> Table:
    s = run.summary
    rows = [["run folder", run.path], ["sweep", run.name]]
    for key, label in (("version", "convtune version"), ("git_sha", "git commit"), ("started", "started")):
        if s.get(key) is not None:
            rows.append([label, str(s[key])])
    rows.append(["finished", str(s["finished"]) if s.get("finished") else "no (crashed or interrupted)"])
    if s.get("interrupted") is True:
        rows.append(["interrupted", "yes (stopped by a signal; a --resume run can finish it)"])
    if num(s.get("wall_s")) is not None:
        rows.append(["wall time", f"{s['wall_s']:.0f} s"])
    if isinstance(s.get("argv"), list):
        rows.append(["command", " ".join(str(a) for a in s["argv"])])
    return Table(["", ""], rows, "ll")


def status_table(run: Run) -> Table:
    counts = count_statuses(run.records)
    summ = run.summary.get("counts") if isinstance(run.summary.get("counts"), dict) else {}
    statuses = list(counts) + [k for k in summ if k not in counts]
    rows = [[s, str(counts.get(s, 0)), str(summ.get(s, "–"))] for s in statuses]
    rows.append(["total", str(len(run.records)), str(sum(v for v in summ.values() if num(v) is not None) or "–")])
    return Table(["status", "records read", "summary.json counts"], rows, "lrr")


def variant_status_table(run: Run) -> Table:
    statuses = list(count_statuses(run.records))
    per: dict = {}
    for r in run.records:
        per.setdefault(variant_of(r), {}).setdefault(r["status"], 0)
        per[variant_of(r)][r["status"]] += 1
    rows = [[v] + [str(per[v].get(s, 0) or "") for s in statuses] for v in sorted(per)]
    return Table(["variant"] + statuses, rows, "l" + "r" * len(statuses))


def reasons_table(run: Run, limit: int = 15) -> Optional[Table]:
    seen: dict = {}
    for r in run.records:
        if r["status"] != "ok":
            reason = str(r.get("reason") or "(no reason given)").splitlines()[0][:160]
            k = (r["status"], variant_of(r), reason)
            seen[k] = seen.get(k, 0) + 1
    if not seen:
        return None
    rows = [[s, v, str(n), reason] for (s, v, reason), n in sorted(seen.items(), key=lambda kv: -kv[1])[:limit]]
    return Table(["status", "variant", "records", "reason (first line)"], rows, "llrl")


def _throttle(rec: dict) -> str:
    """' ⚠ throttled (sw_thermal)' for a record measured while the GPU throttled, else ''."""
    if rec.get("throttled") is not True:
        return ""
    why = rec.get("throttle_reason")
    return f" ⚠ throttled ({why})" if isinstance(why, str) and why else " ⚠ throttled"


def _ok_profile(run: Run, rec: dict) -> Optional[dict]:
    prof = run.profile_of(rec)
    return prof if prof is not None and profile_ok(prof) else None


def best_table(run: Run) -> Table:
    best = select_best(run.records)
    order = sorted(best, key=lambda k: (run.families().index(family_of(best[k].best)),
                                        run.problems().index(k) if k in run.problems() else 0))
    profiled = any(_ok_profile(run, c.best) for c in best.values())
    rows = []
    for k in order:
        c = best[k]
        b = c.best
        rf = roofline_fraction(b)
        ru = "–"
        if c.runner_up is not None:
            ru = f"{short_variant(variant_of(c.runner_up))} ({_fmt(median_ms(c.runner_up), 4)} ms)"
        margin = fmt_margin(c.margin)
        ties = str(len(c.ties)) if c.ties else ""
        row = [k, b["candidate"] + _throttle(b), _fmt(median_ms(b), 4), _fmt(gbps(b), 4),
               _fraction(rf), ru, margin, ties]
        if profiled:
            prof = run.profile_of(b)
            if prof is None:
                row += ["–", "–"]
            elif not profile_ok(prof):
                row += ["profile failed", "–"]
            else:
                row += [ptext(prof, "limiter") or "–",
                        f"{_bytes(measured_bytes(prof))} / {_bytes(b.get('bytes_model'))}"]
        rows.append(row)
    heads = ["problem", "best candidate", "median ms", "GB/s", "roofline", "runner-up variant", "margin", "ties"]
    if profiled:
        return Table(heads + ["limiter", "measured / model bytes"], rows, "llrrrlrrlr")
    return Table(heads, rows, "llrrrlrr")


def math_table(run: Run) -> Table:
    """Each problem's best candidate against the ceiling of the math it ran on (as `convtune best`'s %math)."""
    best = select_best(run.records)
    ceilings = run.math_ceilings
    rows = []
    problems = run.problems()
    for k in sorted(best, key=lambda k: (run.families().index(family_of(best[k].best)),
                                         problems.index(k) if k in problems else 0)):
        b = best[k].best
        m = math_of(b)
        rows.append([k, b["candidate"], m, _fmt(achieved_gflops(b), 4), _fmt(ceilings.get(m), 4),
                     _fraction(math_fraction(b))])
    return Table(["problem", "best candidate", "math", "GFLOP/s", "ceiling of its math (GFLOP/s)",
                  "of its math's ceiling"], rows, "lllrrr")


def spill_warnings(run: Run) -> list:
    """A line per problem whose chosen candidate uses local memory (register spills or local arrays)."""
    out = []
    for k, c in select_best(run.records).items():
        traffic, per_thread = local_memory(c.best, _ok_profile(run, c.best))
        what = [f"{_bytes(traffic)} of local traffic measured by ncu"] if traffic else []
        what += [f"{per_thread:.0f} bytes of local memory per thread"] if per_thread else []
        if what:
            out.append(f"⚠ {k}: best candidate {c.best['candidate']} spills registers to local memory "
                       f"({'; '.join(what)})")
    return out


def _pct(x) -> str:
    v = num(x)
    return "–" if v is None else f"{v:.0f}%"


def profiles_table(run: Run) -> Optional[Table]:
    """One row per ok profile (the latest of each candidate), in profiles.jsonl order."""
    ok = latest_ok(run.records)
    rows = []
    for (key, cand), prof in run.profiles.items():
        if not profile_ok(prof):
            continue
        rec = ok.get(key, {}).get(cand)
        kernel = rec.get("kernel") if rec and isinstance(rec.get("kernel"), dict) else {}
        regs = pmetric(prof, "registers_per_thread")
        regs = regs if regs is not None else num(kernel.get("registers"))
        rows.append([key, cand, str(prof.get("why") or "–"), _fmt(median_ms(rec) if rec else None, 4),
                     _bytes(rec.get("bytes_model") if rec else None), _bytes(measured_bytes(prof)),
                     _fmt(model_over_measured(prof, rec), 3), _fmt(measured_intensity(prof, rec), 3),
                     ptext(prof, "limiter") or "–", _pct(pmetric(prof, "achieved_occupancy_pct")),
                     _fmt(regs, 3), _bytes(pmetric(prof, "local_spill_bytes"))])
    if not rows:
        return None
    return Table(["problem", "candidate", "why", "median ms", "model bytes", "measured bytes", "model / measured",
                  "measured intensity", "limiter", "achieved occupancy", "registers", "spills"],
                 rows, "lllrrrrrlrrr")


def failed_profiles(run: Run) -> list:
    return [f"{key}: {cand} ({p.get('why') or '–'}): {str(p.get('reason') or '(no reason given)').splitlines()[0]}"
            for (key, cand), p in run.profiles.items() if not profile_ok(p)]


def _profiles_note(run: Run) -> str:
    ncu = [p["ncu"] for p in run.profiles.values() if isinstance(p.get("ncu"), dict)]
    tools = sorted({f"ncu {n.get('version', '?')}, clock control {n.get('clock_control', '?')}" for n in ncu})
    return ("Nsight Compute profiles (profiles.jsonl): median ms and model bytes from the timing record; measured "
            "bytes: DRAM read + write; measured intensity: direct-equivalent FLOPs / measured bytes; spills: local "
            "memory traffic." + (f" Profiled with {'; '.join(tools)}." if tools else ""))


def compare_table(run_a: Run, run_b: Run) -> Optional[Table]:
    ba, bb = select_best(run_a.records), select_best(run_b.records)
    keys = [p for p in run_a.problems() if p in ba and p in bb]
    if not keys:
        return None
    rows = []
    for k in keys:
        ta, tb = median_ms(ba[k].best), median_ms(bb[k].best)
        rows.append([k, ba[k].best["candidate"], _fmt(ta, 4), bb[k].best["candidate"], _fmt(tb, 4),
                     f"{tb / ta:.2f}×"])
    return Table(["problem", "A best", "A ms", "B best", "B ms", "B/A"], rows, "llrlrr")


# --- rendering -------------------------------------------------------------------------------------


def _md_cell(s) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def table_md(t: Table) -> str:
    align = t.align or "l" * len(t.headers)
    heads = [h if h else " " for h in t.headers]
    out = ["| " + " | ".join(_md_cell(h) for h in heads) + " |",
           "|" + "|".join("---:" if a == "r" else ":---" for a in align) + "|"]
    out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in t.rows]
    return "\n".join(out)


def table_html(t: Table, cls: str = "") -> str:
    align = t.align or "l" * len(t.headers)
    out = [f'<table class="{cls}">' if cls else "<table>"]
    if any(t.headers):
        out.append("<thead><tr>" + "".join(f"<th>{html.escape(str(h))}</th>" for h in t.headers) + "</tr></thead>")
    out.append("<tbody>")
    for row in t.rows:
        out.append("<tr>" + "".join(
            f'<td class="{"r" if a == "r" else "l"}">{html.escape(str(c))}</td>' for c, a in zip(row, align))
            + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _sections(run: Run, compare_run: Optional[Run]) -> list:
    """[(heading, Table or text or None)] shared by both renderings."""
    secs = [("Run", run_table(run)), ("Device and ceilings", device_table(run)),
            ("Records by status", status_table(run)), ("Records by variant and status", variant_status_table(run)),
            ("Best candidate per problem", best_table(run))]
    secs.append(("", "Best: the fastest ok candidate, or a simpler one within measurement noise of it (as "
                     "`convtune best`). Margin: runner-up variant's best time / best time − 1. Ties: other "
                     "candidates within noise. Roofline: floor_ms / median time."))
    secs.append(("Best candidate per problem against the ceiling of its math", math_table(run)))
    secs.append(("", "The candidate's own work (flops_variant) against the roof of the math it ran on: FP32 FMA, "
                     "TF32 tensor cores, or a third of TF32 for the 3xTF32 split (three products a multiply-add); – "
                     "where the run measured no ceiling of that math. GFLOP/s: direct-equivalent flops / median time."))
    spills = spill_warnings(run)
    if spills:
        secs.append(("Register spills in chosen candidates", ("list", spills)))
    pt = profiles_table(run)
    if pt:
        secs += [("Profiles", pt), ("", _profiles_note(run))]
    failed = failed_profiles(run)
    if failed:
        secs.append(("Profiles that failed", ("list", failed)))
    rt = reasons_table(run)
    if rt:
        secs.append(("Not ok: most frequent reasons", rt))
    if compare_run is not None:
        ct = compare_table(run, compare_run)
        secs.append((f"Comparison: A = {run.name}, B = {compare_run.name}", ct or "no problem in common"))
    if run.dispatch is not None:
        text = json.dumps(run.dispatch, indent=1)
        if len(text) > 4000:
            text = text[:4000] + "\n... (truncated)"
        secs.append(("dispatch.json", ("code", text)))
    if run.warnings:
        secs.append(("Warnings while reading and drawing", ("list", run.warnings)))
    return secs


def markdown(run: Run, plots: list, compare_run: Optional[Run] = None) -> str:
    out = [f"# convtune run: {run.name}", "", f"{run.device_name}", ""]
    for head, body in _sections(run, compare_run):
        if head:
            out += [f"## {head}", ""]
        if isinstance(body, Table):
            out += [table_md(body), ""]
        elif isinstance(body, tuple) and body[0] == "code":
            out += ["```json", body[1], "```", ""]
        elif isinstance(body, tuple) and body[0] == "list":
            out += [f"- {_md_cell(w)}" for w in body[1]] + [""]
        elif body:
            out += [str(body), ""]
    out += ["## Plots", ""]
    for p in plots:
        target = p.files.get("png") or next(iter(p.files.values()), None)
        out += [f"### {p.name}", "", p.caption, ""]
        if target:
            others = ", ".join(f"[{fmt}]({path})" for fmt, path in p.files.items() if path != target)
            out += [f"![{p.name}]({target})", ""] + ([f"Also: {others}", ""] if others else [])
    return "\n".join(out)


CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: 0.1em; } h2 { font-size: 1.2em; margin-top: 1.8em;
  border-bottom: 1px solid #ddd; } h3 { font-size: 1.0em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; } th { background: #f4f4f4; text-align: left; }
td.r { text-align: right; font-variant-numeric: tabular-nums; } td.l { text-align: left; }
table.kv td:first-child { color: #555; }
img { max-width: 100%; border: 1px solid #eee; }
figure { margin: 1em 0 2em 0; } figcaption { font-size: 0.9em; color: #444; margin: 0.3em 0; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 0.8em; }
.sub { color: #666; } .warn { color: #8a5a00; font-size: 0.9em; }
"""


def html_report(run: Run, plots: list, compare_run: Optional[Run] = None) -> str:
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>convtune: {e(run.name)}</title>", f"<style>{CSS}</style></head><body>",
           f"<h1>convtune run: {e(run.name)}</h1>", f'<p class="sub">{e(run.device_name)}</p>']
    for head, body in _sections(run, compare_run):
        if head:
            out.append(f"<h2>{e(head)}</h2>")
        if isinstance(body, Table):
            out.append(table_html(body, "kv" if not any(body.headers) else ""))
        elif isinstance(body, tuple) and body[0] == "code":
            out.append(f"<pre>{e(body[1])}</pre>")
        elif isinstance(body, tuple) and body[0] == "list":
            out.append('<ul class="warn">' + "".join(f"<li>{e(w)}</li>" for w in body[1]) + "</ul>")
        elif body:
            out.append(f'<p class="sub">{e(str(body))}</p>')
    out.append("<h2>Plots</h2>")
    for p in plots:
        out.append(f'<figure id="{e(p.name)}"><h3>{e(p.name)}</h3><figcaption>{e(p.caption)}</figcaption>')
        if p.png:
            b64 = base64.b64encode(p.png).decode("ascii")
            out.append(f'<img alt="{e(p.name)}" src="data:image/png;base64,{b64}">')
        out.append("</figure>")
    out.append("</body></html>")
    return "\n".join(out)


__all__ = ["Plot", "Table", "markdown", "html_report", "best_table", "device_table", "status_table", "profiles_table",
           "spill_warnings", "math_table"]
