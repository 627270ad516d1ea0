"""Device arrays of CuPy, PyTorch and JAX: checks, pointers, streams and outputs of the caller's kind.

Each array is read where it lies (zero-copy: its device pointer, as DLPack would hand it over). Checks
run in the order kind, device, dtype, layout; shapes are the calling function's business. Errors name
the argument and what is allowed: TypeError for the kind, device and dtype, ValueError for layout and
shape.
"""
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
    return DeviceArray(t, "torch", t.device.index, tuple(t.shape), t.data_ptr())


def _cupy_array(a, name):
    import cupy
    if not isinstance(a, cupy.ndarray):
        raise TypeError(f"{name}: a {type(a).__name__}; allowed: {ALLOWED}")
    check_properties(name, "cupy", True, a.device, a.dtype, a.flags.c_contiguous, "float32")
    return DeviceArray(a, "cupy", a.device.id, tuple(a.shape), a.data.ptr)


def _jax_array(a, name):
    devices = list(a.devices()) if hasattr(a, "devices") else []
    if len(devices) != 1:
        raise ValueError(f"{name}: a JAX array on {len(devices)} devices; allowed: an array on one GPU")
    dev = devices[0]
    # JAX arrays are always dense row-major.
    check_properties(name, "jax", dev.platform in ("gpu", "cuda"), dev, a.dtype, True, "float32")
    a.block_until_ready()  # JAX gives no stream to order against: its work on a is finished first
    ordinal = getattr(dev, "local_hardware_id", None)
    return DeviceArray(a, "jax", dev.id if ordinal is None else ordinal, tuple(a.shape), a.unsafe_buffer_pointer())


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
    if a.kind == "torch":
        import torch
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        return raw(a.device) if raw else torch.cuda.current_stream(a.device).cuda_stream
    if a.kind == "cupy":
        import cupy
        with cupy.cuda.Device(a.device):
            return cupy.cuda.get_current_stream().ptr
    return 0


def empty(like, shape):
    """An uninitialised float32 array of like's kind on like's device, and its pointer."""
    if like.kind == "torch":
        import torch
        out = torch.empty(shape, dtype=torch.float32, device=like.obj.device)
        return out, out.data_ptr()
    if like.kind == "cupy":
        import cupy
        with cupy.cuda.Device(like.device):
            out = cupy.empty(shape, dtype=cupy.float32)
        return out, out.data.ptr
    import jax.numpy as jnp
    # A fresh buffer nothing else holds, written once before it is returned (JAX treats arrays as immutable).
    out = jnp.zeros(shape, dtype=jnp.float32, device=list(like.obj.devices())[0])
    out.block_until_ready()
    return out, out.unsafe_buffer_pointer()
