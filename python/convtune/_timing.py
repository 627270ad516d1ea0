"""Timing shared by python -m convtune.bench and python -m convtune.train_check: CUDA-event medians, a
convolution layer's three passes (forward, backward-data, backward-filter), ours and PyTorch's, and the
compiling of what a run will need ahead, in parallel processes."""
import os
import statistics
import time

PASSES = ("forward", "backward-data", "backward-filter")
DEFAULT_WORKERS = min(8, os.cpu_count() or 1)


def strict_fp32(torch):
    """PyTorch without TF32 anywhere, as convtune's layer kernels (precision 0)."""
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def median_ms(fn, samples, torch, warmup=3, calls=1):
    """The median over `samples` runs of fn's GPU time per call on the current stream (CUDA events around
    `calls` calls issued back to back), after warm-up; every run starts with the GPU idle. With one call that
    includes the host's work up to the call's first launch."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / calls)
    return statistics.median(times)


def stream_ms(fn, torch, calls=20, repeats=5, warmup=3):
    """The GPU's time per call when the host issues `calls` calls back to back (the median over `repeats`),
    as in a training loop or a pipeline: the host runs ahead, so a call's host work shows only where it
    exceeds the GPU's."""
    return median_ms(fn, repeats, torch, warmup, calls)


def layer_passes(torch, x, w, dy, stride, padding):
    """{pass: (ours, torch's)}: zero-argument calls of one conv2d layer's passes on x (N, C, H, W), w (K, C,
    R, S) and dy (the output's gradient). Ours are what convtune.nn.functional.conv2d runs: its forward
    (the public call, with its checks) and its autograd backward's two pieces; PyTorch's are
    torch.nn.functional.conv2d and torch.nn.grad.conv2d_input / conv2d_weight (cuDNN)."""
    from .nn import functional as ours
    F = torch.nn.functional
    x_shape, w_shape = tuple(x.shape), tuple(w.shape)
    plan = ours._Conv2dPlan(x, w, None, stride, padding, 1, 1)
    if plan.output_shape() != tuple(dy.shape):
        raise ValueError(f"dy: shape {tuple(dy.shape)}; allowed: {plan.output_shape()}, the layer's output")
    return {
        "forward": (lambda: ours.conv2d(x, w, None, stride, padding),
                    lambda: F.conv2d(x, w, None, stride, padding)),
        "backward-data": (lambda: ours._run(plan.backward_data(dy, w), x_shape),
                          lambda: torch.nn.grad.conv2d_input(x_shape, w, dy, stride, padding)),
        "backward-filter": (lambda: ours._run(plan.backward_filter(x, dy), w_shape),
                            lambda: torch.nn.grad.conv2d_weight(x, w_shape, dy, stride, padding)),
    }


def output_hw(h, w, r, s, stride, padding):
    """A conv2d layer's output height and width (torch's floor formula)."""
    su, sv = (stride, stride) if isinstance(stride, int) else stride
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    return (h + 2 * ph - r) // su + 1, (w + 2 * pw - s) // sv + 1


def _prepare(problems, device, tune):
    """In a worker process: makes each problem's Convolution, which compiles its kernel (and first-use
    tuning's candidates) into the kernel cache on disk; the errors, as text (the run meets them again)."""
    import convtune
    from convtune import _dispatch
    if not tune:
        convtune.use_table(None, tune_unseen=False)
    failures = []
    for family, dims in problems:
        try:
            _dispatch.convolution(family, dims, device, {})
        except Exception as e:  # noqa: BLE001 (reported, and met again where it counts)
            failures.append(f"{family} {dims}: {e}")
    return failures


def prepare_in_parallel(problems, device, workers, tune):
    """Compiles what the problems need in `workers` processes at once (one process compiles one kernel at a
    time, and a cold kernel cache makes the first training step wait for dozens). Returns (seconds, notes)."""
    if workers < 1 or not problems:
        return 0.0, []
    import concurrent.futures
    import multiprocessing
    start = time.perf_counter()
    chunks = [problems[i::workers] for i in range(min(workers, len(problems)))]
    try:
        with concurrent.futures.ProcessPoolExecutor(len(chunks), mp_context=multiprocessing.get_context("spawn")) as pool:
            notes = [f for failed in pool.map(_prepare, chunks, [device] * len(chunks), [tune] * len(chunks))
                     for f in failed]
    except Exception as e:  # noqa: BLE001 (the run compiles what is missing itself, only slower)
        notes = [f"compiling ahead failed, the first steps compile instead: {e}"]
    return time.perf_counter() - start, notes
