"""Reading and validating a convtune run folder.

Fatal problems (no folder, no or unreadable summary.json, no records.jsonl, no usable ok record) raise
LoadError with a one-line message. Problems that only lose a line or a field (a torn last line from a
crash, a record without a time) become warnings on Run.warnings and the rest is used. profiles.jsonl
(Nsight Compute profiles of some candidates) is optional; any of its metrics may be missing. A packed run
(`convtune pack`) holds records.jsonl.gz and profiles.jsonl.gz instead; they read the same.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import sys
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

REQUIRED = ("problem_key", "candidate", "status")
STATUSES = ("ok", "skipped", "compile_error", "runtime_error", "wrong_result", "timeout")


class LoadError(Exception):
    """A problem that leaves nothing sensible to draw; the message is one line for the user."""


def num(x: Any) -> Optional[float]:
    """x as a finite float, or None (booleans, strings, null, NaN and inf are not numbers here)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def pos(x: Any) -> Optional[float]:
    """x as a finite float > 0, or None."""
    v = num(x)
    return v if v is not None and v > 0 else None


def median_ms(rec: dict) -> Optional[float]:
    t = rec.get("time")
    return pos(t.get("median_ms")) if isinstance(t, dict) else None


def rel_stderr(rec: dict) -> float:
    t = rec.get("time")
    v = num(t.get("rel_stderr")) if isinstance(t, dict) else None
    return v if v is not None and v >= 0 else 0.0


@dataclass
class Run:
    """One run folder: summary, records (file order, unreadable lines dropped), Nsight Compute profiles
    (profiles.jsonl, when there) and what went wrong."""

    path: str
    summary: dict
    records: list
    profiles: dict = field(default_factory=dict)  # (problem_key, candidate) -> latest profiles.jsonl line
    dispatch: Any = None
    warnings: list = field(default_factory=list)
    echo: Optional[Callable[[str], None]] = None  # called with each new warning (plot.py prints them)
    _seen: set = field(default_factory=set, repr=False)

    def warn(self, msg: str) -> None:
        if msg in self._seen:
            return
        self._seen.add(msg)
        self.warnings.append(msg)
        if self.echo:
            self.echo(msg)

    # --- summary helpers -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        spec = self.summary.get("spec")
        folder = os.path.basename(os.path.normpath(self.path))
        if isinstance(spec, dict) and isinstance(spec.get("name"), str) and spec["name"]:
            return spec["name"] if spec["name"] in folder else f"{spec['name']} ({folder})"
        return folder

    @property
    def device(self) -> dict:
        d = self.summary.get("device")
        return d if isinstance(d, dict) else {}

    @property
    def device_name(self) -> str:
        n = self.device.get("name")
        return n if isinstance(n, str) and n else "unknown GPU"

    @property
    def ceilings(self) -> tuple:
        """(copy GB/s, FP32 GFLOP/s); either may be None when not measured."""
        c = self.summary.get("ceilings")
        if not isinstance(c, dict):
            return None, None
        return pos(c.get("copy_gbps")), pos(c.get("fp32_gflops"))

    @property
    def math_ceilings(self) -> dict:
        """Math -> its compute ceiling in GFLOP/s of the fp32 work, for those summary.json holds: "fp32" the
        FMA rate, "tf32" the TF32 tensor-core rate, "3xtf32" a third of it (three products a multiply-add).
        Runs from before the TF32 ceiling have fp32 only."""
        c = self.summary.get("ceilings")
        c = c if isinstance(c, dict) else {}
        out = {}
        fp, tf = pos(c.get("fp32_gflops")), pos(c.get("tf32_gflops"))
        if fp:
            out["fp32"] = fp
        if tf:
            out["tf32"], out["3xtf32"] = tf, tf / 3
        return out

    @property
    def tf32_unavailable(self) -> Optional[str]:
        """Why summary.json has no TF32 rate, where the run said (a device without TF32 tensor cores)."""
        c = self.summary.get("ceilings")
        why = c.get("tf32_unavailable") if isinstance(c, dict) else None
        return why if isinstance(why, str) and why else None

    # --- record helpers --------------------------------------------------------------------------
    def ok(self) -> list:
        """Usable ok records: status ok with a positive time.median_ms (checked at load time)."""
        return [r for r in self.records if r.get("status") == "ok" and median_ms(r) is not None]

    def profile_of(self, rec: dict) -> Optional[dict]:
        """The profile of a record's (problem_key, candidate), or None."""
        return self.profiles.get((rec.get("problem_key"), rec.get("candidate")))

    def families(self) -> list:
        out = []
        for r in self.records:
            f = family_of(r)
            if f not in out:
                out.append(f)
        return out

    def problems(self, family: Optional[str] = None) -> list:
        """Problem keys in file order (first appearance)."""
        out, seen = [], set()
        for r in self.records:
            k = r["problem_key"]
            if k not in seen and (family is None or family_of(r) == family):
                seen.add(k)
                out.append(k)
        return out


def family_of(rec: dict) -> str:
    f = rec.get("family")
    if isinstance(f, str) and f:
        return f
    p = rec.get("problem")
    if isinstance(p, dict) and isinstance(p.get("family"), str):
        return p["family"]
    return str(rec.get("problem_key", "")).split("/", 1)[0] or "unknown"


def dims_of(rec: dict) -> dict:
    """Problem dimensions as {name: number}: from the 'problem' object, else parsed from problem_key."""
    out = {}
    p = rec.get("problem")
    if isinstance(p, dict):
        for k, v in p.items():
            if k != "family" and num(v) is not None:
                out[k] = num(v)
    if out:
        return out
    key = str(rec.get("problem_key", ""))
    body = key.split("/", 1)[1] if "/" in key else ""
    for part in body.split(","):
        k, _, v = part.partition("=")
        try:
            out[k.strip()] = float(v)
        except ValueError:
            pass
    return out


def variant_of(rec: dict) -> str:
    v = rec.get("variant")
    if isinstance(v, str) and v:
        return v
    return str(rec["candidate"]).split("[", 1)[0]


def is_library(rec: dict) -> bool:
    return rec.get("library") is True


def config_of(rec: dict) -> dict:
    """The config object, else parsed from the candidate name 'variant[a=1,b=x]' (values as text/numbers)."""
    c = rec.get("config")
    if isinstance(c, dict):
        return c
    cand = str(rec.get("candidate", ""))
    if "[" not in cand or not cand.endswith("]"):
        return {}
    out = {}
    for part in cand[cand.index("[") + 1 : -1].split(","):
        k, _, v = part.partition("=")
        try:
            out[k] = int(v)
        except ValueError:
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = v
    return out


# --- reading ---------------------------------------------------------------------------------------


def read_json_file(path: str, what: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise LoadError(f"{path}: not found ({what})") from None
    except json.JSONDecodeError as e:
        raise LoadError(f"{path}: not valid JSON (line {e.lineno}: {e.msg})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise LoadError(f"{path}: cannot be read ({e})") from None


def stored_jsonl(path: str) -> str:
    """The file holding path's lines: path itself, or path + ".gz" when only that is there (a run packed
    by `convtune pack`). Readers take the plain file when both are."""
    gz = path + ".gz"
    return gz if not os.path.exists(path) and os.path.exists(gz) else path


# What reading a .jsonl(.gz) can raise besides bad lines: a missing or unreadable file, a corrupt gzip
# (OSError, zlib.error) or a truncated one (EOFError).
READ_ERRORS = (OSError, EOFError, zlib.error)


def _read_jsonl(path: str, warn: Callable[[str], None]) -> Iterable[tuple]:
    """(line number, object) for each line of a .jsonl file (or its .gz, see stored_jsonl) holding a JSON
    object; the others (a torn last line from a crash, bad JSON, not an object) become warnings.
    READ_ERRORS propagate."""
    stored = stored_jsonl(path)
    with (gzip.open if stored.endswith(".gz") else open)(stored, "rb") as f:  # bytes: decoded line by line
        raw = f.read()
    lines = raw.split(b"\n")
    last_nonempty = max((i for i, ln in enumerate(lines) if ln.strip()), default=-1)
    name = os.path.basename(stored)
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        where = f"{name}:{i + 1}"
        try:
            obj = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            torn = i == last_nonempty and not raw.endswith(b"\n")
            why = "torn last line (the run stopped mid-write?)" if torn else "not valid JSON"
            warn(f"{where}: {why}; line skipped")
            continue
        if not isinstance(obj, dict):
            warn(f"{where}: not a JSON object; line skipped")
            continue
        yield i + 1, obj


def _missing(obj: dict, keys: Iterable[str]) -> list:
    return [k for k in keys if not isinstance(obj.get(k), str) or not obj.get(k)]


def read_records(path: str, warn: Callable[[str], None]) -> list:
    """Every readable record of a records.jsonl (or records.jsonl.gz), in file order. Unreadable lines
    become warnings."""
    records = []
    name = os.path.basename(stored_jsonl(path))
    try:
        for line, rec in _read_jsonl(path, warn):
            missing = _missing(rec, REQUIRED)
            if missing:
                warn(f"{name}:{line}: record without {', '.join(missing)}; line skipped")
                continue
            if rec["status"] == "ok" and median_ms(rec) is None:
                warn(f"{name}:{line}: ok record of {rec['candidate']} on {rec['problem_key']} has no usable "
                     f"time.median_ms; left out of plots and tables")
            rec["_line"] = line
            records.append(rec)
    except FileNotFoundError:
        gz = os.path.basename(path) + ".gz"
        raise LoadError(f"{path}: not found, nor {gz} (no records in this run folder)") from None
    except READ_ERRORS as e:
        raise LoadError(f"{stored_jsonl(path)}: cannot be read ({e})") from None
    return records


def read_profiles(path: str, warn: Callable[[str], None]) -> dict:
    """profiles.jsonl or its .gz (Nsight Compute profiles, one per line) as {(problem_key, candidate):
    profile}; a candidate profiled twice keeps its later line. No file: {}."""
    out: dict = {}
    name = os.path.basename(stored_jsonl(path))
    try:
        for line, prof in _read_jsonl(path, warn):
            missing = _missing(prof, ("problem_key", "candidate"))
            if missing:
                warn(f"{name}:{line}: profile without {', '.join(missing)}; line skipped")
                continue
            out.pop((prof["problem_key"], prof["candidate"]), None)  # re-insert: file order of the latest
            out[(prof["problem_key"], prof["candidate"])] = prof
    except FileNotFoundError:
        return {}
    except READ_ERRORS as e:
        warn(f"{stored_jsonl(path)}: cannot be read ({e}); profiles left out")
    return out


def pmetric(prof: dict, key: str, block: str = "metrics") -> Optional[float]:
    """A number from a profile's metrics (or derived) block, or None when absent or not a number."""
    b = prof.get(block)
    return num(b.get(key)) if isinstance(b, dict) else None


def ptext(prof: dict, key: str, block: str = "derived") -> Optional[str]:
    b = prof.get(block)
    v = b.get(key) if isinstance(b, dict) else None
    return v if isinstance(v, str) and v else None


def profile_ok(prof: dict) -> bool:
    return prof.get("status", "ok") == "ok"


def load_run(path: str, echo: Optional[Callable[[str], None]] = None, require_ok: bool = True) -> Run:
    """Reads a run folder. Raises LoadError for what leaves nothing to plot."""
    if not os.path.isdir(path):
        raise LoadError(f"{path}: not a folder (expected a convtune run folder)")
    pending: list = []
    summary = read_json_file(os.path.join(path, "summary.json"),
                             "a convtune run folder has summary.json next to records.jsonl")
    if not isinstance(summary, dict):
        raise LoadError(f"{os.path.join(path, 'summary.json')}: not a JSON object")
    records = read_records(os.path.join(path, "records.jsonl"), pending.append)
    profiles = read_profiles(os.path.join(path, "profiles.jsonl"), pending.append)
    run = Run(path=path, summary=summary, records=records, profiles=profiles, echo=echo)
    for w in pending:
        run.warn(w)
    dpath = os.path.join(path, "dispatch.json")
    if os.path.exists(dpath):
        try:
            run.dispatch = read_json_file(dpath, "dispatch table")
        except LoadError as e:
            run.warn(f"{e}; ignored")
    if summary.get("schema") not in (None, 1):
        run.warn(f"summary.json has schema {summary.get('schema')!r}; this script knows schema 1")
    if not run.device:
        run.warn("summary.json has no device block")
    bw, fp = run.ceilings
    if bw is None or fp is None:
        run.warn("summary.json has no measured ceilings (copy_gbps, fp32_gflops); rooflines drawn without roofs")
    if not summary.get("finished"):
        run.warn("summary.json has no 'finished' time: the run crashed or was interrupted; using what it recorded")
    schemas = {r.get("schema") for r in records} - {1, None}
    if schemas:
        run.warn(f"records with schema {sorted(map(str, schemas))}; this script knows schema 1")
    if require_ok:
        if not records:
            raise LoadError(f"{os.path.join(path, 'records.jsonl')}: no readable records; nothing to plot")
        if not run.ok():
            counts = count_statuses(records)
            what = ", ".join(f"{n} {s}" for s, n in counts.items())
            raise LoadError(f"{path}: no ok record with a time ({len(records)} records: {what}); nothing to plot")
    return run


def count_statuses(records: Iterable[dict]) -> dict:
    out: dict = {}
    for r in records:
        out[r["status"]] = out.get(r["status"], 0) + 1
    order = {s: i for i, s in enumerate(STATUSES)}
    return dict(sorted(out.items(), key=lambda kv: (order.get(kv[0], 99), kv[0])))


def stderr_echo(msg: str) -> None:
    print(f"warning: {msg}", file=sys.stderr)
