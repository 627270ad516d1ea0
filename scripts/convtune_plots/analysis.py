"""What the plots and the report compute from records: the best candidate per problem (the same rule as
`convtune best`, harness/select.cpp), the shape parameter that matters per family, and problem labels."""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from typing import Callable, Optional

from .load import Run, dims_of, family_of, median_ms, num, pmetric, pos, rel_stderr, variant_of


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
    """problem_key -> candidate -> its latest usable ok full-fidelity record (later records replace earlier
    ones; brief records, a search strategy's screening, are not read, as in select.cpp)."""
    out: dict = {}
    for r in records:
        if r.get("status") == "ok" and median_ms(r) is not None and r.get("fidelity", "full") != "brief":
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
    problem: Optional[Callable] = None  # dims -> short problem label (None: the key without its family)
    panel_prefix: str = ""     # before the group label in panel titles
    # fnmatch patterns over short variant names: own kernels that sum products directly, and those that go
    # through FFTs; where a family has both, time_vs_shape marks where the spectral ones take over
    spatial: tuple = ()
    spectral: tuple = ()


def _g(d: dict, k: str) -> Optional[float]:
    return d.get(k)


def fmt_dim(x: Optional[float]) -> str:
    """A dimension as text; lengths from 2^16 up that sit at a power of two (±1) as '2^26', '2^27-1', since
    67108864 is not readable at a glance."""
    if x is None:
        return "?"
    if not float(x).is_integer():
        return f"{x:g}"
    i = int(x)
    if i >= 1 << 16:
        for d in (0, -1, 1):
            if (i - d) & (i - d - 1) == 0:
                return f"2^{(i - d).bit_length() - 1}" + (f"{d:+d}" if d else "")
    return str(i)


def fmt_dims(values: list) -> list:
    """fmt_dim of each, but all as 2^k when all are powers of two and some reach 2^16 (no '4096' next to
    '2^16' on one axis)."""
    ints = [int(v) for v in values if float(v).is_integer() and v >= 2]
    if len(ints) == len(values) and max(ints, default=0) >= 1 << 16 and all(i & (i - 1) == 0 for i in ints):
        return [f"2^{i.bit_length() - 1}" for i in ints]
    return [fmt_dim(v) for v in values]


def _conv2d_group(d):
    h, w = _g(d, "h"), _g(d, "w")
    label = f"{fmt_dim(h)}²" if h is not None and h == w else f"{fmt_dim(h)}×{fmt_dim(w)}"
    return ((h or 0) * (w or 0), h or 0, w or 0), label


def _mode(d) -> str:
    mode = _g(d, "mode")
    return "" if mode is None else {0: "valid", 1: "full"}.get(int(mode), f"mode {fmt_dim(mode)}")


def _conv1d_group(d):
    n, mode = _g(d, "n"), _mode(d)
    return (n or 0, _g(d, "mode") or 0), f"n={fmt_dim(n)}" + (f" {mode}" if mode else "")


def _parts_group(d):
    n, m = _g(d, "n"), _g(d, "m")
    return (n or 0, m or 0), f"n={fmt_dim(n)} m={fmt_dim(m)}"


def _parts_value(d):
    s, e = _g(d, "start"), _g(d, "end")
    return e - s if s is not None and e is not None else None


def _layer_value(d):
    c, r, s = _g(d, "c"), _g(d, "r"), _g(d, "s")
    return c * r * s if None not in (c, r, s) else None


# pad is left out: it usually follows r ('same' padding), and would split every group by filter size
_LAYER_REST = ("n", "k", "h", "w", "u", "v")


def _layer_group(d):
    key = tuple(d.get(k) or 0 for k in _LAYER_REST)
    h, w = d.get("h"), d.get("w")
    label = f"n={fmt_dim(d.get('n'))} k={fmt_dim(d.get('k'))} {fmt_dim(h)}×{fmt_dim(w)}"
    if (d.get("u"), d.get("v")) not in ((None, None), (1, 1)):
        label += f" stride {fmt_dim(d.get('u'))}×{fmt_dim(d.get('v'))}"
    return key, label


def _layer_problem(d):
    """'N32 C64 56² K64 R3', then what differs from a plain stride-1 fp32 layer."""
    h, w, r, s = d.get("h"), d.get("w"), d.get("r"), d.get("s")
    size = f"{fmt_dim(h)}²" if h == w else f"{fmt_dim(h)}×{fmt_dim(w)}"
    taps = f"{fmt_dim(r)}" if r == s else f"{fmt_dim(r)}×{fmt_dim(s)}"
    label = f"N{fmt_dim(d.get('n'))} C{fmt_dim(d.get('c'))} {size}"
    label += f" K{fmt_dim(d.get('k'))} R{taps}" if "k" in d else f" win {taps}"
    if (d.get("u", 1), d.get("v", 1)) != (1, 1):
        label += f" s{fmt_dim(d.get('u'))}"
    if "op" in d:
        label += " " + {0: "max", 1: "avg", 2: "avg-excl"}.get(d.get("op"), f"op{d.get('op')}")
    label += " +bias" if d.get("bias") else ""
    label += {1: " +relu", 2: " +sigmoid", 3: " +tanh"}.get(d.get("relu") or 0, "")  # the relu dim holds the activation
    return label + (" tf32" if d.get("precision") else "")


SHAPES = {
    "conv2d": Shape("r", "filter radius r  (filter (2r+1)×(2r+1))", lambda d: _g(d, "r"), _conv2d_group,
                    "image size (h×w)", problem=lambda d: f"{_conv2d_group(d)[1]} r={fmt_dim(d.get('r'))}",
                    panel_prefix="image size: "),
    "conv1d": Shape("m", "filter length m", lambda d: _g(d, "m"), _conv1d_group, "signal length n, mode",
                    problem=lambda d: f"n={fmt_dim(d.get('n'))} m={fmt_dim(d.get('m'))} {_mode(d)}".strip(),
                    spatial=("direct", "overlap_discard", "overlap_add"), spectral=("*_fft",)),
    "conv1d_parts": Shape("span", "output slice length end − start", _parts_value, _parts_group,
                          "operand lengths (n, m)",
                          problem=lambda d: f"{_parts_group(d)[1]} [{fmt_dim(d.get('start'))}, "
                                            f"+{fmt_dim(_parts_value(d))})",
                          spatial=("spatial",), spectral=("spectral",)),
}
for _fam in ("layer_fwd", "layer_bwd_data", "layer_bwd_filter"):
    SHAPES[_fam] = Shape("crs", "reduction length c·r·s", _layer_value, _layer_group, "layer shape",
                         problem=_layer_problem)


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
        return tuple(d.get(k) or 0 for k in rest), ",".join(f"{k}={fmt_dim(d.get(k))}" for k in rest) or "all"

    return Shape(dim, dim, lambda d: _g(d, dim), group, ",".join(rest) or "problem")


def shape_for(family: str, run: Optional[Run] = None) -> Optional[Shape]:
    if family in SHAPES:
        return SHAPES[family]
    return _generic_shape(family, run) if run is not None else None


def problem_label(rec: dict) -> str:
    """A short label for a problem: '1024² r=3', 'n=2^26 m=129 valid'; the key without its family for a
    family the shape table does not know."""
    shape = SHAPES.get(family_of(rec))
    if shape and shape.problem:
        try:
            return shape.problem(dims_of(rec))
        except (TypeError, ValueError):  # dims missing or not numbers: fall back to the key
            pass
    key = str(rec.get("problem_key", ""))
    return key.split("/", 1)[1] if "/" in key else key


def method_of(shape: Optional[Shape], variant: str) -> Optional[str]:
    """'spatial', 'spectral' or None after the shape's patterns."""
    name = short_variant(variant)
    for kind, pats in (("spatial", shape.spatial if shape else ()), ("spectral", shape.spectral if shape else ())):
        if any(fnmatch.fnmatchcase(name, p) for p in pats):
            return kind
    return None


@dataclass
class Crossover:
    """Where the best spectral variant first beats the best spatial one, along the shape parameter."""

    at: Optional[float]      # first x where spectral is faster; None: spatial faster at every x compared
    before: Optional[float]  # the compared x below it (spatial faster there); None: spectral from the start
    xs: list                 # the x values where both kinds have a time


def crossover(spatial: dict, spectral: dict) -> Optional[Crossover]:
    """From {x: best spatial ms} and {x: best spectral ms}; None when they share no x."""
    xs = sorted(set(spatial) & set(spectral))
    if not xs:
        return None
    prev = None
    for x in xs:
        if spectral[x] < spatial[x]:
            return Crossover(x, prev, xs)
        prev = x
    return Crossover(None, prev, xs)


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


def math_of(rec: dict) -> str:
    """The math a record ran on ("fp32", "tf32", "3xtf32"): its "math", else details.math, else config.math,
    else fp32 (runs from before records stated it; as math_fraction in harness/select.cpp)."""
    for src in (rec, rec.get("details"), rec.get("config")):
        if isinstance(src, dict) and isinstance(src.get("math"), str) and src["math"]:
            return src["math"]
    return "fp32"


def math_fraction(rec: dict) -> Optional[float]:
    """The record's own work against the ceiling of its math (FP32 FMA, TF32, a third of TF32 for 3xTF32):
    roofline_fraction_math, else floor_math_ms / time; for fp32 records of older runs the same floor is
    floor_own_ms. None where the run measured no ceiling of that math."""
    v = num(rec.get("roofline_fraction_math"))
    if v is not None:
        return v
    ms = median_ms(rec)
    floor = pos(rec.get("floor_math_ms"))
    if floor is None and math_of(rec) == "fp32":
        v = num(rec.get("roofline_fraction_own"))
        if v is not None:
            return v
        floor = pos(rec.get("floor_own_ms"))
    return floor / ms if floor and ms else None


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


# --- Nsight Compute profiles (profiles.jsonl) --------------------------------------------------------


def measured_bytes(prof: dict) -> Optional[float]:
    """DRAM bytes ncu measured: derived.bytes_measured, else metrics.dram_bytes, else read + write."""
    b = pmetric(prof, "bytes_measured", "derived") or pmetric(prof, "dram_bytes")
    if b is None:
        r, w = pmetric(prof, "dram_read_bytes"), pmetric(prof, "dram_write_bytes")
        b = r + w if r is not None and w is not None else None
    return b if b and b > 0 else None


def measured_intensity(prof: dict, rec: Optional[dict]) -> Optional[float]:
    """FLOPs per measured DRAM byte: derived.intensity_measured, else the record's flops / measured bytes."""
    i = pos(pmetric(prof, "intensity_measured", "derived"))
    if i is None and rec is not None and pos(rec.get("flops")) and measured_bytes(prof):
        i = rec["flops"] / measured_bytes(prof)
    return i


def model_over_measured(prof: dict, rec: Optional[dict]) -> Optional[float]:
    """Modelled bytes / measured DRAM bytes: derived.bytes_model_over_measured, else from the record."""
    v = pos(pmetric(prof, "bytes_model_over_measured", "derived"))
    if v is None and rec is not None and pos(rec.get("bytes_model")) and measured_bytes(prof):
        v = rec["bytes_model"] / measured_bytes(prof)
    return v


def local_memory(rec: dict, prof: Optional[dict]) -> tuple:
    """(local traffic bytes ncu measured, local bytes per thread the compiler reserved), each None when
    absent or zero: either above zero means the kernel spills registers (or keeps arrays in local memory)."""
    traffic = pos(pmetric(prof, "local_spill_bytes")) if prof else None
    k = rec.get("kernel")
    per_thread = pos(k.get("local_bytes")) if isinstance(k, dict) else None
    return traffic, per_thread
