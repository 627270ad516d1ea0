"""Which convtune package the package tests import: the tree's python/ with a tree build's extension
(cmake -DCONVTUNE_PYTHON=ON: build/python/convtune/_convtune*.so, or CONVTUNE_EXTENSION), else an
installed one (`pip install .`), else the tree's python/ without an extension (the tests that need it
skip, saying how to build it)."""
import glob
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TREE_PACKAGE = os.path.join(ROOT, "python")


def _tree_extension():
    if os.environ.get("CONVTUNE_EXTENSION"):
        return os.environ["CONVTUNE_EXTENSION"]
    found = sorted(glob.glob(os.path.join(ROOT, "build*", "python", "convtune", "_convtune*.so")))
    return found[0] if found else None


def _choose():
    extension = _tree_extension()
    if extension:
        os.environ["CONVTUNE_EXTENSION"] = extension
        sys.path.insert(0, TREE_PACKAGE)
    elif importlib.util.find_spec("convtune") is None:
        sys.path.insert(0, TREE_PACKAGE)


_choose()
import convtune  # noqa: E402


def extension_or_none():
    try:
        from convtune._ext import ext
        return ext()
    except ImportError:
        return None


NO_EXTENSION = ("convtune's extension is not built here: `pip install .` or cmake -DCONVTUNE_PYTHON=ON "
                "(docs/PYTHON.md)")
