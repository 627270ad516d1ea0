"""Loads the compiled extension convtune._convtune on first use, so that `import convtune` and the argument
checks work where it is not built (a checkout, CI): only calls that run something need it."""
import ctypes
import importlib
import importlib.util
import os
import sys

_module = None


def ext():
    """The extension module; ImportError saying how to build it when it is missing."""
    global _module
    if _module is None:
        _module = _load()
    return _module


def _load():
    # cuDNN opens parts of itself (and NVRTC) at run time, and they must find the libcudnn.so.9 the extension
    # links: loaded privately, as Python loads an extension's libraries, the first cuDNN call of first-use
    # tuning crashed the interpreter unless PyTorch or CuPy had loaded cuDNN globally first.
    try:
        ctypes.CDLL("libcudnn.so.9", mode=os.RTLD_GLOBAL)
    except OSError:
        pass  # an extension built without cuDNN, or one that finds it otherwise
    return _import()


def _import():
    path = os.environ.get("CONVTUNE_EXTENSION")  # a tree build: build/python/convtune/_convtune*.so
    if path:
        spec = importlib.util.spec_from_file_location("convtune._convtune", path)
        if spec is None or not os.path.isfile(path):
            raise ImportError(f"CONVTUNE_EXTENSION={path}: no such extension file; allowed: the path of "
                              "_convtune*.so (cmake -DCONVTUNE_PYTHON=ON puts it in build/python/convtune/)")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules["convtune._convtune"] = module
        return module
    try:
        return importlib.import_module("convtune._convtune")
    except ImportError as e:
        raise ImportError("convtune's compiled extension is not built: run `pip install .` in the convtune "
                          "repository (or set CONVTUNE_EXTENSION to a tree build's _convtune*.so; "
                          f"docs/PYTHON.md); {e}") from e
