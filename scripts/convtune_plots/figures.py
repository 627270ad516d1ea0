"""One function per plot. Each takes a Run (and options), returns a matplotlib Figure, or None when the
run holds nothing that plot can show (with a warning on the run saying why)."""

from __future__ import annotations

import math
import re
import textwrap
from typing import Optional

import matplotlib

matplotlib.use("Agg")

import matplotlib.ticker  # noqa: E402

import numpy as np  # noqa: E402
from matplotlib.colors import LogNorm, to_rgb  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter  # noqa: E402

from .analysis import (  # noqa: E402
    achieved_gflops,
    crossover,
    floor_of,
    fmt_dim,
    fmt_dims,
    fmt_margin,
    latest_ok,
    math_of,
    measured_intensity,
    method_of,
    problem_label,
    select_best,
    shape_for,
    short_variant,
    variant_colors,
)
from .load import (  # noqa: E402
    Run, config_of, dims_of, family_of, is_library, median_ms, num, pos, profile_ok, variant_of,
)

STYLE = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "figure.titlesize": 11,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    "svg.fonttype": "none",
}
matplotlib.rcParams.update(STYLE)

LIB_MARKER, OWN_MARKER, PROFILED_MARKER = "s", "o", "D"
# The tensor-core roofs (summary.json's tf32_gflops, and a third of it for the 3xTF32 split): name, colour, dashes.
TENSOR_ROOFS = {"tf32": ("TF32", "tab:purple", "--"), "3xtf32": ("3xTF32", "tab:red", "-.")}
PROFILED_LABEL = "profiled: at measured DRAM bytes (ncu)"


def _colors(run: Run, family: str) -> dict:
    # per family: a run of several families would otherwise pass ten variants and fall to tab20's pale pairs
    return variant_colors(variant_of(r) for r in run.records if family_of(r) == family)


def _libraries(run: Run) -> set:
    return {variant_of(r) for r in run.records if is_library(r)}


def _num_or_text_key(v):
    n = num(v)
    return (0, n, "") if n is not None else (1, 0.0, str(v))


def _plain_log_ticks(ax, axis="y"):
    """Log axis with plain numbers (0.01, 0.1, 1, 10) rather than 10^k."""
    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    a = ax.yaxis if axis == "y" else ax.xaxis
    a.set_major_formatter(fmt)
    a.set_minor_formatter(NullFormatter())


def _log_ticks_with_minor_labels(ax, axis="y", subs=(1.0, 2.0, 5.0)):
    """Log axis spanning few decades: label 1, 2, 5 multiples (or finer subs) too."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    a.set_major_locator(LogLocator(base=10, subs=subs))
    a.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    a.set_minor_formatter(NullFormatter())


def _set_log_y(ax, values):
    ax.set_yscale("log")
    vals = [v for v in values if v and v > 0]
    ratio = max(vals) / min(vals) if vals else 1e9
    if ratio < 4:
        _log_ticks_with_minor_labels(ax, "y", (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0))
    elif ratio < 1000:  # up to three decades 1-2-5 labels still fit
        _log_ticks_with_minor_labels(ax, "y")
    else:
        _plain_log_ticks(ax, "y")


def _grid_shape(n: int, max_cols: int = 3) -> tuple:
    cols = min(n, max_cols)
    return math.ceil(n / cols), cols


def _footnote(ax, text: str) -> None:
    """Small grey text under the x axis label, kept inside the figure by the layout engine; wrapped to the
    figure's width."""
    width = max(40, int(ax.figure.get_figwidth() * 16))
    text = "\n".join(textwrap.fill(line, width) for line in text.split("\n"))
    ax.annotate(text, xy=(0.5, 0), xycoords=ax.xaxis.label, xytext=(0, -4), textcoords="offset points",
                ha="center", va="top", fontsize=7, color="0.35", annotation_clip=False)


def _time_unit(max_ms: float) -> tuple:
    """(unit, factor from ms) so that the numbers shown stay readable."""
    return ("µs", 1e3) if max_ms < 0.1 else ("ms", 1.0)


def _fmt_time(v: float) -> str:
    return f"{v:.3g}" if v < 1000 else f"{v:,.0f}"


def _title(run: Run, what: str) -> str:
    return f"{what}\n{run.name} on {run.device_name}"


# --- 1. roofline -----------------------------------------------------------------------------------


def roofline(run: Run, family: str) -> Optional[Figure]:
    """Achieved GFLOP/s against arithmetic intensity: each variant's best ok point per problem."""
    bw, fp = run.ceilings
    best = select_best([r for r in run.records if family_of(r) == family])
    colors, libs = _colors(run, family), _libraries(run)
    points = []  # (variant, i_model, i_min, gflops, record, is_winner)
    left_out = 0
    for key, choice in best.items():
        for v, rec in choice.per_variant.items():
            i_model, i_min, g = pos(rec.get("intensity_model")), pos(rec.get("intensity_min")), achieved_gflops(rec)
            if i_model is None or g is None:
                left_out += 1
                continue
            points.append((v, i_model, i_min, g, rec, rec is choice.best))
    if left_out:
        run.warn(f"roofline_{family}: {left_out} best-per-variant records lack flops or intensity_model; left out")
    if not points:
        run.warn(f"roofline_{family}: no ok record with flops and intensity_model; plot skipped")
        return None
    profiled = _profiled_points(run, family)  # (variant, i_measured, i_model, gflops)

    fig = Figure(figsize=(9, 6), layout="constrained")
    ax = fig.add_subplot()
    xs = [p[1] for p in points] + [p[2] for p in points if p[2]] + [p[1] for p in profiled]
    ys = [p[3] for p in points] + [p[3] for p in profiled]
    xlo, xhi = min(xs) / 3, max(xs) * 3
    tensor = {m: r for m, r in run.math_ceilings.items() if m in TENSOR_ROOFS} if bw and fp else {}
    if bw and fp:
        ridge = fp / bw
        xlo, xhi = min(xlo, ridge / 4), max(xhi, ridge * 4, *(2 * r / bw for r in tensor.values()))
        grid = np.logspace(math.log10(xlo), math.log10(xhi), 400)
        roof = np.minimum(fp, bw * grid)
        ax.plot(grid, roof, color="black", lw=2, zorder=2, label="roof: min(FP32, copy bandwidth × I)")
        ax.axvline(ridge, color="black", lw=0.8, ls=":", zorder=1)
        _tensor_roofs(ax, grid, bw, tensor)
        _own_roof_links(ax, points, bw, tensor)
        ylo = min(min(ys) / 3, bw * xlo)
        yhi = max(max(ys), fp, *tensor.values()) * 2.5
    else:
        ax.text(0.5, 0.97, "no measured ceilings in summary.json: roof not drawn", transform=ax.transAxes,
                ha="center", va="top", fontsize=9, color="firebrick")
        ylo, yhi = min(ys) / 3, max(ys) * 3

    for v in sorted({p[0] for p in points}):
        mine = [p for p in points if p[0] == v]
        marker = LIB_MARKER if v in libs else OWN_MARKER
        c = colors[v]
        ax.scatter([p[1] for p in mine], [p[3] for p in mine], color=c, marker=marker, s=46, edgecolor="black",
                   linewidth=0.5, zorder=4, label=short_variant(v) + (" (library)" if v in libs else ""))
        faint = [p for p in mine if p[2]]
        ax.scatter([p[2] for p in faint], [p[3] for p in faint], color=c, marker=marker, s=30, alpha=0.25,
                   linewidth=0, zorder=3)
        for p in faint:
            ax.plot([p[2], p[1]], [p[3], p[3]], color=c, lw=0.8, alpha=0.25, zorder=3)
    for v, i_meas, i_model, g in profiled:
        if i_model:
            ax.plot([i_meas, i_model], [g, g], color=colors.get(v, "0.3"), lw=0.7, zorder=3, gid="profiled_link")
    if profiled:
        ax.scatter([p[1] for p in profiled], [p[3] for p in profiled], marker=PROFILED_MARKER, s=44,
                   facecolors="none", edgecolors=[colors.get(p[0], "0.3") for p in profiled], linewidths=1.3,
                   zorder=6, gid="profiled")
    label_problems = len(best) <= 12  # past that the labels only clutter
    tags = [ax.annotate(problem_label(p[4]), (p[1], p[3]), xytext=(5, 4), textcoords="offset points",
                        fontsize=7, color="0.2", zorder=5,  # a veil keeps labels legible over markers
                        bbox=dict(boxstyle="square,pad=0.05", fc="white", ec="none", alpha=0.6))
            for p in points if p[5] and label_problems]

    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log_ticks(ax, "x")
    ax.set_xlim(xlo, xhi)
    ax.set_ylim(ylo, yhi)
    ax.set_xlabel("arithmetic intensity I (FLOP/byte: direct-equivalent FLOPs / the variant's modelled traffic)")
    ax.set_ylabel("achieved GFLOP/s (direct-equivalent FLOPs / median time)")
    ax.set_title(_title(run, f"Roofline — {family}: best config of each variant per problem"))
    handles, labels = ax.get_legend_handles_labels()
    handles += [
        Line2D([], [], ls="", marker=OWN_MARKER, color="0.4", label="own kernel"),
        Line2D([], [], ls="", marker=LIB_MARKER, color="0.4", label="library baseline"),
        Line2D([], [], ls="", marker=OWN_MARKER, color="0.4", alpha=0.3, label="same point at intensity_min"),
    ]
    if profiled:
        handles.append(Line2D([], [], lw=0.7, marker=PROFILED_MARKER, mfc="none", color="0.3",
                              label=PROFILED_LABEL))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, frameon=False)
    notes = ["labels: each problem's chosen best candidate" if label_problems else
             f"{len(best)} problems: points not labelled"]
    if bw and fp:
        notes += _roof_notes(run, points, bw, fp, tensor)
    if profiled:
        notes.append(f"hollow diamonds: {len(profiled)} candidates profiled under Nsight Compute, at "
                     "direct-equivalent FLOPs / measured DRAM bytes, joined to their modelled intensity; right of "
                     "it: caches served traffic the model counts")
    odd = sorted({short_variant(p[0]) for p in points if pos(p[4].get("flops_variant")) and pos(p[4].get("flops"))
                  and abs(p[4]["flops_variant"] / p[4]["flops"] - 1) > 0.05})
    if odd:
        notes.append(f"{', '.join(odd)}: other arithmetic than direct convolution (flops_variant ≠ flops); "
                     "plotted with direct-equivalent FLOPs")
    _footnote(ax, "\n".join(notes))
    if bw and fp:
        fig.draw_without_rendering()  # final axes geometry, to slant the bandwidth label along the roof
        x0 = xlo * 1.8
        p0 = ax.transData.transform((x0, bw * x0))
        p1 = ax.transData.transform((x0 * 10, bw * x0 * 10))
        angle = math.degrees(math.atan2(p1[1] - p0[1], p1[0] - p0[0]))
        ax.annotate(f"copy bandwidth {bw:,.0f} GB/s", (x0, bw * x0), xytext=(0, 5), textcoords="offset points",
                    rotation=angle, rotation_mode="anchor", fontsize=8, color="0.25", ha="left", va="bottom")
        ax.annotate(f"FP32 {fp:,.0f} GFLOP/s", (xhi, fp), xytext=(-4, 5), textcoords="offset points",
                    fontsize=8, ha="right", va="bottom", color="0.25")
        for m, rate in tensor.items():
            name, color, _ = TENSOR_ROOFS[m]
            ax.annotate(f"{name} {rate:,.0f} GFLOP/s", (xhi, rate), xytext=(-4, 5), textcoords="offset points",
                        fontsize=8, ha="right", va="bottom", color=color)
        ax.annotate(f"ridge {fp / bw:.3g} FLOP/B", (fp / bw, ylo), xytext=(-3, 4), textcoords="offset points",
                    rotation=90, fontsize=7.5, ha="right", va="bottom", color="0.3")
    _unstack(fig, tags)
    return fig


def _tensor_roofs(ax, grid, bw: float, tensor: dict) -> None:
    """The roof of each tensor-core math the run measured: min(its rate, copy bandwidth × I)."""
    for m, rate in tensor.items():
        name, color, dashes = TENSOR_ROOFS[m]
        ax.plot(grid, np.minimum(rate, bw * grid), color=color, ls=dashes, lw=1.4, zorder=2, gid=f"roof_{m}",
                label=f"roof of {name} math: min({name}, copy bandwidth × I)")


def _own_roof_links(ax, points: list, bw: float, tensor: dict) -> None:
    """Each point whose math has a tensor roof, joined up to that roof at its intensity: the distance to its
    own ceiling (FP32 points' roof is the black one)."""
    for p in points:
        m = math_of(p[4])
        if m in tensor:
            ax.plot([p[1], p[1]], [p[3], min(tensor[m], bw * p[1])], color=TENSOR_ROOFS[m][1], lw=0.8, ls=":",
                    zorder=3, gid=f"own_roof_link_{m}")


def _roof_notes(run: Run, points: list, bw: float, fp: float, tensor: dict) -> list:
    """Points above their own math's roof; tensor-core points with no tensor roof to place them against."""
    notes = []
    above = sum(1 for p in points if p[3] > min(tensor.get(math_of(p[4]), fp), bw * p[1]) * 1.02)
    if above:
        notes.append(f"{above} points above their math's roof at their modelled intensity: the model counts loads "
                     "that caches serve (see the faint points at intensity_min)")
    if tensor:
        notes.append("dotted up to a coloured roof: a tensor-core point's distance to the ceiling of its own math")
    orphans = sorted({math_of(p[4]) for p in points} - {"fp32"} - set(tensor))
    if orphans:
        why = run.tf32_unavailable or "summary.json has no tf32_gflops (a run from before the TF32 ceiling)"
        notes.append(f"{', '.join(orphans)} points: no tensor-core roof ({why}); drawn against FP32 only")
    return notes


def _profiled_points(run: Run, family: str) -> list:
    """(variant, measured intensity, modelled intensity or None, achieved GFLOP/s) of each ok profile of the
    family whose candidate has an ok timing record with flops."""
    ok = latest_ok([r for r in run.records if family_of(r) == family])
    out, unmatched = [], 0
    for (key, cand), prof in run.profiles.items():
        rec = ok.get(key, {}).get(cand)
        if rec is None:
            if profile_ok(prof) and family_of(prof) == family:
                unmatched += 1
            continue
        i_meas, g = measured_intensity(prof, rec), achieved_gflops(rec)
        if profile_ok(prof) and i_meas and g:
            out.append((variant_of(rec), i_meas, pos(rec.get("intensity_model")), g))
    if unmatched:
        run.warn(f"roofline_{family}: {unmatched} profiles match no ok timing record (problem_key, candidate); "
                 "left out")
    return out


def _unstack(fig, texts, tries: int = 6) -> None:
    """Puts annotations that would leave the axes on the left of their point, then moves each down a line
    while it overlaps one placed before it: problems that differ only in a dimension the plot does not show
    (valid and full of one n, m) land on one point."""
    if not texts:
        return
    fig.draw_without_rendering()
    for t in texts:
        if t.get_window_extent().x1 > t.axes.get_window_extent().x1:
            t.set_ha("right")
            t.xyann = (-t.xyann[0], t.xyann[1])
    placed = []
    for t in sorted(texts, key=lambda t: -t.get_window_extent().y0):
        for _ in range(tries):
            bb = t.get_window_extent()
            if not any(bb.overlaps(p) for p in placed):
                break
            x, y = t.xyann
            t.xyann = (x, y - (bb.height + 1) * 72 / fig.dpi)
        placed.append(t.get_window_extent())


# --- 2. time vs shape parameter --------------------------------------------------------------------


def time_vs_shape(run: Run, family: str) -> Optional[Figure]:
    """Median time of each variant's best config against the family's shape parameter, one panel per
    group of the remaining dimensions (image size for conv2d)."""
    shape = shape_for(family, run)
    if shape is None:
        run.warn(f"time_vs_*_{family}: no varying shape parameter known for this family; plot skipped")
        return None
    recs = [r for r in run.records if family_of(r) == family]
    best = select_best(recs)
    floors = floor_of(recs)
    first = {}
    for r in recs:
        first.setdefault(r["problem_key"], r)
    groups: dict = {}  # group key -> (label, {problem_key: x})
    for key, r in first.items():
        d = dims_of(r)
        x = shape.value(d)
        if x is None:
            continue
        gk, gl = shape.group(d)
        groups.setdefault(gk, (gl, {}))[1][key] = x
    groups = {k: v for k, v in groups.items() if any(p in best for p in v[1])}
    if not groups:
        run.warn(f"time_vs_{shape.slug}_{family}: no ok record with the dimensions to place it; plot skipped")
        return None
    max_groups = 12
    gkeys = sorted(groups)
    if len(gkeys) > max_groups:
        run.warn(f"time_vs_{shape.slug}_{family}: {len(gkeys)} shape groups, only the first {max_groups} drawn")
        gkeys = gkeys[:max_groups]
    colors, libs = _colors(run, family), _libraries(run)
    nrows, ncols = _grid_shape(len(gkeys))
    fig = Figure(figsize=(4.6 * ncols + 2.2, 3.8 * nrows + 0.9), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    seen_variants = set()
    floor_drawn = crossover_drawn = False
    below_floor = set()
    for i, gk in enumerate(gkeys):
        ax = axes[i // ncols][i % ncols]
        label, xs_by_key = groups[gk]
        variants = sorted({v for k in xs_by_key if k in best for v in best[k].per_variant})
        all_x, all_y = set(), []
        by_kind: dict = {"spatial": {}, "spectral": {}}  # kind -> {x: best time of the kind's own variants}
        for v in variants:
            per_key = {k: median_ms(best[k].per_variant[v]) for k in xs_by_key
                       if k in best and v in best[k].per_variant}
            if not per_key:
                continue
            pts = sorted((xs_by_key[k], ms) for k, ms in per_key.items())
            kind = method_of(shape, v) if v not in libs else None  # libraries are baselines, not the choice
            for x, ms in pts:
                if kind:
                    by_kind[kind][x] = min(ms, by_kind[kind].get(x, math.inf))
            if any(ms < 0.98 * floors[k] for k, ms in per_key.items() if k in floors):
                below_floor.add(short_variant(v))
            lib = v in libs
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=colors[v], ls="--" if lib else "-",
                    marker=LIB_MARKER if lib else OWN_MARKER, ms=5, lw=1.6, label=short_variant(v) + (
                        " (library)" if lib else ""))
            seen_variants.add(v)
            all_x.update(p[0] for p in pts)
            all_y += [p[1] for p in pts]
        fl = sorted((x, floors[k]) for k, x in xs_by_key.items() if k in floors)
        if fl:
            ax.plot([p[0] for p in fl], [p[1] for p in fl], color="black", lw=0.8, ls="-",
                    label="floor_ms (roofline bound)")
            floor_drawn = True
            all_y += [p[1] for p in fl]
            all_x.update(p[0] for p in fl)
        xs = sorted(all_x)
        if xs and xs[0] > 0 and xs[-1] / xs[0] >= 10:
            ax.set_xscale("log")
            _plain_log_ticks(ax, "x")
            if len(xs) <= 8:  # few shapes: tick exactly those
                ax.set_xticks(xs)
                ax.set_xticklabels(fmt_dims(xs))
                ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        elif xs:
            ax.set_xticks(xs)
            ax.set_xticklabels(fmt_dims(xs))
            pad = max((xs[-1] - xs[0]) * 0.05, 0.5)
            ax.set_xlim(xs[0] - pad, xs[-1] + pad)
        _set_log_y(ax, all_y)
        crossover_drawn |= _mark_crossover(ax, crossover(by_kind["spatial"], by_kind["spectral"]), shape.slug)
        ax.set_title(shape.panel_prefix + label)
        if i // ncols == nrows - 1 or i + ncols >= len(gkeys):
            ax.set_xlabel(shape.label)
        if i % ncols == 0:
            ax.set_ylabel("median time (ms, log)")
    for j in range(len(gkeys), nrows * ncols):
        axes[j // ncols][j % ncols].set_visible(False)
    handles = [Line2D([], [], color=colors[v], ls="--" if v in libs else "-",
                      marker=LIB_MARKER if v in libs else OWN_MARKER, ms=5,
                      label=short_variant(v) + (" (library)" if v in libs else "")) for v in sorted(seen_variants)]
    if floor_drawn:
        handles.append(Line2D([], [], color="black", lw=0.8, label="floor_ms (roofline bound)"))
    if crossover_drawn:
        handles.append(Patch(color=CROSS_SHADE, label="spatial → spectral crossover\n(lies in the shaded span)"))
    fig.legend(handles=handles, loc="outside right center", frameon=False)
    fig.suptitle(_title(run, f"Median time vs {shape.label.split('  (')[0]} — {family} (best config per variant)"))
    if below_floor:
        # floor_ms counts direct-convolution FLOPs; a method doing less arithmetic can beat it
        fig.supxlabel(f"below floor_ms: {', '.join(sorted(below_floor))} — fewer FLOPs than direct convolution, "
                      "which floor_ms assumes", fontsize=7, color="0.35")
    return fig


CROSS_SHADE = "#f2dfb5"


def _mark_crossover(ax, cross, slug: str) -> bool:
    """Shades the span where the best spectral variant overtakes the best spatial one (between the last x
    where spatial is faster and the first where spectral is) and says which x that is. True when a span
    was drawn."""
    if cross is None:
        return False
    box = dict(boxstyle="round,pad=0.25", fc="white", ec="0.7", lw=0.5, alpha=0.9)
    if cross.at is None or cross.before is None:
        kind = "spatial" if cross.at is None else "spectral"
        ax.text(0.98, 0.03, f"{kind} fastest at every {slug} compared", transform=ax.transAxes, ha="right",
                va="bottom", fontsize=7.5, color="0.25", bbox=box)
        return False
    ax.axvspan(cross.before, cross.at, color=CROSS_SHADE, alpha=0.6, lw=0, zorder=0)
    ax.axvline(cross.at, color="0.35", lw=0.9, ls=":", zorder=1)
    ax.annotate(f"spectral faster\nfrom {slug}={fmt_dim(cross.at)}", (cross.at, 0.97),
                xycoords=("data", "axes fraction"), xytext=(4, 0), textcoords="offset points", ha="left",
                va="top", fontsize=7.5, color="0.15", bbox=box)
    return True


# --- 3. best-variant map ---------------------------------------------------------------------------


def _luminance(rgb) -> float:
    r, g, b = to_rgb(rgb)
    return 0.299 * r + 0.587 * g + 0.114 * b


def best_map(run: Run, family: str) -> Optional[Figure]:
    """Heatmap over (rest of the shape) × (shape parameter): the fastest variant per problem, annotated
    with its margin over the fastest other variant (best-per-variant medians)."""
    shape = shape_for(family, run)
    if shape is None:
        run.warn(f"best_map_{family}: no varying shape parameter known for this family; plot skipped")
        return None
    recs = [r for r in run.records if family_of(r) == family]
    best = select_best(recs)
    cells = {}  # (group key, y) -> (choice, group label)
    glabels = {}
    for key, ch in best.items():
        d = dims_of(ch.best)
        y = shape.value(d)
        if y is None:
            continue
        gk, gl = shape.group(d)
        glabels[gk] = gl
        if (gk, y) in cells:
            run.warn(f"best_map_{family}: {key} and {cells[(gk, y)].problem_key} fall on one cell; "
                     "showing the first")
            continue
        cells[(gk, y)] = ch
    if not cells:
        run.warn(f"best_map_{family}: no ok record with the dimensions to place it; plot skipped")
        return None
    # Cells whose problem has records but none ok (all failed or skipped), as opposed to never measured.
    tried = set()
    for r in recs:
        d = dims_of(r)
        y = shape.value(d)
        if y is not None:
            tried.add((shape.group(d)[0], y))
    gks = sorted(glabels)
    ys = sorted({y for _, y in cells})
    colors = _colors(run, family)
    img = np.ones((len(ys), len(gks), 3)) * 0.93
    fig = Figure(figsize=(max(5.5, 1.9 * len(gks) + 3.2), max(3.6, 0.75 * len(ys) + 2.2)), layout="constrained")
    ax = fig.add_subplot()
    winners = set()
    for (gk, y), ch in cells.items():
        xi, yi = gks.index(gk), ys.index(y)
        v = next(iter(ch.per_variant))
        winners.add(v)
        img[yi, xi] = to_rgb(colors[v])
    ax.imshow(img, origin="lower", aspect="auto", interpolation="nearest")
    for (gk, y), ch in cells.items():
        xi, yi = gks.index(gk), ys.index(y)
        v = next(iter(ch.per_variant))
        m = ch.variant_margin
        if m is None:
            note = "only variant"
        else:
            note = f"≈ {100 * m:.1f}%" if ch.variant_tie else fmt_margin(m)
            note += f"\nvs {short_variant(list(ch.per_variant)[1])}"
        tc = "black" if _luminance(colors[v]) > 0.55 else "white"
        ax.text(xi, yi, f"{short_variant(v)}\n{note}", ha="center", va="center", fontsize=8, color=tc)
    for yi, y in enumerate(ys):
        for xi, gk in enumerate(gks):
            if (gk, y) not in cells:
                text = "no ok\nrecord" if (gk, y) in tried else "not\nmeasured"
                ax.text(xi, yi, text, ha="center", va="center", fontsize=7, color="0.5")
    ax.set_xticks(range(len(gks)))
    ax.set_xticklabels([glabels[g] for g in gks], rotation=0 if len(gks) < 6 else 30,
                       ha="center" if len(gks) < 6 else "right")
    ax.set_yticks(range(len(ys)))
    ax.set_yticklabels(fmt_dims(ys))
    ax.set_xlabel(shape.group_label)
    ax.set_ylabel(shape.label)
    ax.grid(False)
    ax.set_xticks(np.arange(-0.5, len(gks)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(ys)), minor=True)
    ax.grid(which="minor", color="white", lw=2)
    ax.tick_params(which="minor", length=0)
    ax.legend(handles=[Patch(color=colors[v], label=short_variant(v)) for v in sorted(winners)],
              loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0,
              frameon=False, title="fastest variant")
    ax.set_title(_title(run, f"Fastest variant per shape — {family}"))
    _footnote(ax, "cell text: the fastest variant and its margin over the next variant's best config: +% "
              "or × (times as fast); ≈: within measurement noise")
    return fig


# --- 4. parameter sensitivity ----------------------------------------------------------------------


def pick_sensitivity(run: Run, family: Optional[str] = None, variant: Optional[str] = None,
                     problem: Optional[str] = None) -> Optional[tuple]:
    """(variant, problem_key) to draw: the given ones, else the first problem (file order) and the
    variant with the most ok configs on it. None when nothing fits."""
    by_problem = latest_ok(run.records)
    problems = [problem] if problem else [p for p in run.problems(family) if p in by_problem]
    for p in problems:
        counts: dict = {}
        for rec in by_problem.get(p, {}).values():
            counts[variant_of(rec)] = counts.get(variant_of(rec), 0) + 1
        if variant:
            if counts.get(variant):
                return variant, p
            continue
        if counts:
            return max(sorted(counts), key=lambda v: counts[v]), p
    return None


def sensitivity(run: Run, variant: str, problem: str) -> Optional[Figure]:
    """Median time of a variant over its parameter space on one problem: a heatmap over the two
    parameters whose values vary most, each cell the best time over the other parameters."""
    tried = [r for r in run.records if r["problem_key"] == problem and variant_of(r) == variant]
    ok = list(latest_ok(tried).get(problem, {}).values())
    if not ok:
        run.warn(f"sensitivity: {variant} has no ok record on {problem}; plot skipped")
        return None
    values: dict = {}
    order = []
    for r in tried:
        for k, v in config_of(r).items():
            if k not in values:
                values[k] = set()
                order.append(k)
            values[k].add(json_key(v))
    varying = [k for k in order if len(values[k]) > 1]
    if not varying:
        run.warn(f"sensitivity: {variant} has a single config on {problem}; plot skipped")
        return None
    px, py = _pick_axes(varying, values, ok)
    rest = [k for k in varying if k not in (px, py)]

    def vals(k):
        return sorted(values[k], key=_num_or_text_key)

    xv = vals(px)
    yv = vals(py) if py else [None]
    grid = np.full((len(yv), len(xv)), np.nan)
    arg = {}
    failed: dict = {}
    ok_ids = {id(r) for r in ok}
    for r in tried:
        c = config_of(r)
        cell = (yv.index(json_key(c.get(py))) if py else 0, xv.index(json_key(c.get(px))))
        if id(r) in ok_ids:
            ms = median_ms(r)
            if np.isnan(grid[cell]) or ms < grid[cell]:
                grid[cell] = ms
                arg[cell] = r
        elif r.get("status") != "ok":
            failed.setdefault(cell, set()).add(r.get("status"))
    finite = grid[np.isfinite(grid)]
    lo_ms, hi_ms = float(finite.min()), float(finite.max())
    unit, k = _time_unit(hi_ms)
    shown = grid * k
    lo, hi = lo_ms * k, hi_ms * k
    title = _title(run, f"Parameter sensitivity — {variant} on {problem_label(tried[0])}")
    width = max(5.5, 1.05 * len(xv) + 3.0, 0.078 * max(len(t) for t in title.split("\n")) + 0.8)
    fig = Figure(figsize=(width, max(3.2, 0.62 * len(yv) + 2.6)), layout="constrained")
    ax = fig.add_subplot()
    norm = LogNorm(vmin=lo, vmax=hi if hi > lo * 1.001 else lo * 1.01)
    cmap = matplotlib.colormaps["viridis_r"].with_extremes(bad="0.92")
    im = ax.imshow(np.ma.masked_invalid(shown), origin="lower", aspect="auto", cmap=cmap, norm=norm,
                   interpolation="nearest")
    best_cell = np.unravel_index(np.nanargmin(grid), grid.shape)
    for yi in range(len(yv)):
        for xi in range(len(xv)):
            v = shown[yi, xi]
            if np.isfinite(v):
                rgba = cmap(norm(v))
                tc = "black" if _luminance(rgba[:3]) > 0.5 else "white"
                ax.text(xi, yi, f"{_fmt_time(v)}\n×{v / lo:.2f}", ha="center", va="center", fontsize=7.5, color=tc)
            else:
                st = failed.get((yi, xi))
                txt = "not run" if not st else "skipped" if st == {"skipped"} else "failed"
                ax.text(xi, yi, txt, ha="center", va="center", fontsize=7, color="0.45")
    ax.add_patch(Rectangle((best_cell[1] - 0.5, best_cell[0] - 0.5), 1, 1, fill=False, ec="red", lw=2.2))
    ax.set_xticks(range(len(xv)))
    ax.set_xticklabels([str(x) for x in xv])
    if py:
        ax.set_yticks(range(len(yv)))
        ax.set_yticklabels([str(y) for y in yv])
    else:
        ax.set_yticks([])
    ax.set_xlabel(px)
    ax.set_ylabel(py or "")
    ax.grid(False)
    if hi > lo * 1.001:  # a colour scale only when there is more than one time
        cb = fig.colorbar(im, ax=ax, shrink=0.9)
        cb.set_label(f"median time ({unit}, log colour)")
        if hi / lo < 10:
            cb.set_ticks(np.geomspace(lo, hi, 5))
            cb.ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        cb.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
        cb.ax.yaxis.set_minor_formatter(NullFormatter())
    ntried = len({r["candidate"] for r in tried})
    sub = f"{len(ok)} ok of {ntried} configs; "
    sub += f"each cell: best over {', '.join(rest)}" if rest else "each cell: one config"
    sub += "; ×: time / fastest (red box)"
    best = arg.get(best_cell)
    if best:
        _footnote(ax, f"fastest: {best['candidate']}  {_fmt_time(median_ms(best) * k)} {unit}")
    ax.set_title(title + f"\n{sub}", fontsize=9.5)
    return fig


def _pick_axes(varying: list, values: dict, ok: list) -> tuple:
    """The two parameters to draw: those whose values vary most, preferring the pair whose combinations the
    ok records cover best (a full block_x × py grid beats block_x × a block_y tried twice)."""
    if len(varying) == 1:
        return varying[0], None
    best, best_score = None, None
    for i, a in enumerate(varying):
        for b in varying[i + 1:]:
            combos = {(json_key(config_of(r).get(a)), json_key(config_of(r).get(b))) for r in ok}
            score = (len(combos), len(values[a]) + len(values[b]), -i)
            if best_score is None or score > best_score:
                best, best_score = (a, b), score
    a, b = best
    # the parameter with more values goes along x
    return (a, b) if len(values[a]) >= len(values[b]) else (b, a)


def json_key(v):
    """Config values as hashable, comparable keys (lists and objects become their JSON text)."""
    if isinstance(v, (dict, list)):
        import json

        return json.dumps(v, sort_keys=True)
    return v


def sensitivity_name(variant: str, problem: str) -> str:
    return "sensitivity_" + _slug(variant) + "_" + _slug(problem)


def _slug(s: str) -> str:
    s = s.replace("=", "").replace("/", "_").replace(",", "_")
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_")


# --- 5. convergence --------------------------------------------------------------------------------


def convergence(run: Run, family: str) -> Optional[Figure]:
    """Best-so-far median time against evaluations, per strategy, as the geometric mean over problems of
    best-so-far / the problem's best (over all its ok records). Needs strategy and eval_index."""
    recs = [r for r in run.records if family_of(r) == family]
    tagged = [r for r in recs if isinstance(r.get("strategy"), str) and num(r.get("eval_index")) is not None
              and r.get("status") != "skipped"]
    if not tagged:
        return None
    problem_best: dict = {}
    for r in recs:
        ms = median_ms(r) if r.get("status") == "ok" else None
        if ms is not None:
            problem_best[r["problem_key"]] = min(ms, problem_best.get(r["problem_key"], math.inf))
    curves: dict = {}  # strategy -> problem -> sorted [(eval_index, ms or None)]
    for r in tagged:
        ms = median_ms(r) if r.get("status") == "ok" else None
        curves.setdefault(r["strategy"], {}).setdefault(r["problem_key"], []).append((num(r["eval_index"]), ms))
    fig = Figure(figsize=(8, 5), layout="constrained")
    ax = fig.add_subplot()
    cmap = matplotlib.colormaps["Dark2"]
    drawn, all_y = 0, []
    for si, strat in enumerate(sorted(curves)):
        per_problem = {p: sorted(v, key=lambda t: t[0]) for p, v in curves[strat].items() if p in problem_best}
        if not per_problem:
            continue
        n_max = int(max(t[0] for v in per_problem.values() for t in v))
        xs = np.arange(1, max(n_max, 1) + 1)
        mat = np.full((len(per_problem), len(xs)), np.nan)
        for pi, (p, seq) in enumerate(per_problem.items()):
            best, j = math.inf, 0
            for xi, x in enumerate(xs):
                while j < len(seq) and seq[j][0] <= x:
                    if seq[j][1] is not None:
                        best = min(best, seq[j][1])
                    j += 1
                if math.isfinite(best):
                    mat[pi, xi] = best / problem_best[p]
        have = np.isfinite(mat).any(axis=0)
        if not have.any():
            continue
        logs = np.where(np.isfinite(mat), np.log(np.where(np.isfinite(mat), mat, 1.0)), np.nan)
        with np.errstate(all="ignore"):
            gmean = np.exp(np.nanmean(logs[:, have], axis=0))
            lo = np.nanmin(mat[:, have], axis=0)
            hi = np.nanmax(mat[:, have], axis=0)
        c = cmap(si % cmap.N)
        ax.step(xs[have], gmean, where="post", color=c, lw=2,
                label=f"{strat} ({len(per_problem)} problem{'s' if len(per_problem) != 1 else ''})")
        ax.fill_between(xs[have], lo, hi, step="post", color=c, alpha=0.15, lw=0)
        all_y += list(hi) + list(lo)
        drawn += 1
    if not drawn:
        run.warn(f"convergence_{family}: records carry strategy/eval_index but no ok time; plot skipped")
        return None
    ax.axhline(1.0, color="black", lw=0.8, ls=":")
    _set_log_y(ax, all_y + [1.0])
    ax.set_xlabel("evaluations within a problem (eval_index)")
    ax.set_ylabel("best-so-far time / problem's best time (log)")
    ax.set_xlim(left=0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(loc="upper right", title="strategy: geometric mean\n(band: min–max over problems)",
              title_fontsize=8)
    ax.set_title(_title(run, f"Search convergence — {family}"))
    return fig


# --- 6. comparison of two runs ---------------------------------------------------------------------


def compare(run_a: Run, run_b: Run) -> Optional[Figure]:
    """Per problem both runs share: time of b's best / time of a's best (> 1: a is faster)."""
    ba, bb = select_best(run_a.records), select_best(run_b.records)
    order = [p for p in run_a.problems() if p in ba and p in bb]
    only_a = [p for p in ba if p not in bb]
    only_b = [p for p in bb if p not in ba]
    if only_a or only_b:
        run_a.warn(f"compare: {len(only_a)} problems only in {run_a.name}, {len(only_b)} only in {run_b.name}; "
                   "left out")
    if not order:
        run_a.warn(f"compare: {run_a.name} and {run_b.name} share no problem with ok records; plot skipped")
        return None
    sp = [median_ms(bb[p].best) / median_ms(ba[p].best) for p in order]
    labels = [problem_label(ba[p].best) for p in order]
    fig = Figure(figsize=(max(6.5, 0.75 * len(order) + 3), 5.2), layout="constrained")
    ax = fig.add_subplot()
    cols = ["#2a9d4b" if s >= 1 else "#d1495b" for s in sp]
    x = np.arange(len(order))
    # bars grow from 1 in both directions on the log axis
    ax.bar(x, [s - 1 if s >= 1 else 1 - s for s in sp], bottom=[1 if s >= 1 else s for s in sp], color=cols,
           edgecolor="black", lw=0.5, width=0.7)
    for xi, s in zip(x, sp):
        ax.annotate(f"{s:.2f}×", (xi, s), xytext=(0, 3 if s >= 1 else -3), textcoords="offset points",
                    ha="center", va="bottom" if s >= 1 else "top", fontsize=8)
    ax.axhline(1.0, color="black", lw=1)
    ax.set_yscale("log")
    lo, hi = min(sp + [1.0]), max(sp + [1.0])
    ax.set_ylim(lo / 1.35, hi * 1.35)
    _set_log_y(ax, [lo / 1.35, hi * 1.35])
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=30 if len(order) > 4 else 0, ha="right" if len(order) > 4 else "center")
    ax.set_xlim(-0.6, len(order) - 0.4)
    ax.set_ylabel("speedup of A = time B / time A (log)")
    ax.set_xlabel("problem")
    gm = math.exp(sum(math.log(s) for s in sp) / len(sp))
    ax.set_title(f"A: {run_a.name} on {run_a.device_name}\nB: {run_b.name} on {run_b.device_name}\n"
                 f"best candidate per problem; > 1: A faster (green), < 1: B faster; geometric mean {gm:.2f}×",
                 fontsize=9)
    ax.grid(axis="x", visible=False)
    return fig
