"""python -m convtune.bench: convtune against CuPy and PyTorch (strict fp32) on the default spec's shapes.

Each call is timed with CUDA events on the caller's stream: warm-up first, then the median of --samples
runs, each a single call with the GPU idle before it (so the host's work up to the call's first launch
counts). The "stream" columns time 20 calls issued back to back instead (the median of 5 such runs, per
call), as a training loop or pipeline issues them: there the host runs ahead and a call costs its GPU time,
or its host time where that is longer (the stream's library column is the fastest library there).
Convolution layers get a row per pass: forward, backward-data and backward-filter, each against PyTorch's own
(torch.nn.functional.conv2d, torch.nn.grad.conv2d_input, conv2d_weight). Prints a table (ours, the best
library call, the speed-up) and writes JSON (--json). Rows of one image or signal also time a copy
of it into an array of its size (torch's copy_): the memory traffic no convolution of it can avoid, so that
"best/copy" bounds the speed-up anyone could have over that library there.

--overhead measures instead what a Python call costs the host over the C++ runtime library running the same
Convolution: see overhead() below.
"""
import argparse
import json
import os
import statistics
import sys
import time

from ._layers import layer_problems
from ._timing import (DEFAULT_WORKERS, PASSES, layer_passes, median_ms, output_hw, prepare_in_parallel, stream_ms,
                      strict_fp32)

OVERHEAD_GOAL_US = 5.0  # issue 36: a Python call costs at most this over the C++ runtime's
STREAM_CUTOFF = 4.0  # libraries timed in a stream: those within this factor of the fastest single call


def _streamed(lib_ms):
    """The libraries worth timing in a stream, in their order. A single call costs about its host time plus its
    GPU time and a call in a stream about the larger of the two, so a library STREAM_CUTOFF (4) times slower
    than the fastest alone is at least twice as slow as it in a stream: never the stream's best. Their stream
    runs (103 calls each) were most of the benchmark's time (torch's conv1d at m = 8193, 2^26 samples)."""
    fastest = min(lib_ms.values())
    return [lib for lib, ms in lib_ms.items() if ms <= STREAM_CUTOFF * fastest]


def _cases(torch, cp, quick):
    """(name, ours, {library: call}, copy) on torch tensors; CuPy reads the same memory through DLPack. copy:
    the input copied into an array of its size, for rows whose output is about the input's size (None
    elsewhere: layers, bound by arithmetic; pooling's output is a quarter; a slice is a few values)."""
    import convtune
    F = torch.nn.functional
    g = torch.Generator(device="cuda").manual_seed(36)
    rand = lambda *s: torch.randn(*s, device="cuda", generator=g)
    cases = []
    images, batches, taps, separable, slices, pools, layers = _shapes(quick)
    for size, r in images:
        img, f = rand(size, size), rand(2 * r + 1, 2 * r + 1)
        libs = {"torch conv2d": lambda img=img, f=f: F.conv2d(img[None, None], f[None, None], padding=f.shape[0] // 2)}
        if cp is not None:
            ci, cf = cp.from_dlpack(img), cp.from_dlpack(f)
            from cupyx.scipy import ndimage
            libs["cupyx.ndimage.correlate"] = lambda ci=ci, cf=cf: ndimage.correlate(ci, cf, mode="constant")
        cases.append((f"conv2d {size}^2 r={r}", lambda img=img, f=f: convtune.conv2d(img, f), libs, _copy(torch, img)))
    for b, size, r in batches:
        img, f = rand(b, size, size), rand(2 * r + 1, 2 * r + 1)
        libs = {"torch conv2d": lambda img=img, f=f: F.conv2d(img[:, None], f[None, None], padding=f.shape[0] // 2)}
        if cp is not None:
            ci, cf = cp.from_dlpack(img), cp.from_dlpack(f)
            from cupyx.scipy import ndimage  # a (1, 2r+1, 2r+1) filter: each image alone
            libs["cupyx.ndimage.correlate"] = lambda ci=ci, cf=cf: ndimage.correlate(ci, cf[None], mode="constant")
        cases.append((f"conv2d {b} x {size}^2 r={r}", lambda img=img, f=f: convtune.conv2d(img, f), libs,
                      _copy(torch, img)))
    for m, mode in taps:
        x, h = rand(SIGNAL), rand(m)
        pad = h.shape[0] - 1 if mode == "full" else 0
        libs = {"torch conv1d": lambda x=x, h=h, pad=pad: F.conv1d(x[None, None], h.flip(0)[None, None], padding=pad)}
        if cp is not None:
            from cupyx.scipy import signal
            cx, ch = cp.from_dlpack(x), cp.from_dlpack(h)
            libs["cupyx oaconvolve"] = lambda cx=cx, ch=ch, mode=mode: signal.oaconvolve(cx, ch, mode)
            libs["cupyx fftconvolve"] = lambda cx=cx, ch=ch, mode=mode: signal.fftconvolve(cx, ch, mode)
        cases.append((f"conv1d {mode} n=2^{SIGNAL.bit_length() - 1} m={m}",
                      lambda x=x, h=h, mode=mode: convtune.conv1d(x, h, mode), libs, _copy(torch, x)))
    for size, r in separable:
        img, row, col = rand(size, size), rand(2 * r + 1), rand(2 * r + 1)
        libs = {"torch conv2d x2": lambda img=img, row=row, col=col, r=r: F.conv2d(
            F.conv2d(img[None, None], row[None, None, None], padding=(0, r)), col[None, None, :, None], padding=(r, 0))}
        if cp is not None:
            from cupyx.scipy import ndimage
            ci, crow, ccol = cp.from_dlpack(img), cp.from_dlpack(row), cp.from_dlpack(col)
            libs["cupyx.ndimage.correlate1d x2"] = lambda ci=ci, crow=crow, ccol=ccol: ndimage.correlate1d(
                ndimage.correlate1d(ci, crow, axis=1, mode="constant"), ccol, axis=0, mode="constant")
        cases.append((f"sep_conv2d {size}^2 r={r}", lambda img=img, row=row, col=col: convtune.sep_conv2d(img, row, col),
                      libs, _copy(torch, img)))
    for n, m, start, end in slices:
        a, b = rand(n), rand(m)
        libs = {}
        if cp is not None:
            from cupyx.scipy import signal
            ca, cb = cp.from_dlpack(a), cp.from_dlpack(b)
            libs["cupyx fftconvolve[slice]"] = lambda ca=ca, cb=cb, s=slice(start, end): signal.fftconvolve(ca, cb)[s]
        if libs:
            cases.append((f"conv1d_slice n=m=2^{n.bit_length() - 1} [{start}, {end})",
                          lambda a=a, b=b, s=(start, end): convtune.conv1d_slice(a, b, *s), libs, None))
    for n, c, hw, k, stride, pad in pools:
        x = rand(n, c, hw, hw)
        from .nn import functional as ours_nn
        shape = (k, stride, pad)
        for name, ours_pool, theirs in (("max_pool2d", ours_nn.max_pool2d, F.max_pool2d),
                                        ("avg_pool2d", ours_nn.avg_pool2d, F.avg_pool2d)):
            cases.append((f"{name} N{n} C{c} {hw}^2 k{k} s{stride} p{pad}",
                          lambda x=x, f=ours_pool, a=shape: f(x, *a),
                          {f"torch {name}": lambda x=x, f=theirs, a=shape: f(x, *a)}, None))
    for n, c, hw, k, r, stride in layers:
        x, w = rand(n, c, hw, hw), rand(k, c, r, r)
        p, q = output_hw(hw, hw, r, r, stride, r // 2)
        passes = layer_passes(torch, x, w, rand(n, k, p, q), stride, r // 2)
        for which in PASSES:
            ours, theirs = passes[which]
            cases.append((f"layer N{n} C{c} {hw}^2 K{k} R{r} s{stride} {which}", ours, {"torch (cuDNN fp32)": theirs},
                          None))
    return cases


def _copy(torch, a):
    destination = torch.empty_like(a)
    return lambda: destination.copy_(a)


# The shapes, the default spec's (sweeps/default.json) and a few more: conv2d images (size, r) and batches
# (images, size, r), conv1d filter lengths and modes (n = 2^26), separable images (size, r), slices of a full
# convolution (n, m, start, end), pooling (n, c, h = w, kernel, stride, padding), and ResNet's layers (n, c,
# h = w, k, r = s, stride); the quick run takes one of each.
IMAGES = [(size, r) for size in (512, 2048, 8192) for r in (1, 3, 7)]
BATCHES = [(64, 512, 1), (64, 512, 3), (1024, 128, 3), (16384, 32, 1)]
TAPS = [(17, "full"), (129, "full"), (1025, "full"), (8193, "full"), (17, "valid"), (1025, "valid")]
SEPARABLE = [(2048, 3), (8192, 7)]
SLICES = [(1 << 22, 1 << 22, (1 << 22) - 1, (1 << 22) + 4096)]  # the default spec's 4097 outputs
POOLS = [(32, 64, 112, 3, 2, 1)]
LAYERS = [(32, 3, 224, 64, 7, 2), (32, 64, 56, 64, 3, 1), (32, 64, 56, 256, 1, 1), (32, 128, 28, 128, 3, 1),
          (32, 256, 14, 256, 3, 1), (32, 512, 7, 512, 3, 1)]
SIGNAL = 1 << 26


def _shapes(quick):
    every = (IMAGES, BATCHES, TAPS, SEPARABLE, SLICES, POOLS, LAYERS)
    return tuple([shapes[i]] for shapes, i in zip(every, (4, 1, 1, 0, 0, 0, 1))) if quick else every


def problems(quick):
    """The convtune problems (family, dims) the benchmark runs, for compiling them ahead."""
    images, batches, taps, separable, slices, pools, layers = _shapes(quick)
    return ([("conv2d", {"h": size, "w": size, "r": r}) for size, r in images] +
            [("conv2d", {"h": size, "w": size, "r": r, "b": b}) for b, size, r in batches] +
            [("conv1d", {"n": SIGNAL, "m": m, "mode": 1 if mode == "full" else 0}) for m, mode in taps] +
            [("conv2d_separable", {"h": size, "w": size, "r": r}) for size, r in separable] +
            [("conv1d_parts", {"n": n, "m": m, "start": start, "end": end}) for n, m, start, end in slices] +
            [("layer_pool", {"n": n, "c": c, "h": hw, "w": hw, "r": k, "s": k, "pad_h": pad, "pad_w": pad, "u": stride,
                             "v": stride, "op": op}) for n, c, hw, k, stride, pad in pools for op in (0, 1)] +
            layer_problems([((n, c, hw, hw), (k, c, r, r), (stride, stride), (r // 2, r // 2), True)
                            for n, c, hw, k, r, stride in layers]))


_ROW_FAMILY = {"sep_conv2d": "conv2d_separable", "conv1d_slice": "conv1d_parts", "max_pool2d": "layer_pool",
               "avg_pool2d": "layer_pool"}


def _matches(problem, only):
    """Whether a (family, dims) problem may belong to a row named with `only` (compiled ahead only then)."""
    word = only.split()[0]  # rows are named by function or family: "conv2d ...", "max_pool2d ...", "layer ..."
    return problem[0].startswith(_ROW_FAMILY.get(word, word))


def bench(args):
    import torch
    strict_fp32(torch)
    try:
        import cupy as cp
    except ImportError:
        cp = None
    wanted = [p for p in problems(args.quick) if not args.only or _matches(p, args.only)]
    prepare_s, notes = prepare_in_parallel(wanted, torch.cuda.current_device(), args.prepare_workers, True)
    print(f"kernels compiled ahead in {prepare_s:.1f} s ({args.prepare_workers} processes)", flush=True)
    for note in notes[:3] + ([f"... and {len(notes) - 3} more"] if len(notes) > 3 else []):
        print(f"  note: {note}", flush=True)
    rows = []
    print(f"{'problem':48} {'convtune ms':>12} {'best library':>24} {'ms':>9} {'speed-up':>9} {'stream ms':>10} "
          f"{'library':>9} {'speed-up':>9} {'copy ms':>9} {'best/copy':>9}")
    for name, ours, libs, copy in _cases(torch, cp, args.quick):
        if args.only not in name:
            continue
        ours_ms = median_ms(ours, args.samples, torch)
        lib_ms = {lib: median_ms(fn, args.samples, torch) for lib, fn in libs.items()}
        best = min(lib_ms, key=lib_ms.get)
        ours_stream = stream_ms(ours, torch)
        lib_stream = {lib: stream_ms(libs[lib], torch) for lib in _streamed(lib_ms)}
        best_stream_library = min(lib_stream, key=lib_stream.get)
        best_stream = lib_stream[best_stream_library]
        copy_ms = median_ms(copy, args.samples, torch) if copy else None
        rows.append({"problem": name, "convtune_ms": ours_ms, "libraries_ms": lib_ms, "best_library": best,
                     "speedup": lib_ms[best] / ours_ms, "convtune_stream_ms": ours_stream,
                     "libraries_stream_ms": lib_stream, "best_stream_library": best_stream_library,
                     "stream_speedup": best_stream / ours_stream, "copy_ms": copy_ms})
        bound = f"{copy_ms:9.4f} {lib_ms[best] / copy_ms:8.2f}x" if copy else ""
        print(f"{name:48} {ours_ms:12.4f} {best:>24} {lib_ms[best]:9.4f} {lib_ms[best] / ours_ms:8.2f}x "
              f"{ours_stream:10.4f} {best_stream:9.4f} {best_stream / ours_stream:8.2f}x {bound}", flush=True)
        _write_json(args.json, torch, args.samples, prepare_s, rows)  # each row: a run stopped at a limit keeps its rows
    if not rows:
        _write_json(args.json, torch, args.samples, prepare_s, rows)
    return 0


def _write_json(path, torch, samples, prepare_s, rows):
    """The rows so far, written whole or not at all (beside it, then renamed): a stop mid-write tears nothing."""
    partial = f"{path}.partial"
    with open(partial, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "samples": samples, "compiled_ahead_s": prepare_s,
                   "rows": rows}, f, indent=1)
    os.replace(partial, path)


# --overhead: the host's time to issue one call, Python against C++.
class _TorchSide:
    name = "torch"

    def __init__(self):
        import torch
        self.torch = torch
        self.generator = torch.Generator(device="cuda").manual_seed(36)

    def rand(self, *shape):
        return self.torch.randn(*shape, device="cuda", generator=self.generator)

    def empty_like(self, a):
        return self.torch.empty_like(a)

    def pointer(self, a):
        return a.data_ptr()

    def sync(self):
        self.torch.cuda.synchronize()

    def event(self):
        e = self.torch.cuda.Event(enable_timing=True)
        e.record()
        return e

    @staticmethod
    def elapsed_ms(start, stop):
        stop.synchronize()
        return start.elapsed_time(stop)


class _CupySide:
    name = "cupy"

    def __init__(self):
        import cupy
        self.cupy = cupy
        self.random = cupy.random.default_rng(36)

    def rand(self, *shape):
        return self.random.standard_normal(shape, dtype=self.cupy.float32)

    def empty_like(self, a):
        return self.cupy.empty_like(a)

    def pointer(self, a):
        return a.data.ptr

    def sync(self):
        self.cupy.cuda.Device().synchronize()

    def event(self):
        e = self.cupy.cuda.Event()
        e.record()
        return e

    def elapsed_ms(self, start, stop):
        stop.synchronize()
        return self.cupy.cuda.get_elapsed_time(start, stop)


def _sides():
    sides = []
    for make in (_TorchSide, _CupySide):
        try:
            sides.append(make())
        except ImportError:
            pass
    return sides


def _per_call_us(side, loops, calls, repeats):
    """For each of `loops` (each issues `calls` calls and returns its own seconds, or None to be timed here):
    the host's time per call and the GPU's span per call, in µs, one list entry per repeat. The loops take
    turns within each repeat, so that a drift of the host's speed (frequency, other processes) falls on all
    of them alike. The GPU is idle before each loop; the host is timed until the last call is issued."""
    host, gpu = [[] for _ in loops], [[] for _ in loops]
    for _ in range(repeats):
        for i, loop in enumerate(loops):
            side.sync()
            start_event = side.event()
            start = time.perf_counter()
            seconds = loop()
            host_s = time.perf_counter() - start
            gpu[i].append(side.elapsed_ms(start_event, side.event()) * 1e3 / calls)
            host[i].append((host_s if seconds is None else seconds) * 1e6 / calls)
            side.sync()
    return host, gpu


def overhead_rows(sides, size, radii, calls, repeats, warmup=5):
    """For each kind and r: the host µs per call of convtune.conv2d(img, f) and of conv2d(img, f, out=out),
    and of the same Convolution driven from C++ (Convolution.issue_loop: bind and run per call, as the
    Python call does, and run only, bound once); the overhead is the median over repeats of Python's minus
    C++'s bind and run within the same repeat."""
    import convtune
    from convtune import _arrays, _functions
    rows = []
    for side in sides:
        for r in radii:
            img, filt = side.rand(size, size), side.rand(2 * r + 1, 2 * r + 1)
            out = side.empty_like(img)
            conv2d = convtune.conv2d
            for _ in range(warmup):  # first use: compiling, tuning, the fast path learning the call
                conv2d(img, filt)
                conv2d(img, filt, out=out)
            side.sync()
            call = _functions.plan_conv2d(img, filt)  # the Convolution that convtune.conv2d runs
            conv = call.entry.conv
            stream = _arrays.kind_of(img).stream(call.like.device)
            inputs, output = [side.pointer(img), side.pointer(filt)], side.pointer(out)

            def python_loop():
                for _ in range(calls):
                    conv2d(img, filt)

            def python_out_loop():
                for _ in range(calls):
                    conv2d(img, filt, out=out)

            host, gpu = _per_call_us(side, [python_loop, python_out_loop,
                                            lambda: conv.issue_loop(inputs, output, stream, calls),
                                            lambda: conv.issue_loop(inputs, output, stream, calls, rebind=False)],
                                     calls, repeats)
            median = statistics.median
            rows.append({"library": side.name, "size": size, "r": r, "candidate": conv.candidate, "rule": conv.rule,
                         "python_us": median(host[0]), "python_out_us": median(host[1]),
                         "cpp_bind_run_us": median(host[2]), "cpp_run_only_us": median(host[3]),
                         "gpu_us_per_call": median(gpu[2]), "gpu_us_per_call_run_only": median(gpu[3]),
                         "overhead_us": median(p - c for p, c in zip(host[0], host[2])),
                         "overhead_out_us": median(p - c for p, c in zip(host[1], host[2]))})
    return rows


def overhead(args):
    sides = _sides()
    if not sides:
        print("convtune.bench --overhead: neither PyTorch nor CuPy is installed", file=sys.stderr)
        return 2
    rows = overhead_rows(sides, args.size, (1, 3), args.calls, args.repeats)
    print(f"conv2d {args.size}^2: host time to issue one call, µs (median of {args.repeats} repeats, in each the four "
          f"loops of {args.calls} calls in turn, the GPU idle before each loop; overhead: the median of the repeats' "
          "differences)")
    print(f"{'library':8} {'r':>2} {'python':>8} {'out=':>8} {'C++ bind+run':>13} {'C++ run':>8} {'GPU/call':>9} "
          f"{'overhead':>9} {'out=':>7}  candidate")
    for row in rows:
        print(f"{row['library']:8} {row['r']:>2} {row['python_us']:8.2f} {row['python_out_us']:8.2f} "
              f"{row['cpp_bind_run_us']:13.2f} {row['cpp_run_only_us']:8.2f} {row['gpu_us_per_call']:9.2f} "
              f"{row['overhead_us']:9.2f} {row['overhead_out_us']:7.2f}  {row['candidate']} ({row['rule']})")
    worst = max(max(row["overhead_us"], row["overhead_out_us"]) for row in rows)
    print(f"largest overhead {worst:.2f} µs; goal <= {OVERHEAD_GOAL_US:g} µs: {'met' if worst <= OVERHEAD_GOAL_US else 'NOT met'}")
    print("GPU/call: the GPU's span per call of the C++ bind+run loop; where it is above the host's time, the GPU "
          "was the slower side and work queued up during the loop")
    device = _device_name(sides[0])
    with open(args.json, "w") as f:
        json.dump({"device": device, "size": args.size, "calls": args.calls, "repeats": args.repeats,
                   "goal_us": OVERHEAD_GOAL_US, "largest_overhead_us": worst, "rows": rows}, f, indent=1)
    return 0


def _device_name(side):
    from convtune._ext import ext
    return ext().device_name(0 if side.name == "cupy" else side.torch.cuda.current_device())


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m convtune.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one shape of each kind")
    parser.add_argument("--only", default="", help="the rows whose name contains this text (e.g. 'conv2d 64 x')")
    parser.add_argument("--samples", type=int, default=20, help="timed runs a problem (the median is kept)")
    parser.add_argument("--overhead", action="store_true",
                        help="measure the host's time per call, Python against the C++ runtime, instead")
    parser.add_argument("--size", type=int, default=512, help="--overhead: the image's height and width")
    parser.add_argument("--calls", type=int, default=400, help="--overhead: calls in one timed loop")
    parser.add_argument("--repeats", type=int, default=20, help="--overhead: timed loops (the median is kept)")
    parser.add_argument("--prepare-workers", type=int, default=DEFAULT_WORKERS,
                        help="processes that compile the benchmark's kernels (and first-use tuning's candidates) "
                             "ahead, in parallel, into the kernel cache (0: none; default min(8, cores))")
    parser.add_argument("--json", default=None,
                        help="where to write the results (convtune_bench.json; with --overhead convtune_overhead.json)")
    args = parser.parse_args(argv)
    for name in ("samples", "size", "calls", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: {getattr(args, name)}; allowed: 1 or more")
    if args.prepare_workers < 0:
        parser.error(f"--prepare-workers: {args.prepare_workers}; allowed: 0 or more")
    if args.json is None:
        args.json = "convtune_overhead.json" if args.overhead else "convtune_bench.json"
    return args


def main(argv=None):
    args = parse_args(argv)
    return overhead(args) if args.overhead else bench(args)


if __name__ == "__main__":
    sys.exit(main())
