"""Plots and reports for convtune run folders.

Reads only the files a run leaves behind (records.jsonl, summary.json, optionally dispatch.json and
profiles.jsonl), never the C++ code. Modules:

  load.py     reading and validating a run folder; LoadError for fatal problems, warnings for the rest
  analysis.py best candidate per problem (the same rule as `convtune best`), shape parameters per family
  figures.py  one function per plot, each returning a matplotlib Figure (or None when there is nothing
              to draw)
  report.py   report.md and a self-contained report.html

scripts/plot.py is the command-line entry point.
"""

from .load import LoadError, Run, load_run  # noqa: F401

__all__ = ["LoadError", "Run", "load_run"]
