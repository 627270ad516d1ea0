"""convtune.conv2d, conv1d, conv1d_slice, sep_conv2d: SciPy-shaped calls on CuPy, PyTorch or JAX arrays.

Each public function is a planner (arguments -> a _Call: the problem, its Convolution, its operands) and
the call's run, so that convtune.explain() sees exactly what a call would run. A call whose arguments match
an earlier checked one in every checked property takes the fast path (convtune._fast) instead.
"""
import operator

from . import _arrays, _dispatch, _fast
from ._ext import ext


class _Call:
    """One problem, ready to run: the cached Convolution, its inputs in the family's order, the output shape."""

    def __init__(self, family, dims, argument_of, inputs, out_shape):
        self.like = inputs[0]
        self.entry = _dispatch.convolution(family, dims, self.like.device, argument_of)
        self.inputs = inputs
        self.out_shape = out_shape

    def run(self, out=None):
        """The output (a new array, or `out` checked as its destination), computed on the caller's stream."""
        if out is None:
            out, out_ptr = _arrays.empty(self.like, self.out_shape)
        else:
            out_ptr = _arrays.output_array(out, self.inputs, self.out_shape).ptr
        stream = _arrays.stream_of(self.like)
        self.entry.run([a.ptr for a in self.inputs], out_ptr, stream)
        if self.like.kind == "jax":
            ext().synchronize(self.like.device, stream)
        return out


def arrays(**named):
    """Each argument as a DeviceArray (checked), all of one kind on one device; in the order given."""
    described = [(name, _arrays.device_array(obj, name)) for name, obj in named.items()]
    _arrays.same_kind_and_device(described)
    return [a for _, a in described]


def require_rank(name, a, rank, what):
    if len(a.shape) != rank:
        raise ValueError(f"{name}: shape {a.shape}; allowed: {what}")


def odd_length(name, length, what):
    if length % 2 == 0:
        raise ValueError(f"{name}: {length} taps; allowed: {what} of odd size 2r+1 (1, 3, 5, ...)")
    return (length - 1) // 2


def as_int(name, value):
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name}: {value!r} ({type(value).__name__}); allowed: an integer") from None


def plan_conv2d(image, filt):
    img, f = arrays(image=image, filt=filt)
    if len(img.shape) not in (2, 3):
        raise ValueError(f"image: shape {img.shape}; allowed: a 2D array (height, width) or a batch (images, height, width)")
    require_rank("filt", f, 2, "a 2D square filter (2r+1, 2r+1)")
    if f.shape[0] != f.shape[1]:
        raise ValueError(f"filt: shape {f.shape}; allowed: a square filter (2r+1, 2r+1)")
    r = odd_length("filt", f.shape[0], "a square filter")
    dims = {"h": img.shape[-2], "w": img.shape[-1], "r": r}
    if len(img.shape) == 3:
        dims["b"] = img.shape[0]
    return _Call("conv2d", dims, {"b": "image", "h": "image", "w": "image", "r": "filt"}, [img, f], img.shape)


def _checked(tag, extra, args, out, planned):
    """Runs a planned call through the checked path, and remembers it for the fast path."""
    result = planned.run(out)
    _fast.remember(tag, extra, args, out, planned)
    return result


def conv2d(image, filt, *, out=None):
    """2D cross-correlation of one image with a square odd filter, 'same' size, zero border.

    out[i, j] = sum_{m, n in [-r, r]} image[i + m, j + n] * filt[m + r, n + r], with image zero outside.
    That is scipy.ndimage.correlate(image, filt, mode="constant") and
    scipy.signal.correlate2d(image, filt, mode="same"), and torch.nn.functional.conv2d's convention. For
    SciPy's convolution (scipy.signal.convolve2d(image, filt, mode="same"), scipy.ndimage.convolve with
    mode="constant") pass the flipped filter, filt[::-1, ::-1].

    image: (h, w) float32 CUDA array of CuPy, PyTorch or JAX, or a batch (b, h, w) of images filtered alike
    (one launch for all: far faster than a loop over small images); filt: (2r+1, 2r+1), r <= 32, same kind
    and GPU. Returns an array of the image's shape and kind, computed on the caller's current stream; with
    out= (a CuPy or PyTorch array of that kind and GPU, float32, C-contiguous, the image's shape, apart from
    the inputs) the result is written there and out is returned.
    """
    done = _fast.call("conv2d", None, (image, filt), out)
    if done is not _fast.MISS:
        return done
    return _checked("conv2d", None, (image, filt), out, plan_conv2d(image, filt))


def plan_sep_conv2d(image, row, col):
    img, rw, cl = arrays(image=image, row=row, col=col)
    require_rank("image", img, 2, "a 2D array (height, width)")
    require_rank("row", rw, 1, "a 1D filter of 2r+1 taps")
    require_rank("col", cl, 1, "a 1D filter of 2r+1 taps")
    r = odd_length("row", rw.shape[0], "a filter")
    if cl.shape[0] != rw.shape[0]:
        raise ValueError(f"col: {cl.shape[0]} taps, but row has {rw.shape[0]}; allowed: as many taps as row")
    dims = {"h": img.shape[0], "w": img.shape[1], "r": r}
    argument_of = {"h": "image", "w": "image", "r": "row"}
    return _Call("conv2d_separable", dims, argument_of, [img, cl, rw], img.shape)  # the family's order


def sep_conv2d(image, row, col, *, out=None):
    """conv2d with the separable filter outer(col, row): 'same' size, zero border, cross-correlation.

    out[i, j] = sum_{m, n in [-r, r]} image[i + m, j + n] * col[m + r] * row[n + r]: conv2d(image,
    outer(col, row)), i.e. scipy.ndimage.correlate1d along axis 1 with row, then along axis 0 with col
    (mode="constant"). For SciPy's convolution (scipy.ndimage.convolve1d, scipy.signal.sepfir2d) pass
    row[::-1] and col[::-1].

    image: (h, w); row, col: 1D of the same odd length 2r+1; float32 CUDA arrays of one kind and GPU.
    Returns (h, w) of that kind, on the caller's current stream; out= as conv2d's.
    """
    done = _fast.call("sep_conv2d", None, (image, row, col), out)
    if done is not _fast.MISS:
        return done
    return _checked("sep_conv2d", None, (image, row, col), out, plan_sep_conv2d(image, row, col))


_MODES = ("full", "valid", "same")


def plan_conv1d(signal, filt, mode="full"):
    if mode not in _MODES:
        raise ValueError(f"mode: {mode!r}; allowed: 'full', 'valid' or 'same'")
    x, h = arrays(signal=signal, filt=filt)
    require_rank("signal", x, 1, "a 1D array")
    require_rank("filt", h, 1, "a 1D array")
    n, m = x.shape[0], h.shape[0]
    if mode == "same":  # the centred n outputs of the full convolution, as scipy.signal.convolve: a slice
        start = (m - 1) // 2
        dims = {"n": n, "m": m, "start": start, "end": start + n}
        return _Call("conv1d_parts", dims, {"n": "signal", "m": "filt"}, [x, h], (n,))
    if mode == "valid" and m > n:  # convolution commutes; numpy and SciPy swap too
        x, h, n, m = h, x, m, n
        argument_of = {"n": "filt", "m": "signal", "mode": "mode"}
    else:
        argument_of = {"n": "signal", "m": "filt", "mode": "mode"}
    outputs = n + m - 1 if mode == "full" else n - m + 1
    dims = {"n": n, "m": m, "mode": 1 if mode == "full" else 0}
    return _Call("conv1d", dims, argument_of, [x, h], (outputs,))


def conv1d(signal, filt, mode="full", *, out=None):
    """Linear convolution of two 1D arrays: y[i] = sum_j signal[i - j] * filt[j] (true convolution).

    The same as numpy.convolve(signal, filt, mode) and scipy.signal.convolve(signal, filt, mode) (and
    cupyx.scipy.signal's); for correlation (scipy.signal.correlate) pass filt[::-1].
    mode: "full" (n + m - 1 outputs), "valid" (max(n, m) - min(n, m) + 1: where the shorter lies wholly in
    the longer; the arguments are swapped when filt is the longer, as numpy does), "same" (n outputs,
    the centre of the full result, as scipy.signal.convolve's "same": the full result from (m - 1) // 2).
    Lengths: signal <= 2^28, filt <= 2^20 (full, valid). float32 CUDA arrays of one kind and GPU; returns
    that kind, on the caller's current stream; out= as conv2d's, of the result's length.
    """
    done = _fast.call("conv1d", mode, (signal, filt), out)
    if done is not _fast.MISS:
        return done
    return _checked("conv1d", mode, (signal, filt), out, plan_conv1d(signal, filt, mode))


def plan_conv1d_slice(a, b, start, end):
    start, end = as_int("start", start), as_int("end", end)
    xa, xb = arrays(a=a, b=b)
    require_rank("a", xa, 1, "a 1D array")
    require_rank("b", xb, 1, "a 1D array")
    dims = {"n": xa.shape[0], "m": xb.shape[0], "start": start, "end": end}
    argument_of = {"n": "a", "m": "b", "start": "start", "end": "end"}
    return _Call("conv1d_parts", dims, argument_of, [xa, xb], (end - start,))


def conv1d_slice(a, b, start, end, *, out=None):
    """Outputs [start, end) of the full linear convolution c[i] = sum_j a[j] * b[i - j].

    numpy.convolve(a, b)[start:end] (true convolution) without computing the rest: for a short slice of
    two long sequences (convolution in parts). 0 <= start < end <= len(a) + len(b) - 1; lengths <= 2^28.
    float32 CUDA arrays of one kind and GPU; returns that kind, on the caller's current stream; out= as
    conv2d's, of end - start values.
    """
    bounds = (as_int("start", start), as_int("end", end))  # as the planner takes them: 1.0 is no integer
    done = _fast.call("conv1d_slice", bounds, (a, b), out)
    if done is not _fast.MISS:
        return done
    return _checked("conv1d_slice", bounds, (a, b), out, plan_conv1d_slice(a, b, *bounds))
