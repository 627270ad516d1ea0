"""The layer families' problems (layer_fwd, layer_bwd_data, layer_bwd_filter) as convtune.nn runs them, without
torch: convtune.nn.functional makes its problems here, and the benchmarks list what a run will need."""

STRICT_FP32 = 0  # the layer families' precision dim: no TF32 math


def layer_dims(x_shape, w_shape, stride, pad):
    """The dims of a conv2d layer's problems: x (N, C, H, W), w (K, C, R, S), stride and pad pairs."""
    n, c, h, w = x_shape
    return {"n": n, "c": c, "h": h, "w": w, "k": w_shape[0], "r": w_shape[2], "s": w_shape[3],
            "pad_h": pad[0], "pad_w": pad[1], "u": stride[0], "v": stride[1], "precision": STRICT_FP32}


def layer_problems(shapes):
    """The convtune problems (family, dims) of conv2d layers, from (input shape, weight shape, stride, padding,
    whether the input needs a gradient): each one's forward, its backward-data where the input needs a
    gradient, and its backward-filter."""
    problems = []
    for x_shape, w_shape, stride, padding, input_grad in shapes:
        dims = layer_dims(x_shape, w_shape, stride, padding)
        problems.append(("layer_fwd", dict(dims, bias=0, relu=0)))
        if input_grad:
            problems.append(("layer_bwd_data", dims))
        problems.append(("layer_bwd_filter", dims))
    return problems
