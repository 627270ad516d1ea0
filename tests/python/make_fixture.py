#!/usr/bin/env python3
"""Writes tests/python/fixtures/run_small/ and run_conv1d/: small hand-made run folders in convtune's format
(summary.json, records.jsonl), deterministic (fixed seed), for the plotting tests.

    python3 tests/python/make_fixture.py                      # both, in place
    python3 tests/python/make_fixture.py OUTDIR               # run_small into OUTDIR
    python3 tests/python/make_fixture.py --conv1d OUTDIR      # run_conv1d into OUTDIR

Six conv2d problems (h = w in {1024, 4096} x r in {1, 3, 7}) on a modelled H100; variants conv2d.constant,
conv2d.register_tiled (several configs, eleven on the first problem for the sensitivity plot),
conv2d.tiled_halo_l2, and the library baselines conv2d.cudnn and conv2d.fft. Times come from a simple
roofline-style model with fixed pseudo-random noise, so the plots look like a real run's; the numbers are
not measurements. Also in it: skipped, wrong_result and runtime_error records, strategy/eval_index on five
of the six problems (exhaustive on the 1024² ones, random on two 4096² ones), a run that did not finish
(no 'finished' time) and a torn last line (the crash).

run_conv1d (build_conv1d) is a finished run of the conv1d and conv1d_parts families, modelled the same way.
"""

import json
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "fixtures", "run_small")

COPY_GBPS = 2900.0
FP32_GFLOPS = 60000.0
SEED = 20261122

DEVICE = {
    "ordinal": 0, "name": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "compute_capability": "9.0", "sms": 132,
    "global_mem_bytes": 84929216512, "l2_bytes": 52428800, "max_threads_per_block": 1024,
    "max_threads_per_sm": 2048, "max_smem_per_block": 49152, "max_smem_per_block_optin": 232448,
    "max_smem_per_sm": 233472, "regs_per_block": 65536, "regs_per_sm": 65536, "sm_clock_khz": 1980000,
    "mem_clock_khz": 2619000, "mem_bus_bits": 5120, "driver_version": 12040, "runtime_version": 12040,
    "cudnn_version": 90100, "cufft_version": 11103, "nvrtc_version": "12.4",
}

# name -> (library, complexity, overhead ms, bandwidth efficiency, FP32 efficiency)
VARIANTS = {
    "conv2d.constant": (False, 1, 0.0038, 0.90, 0.13),
    "conv2d.register_tiled": (False, 4, 0.0042, 0.85, 0.42),
    "conv2d.tiled_halo_l2": (False, 3, 0.0041, 0.80, 0.22),
    "conv2d.cudnn": (True, 1, 0.0100, 0.62, 0.46),
    "conv2d.fft": (True, 2, 0.0150, 0.80, 0.35),
}


def key_of(h, w, r):
    return f"conv2d/h={h},r={r},w={w}"


def config_string(cfg):
    return ",".join(f"{k}={v}" for k, v in sorted(cfg.items()))


def candidate(variant, cfg):
    s = config_string(cfg)
    return f"{variant}[{s}]" if s else variant


def cost(variant, cfg, h, w, r):
    """(flops, flops_variant, bytes_min, bytes_model) after the C++ cost models (FFT roughly)."""
    hw, fw = h * w, 2 * r + 1
    taps = fw * fw
    flops = 2.0 * taps * hw
    bmin = 4.0 * (2 * hw + taps)
    if variant == "conv2d.constant":
        return flops, flops, bmin, 4.0 * hw * (taps + 1.0)
    if variant == "conv2d.register_tiled":
        tx, ty = cfg["block_x"] * cfg["px"], cfg["block_y"] * cfg["py"]
        tiles = math.ceil(w / tx) * math.ceil(h / ty)
        return flops, flops, bmin, 4.0 * (tiles * (tx + 2 * r) * (ty + 2 * r) + hw + taps)
    if variant == "conv2d.tiled_halo_l2":
        tx, ty = cfg["tile_x"], cfg["tile_y"]
        inside = sum(min(tx, i + r + 1) - max(0, i - r) for i in range(tx)) * \
            sum(min(ty, j + r + 1) - max(0, j - r) for j in range(ty))
        halo = taps * tx * ty - inside
        tiles = math.ceil(w / tx) * math.ceil(h / ty)
        return flops, flops, bmin, 4.0 * (tiles * (tx * ty + halo) + hw + taps)
    if variant == "conv2d.cudnn":
        return flops, flops, bmin, bmin * 1.3
    if variant == "conv2d.fft":
        p = 1 << math.ceil(math.log2(h + 2 * r))
        q = 1 << math.ceil(math.log2(w + 2 * r))
        pq = p * q
        fv = 3 * 5.0 * pq * math.log2(pq) / 2 + 6.0 * pq
        return flops, fv, bmin, 8.0 * pq * 6
    raise ValueError(variant)


def config_factor(variant, cfg, r):
    """How much slower than the variant's best config a config is (>= 1)."""
    if variant == "conv2d.register_tiled":
        f = 1.0
        f += 0.14 * abs(math.log2(cfg["block_x"] / 32))
        f += 0.06 * abs(math.log2(cfg["block_y"] / 8))
        f += (0.05 + 0.05 * r) * abs(math.log2(cfg["py"] / 4))
        f += 0.12 * abs(math.log2(cfg["px"] / 4)) * (1 + r / 7)
        return f
    if variant == "conv2d.tiled_halo_l2":
        return 1.0 + 0.1 * abs(math.log2(cfg["tile_x"] / 32)) + 0.08 * abs(math.log2(cfg["tile_y"] / 8))
    if variant == "conv2d.cudnn":
        return {"implicit_precomp_gemm": 1.0, "implicit_gemm": 1.35, "fft_tiling": 1.9}.get(cfg["algo"], 1.5)
    return 1.0


def model_ms(variant, cfg, h, w, r, rng):
    _, ovh, eb, ef = VARIANTS[variant][1:]
    flops, fv, bmin, bmodel = cost(variant, cfg, h, w, r)
    if variant == "conv2d.fft":
        t = max(bmodel / (COPY_GBPS * 1e9 * eb), fv / (FP32_GFLOPS * 1e9 * ef)) * 1e3
    else:
        t = max(bmin / (COPY_GBPS * 1e9 * eb), flops / (FP32_GFLOPS * 1e9 * ef)) * 1e3
    return (ovh + t * config_factor(variant, cfg, r)) * (1 + 0.03 * (rng.random() - 0.5))


def candidates_for(h, r, first):
    out = [("conv2d.constant", {"block_x": 32, "block_y": 8})]
    if first:  # the sensitivity plot's grid: block_x x py, plus two configs that vary block_y and px
        for bx in (16, 32, 64):
            for py in (1, 2, 4):
                out.append(("conv2d.register_tiled", {"block_x": bx, "block_y": 8, "px": 4, "py": py}))
        out.append(("conv2d.register_tiled", {"block_x": 32, "block_y": 4, "px": 2, "py": 2}))
        out.append(("conv2d.register_tiled", {"block_x": 64, "block_y": 16, "px": 1, "py": 4}))
    else:
        out.append(("conv2d.register_tiled", {"block_x": 32, "block_y": 8, "px": 4, "py": 4}))
        out.append(("conv2d.register_tiled", {"block_x": 64, "block_y": 4, "px": 4, "py": 2}))
    out.append(("conv2d.tiled_halo_l2", {"tile_x": 32, "tile_y": 8}))
    if first:
        out.append(("conv2d.tiled_halo_l2", {"tile_x": 64, "tile_y": 32}))  # skipped: too many threads
    out.append(("conv2d.cudnn", {"algo": "implicit_precomp_gemm"}))
    if r == 3 and h == 1024:
        out.append(("conv2d.cudnn", {"algo": "fft_tiling"}))  # wrong_result
    if r == 7 and h == 4096:
        out.append(("conv2d.cudnn", {"algo": "fft_tiling"}))  # runtime_error
    out.append(("conv2d.fft", {"size_policy": "pow2"}))
    return out


def record(variant, cfg, h, w, r, rng, clock):
    library, complexity = VARIANTS[variant][:2]
    flops, fv, bmin, bmodel = cost(variant, cfg, h, w, r)
    floor = max(bmin / (COPY_GBPS * 1e9), flops / (FP32_GFLOPS * 1e9)) * 1e3
    rec = {
        "schema": 1, "problem": {"family": "conv2d", "h": h, "r": r, "w": w}, "problem_key": key_of(h, w, r),
        "family": "conv2d", "variant": variant, "library": library, "config": cfg,
        "candidate": candidate(variant, cfg), "flops": flops, "flops_variant": fv, "bytes_min": bmin,
        "bytes_model": bmodel, "intensity_min": flops / bmin, "intensity_model": flops / bmodel,
        "floor_ms": floor, "complexity": complexity, "timestamp": clock(), "status": "ok",
    }
    if variant == "conv2d.tiled_halo_l2" and cfg["tile_x"] * cfg["tile_y"] > 1024:
        rec["status"] = "skipped"
        rec["reason"] = f"block of {cfg['tile_x'] * cfg['tile_y']} threads exceeds max_threads_per_block 1024"
        return rec
    regs = {"conv2d.constant": 30, "conv2d.register_tiled": 40 + 4 * cfg.get("px", 1) * cfg.get("py", 1),
            "conv2d.tiled_halo_l2": 32}.get(variant, 0)
    threads = cfg.get("block_x", cfg.get("tile_x", 0)) * cfg.get("block_y", cfg.get("tile_y", 0))
    if not library:
        smem = 0
        if variant == "conv2d.register_tiled":
            smem = 4 * (cfg["block_y"] * cfg["py"] + 2 * r) * (cfg["block_x"] * cfg["px"] + 2 * r + 4)
        elif variant == "conv2d.tiled_halo_l2":
            smem = 4 * threads
        bps = max(1, min(2048 // max(threads, 1), 65536 // max(regs * threads, 1), 32))
        rec["compiled"] = True
        rec["compile_ms"] = round(180 + 40 * rng.random() + 3 * regs, 1)
        rec["kernel"] = {"registers": regs, "static_smem_bytes": 0, "dynamic_smem_bytes": smem, "local_bytes": 0,
                         "threads": threads, "blocks_per_sm": bps, "occupancy": round(bps * threads / 2048, 3)}
    else:
        rec["compiled"] = False
        rec["compile_ms"] = 0.0
        rec["kernel"] = {}
    rec["workspace_bytes"] = int(bmodel) if variant == "conv2d.fft" else (0 if not library else 1 << 20)
    if variant == "conv2d.cudnn" and cfg["algo"] == "fft_tiling" and h == 4096:
        rec["status"] = "runtime_error"
        rec["reason"] = ("cudnn: CUDNN_STATUS_NOT_SUPPORTED in cudnnGetConvolutionForwardWorkspaceSize "
                         "(algo fft_tiling, filter 15x15)")
        return rec
    tol = {"rel_l2": 1e-5, "max_rel": 1e-4}
    if variant == "conv2d.cudnn" and cfg["algo"] == "fft_tiling":
        rec["status"] = "wrong_result"
        rec["reason"] = "rel_l2 3.2e-05 exceeds tolerance 1e-05"
        rec["error"] = {"rel_l2": 3.2e-5, "max_abs": 2.1e-3, "max_rel": 4.4e-4, "nonfinite": 0,
                        "tolerance": tol, "pass": False}
        return rec
    return timed(rec, model_ms(variant, cfg, h, w, r, rng), rng)


def timed(rec, ms, rng):
    """rec as an ok record measured at ms: error, time and the derived rates."""
    tol = {"rel_l2": 1e-5, "max_rel": 1e-4}
    rse = 0.002 + 0.006 * rng.random()
    samples = 20 + int(30 * rng.random())
    rec["error"] = {"rel_l2": 10 ** (-7 + rng.random()), "max_abs": 10 ** (-6 + rng.random()),
                    "max_rel": 10 ** (-6.5 + rng.random()), "nonfinite": 0, "tolerance": tol, "pass": True}
    rec["time"] = {"median_ms": ms, "min_ms": ms * (1 - 0.02 * rng.random()), "mean_ms": ms * (1 + 0.004),
                   "stdev_ms": ms * rse * math.sqrt(samples), "samples": samples, "rel_stderr": rse,
                   "converged": True}
    rec["cold"] = True
    rec["gbps_effective"] = rec["bytes_min"] / (ms * 1e-3) / 1e9
    rec["gflops"] = rec["flops"] / (ms * 1e-3) / 1e9
    rec["roofline_fraction"] = rec["floor_ms"] / ms
    return rec


def build():
    rng = random.Random(SEED)
    t0 = [10 * 3600]

    def clock(step=[0]):
        step[0] += 1
        s = t0[0] + 3 * step[0]
        return f"2026-11-22T{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}Z"

    problems = [(h, h, r) for h in (1024, 4096) for r in (1, 3, 7)]
    strategies = {key_of(1024, 1024, r): "exhaustive" for r in (1, 3, 7)}
    strategies[key_of(4096, 4096, 1)] = "random"
    strategies[key_of(4096, 4096, 3)] = "random"
    records = []
    for i, (h, w, r) in enumerate(problems):
        cands = candidates_for(h, r, first=i == 0)
        strat = strategies.get(key_of(h, w, r))
        if strat == "random":
            rng.shuffle(cands)
        evals = 0
        for variant, cfg in cands:
            rec = record(variant, cfg, h, w, r, rng, clock)
            if strat:
                if rec["status"] != "skipped":
                    evals += 1
                rec["strategy"] = strat
                rec["eval_index"] = evals
            records.append(rec)
    # the record being written when the run died: the last line is torn
    torn = record("conv2d.constant", {"block_x": 64, "block_y": 4}, 4096, 4096, 7, rng, clock)
    counts = {}
    for rec in records:
        counts[rec["status"]] = counts.get(rec["status"], 0) + 1
    summary = {
        "schema": 1, "tool": "convtune", "version": "0.1.0", "git_sha": "3f2c1e9a0b7d5c4e8f6a1b2c3d4e5f6a7b8c9d0e",
        "argv": ["convtune", "sweep", "sweeps/conv2d_small.json"],
        "spec": {"name": "conv2d_small", "family": "conv2d",
                 "problems": [{"h": h, "w": w, "r": r} for h, w, r in problems],
                 "variants": list(VARIANTS), "strategy": "exhaustive"},
        "device": DEVICE, "ceilings": {"copy_gbps": COPY_GBPS, "fp32_gflops": FP32_GFLOPS},
        "measure": {"cold": True, "warmup": 3, "min_samples": 20, "max_samples": 200, "max_rel_stderr": 0.01,
                    "time_cap_s": 2.0},
        "started": "2026-11-22T10:00:00Z", "finished": None, "counts": counts,
    }
    return summary, records, json.dumps(torn, separators=(",", ":"))


# --- conv1d + conv1d_parts: fixtures/run_conv1d ---------------------------------------------------

# name -> (library, complexity, overhead ms, bandwidth efficiency, FP32 efficiency, spectral)
CONV1D_VARIANTS = {
    "conv1d.direct": (False, 1, 0.004, 0.85, 0.40, False),
    "conv1d.overlap_discard": (False, 2, 0.005, 0.85, 0.55, False),
    "conv1d.overlap_add": (False, 3, 0.006, 0.80, 0.50, False),
    "conv1d.overlap_discard_fft": (False, 4, 0.020, 0.75, 0.30, True),
    "conv1d.overlap_add_fft": (False, 5, 0.025, 0.70, 0.30, True),
    "conv1d.fused_fft": (False, 5, 0.012, 0.80, 0.35, True),
    "conv1d.fft": (True, 2, 0.030, 0.75, 0.30, True),
    "conv1d.cudnn": (True, 1, 0.015, 0.60, 0.25, False),
    "conv1d_parts.spatial": (False, 1, 0.005, 0.80, 0.50, False),
    "conv1d_parts.spectral": (False, 4, 0.020, 0.75, 0.30, True),
    "conv1d_parts.fft": (True, 2, 0.030, 0.75, 0.30, True),
}
FUSED_MAX_FFT = 8192  # the fused kernel keeps a whole FFT in shared memory


def rfft_flops(length):
    return 2.5 * length * math.log2(length)


def conv1d_candidates(n, m, first):
    out = [("conv1d.direct", {"block": b}) for b in (128, 256)]
    out += [("conv1d.overlap_discard", {"block": b, "per_thread": t}) for b in (128, 256) for t in (4, 8)]
    out += [("conv1d.overlap_add", {"block_len": b}) for b in (1024, 4096)]
    for v in ("conv1d.overlap_discard_fft", "conv1d.overlap_add_fft"):
        out += [(v, {"fft_len": f}) for f in (4096, 16384, 65536)]
    out += [("conv1d.fused_fft", {"fft_len": f, "threads": t}) for f in (2048, 4096, 8192)
            for t in ((128, 256, 512) if first else (256,))]
    out.append(("conv1d.fft", {}))
    out += [("conv1d.cudnn", {"algo": a}) for a in ("implicit_precomp_gemm", "implicit_gemm", "fft")]
    return out


def conv1d_cost(variant, cfg, n, m, full):
    """(flops, flops_variant, bytes_min, bytes_model): direct-equivalent FLOPs as the C++ family counts them
    (2 per input-tap pair landing in the output), the variant's own arithmetic and traffic roughly."""
    outputs = n + m - 1 if full else n - m + 1
    flops = 2.0 * (n if full else outputs) * m
    bmin = 4.0 * (n + m + outputs)
    if variant in ("conv1d.direct", "conv1d.overlap_discard"):
        tile = cfg["block"] * cfg.get("per_thread", 1)
        return flops, flops, bmin, 4.0 * (math.ceil(outputs / tile) * (tile + m - 1) + outputs + m)
    if variant == "conv1d.overlap_add":
        blocks = math.ceil(n / cfg["block_len"])
        return flops, flops, bmin, 4.0 * (n + 2 * blocks * (cfg["block_len"] + m - 1) + m)
    if variant == "conv1d.cudnn":
        return flops, flops, bmin, bmin * 1.3
    if variant == "conv1d.fft":  # whole-signal FFTs at the next power of two
        p = 1 << math.ceil(math.log2(n + m - 1))
        return flops, 3 * rfft_flops(p) + 3.0 * p, bmin, 8.0 * p * 6
    big = cfg["fft_len"]
    blocks = math.ceil(outputs / max(1, big - m + 1))  # (big < 2m is skipped anyway)
    fv = blocks * (2 * rfft_flops(big) + 3.0 * big) + rfft_flops(big)
    per_block = {"conv1d.fused_fft": 8.0, "conv1d.overlap_discard_fft": 24.0, "conv1d.overlap_add_fft": 28.0}
    return flops, fv, bmin, blocks * big * per_block[variant]


def parts_macs(n, m, start, end):
    """Multiply-adds of the output slice [start, end) of the full convolution of lengths n and m: output i
    sums min(i + 1, min(n, m), n + m - 1 - i) products."""
    lo, hi = min(n, m), max(n, m)

    def upto(k):  # the sum over i < k, in three pieces: rising, flat, falling
        rise = min(k, lo) * (min(k, lo) + 1) // 2
        flat = lo * max(0, min(k, hi) - lo)
        fall = 0
        if k > hi:
            a, b = lo - 1, lo + hi - 1 - k  # lo-1 down to lo+hi-k
            fall = a * (a + 1) // 2 - b * (b + 1) // 2
        return rise + flat + fall

    return upto(end) - upto(start)


def parts_cost(variant, cfg, n, m, start, end):
    span = end - start
    flops = 2.0 * parts_macs(n, m, start, end)
    touched_a = min(n, end) - max(0, start - (m - 1))  # inputs that reach the slice
    touched_b = min(m, end) - max(0, start - (n - 1))
    bmin = 4.0 * (touched_a + touched_b + span)
    if variant == "conv1d_parts.spatial":
        return flops, flops, bmin, bmin * (1 + 64 / cfg["tile"])
    if variant == "conv1d_parts.fft":
        p = 1 << math.ceil(math.log2(n + m - 1))
        return flops, 3 * rfft_flops(p) + 3.0 * p, bmin, 8.0 * p * 6
    la, lb = cfg["l_a"], cfg["l_b"]
    big = 2 * max(la, lb)
    ba, bb = math.ceil(touched_a / la), math.ceil(touched_b / lb)
    pairs = min(ba, bb) * (math.ceil(span / min(la, lb)) + 2)  # pairs whose outputs reach the slice
    fv = (ba + bb) * rfft_flops(big) + pairs * 4.0 * big + math.ceil(span / min(la, lb)) * rfft_flops(big)
    return flops, fv, bmin, 8.0 * big * (3 * (ba + bb) + pairs)


def conv1d_factor(variant, cfg):
    """How much slower than the variant's best config a config is (>= 1)."""
    lg = math.log2
    if variant == "conv1d.direct":
        return 1.0 + 0.06 * (cfg["block"] == 256)
    if variant == "conv1d.overlap_discard":
        return 1.0 + 0.08 * abs(lg(cfg["block"] / 256)) + 0.10 * abs(lg(cfg["per_thread"] / 8))
    if variant == "conv1d.overlap_add":
        return 1.0 + 0.10 * abs(lg(cfg["block_len"] / 4096))
    if variant == "conv1d.fused_fft":
        return 1.0 + 0.12 * abs(lg(cfg["threads"] / 256)) + 0.05 * abs(lg(cfg["fft_len"] / 4096))
    if variant == "conv1d.cudnn":
        return 1.3 if cfg["algo"] == "implicit_gemm" else 1.0
    if variant == "conv1d_parts.spatial":
        return 1.0 + 0.07 * (cfg["tile"] == 128)
    return 1.0


def conv1d_record(family, dims, variant, cfg, costs, m, rng, clock):
    library, complexity, ovh, eb, ef, spectral = CONV1D_VARIANTS[variant]
    flops, fv, bmin, bmodel = costs
    floor = max(bmin / (COPY_GBPS * 1e9), flops / (FP32_GFLOPS * 1e9)) * 1e3
    key = family + "/" + ",".join(f"{k}={v}" for k, v in sorted(dims.items()))  # as Problem::key()
    rec = {
        "schema": 1, "problem": {"family": family, **dims}, "problem_key": key, "family": family,
        "variant": variant, "library": library, "config": cfg, "candidate": candidate(variant, cfg),
        "flops": flops, "flops_variant": fv, "bytes_min": bmin, "bytes_model": bmodel,
        "intensity_min": flops / bmin, "intensity_model": flops / bmodel, "floor_ms": floor,
        "complexity": complexity, "timestamp": clock(), "status": "ok",
    }
    big = cfg.get("fft_len")
    if big and (big < 2 * m or (variant == "conv1d.fused_fft" and big > FUSED_MAX_FFT)):
        rec["status"] = "skipped"
        rec["reason"] = f"fft_len {big} < 2m = {2 * m}: less than half of each FFT block would be kept"
        return rec
    rec["compiled"] = not library
    rec["compile_ms"] = 0.0 if library else round(150 + 60 * rng.random(), 1)
    rec["kernel"] = {} if library else {"registers": 40, "threads": cfg.get("threads", cfg.get("block", 256)),
                                        "static_smem_bytes": 0, "dynamic_smem_bytes": 8 * (big or 0),
                                        "local_bytes": 0}
    rec["workspace_bytes"] = int(bmodel) if spectral else 0
    if variant == "conv1d.cudnn" and cfg["algo"] == "fft":
        rec["status"] = "runtime_error"
        rec["reason"] = f"cudnn: CUDNN_STATUS_NOT_SUPPORTED for algo fft with a 1x{m} filter"
        return rec
    if variant == "conv1d.overlap_add_fft" and big == 65536 and dims.get("mode") == 1 and m == 17:
        rec["status"] = "wrong_result"
        rec["reason"] = "rel_l2 2.1e-05 exceeds tolerance 1e-05"
        rec["error"] = {"rel_l2": 2.1e-5, "max_abs": 3.0e-3, "max_rel": 2.2e-4, "nonfinite": 0,
                        "tolerance": {"rel_l2": 1e-5, "max_rel": 1e-4}, "pass": False}
        return rec
    work = max((bmodel if spectral else bmin) / (COPY_GBPS * 1e9 * eb), fv / (FP32_GFLOPS * 1e9 * ef)) * 1e3
    ms = (ovh + work * conv1d_factor(variant, cfg)) * (1 + 0.03 * (rng.random() - 0.5))
    return timed(rec, ms, rng)


def build_conv1d():
    """A finished sweep over conv1d (n = 2^26 valid and full, n = 2^20 valid; m = 17, 129, 1025, 8193; with
    strategy/eval_index) and conv1d_parts (a = b = 2^22 from the middle, a = 2^24 with b = 128 from the
    start; slices of 2^8 to 2^20 outputs). Spatial times grow with m, spectral ones stay nearly flat."""
    rng = random.Random(SEED + 1)
    step = [0]

    def clock():
        step[0] += 1
        s = 14 * 3600 + 2 * step[0]
        return f"2026-11-22T{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}Z"

    records = []
    problems = [(1 << 26, m, mode) for mode in (0, 1) for m in (17, 129, 1025, 8193)]
    problems += [(1 << 20, m, 0) for m in (17, 129, 1025, 8193)]
    for i, (n, m, mode) in enumerate(problems):
        evals = 0
        for variant, cfg in conv1d_candidates(n, m, first=i == 0):
            costs = conv1d_cost(variant, cfg, n, m, mode == 1)
            rec = conv1d_record("conv1d", {"m": m, "mode": mode, "n": n}, variant, cfg, costs, m, rng, clock)
            if rec["status"] != "skipped":
                evals += 1
            rec["strategy"] = "exhaustive"
            rec["eval_index"] = evals
            records.append(rec)
    parts = [(1 << 22, 1 << 22, (1 << 22) - 1), (1 << 24, 128, 127)]  # (n, m, start)
    for n, m, start in parts:
        for span in (1 << 8, 1 << 12, 1 << 16, 1 << 20):
            dims = {"end": start + span, "m": m, "n": n, "start": start}
            cands = [("conv1d_parts.spatial", {"tile": t}) for t in (128, 256)]
            cands += [("conv1d_parts.spectral", {"l_a": a, "l_b": b}) for a in (1024, 4096) for b in (1024, 4096)]
            cands.append(("conv1d_parts.fft", {}))
            for variant, cfg in cands:
                costs = parts_cost(variant, cfg, n, m, start, start + span)
                records.append(conv1d_record("conv1d_parts", dims, variant, cfg, costs, 0, rng, clock))
    counts = {}
    for rec in records:
        counts[rec["status"]] = counts.get(rec["status"], 0) + 1
    summary = {
        "schema": 1, "tool": "convtune", "version": "0.1.0", "git_sha": "9b1d0c3e5f7a",
        "argv": ["convtune", "sweep", "sweeps/conv1d_small.json"],
        "spec": {"name": "conv1d_small", "problems": [{"family": "conv1d", "n": n, "m": m, "mode": mode}
                                                      for n, m, mode in problems],
                 "variants": ["conv1d.*", "conv1d_parts.*"], "strategy": "exhaustive"},
        "device": DEVICE, "ceilings": {"copy_gbps": COPY_GBPS, "fp32_gflops": FP32_GFLOPS},
        "measure": {"cold": True, "warmup": 3, "min_samples": 20, "max_samples": 200, "max_rel_stderr": 0.01,
                    "time_cap_s": 2.0},
        "started": "2026-11-22T14:00:00Z", "finished": clock(), "counts": counts,
    }
    return summary, records, None


FIXTURES = {"run_small": build, "run_conv1d": build_conv1d}


def write(outdir, which="run_small"):
    summary, records, torn = FIXTURES[which]()
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    with open(os.path.join(outdir, "records.jsonl"), "w") as f:
        for rec in records:
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")
        if torn:
            f.write(torn[: len(torn) * 3 // 5])  # no newline: the write was cut off
    return len(records)


if __name__ == "__main__":
    # no argument: both fixtures in place; OUTDIR: run_small there; --conv1d OUTDIR: run_conv1d there
    args = sys.argv[1:]
    if not args:
        jobs = [(os.path.join(HERE, "fixtures", w), w) for w in FIXTURES]
    elif args[0] == "--conv1d":
        jobs = [(args[1] if len(args) > 1 else os.path.join(HERE, "fixtures", "run_conv1d"), "run_conv1d")]
    else:
        jobs = [(args[0], "run_small")]
    for out, which in jobs:
        print(f"{out}: {write(out, which)} records" + (" + a torn last line" if which == "run_small" else ""))
