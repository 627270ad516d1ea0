"""convtune.nn.functional: torch.nn.functional's conv2d, max_pool2d and avg_pool2d on convtune's kernels.

NCHW float32 CUDA tensors (or unbatched CHW, as torch takes them), strict fp32 (no TF32 anywhere).
conv2d is an autograd Function whose backward runs convtune's layer_bwd_data (the input's gradient) and
layer_bwd_filter (the weight's) families; the bias gradient is a sum over dy. The pooling functions run
convtune's layer_pool forward; their backward is PyTorch's own (they are not where the time goes).
"""
import torch

from .. import _arrays, _dispatch
from .._functions import _Call, arrays
from .._layers import layer_dims as _layer_dims


def _pair(name, value):
    if isinstance(value, int) and not isinstance(value, bool):
        return value, value
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return tuple(value)
    raise TypeError(f"{name}: {value!r}; allowed: an int or a pair of ints")


def _only(name, value, allowed, why):
    if value != allowed:
        raise ValueError(f"{name}: {value!r}; allowed: {allowed!r} only ({why})")


def _batched(name, x):
    """x as NCHW, and whether it came unbatched (CHW); any other rank is a ValueError."""
    _torch_arrays(**{name: x})
    if x.dim() == 4:
        return x, False
    if x.dim() == 3:
        return x.unsqueeze(0), True
    raise ValueError(f"{name}: shape {tuple(x.shape)}; allowed: (N, C, H, W) or unbatched (C, H, W)")


def _torch_arrays(**named):
    for name, t in named.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name}: a {type(t).__name__}; allowed: a float32 CUDA torch.Tensor")
    return arrays(**named)


def _conv_padding(padding, r, s, stride):
    if padding == "valid":
        return 0, 0
    if padding == "same":
        if stride != (1, 1):
            raise ValueError(f"padding: 'same' with stride {stride}; allowed: 'same' with stride 1 (as torch)")
        if r % 2 == 0 or s % 2 == 0:
            raise ValueError(f"padding: 'same' with a {r}x{s} filter; allowed: 'same' with odd filter sizes "
                             "(an even one would pad unevenly)")
        return (r - 1) // 2, (s - 1) // 2
    return _pair("padding", padding)


_LAYER_ARGUMENTS = {"n": "input", "c": "input", "h": "input", "w": "input", "k": "weight", "r": "weight",
                    "s": "weight", "pad_h": "padding", "pad_w": "padding", "u": "stride", "v": "stride"}


class _Conv2dPlan:
    """conv2d's three problems (forward, backward-data, backward-filter) for one set of arguments."""

    def __init__(self, input, weight, bias, stride, padding, dilation, groups, keep_call=False):
        _only("dilation", _pair("dilation", dilation), (1, 1), "convtune's layer kernels are not dilated")
        _only("groups", groups, 1, "convtune's layer kernels are dense")
        self.stride = _pair("stride", stride)
        x4, self.unbatched = _batched("input", input)
        named = {"input": x4, "weight": weight} if bias is None else {"input": x4, "weight": weight, "bias": bias}
        described = _torch_arrays(**named)
        if weight.dim() != 4:
            raise ValueError(f"weight: shape {tuple(weight.shape)}; allowed: (out_channels, in_channels, kH, kW)")
        if weight.shape[1] != x4.shape[1]:
            raise ValueError(f"weight: {weight.shape[1]} input channels, but input has {x4.shape[1]}; allowed: "
                             f"weight of shape (out_channels, {x4.shape[1]}, kH, kW) (groups=1)")
        if bias is not None and tuple(bias.shape) != (weight.shape[0],):
            raise ValueError(f"bias: shape {tuple(bias.shape)}; allowed: ({weight.shape[0]},), one per output channel")
        self.pad = _conv_padding(padding, weight.shape[2], weight.shape[3], self.stride)
        self.dims = _layer_dims(tuple(x4.shape), tuple(weight.shape), self.stride, self.pad)
        fwd = dict(self.dims, bias=int(bias is not None), relu=0)
        forward = _Call("layer_fwd", fwd, _LAYER_ARGUMENTS, described, None)
        # The plan outlives the call (the fast path remembers it): it holds no tensor, only what runs them.
        self.forward_entry, self.device = forward.entry, forward.like.device
        if keep_call:  # for convtune.explain
            self.forward, self.x = forward, x4

    def output_shape(self):
        d = self.dims
        p = (d["h"] + 2 * d["pad_h"] - d["r"]) // d["u"] + 1
        q = (d["w"] + 2 * d["pad_w"] - d["s"]) // d["v"] + 1
        return (d["n"], d["k"], p, q)

    def run_forward(self, x, weight, bias):
        """The forward on these tensors (of this plan's signature: see _remembered), on the caller's stream."""
        kind = _torch_kind()
        out = kind.new(kind.device_handle(x), self.output_shape())
        inputs = [x.data_ptr(), weight.data_ptr()] + ([] if bias is None else [bias.data_ptr()])
        self.forward_entry.run(inputs, out.data_ptr(), kind.stream(self.device))
        return out

    def backward_data(self, dy, weight):
        return _Call("layer_bwd_data", self.dims, _LAYER_ARGUMENTS, arrays(dy=dy, weight=weight), None)

    def backward_filter(self, x, dy):
        return _Call("layer_bwd_filter", self.dims, _LAYER_ARGUMENTS, arrays(input=x, dy=dy), None)


_kind = []  # convtune._arrays' helper of torch tensors (pointers, streams, outputs), made at first use


def _torch_kind():
    if not _kind:
        _kind.append(_arrays.kind_of(torch.empty(0)))
    return _kind[0]


# Checked plans of 4D calls, by everything the checks read (each tensor's type, dtype, shape, device and
# layout, and the other arguments): a call that matches one skips the checks and the table's lookup, as
# convtune._fast does for the array functions. Not while first-use tuning may still change the choice. They
# live in convtune._dispatch's fast_calls, which use_table() empties.
_PLAN_LIMIT = 4096


def _plan_key(input, weight, bias, stride, padding, dilation, groups):
    sig = _arrays._TorchKind.signature
    return ("nn.conv2d", sig(input), sig(weight), None if bias is None else sig(bias), stride, padding, dilation,
            groups)


def _remembered(input, weight, bias, stride, padding, dilation, groups):
    """The checked plan of a call like this one, made (and checked) at the first."""
    plans = _dispatch.fast_calls
    try:
        key = _plan_key(input, weight, bias, stride, padding, dilation, groups)
        plan = plans.get(key)
    except Exception:  # an unhashable argument, a non-tensor...: the checked path decides
        key = plan = None
    if plan is not None:
        return plan
    plan = _Conv2dPlan(input, weight, bias, stride, padding, dilation, groups)
    if key is not None and not plan.unbatched and plan.forward_entry.tune_key is None:
        if len(plans) >= _PLAN_LIMIT:
            plans.clear()
        plans[key] = plan
    return plan


def _run(call, shape):
    call.out_shape = shape
    return call.run()


class _Conv2dFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, plan):
        ctx.save_for_backward(x, weight)
        ctx.plan = plan
        ctx.has_bias = bias is not None
        return plan.run_forward(x, weight, bias)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dy):
        x, weight = ctx.saved_tensors
        plan = ctx.plan
        dy = dy.contiguous()
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = _run(plan.backward_data(dy, weight), tuple(x.shape))
        if ctx.needs_input_grad[1]:
            dw = _run(plan.backward_filter(x, dy), tuple(weight.shape))
        if ctx.has_bias and ctx.needs_input_grad[2]:
            db = dy.sum(dim=(0, 2, 3))
        return dx, dw, db, None


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv2d on convtune's kernels: cross-correlation, NCHW, strict fp32.

    y[n, k, p, q] = sum_{c, i, j} input[n, c, p*sH - pH + i, q*sW - pW + j] * weight[k, c, i, j] (+ bias[k]),
    zero padding: torch's convention. stride, padding: an int or a pair (padding also 'valid' or 'same');
    padding must be smaller than the filter (pH < kH, pW < kW), filters up to 64x64, strides up to 64.
    dilation and groups are accepted for torch's signature but must be 1. Differentiable: the backward runs
    convtune's backward-data and backward-filter kernels (not twice differentiable).
    """
    plan = _remembered(input, weight, bias, stride, padding, dilation, groups)
    x = input.unsqueeze(0) if plan.unbatched else input
    needs_grad = torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad or
                                              (bias is not None and bias.requires_grad))
    y = _Conv2dFunction.apply(x, weight, bias, plan) if needs_grad else plan.run_forward(x, weight, bias)
    return y.squeeze(0) if plan.unbatched else y


def _pool_dims(x4, kernel_size, stride, padding, op):
    r, s = _pair("kernel_size", kernel_size)
    u, v = (r, s) if stride is None or stride == [] or stride == () else _pair("stride", stride)
    pad_h, pad_w = _pair("padding", padding)
    n, c, h, w = x4.shape
    return {"n": n, "c": c, "h": h, "w": w, "r": r, "s": s, "pad_h": pad_h, "pad_w": pad_w, "u": u, "v": v, "op": op}


_POOL_ARGUMENTS = {"n": "input", "c": "input", "h": "input", "w": "input", "r": "kernel_size", "s": "kernel_size",
                   "pad_h": "padding", "pad_w": "padding", "u": "stride", "v": "stride", "op": "count_include_pad"}


class _PoolPlan:
    def __init__(self, input, kernel_size, stride, padding, op):
        self.x, self.unbatched = _batched("input", input)
        described = _torch_arrays(input=self.x)
        self.dims = _pool_dims(self.x, kernel_size, stride, padding, op)
        d = self.dims
        p = (d["h"] + 2 * d["pad_h"] - d["r"]) // d["u"] + 1
        q = (d["w"] + 2 * d["pad_w"] - d["s"]) // d["v"] + 1
        self.call = _Call("layer_pool", d, _POOL_ARGUMENTS, described, (d["n"], d["c"], p, q))


class _PoolFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, plan, torch_pool):
        ctx.save_for_backward(x)
        ctx.torch_pool = torch_pool
        return plan.call.run()

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():  # PyTorch's own pooling, run again for its gradient
            leaf = x.detach().requires_grad_()
            (dx,) = torch.autograd.grad(ctx.torch_pool(leaf), leaf, dy)
        return dx, None, None


def _pool(plan, torch_pool):
    y = _PoolFunction.apply(plan.x, plan, torch_pool)
    return y.squeeze(0) if plan.unbatched else y


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch.nn.functional.max_pool2d on convtune's layer_pool (padding never wins the max).

    stride defaults to kernel_size; padding < kernel size. dilation 1, ceil_mode False and return_indices
    False only. Differentiable (the backward is PyTorch's max_pool2d's).
    """
    _only("dilation", _pair("dilation", dilation), (1, 1), "convtune's pooling is not dilated")
    _only("ceil_mode", ceil_mode, False, "convtune's pooling takes the floor formula")
    _only("return_indices", return_indices, False, "convtune's pooling returns no indices")
    plan = _PoolPlan(input, kernel_size, stride, padding, 0)
    args = dict(kernel_size=kernel_size, stride=stride, padding=padding)
    return _pool(plan, lambda t: torch.nn.functional.max_pool2d(t, **args))


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """torch.nn.functional.avg_pool2d on convtune's layer_pool.

    count_include_pad True: padded zeros count in the mean (divide by kH*kW); False: only the pixels inside.
    stride defaults to kernel_size; padding < kernel size. ceil_mode False and divisor_override None only.
    Differentiable (the backward is PyTorch's avg_pool2d's).
    """
    _only("ceil_mode", ceil_mode, False, "convtune's pooling takes the floor formula")
    _only("divisor_override", divisor_override, None, "convtune's pooling divides by the window")
    plan = _PoolPlan(input, kernel_size, stride, padding, 1 if count_include_pad else 2)
    args = dict(kernel_size=kernel_size, stride=stride, padding=padding, count_include_pad=count_include_pad)
    return _pool(plan, lambda t: torch.nn.functional.avg_pool2d(t, **args))


# For convtune.explain: the problems a call would run.
def _explain_conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    plan = _Conv2dPlan(input, weight, bias, stride, padding, dilation, groups, keep_call=True)
    y_like = torch.empty(plan.output_shape(), dtype=torch.float32, device=plan.x.device)
    return [plan.forward, plan.backward_data(y_like, weight), plan.backward_filter(plan.x, y_like)]


def _explain_max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                        return_indices=False):
    return [_PoolPlan(input, kernel_size, stride, padding, 0).call]


def _explain_avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                        divisor_override=None):
    return [_PoolPlan(input, kernel_size, stride, padding, 1 if count_include_pad else 2).call]


EXPLAINERS = {conv2d: _explain_conv2d, max_pool2d: _explain_max_pool2d, avg_pool2d: _explain_avg_pool2d}
