"""convtune: tuned GPU convolutions for CuPy, PyTorch and JAX arrays (docs/PYTHON.md).

    import convtune
    y = convtune.conv2d(image, filt)              # 'same' 2D cross-correlation, zero border
    y = convtune.conv1d(signal, filt, mode="valid")
    y = convtune.nn.functional.conv2d(x, w, b, stride=1, padding=1)   # torch, with autograd
    print(convtune.explain(convtune.conv2d, image, filt))

Every call runs the candidate the dispatch table chose for its shape on this GPU (the shipped fleet table
unless convtune.use_table(path) says otherwise), on the caller's current stream, float32 only.
"""
import importlib

from ._dispatch import Explanation, table_path, use_table
from ._functions import conv1d, conv1d_slice, conv2d, sep_conv2d

__version__ = "0.1.0"
__all__ = ["conv2d", "conv1d", "conv1d_slice", "sep_conv2d", "nn", "use_table", "table_path", "explain",
           "Explanation", "available_variants"]

_PLANNERS = None


def __getattr__(name):
    if name == "nn":  # imports torch: only when asked for
        return importlib.import_module(".nn", __name__)
    raise AttributeError(f"module 'convtune' has no attribute {name!r}")


def _planners():
    global _PLANNERS
    if _PLANNERS is None:
        from . import _functions as f
        # out= changes where the result goes, not what runs
        _PLANNERS = {conv2d: lambda *a, out=None, **k: [f.plan_conv2d(*a, **k)],
                     conv1d: lambda *a, out=None, **k: [f.plan_conv1d(*a, **k)],
                     conv1d_slice: lambda *a, out=None, **k: [f.plan_conv1d_slice(*a, **k)],
                     sep_conv2d: lambda *a, out=None, **k: [f.plan_sep_conv2d(*a, **k)]}
    return _PLANNERS


def explain(function, *args, **kwargs):
    """What function(*args, **kwargs) would run, without running it: a list of Explanation, one per
    problem (nn.functional.conv2d: forward, backward-data, backward-filter), each with the candidate, the
    rule that chose it (exact, model, nearest, default, simplest, tuned, cached), which table of which file.
    Makes (and caches) the Convolution objects the call would use, so it needs the GPU.
    """
    planners = _planners()
    if function not in planners and "torch" in __import__("sys").modules:
        from .nn import functional
        planners = {**planners, **functional.EXPLAINERS}
    if function not in planners:
        names = "convtune.conv2d, conv1d, conv1d_slice, sep_conv2d, nn.functional.conv2d, max_pool2d, avg_pool2d"
        raise TypeError(f"function: {function!r}; allowed: {names}")
    from ._dispatch import explanation
    return [explanation(call.entry) for call in planners[function](*args, **kwargs)]


def available_variants():
    """The variants the compiled library holds (empty would mean a broken build)."""
    from ._ext import ext
    return list(ext().available_variants())
