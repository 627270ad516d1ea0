#!/usr/bin/env python3
"""Plots and a report for a convtune run folder.

    python3 scripts/plot.py <run-folder> [-o OUTDIR] [--compare OTHER_RUN] [--format png,svg]
                            [--variant V] [--problem KEY] [-q]

Reads <run>/records.jsonl, <run>/summary.json (and <run>/dispatch.json, <run>/profiles.jsonl if there;
records.jsonl.gz and profiles.jsonl.gz in a run packed by `convtune pack`), writes into OUTDIR (default <run>/plots/), each plot in every requested format:

  roofline_<family>          achieved GFLOP/s vs arithmetic intensity under the measured roofs
  time_vs_<dim>_<family>     median time vs the family's shape parameter, best config per variant
  best_map_<family>          fastest variant over the 2D shape grid, with its margin
  sensitivity_<variant>_<problem>  one variant's time over its two most varied parameters
  convergence_<family>       best-so-far vs evaluations per search strategy (records with strategy)
  compare                    per-problem speedup against --compare's run
  report.md, report.html     tables (device, ceilings, statuses, best per problem, Nsight Compute
                             profiles and spills) and the plots; report.html is self-contained (PNG embedded)

With profiles.jsonl, the roofline also draws each profiled candidate at its measured DRAM intensity.

Exit status: 0 done (warnings on stderr for skipped lines or plots), 2 unusable input (one line on
stderr: missing summary.json, no records, no ok record, a bad option).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from convtune_plots import figures  # noqa: E402
from convtune_plots.analysis import shape_for  # noqa: E402
from convtune_plots.load import LoadError, load_run, stderr_echo  # noqa: E402
from convtune_plots.report import Plot, html_report, markdown  # noqa: E402

FORMATS = ("png", "svg", "pdf")


def formats(text: str) -> list:
    out = []
    for f in text.split(","):
        f = f.strip().lower().lstrip(".")
        if not f:
            continue
        if f not in FORMATS:
            raise argparse.ArgumentTypeError(f"unknown format '{f}'; allowed: {', '.join(FORMATS)}")
        if f not in out:
            out.append(f)
    if not out:
        raise argparse.ArgumentTypeError("no format given")
    return out


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="plot.py", description="Plots and a report (report.md, report.html) for a convtune run folder.")
    p.add_argument("run", help="run folder (holds records.jsonl and summary.json)")
    p.add_argument("-o", "--outdir", help="where plots and report go (default: <run>/plots)")
    p.add_argument("--compare", metavar="OTHER_RUN", help="another run folder: draw compare.png (speedup per problem)")
    p.add_argument("--format", type=formats, default=["png", "svg"], help="comma list of png, svg, pdf "
                   "(default png,svg; report.html embeds PNG whatever is chosen)")
    p.add_argument("--variant", help="sensitivity plot for this variant (default: most ok configs on the problem)")
    p.add_argument("--problem", help="sensitivity plot on this problem key (default: first problem of each family)")
    p.add_argument("--no-report", action="store_true", help="plots only")
    p.add_argument("-q", "--quiet", action="store_true", help="do not list the files written")
    p.add_argument("--debug", action="store_true", help="let errors in drawing raise with a traceback")
    return p.parse_args(argv)


class Fatal(Exception):
    pass


def draw_all(run, args, compare_run=None):
    """[(name, caption, Figure)] for everything this run can show."""
    out = []

    def attempt(name, caption, fn, *a):
        try:
            fig = fn(*a)
        except Exception as e:  # a bug in one plot should not lose the others
            if args.debug:
                raise
            run.warn(f"{name}: could not be drawn ({type(e).__name__}: {e}); rerun with --debug for details")
            return
        if fig is not None:
            out.append((name, caption, fig))

    fams = run.families()
    if args.problem:
        if args.problem not in run.problems():
            raise Fatal(f"--problem {args.problem!r} is not in this run; problems: {', '.join(run.problems()[:8])}"
                        + (" ..." if len(run.problems()) > 8 else ""))
    if args.variant and not any(r.get("variant") == args.variant or r["candidate"].startswith(args.variant + "[")
                                or r["candidate"] == args.variant for r in run.records):
        raise Fatal(f"--variant {args.variant!r} is not in this run")
    for fam in fams:
        shape = shape_for(fam, run)
        dim = shape.slug if shape else "shape"
        attempt(f"roofline_{fam}",
                f"{fam}: each variant's best config per problem at its modelled arithmetic intensity (faint: at the "
                "minimum-traffic intensity) under the measured copy-bandwidth and FP32 roofs.",
                figures.roofline, run, fam)
        attempt(f"time_vs_{dim}_{fam}",
                f"{fam}: median time of each variant's best config against {shape.label if shape else 'the shape'};"
                " libraries dashed, the thin black line is floor_ms (the roofline bound).",
                figures.time_vs_shape, run, fam)
        attempt(f"best_map_{fam}",
                f"{fam}: fastest variant per shape, with its margin over the next variant's best config.",
                figures.best_map, run, fam)
        if not args.problem or args.problem in run.problems(fam):
            pick = figures.pick_sensitivity(run, fam, args.variant, args.problem)
            if pick is None:
                if args.variant:
                    run.warn(f"sensitivity: {args.variant} has no ok record on "
                             f"{args.problem or 'any ' + fam + ' problem'}; plot skipped")
            else:
                v, prob = pick
                attempt(figures.sensitivity_name(v, prob),
                        f"{v} on {prob}: median time over its two most varied parameters, each cell the best over "
                        "the others.", figures.sensitivity, run, v, prob)
        attempt(f"convergence_{fam}",
                f"{fam}: best-so-far time relative to each problem's best, against evaluations, per search "
                "strategy (geometric mean over problems; band: min–max).",
                figures.convergence, run, fam)
    if compare_run is not None:
        attempt("compare", f"Speedup per problem: A = {run.name}, B = {compare_run.name}; time B / time A of each "
                "run's best candidate.", figures.compare, run, compare_run)
    return out


def write_atomically(path, data):
    """`data` (bytes) into `path` through a temporary file and a rename; returns `path`."""
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as e:
        raise Fatal(f"cannot write {path}: {e.strerror or e}") from None
    return path


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        run = load_run(args.run, echo=stderr_echo)
        compare_run = None
        if args.compare:
            try:
                compare_run = load_run(args.compare, echo=lambda m: stderr_echo(f"--compare: {m}"))
            except LoadError as e:
                raise LoadError(f"--compare: {e}") from None
        outdir = args.outdir or os.path.join(args.run, "plots")
        drawn = draw_all(run, args, compare_run)
        if not drawn:
            raise Fatal(f"{args.run}: nothing could be drawn (see the warnings above)")
        # Everything is rendered in memory first and each file replaced whole (a temporary file, then a
        # rename): a failure leaves the folder's plots and report as they were.
        files, plots = [], []
        for name, caption, fig in drawn:
            p = Plot(name=name, caption=caption)
            for fmt in args.format:
                buf = io.BytesIO()
                fig.savefig(buf, format=fmt, dpi=150 if fmt == "png" else None)
                files.append((f"{name}.{fmt}", buf.getvalue()))
                p.files[fmt] = f"{name}.{fmt}"
                if fmt == "png":  # the report embeds the PNG just drawn: a render less
                    p.png = buf.getvalue()
            if not p.png:
                buf = io.BytesIO()
                fig.savefig(buf, format="png", dpi=110)
                p.png = buf.getvalue()
            plots.append(p)
        if not args.no_report:
            files.append(("report.md", markdown(run, plots, compare_run).encode("utf-8")))
            files.append(("report.html", html_report(run, plots, compare_run).encode("utf-8")))
        try:
            os.makedirs(outdir, exist_ok=True)
        except OSError as e:
            raise Fatal(f"cannot create the output folder {outdir}: {e.strerror or e}") from None
        written = [write_atomically(os.path.join(outdir, fname), data) for fname, data in files]
        if not args.quiet:
            for w in written:
                print(w)
        return 0
    except (LoadError, Fatal) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # anything unforeseen: one line, unless asked for the traceback
        if args.debug:
            traceback.print_exc()
        else:
            print(f"error: unexpected {type(e).__name__}: {e} (rerun with --debug for a traceback)",
                  file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
