"""The Python package on the CPU: import, argument checks, table choice, the tuning cache, and a clear error
without a GPU. The GPU side is test_package_gpu.py."""
import json
import subprocess
import sys

import numpy as np
import pytest

from package_support import NO_EXTENSION, ROOT, convtune, extension_or_none
from convtune import _arrays, _dispatch

EXT = extension_or_none()
needs_extension = pytest.mark.skipif(EXT is None, reason=NO_EXTENSION)


def test_import_names_the_api_and_does_not_import_torch():
    code = ("import sys; sys.path.insert(0, 'tests/python'); import package_support, convtune; "
            "print(all(hasattr(convtune, n) for n in convtune.__all__ if n != 'nn'), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]


@pytest.mark.parametrize("call, argument", [
    (lambda h: convtune.conv2d(h, h), "image"),
    (lambda h: convtune.sep_conv2d(h, h, h), "image"),
    (lambda h: convtune.conv1d(h, h), "signal"),
    (lambda h: convtune.conv1d_slice(h, h, 0, 1), "a"),
])
def test_host_arrays_are_a_type_error_naming_the_argument(call, argument):
    for host in (np.ones((5, 5), np.float32), [1.0, 2.0]):
        with pytest.raises(TypeError, match=f"^{argument}: a host .*allowed: a float32 CUDA array"):
            call(host)


def test_unknown_kinds_are_a_type_error():
    with pytest.raises(TypeError, match="^image: a builtins.object; allowed"):
        convtune.conv2d(object(), object())


def test_bad_mode_and_slice_bounds_are_named():
    with pytest.raises(ValueError, match=r"^mode: 'circular'; allowed: 'full', 'valid' or 'same'"):
        convtune.conv1d(np.ones(3), np.ones(3), mode="circular")
    with pytest.raises(TypeError, match=r"^start: 1.5 \(float\); allowed: an integer"):
        convtune.conv1d_slice(np.ones(3), np.ones(3), 1.5, 3)


def test_property_rules_in_order():
    with pytest.raises(TypeError, match="^x: a torch array on cpu; allowed"):
        _arrays.check_properties("x", "torch", False, "cpu", "torch.float64", False, "torch.float32")
    with pytest.raises(TypeError, match="^x: dtype float64; allowed: float32"):
        _arrays.check_properties("x", "cupy", True, "cuda:0", "float64", False, "float32")
    with pytest.raises(ValueError, match="^x: not C-contiguous; allowed: a C-contiguous"):
        _arrays.check_properties("x", "cupy", True, "cuda:0", "float32", False, "float32")
    _arrays.check_properties("x", "cupy", True, "cuda:0", "float32", True, "float32")


def test_arguments_of_two_kinds_or_two_gpus_are_refused():
    a = _arrays.DeviceArray(None, "torch", 0, (3,), 1)
    with pytest.raises(TypeError, match="^filt: a cupy array, but image is a torch array"):
        _arrays.same_kind_and_device([("image", a), ("filt", _arrays.DeviceArray(None, "cupy", 0, (3,), 2))])
    with pytest.raises(ValueError, match="^filt: on GPU 1, but image is on GPU 0"):
        _arrays.same_kind_and_device([("image", a), ("filt", _arrays.DeviceArray(None, "torch", 1, (3,), 2))])


def test_use_table_refuses_missing_unreadable_and_foreign_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.json: no such file"):
        convtune.use_table(tmp_path / "nope.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(ValueError, match="broken.json: not readable JSON"):
        convtune.use_table(broken)
    other = tmp_path / "other.json"
    other.write_text('{"records": []}')
    with pytest.raises(ValueError, match="other.json: neither a table"):
        convtune.use_table(other)


def test_use_table_switches_and_returns_the_previous(tmp_path):
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"schema": 1, "entries": []}))
    try:
        assert convtune.use_table(table) is None
        assert convtune.table_path() == table
        assert convtune.use_table(None) == table
    finally:
        convtune.use_table(None)
    assert convtune.table_path().name in ("fleet-h100-h200.json", "dispatch.json")


def test_tuned_choices_survive_a_process_and_a_broken_file(tmp_path, monkeypatch):
    monkeypatch.setenv("CONVTUNE_CACHE_DIR", str(tmp_path))
    _dispatch._save_tuned("k1", '{"variant": "conv2d.naive", "config": {}}')
    _dispatch._save_tuned("k2", "x")
    assert _dispatch._load_tuned() == {"k1": '{"variant": "conv2d.naive", "config": {}}', "k2": "x"}
    (tmp_path / "tuned.json").write_text("[1, 2")
    assert _dispatch._load_tuned() == {}


def test_the_tuning_key_separates_table_gpu_family_and_shape(tmp_path, monkeypatch):
    monkeypatch.setattr(_dispatch._settings, "devices", {0: "GPU A", 1: "GPU B"})
    monkeypatch.setattr(_dispatch._settings, "table_digest", "")
    t1, t2 = tmp_path / "1.json", tmp_path / "2.json"
    t1.write_text("{}")
    t2.write_text("{ }")
    key = _dispatch._tune_key(t1, 0, "conv2d", {"h": 5, "w": 6, "r": 1})
    assert key.endswith("|GPU A|conv2d|h=5,r=1,w=6")
    assert key != _dispatch._tune_key(t1, 1, "conv2d", {"h": 5, "w": 6, "r": 1})
    assert key != _dispatch._tune_key(t1, 0, "conv2d", {"h": 5, "w": 6, "r": 2})
    monkeypatch.setattr(_dispatch._settings, "table_digest", "")
    assert key != _dispatch._tune_key(t2, 0, "conv2d", {"h": 5, "w": 6, "r": 1})


@needs_extension
def test_the_runtime_checks_dims_and_errors_name_the_python_argument():
    assert _dispatch.validated_dims("conv1d", {"n": 10, "m": 3}, {}) == {"n": 10, "m": 3, "mode": 1}
    with pytest.raises(ValueError, match=r"^filt: problem\.r: 40 is out of range; allowed 0\.\.32"):
        _dispatch.validated_dims("conv2d", {"h": 9, "w": 9, "r": 40}, {"r": "filt"})
    with pytest.raises(ValueError, match=r"^end: problem\.end: 9 is past the full convolution"):
        _dispatch.validated_dims("conv1d_parts", {"n": 4, "m": 4, "start": 0, "end": 9}, {"end": "end"})
    with pytest.raises(ValueError, match=r"^padding: problem\.pad_h: 3 >= r = 3"):
        dims = dict(n=1, c=1, h=8, w=8, k=1, r=3, s=3, pad_h=3, pad_w=0, u=1, v=1)
        _dispatch.validated_dims("layer_fwd", dims, {"pad_h": "padding"})


@needs_extension
def test_the_extension_holds_every_family():
    families = {name.split(".")[0] for name in convtune.available_variants()}
    assert {"conv2d", "conv2d_separable", "conv1d", "conv1d_parts", "layer_fwd", "layer_bwd_data",
            "layer_bwd_filter", "layer_pool"} <= families


@needs_extension
@pytest.mark.skipif(EXT is not None and EXT.device_count() > 0, reason="a GPU is visible: the GPU tests cover it")
def test_without_a_gpu_a_call_says_so():
    with pytest.raises(RuntimeError, match="no CUDA GPU is visible"):
        _dispatch.convolution("conv2d", {"h": 8, "w": 8, "r": 1}, 0, {})
