"""python -m convtune.bench: convtune against CuPy and PyTorch (strict fp32) on the default spec's shapes.

Each call is timed with CUDA events on the caller's stream: warm-up first, then the median of --samples
runs. Prints a table (ours, the best library call, the speed-up) and writes JSON (--json).
"""
import argparse
import json
import statistics
import sys


def _median_ms(fn, samples, torch):
    for _ in range(3):
        fn()
    times = []
    for _ in range(samples):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def _cases(torch, cp, quick):
    """(name, ours, {library: call}) on torch tensors; CuPy reads the same memory through DLPack."""
    import convtune
    F = torch.nn.functional
    g = torch.Generator(device="cuda").manual_seed(36)
    rand = lambda *s: torch.randn(*s, device="cuda", generator=g)
    cases = []
    for size, r in ([(2048, 3)] if quick else [(8192, 3), (2048, 3), (512, 3), (2048, 1), (2048, 7)]):
        img, f = rand(size, size), rand(2 * r + 1, 2 * r + 1)
        libs = {"torch conv2d": lambda img=img, f=f: F.conv2d(img[None, None], f[None, None], padding=f.shape[0] // 2)}
        if cp is not None:
            ci, cf = cp.from_dlpack(img), cp.from_dlpack(f)
            from cupyx.scipy import ndimage
            libs["cupyx.ndimage.correlate"] = lambda ci=ci, cf=cf: ndimage.correlate(ci, cf, mode="constant")
        cases.append((f"conv2d {size}^2 r={r}", lambda img=img, f=f: convtune.conv2d(img, f), libs))
    for m in ([129] if quick else [17, 129, 1025, 8193]):
        x, h = rand(1 << 24), rand(m)
        libs = {"torch conv1d": lambda x=x, h=h: F.conv1d(x[None, None], h.flip(0)[None, None], padding=h.shape[0] - 1)}
        if cp is not None:
            from cupyx.scipy import signal
            cx, ch = cp.from_dlpack(x), cp.from_dlpack(h)
            libs["cupyx oaconvolve"] = lambda cx=cx, ch=ch: signal.oaconvolve(cx, ch)
            libs["cupyx fftconvolve"] = lambda cx=cx, ch=ch: signal.fftconvolve(cx, ch)
        cases.append((f"conv1d full n=2^24 m={m}", lambda x=x, h=h: convtune.conv1d(x, h), libs))
    for n, c, hw, k, r, stride in ([(32, 64, 56, 64, 3, 1)] if quick else
                                   [(32, 3, 224, 64, 7, 2), (32, 64, 56, 64, 3, 1), (32, 128, 28, 128, 3, 1),
                                    (32, 256, 14, 256, 3, 1), (32, 512, 7, 512, 3, 1)]):
        x, w = rand(n, c, hw, hw).requires_grad_(), rand(k, c, r, r).requires_grad_()
        pad = r // 2

        def step(conv, x=x, w=w, pad=pad, stride=stride):
            y = conv(x, w, None, stride, pad)
            y.backward(torch.ones_like(y))
        cases.append((f"layer N{n} C{c} {hw}^2 K{k} R{r} s{stride} fwd+bwd",
                      lambda step=step: step(convtune.nn.functional.conv2d), {"torch (cuDNN fp32)": lambda step=step: step(F.conv2d)}))
    return cases


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one shape of each kind")
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--json", default="convtune_bench.json", help="where to write the results")
    args = parser.parse_args(argv)
    import torch
    torch.backends.cudnn.allow_tf32 = False  # strict fp32, as ours
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        import cupy as cp
    except ImportError:
        cp = None
    rows = []
    print(f"{'problem':44} {'convtune ms':>12} {'best library':>24} {'ms':>9} {'speed-up':>9}")
    for name, ours, libs in _cases(torch, cp, args.quick):
        ours_ms = _median_ms(ours, args.samples, torch)
        lib_ms = {lib: _median_ms(fn, args.samples, torch) for lib, fn in libs.items()}
        best = min(lib_ms, key=lib_ms.get)
        rows.append({"problem": name, "convtune_ms": ours_ms, "libraries_ms": lib_ms, "best_library": best,
                     "speedup": lib_ms[best] / ours_ms})
        print(f"{name:44} {ours_ms:12.4f} {best:>24} {lib_ms[best]:9.4f} {lib_ms[best] / ours_ms:8.2f}x", flush=True)
    with open(args.json, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
