"""Which dispatch table is used, the Convolution objects made from it, and first-use tuning's disk cache.

The rules live in the runtime library (runtime/convtune_runtime.h): this module only says which table,
keeps one Convolution per (table, family, dims, device), and remembers what first-use tuning chose so
that another process takes it without tuning again.
"""
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Optional

from ._ext import ext

SHIPPED_TABLE = Path(__file__).parent / "tables" / "fleet-h100-h200.json"
# In a checkout (tests from the tree), the table the package ships from.
_REPO_TABLE = Path(__file__).resolve().parents[2] / "results" / "fleet-h100-h200" / "dispatch.json"


@dataclass
class _Settings:
    table: Optional[Path] = None  # None: the shipped fleet table
    tune_unseen: bool = True
    other_gpu_ok: bool = False
    table_digest: str = ""
    devices: Dict[int, str] = field(default_factory=dict)  # ordinal -> GPU name


_settings = _Settings()
_cache: Dict[tuple, "_Entry"] = {}
# convtune._fast's calls that passed every check, keyed by their arguments' properties: made from _cache's
# entries, so forgotten with them.
fast_calls: Dict[tuple, object] = {}


def default_table():
    for path in (SHIPPED_TABLE, _REPO_TABLE):
        if path.is_file():
            return path
    raise FileNotFoundError(f"the shipped dispatch table is missing ({SHIPPED_TABLE}); reinstall convtune, "
                            "or call convtune.use_table(path) with a dispatch.json")


def table_path():
    """The dispatch table in use (a path)."""
    return _settings.table or default_table()


def use_table(path=None, *, tune_unseen=True, other_gpu_ok=False):
    """Use the dispatch table at `path` (a run's or a fleet's dispatch.json; None: the shipped fleet table).

    tune_unseen: a shape the table never measured is tuned at its first call (the shortlist timed on the
    call's own arrays, the fastest kept, remembered on disk for later processes); False takes the table's
    rule (model or nearest shape) without timing anything. other_gpu_ok: allow a single-GPU table measured
    on another GPU model (by default that is a ValueError at the first call). Returns the previous path
    (None: the shipped table).
    """
    previous = _settings.table
    chosen = default_table() if path is None else Path(os.fspath(path))
    _check_table_file(chosen)
    _settings.table = None if path is None else chosen
    _settings.tune_unseen = bool(tune_unseen)
    _settings.other_gpu_ok = bool(other_gpu_ok)
    _settings.table_digest = ""
    _cache.clear()
    fast_calls.clear()
    return previous


def _check_table_file(path):
    if not path.is_file():
        raise FileNotFoundError(f"dispatch table {path}: no such file; allowed: a dispatch.json that "
                                "`convtune export` wrote (a run's, or a fleet's with -o)")
    try:
        with open(path) as f:
            table = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"dispatch table {path}: not readable JSON ({e})") from e
    if not isinstance(table, dict) or not ("entries" in table or "tables" in table):
        raise ValueError(f"dispatch table {path}: neither a table (\"entries\") nor a fleet (\"tables\"); "
                         "allowed: a dispatch.json that `convtune export` wrote")


class _Entry:
    """A Convolution, and whether first-use tuning may still pick its candidate (then saved once)."""
    __slots__ = ("conv", "tune_key")

    def __init__(self, conv, tune_key):
        self.conv = conv
        self.tune_key = tune_key

    def run(self, inputs, output, stream):
        self.conv.bind_run(inputs, output, stream)
        if self.tune_key is not None:
            if self.conv.rule == "tuned":
                _save_tuned(self.tune_key, self.conv.choice)
            self.tune_key = None


def device_name(device):
    name = _settings.devices.get(device)
    if name is None:
        name = _settings.devices[device] = ext().device_name(device)
    return name


def validated_dims(family, dims, argument_of):
    """dims checked by the runtime's rules (no GPU needed); ValueError naming the Python argument."""
    try:
        return ext().validate_problem(family, dims)
    except ValueError as e:
        message = str(e)
        dim = message.split(":", 1)[0].removeprefix("problem.")
        raise ValueError(f"{argument_of.get(dim, dim)}: {message}") from None


def convolution(family, dims, device, argument_of):
    """The cached _Entry for a problem on a device; made (and checked) at the first call."""
    key = (family, tuple(sorted(dims.items())), device)
    entry = _cache.get(key)
    if entry is None:
        entry = _cache[key] = _make(family, validated_dims(family, dims, argument_of), device)
    return entry


def _make(family, dims, device):
    module = ext()
    if module.device_count() == 0:
        raise RuntimeError("convtune: no CUDA GPU is visible (or no driver); convtune's functions run on a GPU")
    path = table_path()
    tune_key = _tune_key(path, device, family, dims) if _settings.tune_unseen else None
    cached = _load_tuned().get(tune_key, "") if tune_key else ""
    conv = module.Convolution(str(path), family, dims, device, _settings.tune_unseen and not cached, cached)
    _check_table_gpu(conv, path, device)
    waiting = tune_key if conv.rule in ("nearest", "model") and _settings.tune_unseen and not cached else None
    return _Entry(conv, waiting)


def _check_table_gpu(conv, path, device):
    prefix = "single table ("
    if _settings.other_gpu_ok or not conv.table.startswith(prefix):
        return
    measured_on = conv.table[len(prefix):-1]
    here = device_name(device)
    if measured_on != here:
        raise ValueError(f"dispatch table {path}: measured on {measured_on}, but GPU {device} is {here}; allowed: "
                         "a table of this GPU model, a fleet table (`convtune export <run>... -o <folder>`), or "
                         "convtune.use_table(path, other_gpu_ok=True)")


# First-use tuning's choices, on disk: {key: choice JSON}; key = table digest | GPU | family | dims.
def _cache_file():
    root = os.environ.get("CONVTUNE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "convtune")
    return Path(root) / "tuned.json"


def _tune_key(path, device, family, dims):
    if not _settings.table_digest:
        _settings.table_digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    shape = ",".join(f"{k}={v}" for k, v in sorted(dims.items()))
    return f"{_settings.table_digest}|{device_name(device)}|{family}|{shape}"


def _load_tuned():
    try:
        with open(_cache_file()) as f:
            saved = json.load(f)
        return saved if isinstance(saved, dict) else {}
    except (OSError, ValueError):
        return {}  # none yet, or unreadable: tune again (and rewrite it)


def _save_tuned(key, choice):
    target = _cache_file()
    saved = _load_tuned()
    saved[key] = choice
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=target.parent, delete=False, suffix=".tmp") as f:
            json.dump(saved, f, indent=1, sort_keys=True)
        os.replace(f.name, target)  # whole or not at all, for processes reading it meanwhile
    except OSError:
        pass  # a read-only cache costs a tuning in the next process, nothing else


@dataclass(frozen=True)
class Explanation:
    """Which candidate a call runs, by which rule, from which table."""
    family: str
    dims: dict
    candidate: str
    rule: str  # exact | model | nearest | default | simplest | tuned | cached
    table: str  # which table of the file: "exact model (<GPU>)", "single table (<GPU>)"...
    table_file: str
    device: int
    note: str = ""

    def __str__(self):
        shape = ",".join(f"{k}={v}" for k, v in sorted(self.dims.items()))
        text = f"{self.family}:{shape} -> {self.candidate} (rule {self.rule}; table {self.table} of {self.table_file})"
        return text + (f"; {self.note}" if self.note else "")


def explanation(entry):
    conv = entry.conv
    note = ("tuned at the first call (the rule above until then)"
            if entry.tune_key is not None else "")
    return Explanation(conv.family, dict(conv.dims), conv.candidate, conv.rule, conv.table, str(table_path()),
                       conv.device, note)
