#!/usr/bin/env python3
"""Per problem of a run: each variant's best time, the library's best config and the library's own pick
(records whose details say library_pick), the floor, and our best against both. Markdown on stdout.
Reads records.jsonl, or records.jsonl.gz in a packed run.

    python3 scripts/library_table.py results/<device>/<run> [--family layer_fwd,layer_bwd_data]
"""
import argparse
import collections
import os
import sys

from convtune_plots.load import LoadError, read_records as load_records


def read_records(run):
    """The records of run's records.jsonl, or of records.jsonl.gz when the run is packed (convtune pack);
    unreadable lines are warned about on stderr and left out."""
    return load_records(os.path.join(run, "records.jsonl"), lambda m: print("warning: " + m, file=sys.stderr))


def short_key(key):
    """layer_fwd/c=3,h=224,... -> the dims that differ from their defaults, compactly."""
    family, dims = key.split("/", 1)
    quiet = {"bias=0", "relu=0", "precision=0", "u=1", "v=1", "pad_w=0"}
    parts = [d for d in dims.split(",") if d not in quiet]
    return family + " " + " ".join(parts)


def collect(run, families):
    best = collections.defaultdict(dict)  # problem -> variant -> (ms, candidate)
    picks = {}                             # problem -> (ms, candidate) of the library's own pick
    floors = {}
    for r in read_records(run):
        if families and r.get("family") not in families:
            continue
        if r.get("status") != "ok" or "time" not in r:
            continue
        key, variant, ms = r["problem_key"], r["variant"], r["time"]["median_ms"]
        floors[key] = r.get("floor_ms", 0.0)
        if variant not in best[key] or ms < best[key][variant][0]:
            best[key][variant] = (ms, r["candidate"], r.get("library", False))
        if r.get("details", {}).get("library_pick"):
            picks[key] = (ms, r["candidate"])
    return best, picks, floors


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("--family", default="", help="comma-separated families (default: all)")
    args = ap.parse_args()
    families = set(f for f in args.family.split(",") if f)
    try:
        best, picks, floors = collect(args.run, families)
    except LoadError as e:
        print(f"library_table.py: {e}", file=sys.stderr)
        sys.exit(2)
    if not best:
        which = f"--family {args.family}: no ok record of these families" if families else "no ok record"
        print(f"library_table.py: {which} in {args.run}", file=sys.stderr)
        sys.exit(2)
    print("| problem | floor ms | variants' best (ms) | library best | library pick | ours vs best / pick |")
    print("| --- | ---: | --- | --- | --- | ---: |")
    for key in sorted(best):
        variants = sorted(best[key].items(), key=lambda kv: kv[1][0])
        ours = [(v, t) for v, t in variants if not t[2]]
        libs = [(v, t) for v, t in variants if t[2]]
        cells = ", ".join("%s %.3f" % (v.split(".", 1)[1], t[0]) for v, t in variants if not t[2])
        lib = "%s %.3f" % (libs[0][1][1].split(".", 1)[1], libs[0][1][0]) if libs else "-"
        pick = "%s %.3f" % (picks[key][1].split(".", 1)[1], picks[key][0]) if key in picks else "-"
        ratio = "-"
        if ours and libs:
            ratio = "%.2fx" % (libs[0][1][0] / ours[0][1][0])
            if key in picks:
                ratio += " / %.2fx" % (picks[key][0] / ours[0][1][0])
        print("| %s | %.3f | %s | %s | %s | %s |" % (short_key(key), floors.get(key, 0.0), cells, lib, pick, ratio))


if __name__ == "__main__":
    main()
