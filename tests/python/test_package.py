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
    with pytest.raises(ValueError) as refused:
        _arrays.check_properties("x", "cupy", True, "cuda:0", "float32", False, "float32")
    assert str(refused.value) == ("x: not C-contiguous; allowed: a C-contiguous (row-major, dense) array "
                                  "(torch: .contiguous(), cupy: cupy.ascontiguousarray)")
    _arrays.check_properties("x", "cupy", True, "cuda:0", "float32", True, "float32")


def _standin_of_module(module):
    """An object whose type claims to live in `module` (how device_array tells the kinds apart)."""
    return type("Array", (), {"__module__": module})()


@pytest.mark.parametrize("module, reader", [("torch", "_torch_array"), ("torch.nn.parameter", "_torch_array"),
                                            ("cupy._core.core", "_cupy_array"), ("jax", "_jax_array"),
                                            ("jaxlib.xla_extension", "_jax_array")])
def test_the_kind_is_the_root_of_the_types_module(monkeypatch, module, reader):
    for name in ("_torch_array", "_cupy_array", "_jax_array"):
        monkeypatch.setattr(_arrays, name, lambda obj, arg, name=name: (name, arg))
    assert _arrays.device_array(_standin_of_module(module), "image") == (reader, "image")


def test_a_jax_array_on_several_devices_names_the_count():
    class Device:
        platform = "gpu"
    standin = type("Array", (), {"__module__": "jaxlib.xla_extension", "devices": lambda self: [Device(), Device()]})()
    with pytest.raises(ValueError) as refused:
        _arrays.device_array(standin, "signal")
    assert str(refused.value) == "signal: a JAX array on 2 devices; allowed: an array on one GPU"


def test_arguments_of_two_kinds_or_two_gpus_are_refused():
    a = _arrays.DeviceArray(None, "torch", 0, (3,), 1)
    with pytest.raises(TypeError, match="^filt: a cupy array, but image is a torch array"):
        _arrays.same_kind_and_device([("image", a), ("filt", _arrays.DeviceArray(None, "cupy", 0, (3,), 2))])
    with pytest.raises(ValueError, match="^filt: on GPU 1, but image is on GPU 0"):
        _arrays.same_kind_and_device([("image", a), ("filt", _arrays.DeviceArray(None, "torch", 1, (3,), 2))])
    # Either order, each message whole.
    b = _arrays.DeviceArray(None, "cupy", 1, (3,), 2)
    with pytest.raises(TypeError) as refused:
        _arrays.same_kind_and_device([("image", b), ("filt", a)])
    assert str(refused.value) == "filt: a torch array, but image is a cupy array; allowed: arrays of one kind"
    with pytest.raises(ValueError) as refused:
        _arrays.same_kind_and_device([("image", b), ("filt", _arrays.DeviceArray(None, "cupy", 0, (3,), 3))])
    assert str(refused.value) == "filt: on GPU 0, but image is on GPU 1; allowed: arrays on one GPU"
    _arrays.same_kind_and_device([("image", b), ("filt", _arrays.DeviceArray(None, "cupy", 1, (3,), 3))])


def test_only_float32_passes_the_dtype_rule():
    for dtype in ("float16", "float64", "int32", "bfloat16"):
        with pytest.raises(TypeError, match=f"^x: dtype {dtype}; allowed: float32"):
            _arrays.check_properties("x", "cupy", True, "cuda:0", dtype, True, "float32")


@pytest.mark.parametrize("host", [(1.0, 2.0), 3, 2.5, [1.0]])
def test_host_values_of_every_python_type_are_refused_as_host(host):
    with pytest.raises(TypeError, match=f"^a: a host {type(host).__name__}; allowed: a float32 CUDA array"):
        _arrays.device_array(host, "a")


@pytest.mark.parametrize("module", ["xarray.core.dataarray", "zarr.core", "builtins"])
def test_an_array_of_another_library_is_refused_naming_its_type(module):
    with pytest.raises(TypeError) as refused:
        _arrays.device_array(_standin_of_module(module), "image")
    assert str(refused.value) == f"image: a {module}.Array; allowed: {_arrays.ALLOWED}"


class _JaxDevice:
    def __init__(self, platform="gpu", id=5, local_hardware_id=2):
        self.platform, self.id = platform, id
        if local_hardware_id is not None:
            self.local_hardware_id = local_hardware_id


def _jax_standin(device, dtype="float32", shape=(3, 4)):
    cls = type("Array", (), {"__module__": "jaxlib.xla_extension"})
    a = cls()
    a.dtype, a.shape, a.ready = dtype, shape, False
    a.devices = lambda: [device]
    a.unsafe_buffer_pointer = lambda: 4096

    def block_until_ready():
        a.ready = True
    a.block_until_ready = block_until_ready
    return a


def test_a_jax_array_on_one_gpu_is_read_where_it_lies():
    a = _jax_standin(_JaxDevice())
    got = _arrays.device_array(a, "signal")
    assert (got.kind, got.device, got.shape, got.ptr, got.name, got.obj) == ("jax", 2, (3, 4), 4096, "signal", a)
    assert a.ready  # its pending work finished before a kernel reads it
    # Without local_hardware_id (older JAX) the device's id is the ordinal; "cuda" is a GPU platform too.
    assert _arrays.device_array(_jax_standin(_JaxDevice("cuda", 3, None)), "signal").device == 3
    with pytest.raises(TypeError, match="^signal: a jax array on .*; allowed: a float32 CUDA array"):
        _arrays.device_array(_jax_standin(_JaxDevice("cpu")), "signal")
    with pytest.raises(TypeError, match="^signal: dtype float64; allowed: float32"):
        _arrays.device_array(_jax_standin(_JaxDevice(), "float64"), "signal")
    with pytest.raises(ValueError, match="^signal: a JAX array on 0 devices; allowed: an array on one GPU"):
        b = _jax_standin(_JaxDevice())
        b.devices = lambda: []
        _arrays.device_array(b, "signal")


def test_memory_apart_is_a_half_open_interval_and_empty_arrays_share_nothing():
    _arrays.check_apart(1000, 64, [("image", 1064, 64), ("filt", 936, 64)])  # adjacent on both sides
    _arrays.check_apart(1000, 64, [("image", 1010, 0)])  # an empty input inside the output's range
    _arrays.check_apart(1000, 0, [("image", 990, 64)])  # an empty output inside an input
    for ptr in (1063, 937):
        with pytest.raises(ValueError) as refused:
            _arrays.check_apart(1000, 64, [("filt", 0, 4), ("image", ptr, 64)])
        assert str(refused.value) == "out: shares memory with image; allowed: an array apart from the inputs"


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
    with pytest.raises(ValueError, match=r"^image: problem\.b: 0 is out of range; allowed 1\.\.65535"):
        _dispatch.validated_dims("conv2d", {"h": 9, "w": 9, "r": 1, "b": 0}, {"b": "image"})
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


# out= and the fast path (convtune._fast), on stand-in arrays: a kind whose properties the test sets.
class FakeArray:
    def __init__(self, shape, ptr, dtype="float32", device=0, contiguous=True):
        self.shape, self.ptr, self.dtype, self.device, self.contiguous = tuple(shape), ptr, dtype, device, contiguous


class FakeKind:
    name = "torch"
    signature = staticmethod(lambda a: (type(a), a.dtype, a.shape, a.device, a.contiguous))
    pointer = staticmethod(lambda a: a.ptr)
    device_handle = staticmethod(lambda a: a.device)
    stream = staticmethod(lambda device: 77)
    new = staticmethod(lambda device, shape: FakeArray(shape, 90_000, device=device))
    like = None  # no faster allocation after an argument's shape
    plain = FakeArray  # the type `like` would be taken for


class RecordingConv:
    def __init__(self):
        self.calls = []

    def bind_run(self, inputs, output, stream):
        self.calls.append((list(inputs), output, stream))


def described(a, name, kind="torch"):
    return _arrays.DeviceArray(a, kind, a.device, a.shape, a.ptr, name)


def checked(inputs, out_shape, tune_key=None, kind="torch"):
    """A stand-in for a _Call that passed every check: inputs are (array, name) in the family's order."""
    from types import SimpleNamespace
    arrays = [described(a, name, kind) for a, name in inputs]
    return SimpleNamespace(like=arrays[0], inputs=arrays, out_shape=out_shape,
                           entry=SimpleNamespace(conv=RecordingConv(), tune_key=tune_key))


@pytest.fixture
def fake_kind(monkeypatch):
    from convtune import _fast
    monkeypatch.setattr(_arrays, "kind_of", lambda obj: FakeKind)
    monkeypatch.setattr(_fast, "_kind_by_type", {})
    monkeypatch.setattr(_dispatch, "fast_calls", {})
    return _fast


def test_a_remembered_call_runs_again_on_new_pointers(fake_kind):
    image, filt = FakeArray((8, 9), 1000), FakeArray((3, 3), 2000)
    call = checked([(image, "image"), (filt, "filt")], (8, 9))
    fake_kind.remember("conv2d", None, (image, filt), None, call)
    out = convtune.conv2d(FakeArray((8, 9), 3000), FakeArray((3, 3), 4000))  # the public function's fast path
    assert isinstance(out, FakeArray) and out.shape == (8, 9)
    assert call.entry.conv.calls == [([3000, 4000], 90_000, 77)]


@pytest.mark.parametrize("change", ["dtype", "shape", "device", "contiguous", "type", "filter", "tag", "extra", "out"])
def test_any_checked_property_that_differs_takes_the_checked_path(fake_kind, change):
    class OtherArray(FakeArray):
        pass
    image, filt = FakeArray((8, 9), 1000), FakeArray((3, 3), 2000)
    call = checked([(image, "image"), (filt, "filt")], (8, 9))
    fake_kind.remember("conv2d", None, (image, filt), None, call)
    tag, extra, out = "conv2d", None, None
    args = {"dtype": dict(dtype="float64"), "shape": dict(shape=(8, 10)), "device": dict(device=1),
            "contiguous": dict(contiguous=False)}.get(change, {})
    image = FakeArray(**{"shape": (8, 9), "ptr": 5000, **args})
    if change == "type":
        image = OtherArray((8, 9), 5000)
    if change == "filter":
        filt = FakeArray((5, 5), 2000)
    tag = "sep_conv2d" if change == "tag" else tag
    extra = "valid" if change == "extra" else extra
    out = FakeArray((8, 9), 7000) if change == "out" else out
    assert fake_kind.call(tag, extra, (image, filt), out) is fake_kind.MISS
    assert call.entry.conv.calls == []


def test_operands_go_in_the_order_the_checked_call_put_them(fake_kind):
    signal, filt = FakeArray((5,), 1000), FakeArray((9,), 2000)  # conv1d "valid" with the longer filt: swapped
    call = checked([(filt, "filt"), (signal, "signal")], (5,))
    fake_kind.remember("conv1d", "valid", (signal, filt), None, call)
    fake_kind.call("conv1d", "valid", (FakeArray((5,), 10), FakeArray((9,), 20)), None)
    assert call.entry.conv.calls[0][0] == [20, 10]


def test_a_new_output_is_allocated_like_the_argument_of_its_shape(fake_kind, monkeypatch):
    # torch.empty_like(x) is faster than new_empty: the fast path uses it on the argument whose shape the
    # output has, through the checked call's order (conv1d "valid" with the longer filt swaps the operands).
    monkeypatch.setattr(FakeKind, "like", staticmethod(lambda a: FakeArray(a.shape, 95_000 + a.ptr)), raising=False)
    signal, filt = FakeArray((5,), 1000), FakeArray((9,), 2000)
    call = checked([(filt, "filt"), (signal, "signal")], (5,))
    fake_kind.remember("conv1d", "valid", (signal, filt), None, call)
    out = fake_kind.call("conv1d", "valid", (FakeArray((5,), 10), FakeArray((9,), 20)), None)
    assert (out.shape, out.ptr) == ((5,), 95_010)
    assert call.entry.conv.calls == [([20, 10], 95_010, 77)]
    call = checked([(signal, "signal"), (filt, "filt")], (13,))  # "full": no argument of the output's shape
    fake_kind.remember("conv1d", "full", (signal, filt), None, call)
    out = fake_kind.call("conv1d", "full", (FakeArray((5,), 10), FakeArray((9,), 20)), None)
    assert (out.shape, out.ptr) == ((13,), 90_000)

    class SubArray(FakeArray):  # e.g. a torch.Tensor subclass: empty_like would return one, the checked path not
        pass
    signal = SubArray((5,), 1000)
    call = checked([(filt, "filt"), (signal, "signal")], (5,))
    fake_kind.remember("conv1d", "valid", (signal, filt), None, call)
    out = fake_kind.call("conv1d", "valid", (SubArray((5,), 10), FakeArray((9,), 20)), None)
    assert type(out) is FakeArray and (out.shape, out.ptr) == ((5,), 90_000)


def test_out_is_written_and_returned_and_must_lie_apart_from_the_inputs(fake_kind):
    image, filt, out = FakeArray((8, 9), 1000), FakeArray((3, 3), 1000 + 8 * 9 * 4), FakeArray((8, 9), 50_000)
    call = checked([(image, "image"), (filt, "filt")], (8, 9))
    fake_kind.remember("conv2d", None, (image, filt), out, call)
    moved = FakeArray((8, 9), 60_000)
    assert convtune.conv2d(image, filt, out=moved) is moved
    assert call.entry.conv.calls == [([1000, 1000 + 8 * 9 * 4], 60_000, 77)]
    with pytest.raises(ValueError, match="^out: shares memory with filt; allowed: an array apart from the inputs"):
        convtune.conv2d(image, filt, out=FakeArray((8, 9), 1000 + 8 * 9 * 4 + 8))
    with pytest.raises(ValueError, match="^out: shares memory with image"):
        convtune.conv2d(image, filt, out=FakeArray((8, 9), 1000 - 4 * 8 * 9 + 4))
    convtune.conv2d(image, filt, out=FakeArray((8, 9), 1000 - 4 * 8 * 9))  # ends where image starts: apart
    assert len(call.entry.conv.calls) == 2


def test_integer_arguments_are_checked_before_the_fast_path(fake_kind):
    a, b = FakeArray((10,), 1000), FakeArray((4,), 2000)
    call = checked([(a, "a"), (b, "b")], (2,))
    fake_kind.remember("conv1d_slice", (1, 3), (a, b), None, call)
    convtune.conv1d_slice(a, b, 1, 3)
    assert len(call.entry.conv.calls) == 1
    with pytest.raises(TypeError, match=r"^start: 1.0 \(float\); allowed: an integer"):
        convtune.conv1d_slice(a, b, 1.0, 3)  # equal to 1 as a key, but no integer


def test_calls_still_tuning_jax_calls_and_other_tables_are_not_remembered(fake_kind, tmp_path):
    image, filt = FakeArray((8, 9), 1000), FakeArray((3, 3), 2000)
    fake_kind.remember("conv2d", None, (image, filt), None, checked([(image, "image"), (filt, "filt")], (8, 9), "key"))
    fake_kind.remember("conv2d", None, (image, filt), None,
                       checked([(image, "image"), (filt, "filt")], (8, 9), kind="jax"))
    assert _dispatch.fast_calls == {}
    fake_kind.remember("conv2d", None, (image, filt), None, checked([(image, "image"), (filt, "filt")], (8, 9)))
    assert len(_dispatch.fast_calls) == 1
    table = tmp_path / "t.json"
    table.write_text(json.dumps({"schema": 1, "entries": []}))
    try:
        convtune.use_table(table)
        assert _dispatch.fast_calls == {}
    finally:
        convtune.use_table(None)


def test_unseen_arguments_take_the_checked_path_and_its_errors(fake_kind):
    with pytest.raises(TypeError, match="^image: a test_package.FakeArray; allowed"):
        convtune.conv2d(FakeArray((8, 9), 1), FakeArray((3, 3), 2))


def test_the_kinds_signatures_hold_every_checked_property():
    from types import SimpleNamespace as NS

    class Tensor:
        def __init__(self, dtype="torch.float32", shape=(4, 4), device="cuda:0", contiguous=True):
            self.dtype, self.shape, self.device, self._contiguous = dtype, shape, device, contiguous

        def is_contiguous(self):
            return self._contiguous

    def cupy_array(dtype="float32", shape=(4, 4), device=0, contiguous=True):
        return NS(dtype=dtype, shape=shape, data=NS(device_id=device), _c_contiguous=contiguous)

    for sign, make in ((_arrays._TorchKind.signature, Tensor), (_arrays._CupyKind.signature, cupy_array)):
        base = sign(make())
        assert base == sign(make())
        for change in (dict(dtype="float64"), dict(shape=(4, 5)), dict(device=1), dict(contiguous=False)):
            assert sign(make(**change)) != base, change
    assert _arrays._TorchKind.signature(type("Sub", (Tensor,), {})()) != _arrays._TorchKind.signature(Tensor())


def test_out_is_checked_as_an_argument_named_out(monkeypatch):
    image = _arrays.DeviceArray(None, "torch", 0, (4, 4), 1000, "image")
    given = {}
    original = _arrays.device_array
    monkeypatch.setattr(_arrays, "device_array", lambda obj, name: given.get(id(obj)) or original(obj, name))

    def out(kind="torch", device=0, shape=(4, 4), ptr=50_000):
        obj = object()
        given[id(obj)] = _arrays.DeviceArray(obj, kind, device, shape, ptr, "out")
        return obj
    with pytest.raises(TypeError, match="^out: a host ndarray; allowed: a float32 CUDA array"):
        _arrays.output_array(np.ones((4, 4), np.float32), [image], (4, 4))
    with pytest.raises(TypeError, match="^out: a JAX array; allowed: a CuPy or PyTorch array"):
        _arrays.output_array(out(kind="jax"), [image], (4, 4))
    with pytest.raises(TypeError, match="^out: a cupy array, but image is a torch array"):
        _arrays.output_array(out(kind="cupy"), [image], (4, 4))
    with pytest.raises(ValueError, match="^out: on GPU 1, but image is on GPU 0"):
        _arrays.output_array(out(device=1), [image], (4, 4))
    with pytest.raises(ValueError, match=r"^out: shape \(4, 5\); allowed: \(4, 4\), the result's shape"):
        _arrays.output_array(out(shape=(4, 5)), [image], (4, 4))
    with pytest.raises(ValueError, match=r"^out: shape \(4, 3\); allowed: \(4, 4\), the result's shape"):
        _arrays.output_array(out(shape=(4, 3)), [image], (4, 4))
    with pytest.raises(TypeError) as refused:
        _arrays.output_array(out(kind="jax"), [image], (4, 4))
    assert str(refused.value) == ("out: a JAX array; allowed: a CuPy or PyTorch array (JAX arrays are immutable: "
                                  "leave out= out and take the returned array)")
    with pytest.raises(ValueError, match="^out: shares memory with image"):
        _arrays.output_array(out(ptr=1000 + 60), [image], (4, 4))
    assert _arrays.output_array(out(ptr=1000 + 64), [image], (4, 4)).ptr == 1064


# python -m convtune.bench and convtune.train_check: their arguments and arithmetic (the runs need a GPU).
def test_bench_arguments():
    from convtune import bench
    plain, overhead = bench.parse_args([]), bench.parse_args(["--overhead"])
    assert (plain.overhead, plain.json) == (False, "convtune_bench.json")
    assert (overhead.overhead, overhead.json, overhead.size, overhead.calls, overhead.repeats) == (
        True, "convtune_overhead.json", 512, 400, 20)
    assert bench.parse_args(["--overhead", "--json", "x.json"]).json == "x.json"
    assert bench.parse_args(["--prepare-workers", "0"]).prepare_workers == 0
    for bad in (["--overhead", "--calls", "0"], ["--prepare-workers", "-2"]):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)


def test_the_benchmark_streams_only_libraries_near_the_fastest_single_call():
    from convtune import bench
    assert bench.STREAM_CUTOFF == 4.0
    ms = {"slow": 9.0, "fast": 2.0, "at the cutoff": 8.0, "near": 3.5, "past it": 8.01}
    assert bench._streamed(ms) == ["fast", "at the cutoff", "near"]
    assert bench._streamed({"alone": 0.5}) == ["alone"]


def test_the_benchmark_writes_its_json_whole_or_not_at_all(tmp_path):
    from convtune import bench

    class Torch:  # what _write_json reads of torch
        class cuda:
            @staticmethod
            def get_device_name():
                return "a GPU"

    path = tmp_path / "bench.json"
    bench._write_json(str(path), Torch, 20, 1.5, [{"problem": "conv2d 512^2 r=1"}])
    assert json.loads(path.read_text()) == {"device": "a GPU", "samples": 20, "compiled_ahead_s": 1.5,
                                             "rows": [{"problem": "conv2d 512^2 r=1"}]}
    with pytest.raises(TypeError):  # a row that cannot be written: the last whole file stays
        bench._write_json(str(path), Torch, 20, 1.5, [{"problem": object()}])
    assert json.loads(path.read_text())["rows"] == [{"problem": "conv2d 512^2 r=1"}]


def test_the_benchmark_compiles_ahead_what_it_runs():
    from convtune import bench
    quick = bench.problems(True)
    assert [family for family, _ in quick] == ["conv2d", "conv2d", "conv1d", "conv2d_separable", "conv1d_parts",
                                               "layer_pool", "layer_pool", "layer_fwd", "layer_bwd_data",
                                               "layer_bwd_filter"]
    assert quick[0][1] == {"h": 2048, "w": 2048, "r": 3} and quick[1][1] == {"h": 512, "w": 512, "r": 3, "b": 64}
    assert quick[2][1] == {"n": 1 << 26, "m": 129, "mode": 1}
    assert quick[4][1] == {"n": 1 << 22, "m": 1 << 22, "start": (1 << 22) - 1, "end": (1 << 22) + 4096}
    # The slice is the default spec's, so that the shipped table has it exactly (4097 outputs).
    from pathlib import Path
    spec = json.loads((Path(__file__).resolve().parents[2] / "sweeps" / "default.json").read_text())
    parts = [p for p in spec["problems"] if p["family"] == "conv1d_parts"]
    assert [{k: p[k] for k in ("n", "m", "start", "end")} for p in parts] == [quick[4][1]]
    assert [dims["op"] for _, dims in quick[5:7]] == [0, 1]  # max, then avg counting the padding
    assert quick[5][1] == {"n": 32, "c": 64, "h": 112, "w": 112, "r": 3, "s": 3, "pad_h": 1, "pad_w": 1, "u": 2,
                           "v": 2, "op": 0}
    assert len(bench.problems(False)) == 9 + 4 + 6 + 2 + 1 + 2 + 3 * 6
    for row, family in (("sep_conv2d 2048^2 r=3", "conv2d_separable"), ("max_pool2d N32", "layer_pool"),
                        ("conv1d_slice n=m=2^22", "conv1d_parts"), ("layer N32", "layer_fwd")):
        assert bench._matches((family, {}), row) and not bench._matches(("conv2d", {}), row)
    from convtune._layers import layer_problems
    first_layer = layer_problems([((2, 3, 8, 8), (4, 3, 3, 3), (2, 2), (1, 1), False)])  # its input needs no gradient
    assert [family for family, _ in first_layer] == ["layer_fwd", "layer_bwd_filter"]
    assert first_layer[1][1] == {"n": 2, "c": 3, "h": 8, "w": 8, "k": 4, "r": 3, "s": 3, "pad_h": 1, "pad_w": 1,
                                 "u": 2, "v": 2, "precision": 0}


def test_overhead_loops_take_turns_within_each_repeat():
    # A drift of the host's speed must fall on Python's and C++'s loops alike: they alternate, repeat by repeat.
    from convtune import bench
    order = []

    class Side:
        sync = staticmethod(lambda: None)
        event = staticmethod(lambda: len(order))
        elapsed_ms = staticmethod(lambda start, stop: 0.5)

    loops = [lambda: order.append("python") or 0.004, lambda: order.append("c++") or 0.002]
    host, gpu = bench._per_call_us(Side(), loops, 100, 3)
    assert order == ["python", "c++"] * 3
    assert host == [[40.0] * 3, [20.0] * 3] and gpu == [[5.0] * 3, [5.0] * 3]


def test_stream_timing_is_one_run_of_back_to_back_calls_per_repeat():
    # Between the two events of a repeat lie all `calls` calls and nothing else; the result is per call.
    from convtune import _timing
    log = []

    class Event:
        def __init__(self, enable_timing):
            self.at = None

        def record(self):
            self.at = len(log)
            log.append("event")

        def synchronize(self):
            pass

        def elapsed_time(self, stop):
            return 2.0 * (stop.at - self.at - 1)  # 2 ms a call between them

    class Torch:
        class cuda:
            synchronize = staticmethod(lambda: log.append("sync"))  # after the warm-up: each repeat starts idle
    Torch.cuda.Event = Event
    per_call = _timing.stream_ms(lambda: log.append("call"), Torch, calls=4, repeats=3, warmup=2)
    assert log == ["call"] * 2 + ["sync"] + (["event"] + ["call"] * 4 + ["event"]) * 3
    assert per_call == pytest.approx(2.0)


def test_train_check_arguments():
    from convtune import train_check
    full, quick = train_check.parse_args([]), train_check.parse_args(["--quick"])
    assert (full.steps, full.batch, full.warmup, full.samples) == (50, 32, 5, 10)
    assert (quick.steps, quick.batch, quick.warmup, quick.samples) == (12, 32, 3, 3)
    assert train_check.parse_args(["--quick", "--steps", "20", "--batch", "8"]).steps == 20
    assert train_check.parse_args(["--prepare-workers", "0"]).prepare_workers == 0
    for bad in (["--steps", "5", "--warmup", "5"], ["--batch", "0"], ["--tolerance", "0"], ["--prepare-workers", "-1"]):
        with pytest.raises(SystemExit):
            train_check.parse_args(bad)


def test_train_check_arithmetic():
    from convtune import _timing, train_check
    assert train_check.reported_steps(50) == [1, 10, 25, 50]
    assert train_check.reported_steps(12) == [1, 10, 12]
    assert train_check.reported_steps(1) == [1]
    assert train_check.max_relative_difference([1.0, 2.0], [1.0, 2.5]) == pytest.approx(0.2)
    assert train_check.max_relative_difference([1.0, float("nan")], [1.0, 2.0]) == float("inf")
    assert _timing.output_hw(224, 224, 7, 7, 2, 3) == (112, 112)
    assert _timing.output_hw(56, 56, 1, 1, (2, 2), (0, 0)) == (28, 28)


def test_train_check_trains_the_models_a_step_each_in_turn():
    from types import SimpleNamespace
    from convtune import train_check
    order = []

    def steps_of(torch, model, args, dtype):
        for step in range(args.steps):
            order.append((model, step, dtype))
            yield 10.0 * step + (model == "b"), 0.001 * (step + 1) + 0.1 * (model == "b")

    out = train_check.train(None, {"a": "a", "b": "b"}, SimpleNamespace(steps=3), "f64", steps_of=steps_of)
    assert [(m, s) for m, s, _ in order] == [("a", 0), ("b", 0), ("b", 1), ("a", 1), ("a", 2), ("b", 2)]
    assert {d for _, _, d in order} == {"f64"}
    assert out == {"a": ([0.0, 10.0, 20.0], [0.001, 0.002, 0.003]),
                   "b": ([1.0, 11.0, 21.0], [pytest.approx(0.101), pytest.approx(0.102), pytest.approx(0.103)])}


@pytest.mark.parametrize("module", ["convtune.bench", "convtune.train_check"])
def test_the_modules_help_needs_no_torch(module):
    code = ("import sys, runpy; sys.path.insert(0, 'tests/python'); import package_support; sys.argv = ['x', '--help']\n"
            f"try: runpy.run_module('{module}', run_name='__main__')\n"
            "except SystemExit as e: print('exit', e.code, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "--json" in out.stdout and out.stdout.split()[-3:] == ["exit", "0", "False"]


def test_the_fast_path_remembers_at_most_its_limit_of_calls(fake_kind):
    # Memory stays bounded in a process that sees endless shapes: past _LIMIT the remembered calls are forgotten
    # at once (and learnt again); up to it, none is.
    filt = FakeArray((3, 3), 2000)
    for i in range(fake_kind._LIMIT):
        image = FakeArray((8, 9 + i), 1000)
        fake_kind.remember("conv2d", None, (image, filt), None, checked([(image, "image"), (filt, "filt")], (8, 9 + i)))
    assert len(_dispatch.fast_calls) == fake_kind._LIMIT == 4096
    image = FakeArray((8, 5000), 1000)
    fake_kind.remember("conv2d", None, (image, filt), None, checked([(image, "image"), (filt, "filt")], (8, 5000)))
    assert len(_dispatch.fast_calls) == 1
    out = convtune.conv2d(FakeArray((8, 5000), 3000), FakeArray((3, 3), 4000))
    assert out.shape == (8, 5000)


def test_use_table_sets_each_setting_and_forgets_what_the_last_table_chose(tmp_path, monkeypatch):
    table = tmp_path / "dispatch.json"
    table.write_text('{"entries": []}')
    monkeypatch.setattr(_dispatch, "_settings", _dispatch._Settings())
    fresh = _dispatch._Settings()
    assert (fresh.table, fresh.tune_unseen, fresh.other_gpu_ok, fresh.table_digest, fresh.devices) == \
        (None, True, False, "", {})
    _dispatch._cache[("conv2d", 0)] = "a convolution of the last table"
    _dispatch.fast_calls[("conv2d",)] = "a remembered call"
    _dispatch._settings.table_digest = "0123"
    assert convtune.use_table(table, tune_unseen=False, other_gpu_ok=True) is None
    s = _dispatch._settings
    assert (s.table, s.tune_unseen, s.other_gpu_ok, s.table_digest) == (table, False, True, "")
    assert _dispatch._cache == {} and _dispatch.fast_calls == {}
    assert convtune.use_table(table) == table  # the previous path; the defaults again
    assert (s.tune_unseen, s.other_gpu_ok) == (True, False)


def test_the_shipped_table_is_the_packages_then_the_checkouts_else_a_named_error(tmp_path, monkeypatch):
    packaged, checkout = tmp_path / "packaged.json", tmp_path / "checkout.json"
    monkeypatch.setattr(_dispatch, "SHIPPED_TABLE", packaged)
    monkeypatch.setattr(_dispatch, "_REPO_TABLE", checkout)
    with pytest.raises(FileNotFoundError) as missing:
        _dispatch.default_table()
    assert str(missing.value) == (f"the shipped dispatch table is missing ({packaged}); reinstall convtune, "
                                  "or call convtune.use_table(path) with a dispatch.json")
    checkout.write_text("{}")
    assert _dispatch.default_table() == checkout
    packaged.write_text("{}")
    assert _dispatch.default_table() == packaged
    assert _dispatch.SHIPPED_TABLE.name == "packaged.json"
    monkeypatch.undo()
    assert _dispatch.SHIPPED_TABLE.parts[-2:] == ("tables", "fleet-h100-h200.json")


def test_tuning_choices_live_in_the_cache_dir_else_xdg_else_home(tmp_path, monkeypatch):
    monkeypatch.setenv("CONVTUNE_CACHE_DIR", str(tmp_path / "kernels"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _dispatch._cache_file() == tmp_path / "kernels" / "tuned.json"
    monkeypatch.delenv("CONVTUNE_CACHE_DIR")
    assert _dispatch._cache_file() == tmp_path / "xdg" / "convtune" / "tuned.json"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert _dispatch._cache_file() == tmp_path / "home" / ".cache" / "convtune" / "tuned.json"


def test_table_files_are_refused_with_their_whole_reason(tmp_path):
    with pytest.raises(FileNotFoundError) as refused:
        convtune.use_table(tmp_path / "nope.json")
    assert str(refused.value) == (f"dispatch table {tmp_path / 'nope.json'}: no such file; allowed: a dispatch.json "
                                  "that `convtune export` wrote (a run's, or a fleet's with -o)")
    for text in ('{"records": []}', "[1, 2]", '"entries"'):
        other = tmp_path / "other.json"
        other.write_text(text)
        with pytest.raises(ValueError) as refused:
            convtune.use_table(other)
        assert str(refused.value) == (f"dispatch table {other}: neither a table (\"entries\") nor a fleet "
                                      "(\"tables\"); allowed: a dispatch.json that `convtune export` wrote")


def test_calls_of_both_fast_kinds_are_remembered_and_unhashable_ones_are_not(fake_kind):
    image, filt = FakeArray((8, 9), 1000), FakeArray((3, 3), 2000)
    fake_kind.remember("conv2d", None, (image, filt), None, checked([(image, "image"), (filt, "filt")], (8, 9),
                                                                    kind="cupy"))
    assert len(_dispatch.fast_calls) == 1  # CuPy's calls take the fast path as PyTorch's do
    fake_kind.remember("conv1d", ["valid"], (image, filt), None, checked([(image, "image"), (filt, "filt")], (8, 9)))
    assert len(_dispatch.fast_calls) == 1  # a list in the key: the checked path goes on deciding
    other = FakeArray((8, 10), 1000)
    fake_kind.remember("conv2d", None, (other, filt), None, checked([(other, "image"), (filt, "filt")], (8, 10),
                                                                    kind="jax"))
    assert len(_dispatch.fast_calls) == 1  # JAX: always the checked path
