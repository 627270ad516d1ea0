"""Device arrays of CuPy, PyTorch and JAX: checks, pointers, streams and outputs of the caller's kind.

Each array is read where it lies (zero-copy: its device pointer, as DLPack would hand it over). Checks
run in the order kind, device, dtype, layout; shapes are the calling function's business. Errors name
the argument and what is allowed: TypeError for the kind, device and dtype, ValueError for layout and
shape.
"""
import operator
from dataclasses import dataclass
from typing import Any, Tuple

ALLOWED = "a float32 CUDA array of CuPy, PyTorch or JAX"


@dataclass(frozen=True)
class DeviceArray:
    obj: Any
    kind: str  # "torch" | "cupy" | "jax"
    device: int  # CUDA ordinal
    shape: Tuple[int, ...]
    ptr: int
    name: str = ""  # the argument it was passed as

    def nbytes(self):
        count = 4
        for extent in self.shape:
            count *= extent
        return count


def check_properties(name, kind, on_cuda, where, dtype, contiguous, float32_name):
    """The rules every array meets, on its already-read properties (so the CPU tests can hold them)."""
    if not on_cuda:
        raise TypeError(f"{name}: a {kind} array on {where}; allowed: {ALLOWED} (move it to the GPU first)")
    if not dtype_is(dtype, float32_name):
        raise TypeError(f"{name}: dtype {dtype}; allowed: {float32_name} (convtune runs fp32 only)")
    if not contiguous:
        raise ValueError(f"{name}: not C-contiguous; allowed: a C-contiguous (row-major, dense) array "
                         "(torch: .contiguous(), cupy: cupy.ascontiguousarray)")


def dtype_is(dtype, float32_name):
    return str(dtype) == float32_name


def device_array(obj, name):
    """obj as a DeviceArray, or TypeError/ValueError naming `name`."""
    root = type(obj).__module__.split(".")[0]
    if root == "torch":
        return _torch_array(obj, name)
    if root == "cupy":
        return _cupy_array(obj, name)
    if root in ("jax", "jaxlib"):
        return _jax_array(obj, name)
    if root == "numpy" or isinstance(obj, (list, tuple, int, float)):
        raise TypeError(f"{name}: a host {type(obj).__name__}; allowed: {ALLOWED} (move it to the GPU first)")
    raise TypeError(f"{name}: a {type(obj).__module__}.{type(obj).__name__}; allowed: {ALLOWED}")


def _torch_array(t, name):
    import torch
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: a {type(t).__name__}; allowed: {ALLOWED}")
    check_properties(name, "torch", t.is_cuda, t.device, t.dtype, t.is_contiguous(), "torch.float32")
    return DeviceArray(t, "torch", t.device.index, tuple(t.shape), t.data_ptr(), name)


def _cupy_array(a, name):
    import cupy
    if not isinstance(a, cupy.ndarray):
        raise TypeError(f"{name}: a {type(a).__name__}; allowed: {ALLOWED}")
    check_properties(name, "cupy", True, a.device, a.dtype, a.flags.c_contiguous, "float32")
    return DeviceArray(a, "cupy", a.device.id, tuple(a.shape), a.data.ptr, name)


def _jax_array(a, name):
    devices = list(a.devices()) if hasattr(a, "devices") else []
    if len(devices) != 1:
        raise ValueError(f"{name}: a JAX array on {len(devices)} devices; allowed: an array on one GPU")
    dev = devices[0]
    # JAX arrays are always dense row-major.
    check_properties(name, "jax", dev.platform in ("gpu", "cuda"), dev, a.dtype, True, "float32")
    a.block_until_ready()  # JAX gives no stream to order against: its work on a is finished first
    ordinal = getattr(dev, "local_hardware_id", None)
    return DeviceArray(a, "jax", dev.id if ordinal is None else ordinal, tuple(a.shape), a.unsafe_buffer_pointer(),
                       name)


def same_kind_and_device(arrays):
    """TypeError unless every array is of the first's kind and on its device."""
    first = arrays[0]
    for name, a in arrays[1:]:
        if a.kind != first[1].kind:
            raise TypeError(f"{name}: a {a.kind} array, but {first[0]} is a {first[1].kind} array; "
                            "allowed: arrays of one kind")
        if a.device != first[1].device:
            raise ValueError(f"{name}: on GPU {a.device}, but {first[0]} is on GPU {first[1].device}; "
                             "allowed: arrays on one GPU")


def stream_of(a):
    """The caller's current stream on a's device, as an integer handle (JAX: the legacy default stream,
    synchronized after the call, since JAX exposes none)."""
    if a.kind in ("torch", "cupy"):
        return kind_of(a.obj).stream(a.device)
    return 0


def empty(like, shape):
    """An uninitialised float32 array of like's kind on like's device, and its pointer."""
    if like.kind in ("torch", "cupy"):
        kind = kind_of(like.obj)
        out = kind.new(kind.device_handle(like.obj), shape)
        return out, kind.pointer(out)
    import jax.numpy as jnp
    # A fresh buffer nothing else holds, written once before it is returned (JAX treats arrays as immutable).
    out = jnp.zeros(shape, dtype=jnp.float32, device=list(like.obj.devices())[0])
    out.block_until_ready()
    return out, out.unsafe_buffer_pointer()


def output_array(out, inputs, shape):
    """out= checked as the result's destination: a DeviceArray of the inputs' kind and device, float32,
    C-contiguous, of the result's shape, sharing no memory with an input; TypeError/ValueError naming `out`."""
    o = device_array(out, "out")
    if o.kind == "jax":
        raise TypeError("out: a JAX array; allowed: a CuPy or PyTorch array (JAX arrays are immutable: "
                        "leave out= out and take the returned array)")
    same_kind_and_device([(inputs[0].name, inputs[0]), ("out", o)])
    if tuple(o.shape) != tuple(shape):
        raise ValueError(f"out: shape {tuple(o.shape)}; allowed: {tuple(shape)}, the result's shape")
    check_apart(o.ptr, o.nbytes(), [(a.name, a.ptr, a.nbytes()) for a in inputs])
    return o


def check_apart(out_ptr, out_bytes, inputs):
    """ValueError when [out_ptr, out_ptr + out_bytes) overlaps an input's bytes: the kernels read the inputs
    while they write the output. inputs: (name, pointer, bytes)."""
    for name, ptr, nbytes in inputs:
        if out_bytes and nbytes and ptr < out_ptr + out_bytes and out_ptr < ptr + nbytes:
            raise ValueError(f"out: shares memory with {name}; allowed: an array apart from the inputs")


# The fast path's view of a kind (convtune._fast): what a checked call already established is keyed by
# `signature`, which holds every property the checks above read, so that an equal signature passes them.
class _TorchKind:
    name = "torch"

    def __init__(self):
        import torch
        self._empty, self._float32 = torch.empty, torch.float32
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        self.stream = raw if raw else (lambda device: torch.cuda.current_stream(device).cuda_stream)
        self.pointer = torch.Tensor.data_ptr
        # An output of a (checked: float32, C-contiguous) input's shape: torch.empty_like(x), 3.3 µs a call on
        # an H200 host where new_empty takes 4.5 and torch.empty 5.9.
        self.like = torch.empty_like
        self.plain = torch.Tensor  # the type `like` is taken for (empty_like keeps a subclass)
        self._prototypes = {}  # torch.device -> an empty float32 tensor there

    @staticmethod
    def signature(t):
        return (type(t), t.dtype, t.shape, t.device, t.is_contiguous())

    def device_handle(self, t):  # what new() takes: an empty float32 tensor on t's device
        prototype = self._prototypes.get(t.device)
        if prototype is None:
            prototype = self._prototypes[t.device] = self._empty(0, dtype=self._float32, device=t.device)
        return prototype

    @staticmethod
    def new(prototype, shape):
        # new_empty: 2.8 µs a call on an H100 host, torch.empty(shape, dtype=, device=) 9.1 µs
        return prototype.new_empty(shape)


class _CupyKind:
    name = "cupy"
    pointer = operator.attrgetter("data.ptr")
    like = plain = None  # cupy.empty_like (4.0 µs on an H200 host) is slower than new() (2.1)

    def __init__(self):
        import cupy
        self._cupy = cupy
        self._get_device = cupy.cuda.runtime.getDevice
        try:  # CuPy >= 11 takes the device; older ones take the current device only
            cupy.cuda.get_current_stream(self._get_device())
            self._stream_of = lambda device: cupy.cuda.get_current_stream(device).ptr
        except TypeError:
            self._stream_of = self._stream_within
        self.stream = self._stream_of

    def _stream_within(self, device):
        with self._cupy.cuda.Device(device):
            return self._cupy.cuda.get_current_stream().ptr

    @staticmethod
    def signature(a):  # the slots behind a.device.id and a.flags.c_contiguous, read without making objects
        return (type(a), a.dtype, a.shape, a.data.device_id, a._c_contiguous)

    @staticmethod
    def device_handle(a):
        return a.device.id

    def new(self, device, shape):
        # the ndarray constructor (on the current device's pool): 2.3 µs a call on an H100 host, cupy.empty 3.5 µs
        if self._get_device() == device:
            return self._cupy.ndarray(shape, dtype=self._cupy.float32)
        with self._cupy.cuda.Device(device):
            return self._cupy.ndarray(shape, dtype=self._cupy.float32)


_KIND_MAKERS = {"torch": _TorchKind, "cupy": _CupyKind}
_kinds = {}  # kind name -> its _TorchKind/_CupyKind, made at first use (they import the framework)


def kind_of(obj):
    """The fast-path helper of obj's kind ("torch" or "cupy"); None for JAX and anything else."""
    root = type(obj).__module__.split(".")[0]
    if root not in _KIND_MAKERS:
        return None
    kind = _kinds.get(root)
    if kind is None:
        kind = _kinds[root] = _KIND_MAKERS[root]()
    return kind
