"""What the plots and the report compute from records: the best candidate per problem (the same rule as
`convtune best`, harness/select.cpp), the shape parameter that matters per family, and problem labels."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional

from .load import Run, dims_of, family_of, median_ms, num, pos, rel_stderr, variant_of


def noise_threshold(a: dict, b: dict) -> float:
    """Two medians differ beyond noise when their gap exceeds this relative amount (as select.cpp)."""
    return max(0.01, 3.0 * math.hypot(rel_stderr(a), rel_stderr(b)))


@dataclass
class Choice:
    problem_key: str
    best: dict                                # the chosen record
    fastest: dict                             # the fastest ok record (== best unless a simpler one tied)
    ties: list = field(default_factory=list)  # other records within noise of the fastest
    runner_up: Optional[dict] = None          # fastest ok record of another variant than best's
    margin: Optional[float] = None            # runner_up time / best time - 1
    per_variant: dict = field(default_factory=dict)  # variant -> its fastest ok record, fastest first

    @property
    def variant_margin(self) -> Optional[float]:
        """Second fastest variant / fastest variant - 1 (from the best-per-variant medians)."""
        meds = [median_ms(r) for r in self.per_variant.values()]
        return meds[1] / meds[0] - 1.0 if len(meds) > 1 else None

    @property
    def variant_tie(self) -> bool:
        """Whether the two fastest variants are within measurement noise of each other."""
        recs = list(self.per_variant.values())
        if len(recs) < 2:
            return False
        return median_ms(recs[1]) <= median_ms(recs[0]) * (1.0 + noise_threshold(recs[0], recs[1]))


def latest_ok(records: list) -> dict:
    """problem_key -> candidate -> its latest usable ok record (later records replace earlier ones)."""
    out: dict = {}
    for r in records:
        if r.get("status") == "ok" and median_ms(r) is not None:
            out.setdefault(r["problem_key"], {})[r["candidate"]] = r
    return out


def select_best(records: list) -> dict:
    """problem_key -> Choice, over usable ok records. Fastest, then among those within noise of it the
    simplest (lowest complexity, default 5, then fastest)."""
    out = {}
    for key, by_cand in latest_ok(records).items():
        cands = sorted(by_cand.values(), key=median_ms)
        fastest = cands[0]
        close = [r for r in cands if median_ms(r) <= median_ms(fastest) * (1.0 + noise_threshold(fastest, r))]

        def simplicity(r):
            c = num(r.get("complexity"))
            return (c if c is not None else 5, median_ms(r))

        chosen = min(close, key=simplicity)
        c = Choice(problem_key=key, best=chosen, fastest=fastest, ties=[r for r in close if r is not chosen])
        for r in cands:
            c.per_variant.setdefault(variant_of(r), r)
        for r in cands:
            if variant_of(r) != variant_of(chosen):
                c.runner_up = r
                c.margin = median_ms(r) / median_ms(chosen) - 1.0
                break
        out[key] = c
    return out


# --- shapes per family -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """The shape parameter that matters for a family, and how problems group around it."""

    slug: str                  # for file names: time_vs_<slug>_<family>
    label: str                 # axis label
    value: Callable            # dims -> number (None when the dims lack it)
    group: Callable            # dims -> (sort key tuple, label) of the rest of the shape
    group_label: str           # what the groups are (axis label of the best map's x axis)


def _g(d: dict, k: str) -> Optional[float]:
    return d.get(k)


def _fmt_int(x: Optional[float]) -> str:
    if x is None:
        return "?"
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _conv2d_group(d):
    h, w = _g(d, "h"), _g(d, "w")
    label = f"{_fmt_int(h)}²" if h is not None and h == w else f"{_fmt_int(h)}×{_fmt_int(w)}"
    return ((h or 0) * (w or 0), h or 0, w or 0), label


def _conv1d_group(d):
    n, mode = _g(d, "n"), _g(d, "mode")
    mode_s = {0: "valid", 1: "full"}.get(int(mode), f"mode {_fmt_int(mode)}") if mode is not None else ""
    return (n or 0, mode or 0), f"n={_fmt_int(n)}" + (f" {mode_s}" if mode_s else "")


def _parts_group(d):
    n, m = _g(d, "n"), _g(d, "m")
    return (n or 0, m or 0), f"n={_fmt_int(n)}, m={_fmt_int(m)}"


def _parts_value(d):
    s, e = _g(d, "start"), _g(d, "end")
    return e - s if s is not None and e is not None else None


def _layer_value(d):
    c, r, s = _g(d, "c"), _g(d, "r"), _g(d, "s")
    return c * r * s if None not in (c, r, s) else None


# pad is left out: it usually follows r ('same' padding), and would split every group by filter size
_LAYER_REST = ("n", "k", "h", "w", "stride")


def _layer_group(d):
    key = tuple(d.get(k) or 0 for k in _LAYER_REST)
    h, w = d.get("h"), d.get("w")
    label = f"n={_fmt_int(d.get('n'))} k={_fmt_int(d.get('k'))} {_fmt_int(h)}×{_fmt_int(w)}"
    if d.get("stride") not in (None, 1):
        label += f" stride={_fmt_int(d.get('stride'))}"
    return key, label


SHAPES = {
    "conv2d": Shape("r", "filter radius r  (filter (2r+1)×(2r+1))", lambda d: _g(d, "r"), _conv2d_group,
                    "image size (h×w)"),
    "conv1d": Shape("m", "filter length m", lambda d: _g(d, "m"), _conv1d_group, "signal length n"),
    "conv1d_parts": Shape("span", "output span end − start", _parts_value, _parts_group, "operands (n, m)"),
}
for _fam in ("layer_fwd", "layer_bwd_data", "layer_bwd_filter"):
    SHAPES[_fam] = Shape("crs", "reduction length c·r·s", _layer_value, _layer_group, "layer shape")


def _generic_shape(family: str, run: Run) -> Optional[Shape]:
    """For a family this script does not know: the dimension that varies most is the parameter."""
    values: dict = {}
    for r in run.records:
        if family_of(r) == family:
            for k, v in dims_of(r).items():
                values.setdefault(k, set()).add(v)
    varying = sorted((k for k in values if len(values[k]) > 1), key=lambda k: -len(values[k]))
    if not varying:
        return None
    dim = varying[0]
    rest = sorted(k for k in values if k != dim)

    def group(d):
        return tuple(d.get(k) or 0 for k in rest), ",".join(f"{k}={_fmt_int(d.get(k))}" for k in rest) or "all"

    return Shape(dim, dim, lambda d: _g(d, dim), group, ",".join(rest) or "problem")


def shape_for(family: str, run: Optional[Run] = None) -> Optional[Shape]:
    if family in SHAPES:
        return SHAPES[family]
    return _generic_shape(family, run) if run is not None else None


def problem_label(rec: dict) -> str:
    """A short label for a problem: '1024² r=3' for conv2d, the key without its family otherwise."""
    fam, d = family_of(rec), dims_of(rec)
    if fam == "conv2d" and "r" in d:
        return f"{_conv2d_group(d)[1]} r={_fmt_int(d['r'])}"
    key = str(rec.get("problem_key", ""))
    return key.split("/", 1)[1] if "/" in key else key


def fmt_margin(m: Optional[float]) -> str:
    """A margin (runner-up time / best time - 1) as '+12.3%' below 100%, as '×3.4' above."""
    if m is None:
        return "–"
    return f"{100 * m:+.1f}%" if m < 1 else f"×{1 + m:.3g}"


def short_variant(variant: str) -> str:
    """'conv2d.register_tiled' -> 'register_tiled'."""
    return variant.split(".", 1)[1] if "." in variant else variant


def achieved_gflops(rec: dict) -> Optional[float]:
    flops, ms = pos(rec.get("flops")), median_ms(rec)
    return flops / (ms * 1e-3) / 1e9 if flops and ms else None


def gbps(rec: dict) -> Optional[float]:
    v = num(rec.get("gbps_effective"))
    if v is not None:
        return v
    b, ms = pos(rec.get("bytes_min")), median_ms(rec)
    return b / (ms * 1e-3) / 1e9 if b and ms else None


def roofline_fraction(rec: dict) -> Optional[float]:
    v = num(rec.get("roofline_fraction"))
    if v is not None:
        return v
    f, ms = pos(rec.get("floor_ms")), median_ms(rec)
    return f / ms if f and ms else None


def floor_of(records: list) -> dict:
    """problem_key -> floor_ms (the same for every record of a problem; first usable one wins)."""
    out = {}
    for r in records:
        f = pos(r.get("floor_ms"))
        if f is not None:
            out.setdefault(r["problem_key"], f)
    return out


def variant_colors(variants) -> dict:
    """A stable colour per variant (sorted names over tab10, then tab20)."""
    import matplotlib

    names = sorted(set(variants))
    cmap = matplotlib.colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {v: cmap(i % cmap.N) for i, v in enumerate(names)}
