"""python -m convtune.train_check: ResNet-18 trained with convtune's convolutions against PyTorch's own.

Two copies of ResNet-18 (torchvision's when it is installed, else the definition below) start from the same
weights; in one every torch.nn.Conv2d is replaced by convtune.nn.Conv2d (state_dict kept). Both train on the
same synthetic batches (one seed) with SGD, strict fp32 (no TF32 anywhere), a step of each in turn. Reports the loss of both at a few
steps and their largest relative difference over all steps; the median step time of each after a warm-up,
which absorbs first-use compiling and tuning (reported apart, as is the time of compiling the kernels ahead in
parallel processes); and the convolutions alone: every distinct conv shape of the network at this batch,
counted, its forward, backward-data and backward-filter timed with CUDA events for ours and for PyTorch's
cuDNN, totalled with the counts as weights.

fp32 training drifts apart from any change in rounding, so a third copy trains in float64 PyTorch (unless
--no-float64) as the yardstick. Exit status 1 when the weights did not start equal, a loss is not finite, or
the losses part by more than --tolerance (relative) and ours also strays more than 1.5 times as far from the
float64 losses as PyTorch's fp32 do.
"""
import argparse
import copy
import json
import math
import statistics
import sys
import time

from ._layers import layer_problems
from ._timing import DEFAULT_WORKERS, PASSES, layer_passes, median_ms, output_hw, prepare_in_parallel, strict_fp32

REPORTED_STEPS = (1, 10, 25, 50)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m convtune.train_check", description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="training steps of each model (default 50; --quick 12)")
    parser.add_argument("--batch", type=int, default=32, help="images a step (224x224)")
    parser.add_argument("--warmup", type=int, default=None,
                        help="first steps left out of the median step time (default 5; --quick 3)")
    parser.add_argument("--samples", type=int, default=None,
                        help="timed runs of each convolution pass (the median is kept; default 10; --quick 3)")
    parser.add_argument("--lr", type=float, default=0.01, help="SGD's learning rate (momentum 0.9)")
    parser.add_argument("--seed", type=int, default=36, help="of the weights, the images and the labels")
    parser.add_argument("--tolerance", type=float, default=1e-2,
                        help="the largest relative difference of the two losses that passes")
    parser.add_argument("--cudnn-benchmark", action="store_true",
                        help="let PyTorch time cuDNN's algorithms (torch.backends.cudnn.benchmark; off by default, "
                             "as in PyTorch)")
    parser.add_argument("--no-tune", action="store_true",
                        help="no first-use tuning: unmeasured shapes take the table's rule (use_table(tune_unseen=False))")
    parser.add_argument("--no-float64", action="store_true",
                        help="skip the float64 PyTorch run that measures how far each fp32 run strays")
    parser.add_argument("--prepare-workers", type=int, default=DEFAULT_WORKERS,
                        help="processes that compile the network's kernels (and first-use tuning's candidates) "
                             "ahead, in parallel, into the kernel cache (0: none; default min(8, cores))")
    parser.add_argument("--quick", action="store_true", help="a smaller run: 12 steps, 3 warm-up, 3 samples")
    parser.add_argument("--json", default="convtune_train_check.json", help="where to write the results")
    args = parser.parse_args(argv)
    defaults = {"steps": (50, 12), "warmup": (5, 3), "samples": (10, 3)}
    for name, (full, quick) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    for name in ("steps", "batch", "samples"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: {getattr(args, name)}; allowed: 1 or more")
    if args.prepare_workers < 0:
        parser.error(f"--prepare-workers: {args.prepare_workers}; allowed: 0 or more")
    if not 0 <= args.warmup < args.steps:
        parser.error(f"--warmup: {args.warmup}; allowed: 0 to --steps - 1 ({args.steps - 1}), so that a step is timed")
    if not args.tolerance > 0:
        parser.error(f"--tolerance: {args.tolerance}; allowed: above 0")
    return args


# ResNet-18 (He et al. 2015, "Deep Residual Learning for Image Recognition"), for where torchvision is not
# installed: the same layers, shapes and initialisation as torchvision's resnet18.
def _resnet18(torch, num_classes=1000):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, channels_in, channels, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(channels_in, channels, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(channels)
            self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(channels)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or channels_in != channels:
                self.downsample = nn.Sequential(nn.Conv2d(channels_in, channels, 1, stride, bias=False),
                                                nn.BatchNorm2d(channels))

        def forward(self, x):
            shortcut = x if self.downsample is None else self.downsample(x)
            y = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(y)) + shortcut)

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            widths = [(64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)]
            for i, (channels_in, channels, stride) in enumerate(widths, 1):
                setattr(self, f"layer{i}", nn.Sequential(Block(channels_in, channels, stride),
                                                         Block(channels, channels, 1)))
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, num_classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.ones_(m.weight)
                    nn.init.zeros_(m.bias)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet18()


def resnet18(torch):
    """(model, where it came from): torchvision's ResNet-18 without pretrained weights, else ours."""
    try:
        import torchvision
    except ImportError:
        return _resnet18(torch), "convtune.train_check's definition (torchvision is not installed)"
    return torchvision.models.resnet18(weights=None), f"torchvision {torchvision.__version__}"


def with_convtune_convs(model, make_conv):
    """model with every torch.nn.Conv2d (exactly that type) replaced by make_conv(conv), in place; returns
    how many were replaced."""
    import torch
    replaced = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is torch.nn.Conv2d:
                setattr(parent, name, make_conv(child))
                replaced += 1
    return replaced


def conv_shapes(torch, model, batch):
    """Every distinct conv2d of model at this batch, as {(input shape, weight shape, stride, padding, whether
    training needs its input's gradient): count}, in the order first met (one forward pass on zeros in eval
    mode, so that no running statistic moves, with hooks on each torch.nn.Conv2d). The network's input needs
    no gradient: the first convolution's backward-data never runs in training."""
    shapes = {}
    images = torch.zeros(batch, 3, 224, 224, device=next(model.parameters()).device)

    def hook(module, inputs, output):
        key = (tuple(inputs[0].shape), tuple(module.weight.shape), tuple(module.stride), tuple(module.padding),
               inputs[0] is not images)
        shapes[key] = shapes.get(key, 0) + 1

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            model(images)
    finally:
        model.train(was_training)
        for h in handles:
            h.remove()
    return shapes


def _batch(torch, seed, step, batch):
    g = torch.Generator(device="cuda").manual_seed(seed * 1_000_003 + step)
    images = torch.randn(batch, 3, 224, 224, device="cuda", generator=g)
    labels = torch.randint(0, 1000, (batch,), device="cuda", generator=g)
    return images, labels


def _steps(torch, model, args, dtype):
    """A generator: each next() runs one training step (forward, loss, backward, SGD step; synchronized) and
    yields its loss and wall-clock seconds; the images in `dtype` (float64 for the reference run)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()
    for step in range(args.steps):
        images, labels = _batch(torch, args.seed, step, args.batch)
        if dtype is not None:
            images = images.to(dtype)
        torch.cuda.synchronize()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        yield loss.item(), seconds


def train(torch, models, args, dtype=None, steps_of=_steps):
    """{name: (losses, seconds of each step)} of each model in `models` ({name: model}), trained step by step in
    turn, the first model of each turn alternating, so that every model's steps see the same GPU clocks and
    heat: trained one after the other, their step times could not be compared across runs."""
    runs = {name: steps_of(torch, model, args, dtype) for name, model in models.items()}
    out = {name: ([], []) for name in models}
    names = list(models)
    for step in range(args.steps):
        for name in names[step % len(names):] + names[:step % len(names)]:
            loss, seconds = next(runs[name])
            out[name][0].append(loss)
            out[name][1].append(seconds)
    return out


def max_relative_difference(ours, theirs):
    """max |ours - theirs| / |theirs| over the steps; inf when a loss is not finite."""
    worst = 0.0
    for a, b in zip(ours, theirs):
        if not (math.isfinite(a) and math.isfinite(b)):
            return math.inf
        worst = max(worst, abs(a - b) / max(abs(b), 1e-30))
    return worst


def conv_only(torch, shapes, samples):
    """Per distinct shape and pass, ours and PyTorch's median ms (None for a backward-data that training never
    runs); per pass the totals weighted by count."""
    rows = []
    totals = {p: {"convtune_ms": 0.0, "torch_ms": 0.0} for p in PASSES}
    g = torch.Generator(device="cuda").manual_seed(36)
    for (x_shape, w_shape, stride, padding, input_grad), count in shapes.items():
        x = torch.randn(x_shape, device="cuda", generator=g)
        w = torch.randn(w_shape, device="cuda", generator=g)
        p, q = output_hw(x_shape[2], x_shape[3], w_shape[2], w_shape[3], stride, padding)
        dy = torch.randn((x_shape[0], w_shape[0], p, q), device="cuda", generator=g)
        passes = layer_passes(torch, x, w, dy, stride, padding)
        row = {"input": list(x_shape), "weight": list(w_shape), "stride": list(stride), "padding": list(padding),
               "count": count}
        for which in PASSES:
            if which == "backward-data" and not input_grad:
                row[which] = None
                continue
            ours, theirs = passes[which]
            row[which] = {"convtune_ms": median_ms(ours, samples, torch), "torch_ms": median_ms(theirs, samples, torch)}
            totals[which]["convtune_ms"] += count * row[which]["convtune_ms"]
            totals[which]["torch_ms"] += count * row[which]["torch_ms"]
        rows.append(row)
    for which in PASSES:
        totals[which]["torch_over_convtune"] = totals[which]["torch_ms"] / totals[which]["convtune_ms"]
    return rows, totals


def reported_steps(steps):
    return [s for s in REPORTED_STEPS if s < steps] + [steps]


def main(argv=None):
    args = parse_args(argv)
    import torch
    import convtune
    import convtune.nn
    if not torch.cuda.is_available():
        print("convtune.train_check: PyTorch sees no CUDA GPU", file=sys.stderr)
        return 2
    strict_fp32(torch)
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    if args.no_tune:
        convtune.use_table(None, tune_unseen=False)
    torch.manual_seed(args.seed)
    reference, source = resnet18(torch)
    ours = copy.deepcopy(reference)
    ours.load_state_dict(reference.state_dict())  # the same weights, whichever way the copy was made
    replaced = with_convtune_convs(ours, convtune.nn.Conv2d.from_torch)
    reference.cuda()
    ours.cuda()
    same_start = all(torch.equal(a, b) for a, b in zip(reference.state_dict().values(), ours.state_dict().values()))
    shapes = conv_shapes(torch, reference, args.batch)
    print(f"ResNet-18 ({source}); {replaced} convolutions replaced by convtune.nn.Conv2d; identical weights: "
          f"{same_start}; batch {args.batch}, 224x224, {args.steps} steps, SGD lr {args.lr} momentum 0.9, strict fp32",
          flush=True)

    float64 = None if args.no_float64 else copy.deepcopy(reference).double()  # before any training step
    prepare_s, notes = prepare_in_parallel(layer_problems(shapes), torch.cuda.current_device(),
                                           args.prepare_workers, not args.no_tune)
    print(f"convtune: kernels compiled ahead in {prepare_s:.1f} s ({args.prepare_workers} processes)", flush=True)
    for note in notes[:3] + ([f"... and {len(notes) - 3} more"] if len(notes) > 3 else []):
        print(f"  note: {note}", flush=True)
    results = {}
    for name, (losses, seconds) in train(torch, {"torch": reference, "convtune": ours}, args).items():
        results[name] = {"losses": losses, "step_s": seconds, "warmup_s": sum(seconds[:args.warmup]),
                         "median_step_ms": statistics.median(seconds[args.warmup:]) * 1e3}
        print(f"{name}: warm-up {results[name]['warmup_s']:.2f} s ({args.warmup} steps), median step "
              f"{results[name]['median_step_ms']:.2f} ms", flush=True)
    difference = max_relative_difference(results["convtune"]["losses"], results["torch"]["losses"])
    from_float64 = None
    if float64 is not None:  # how far each fp32 run strays from float64 PyTorch: the yardstick for `difference`
        losses64, _ = train(torch, {"float64": float64}, args, torch.float64)["float64"]
        del float64
        from_float64 = {name: max_relative_difference(results[name]["losses"], losses64) for name in results}
        results["torch_float64"] = {"losses": losses64}
    agree = difference <= args.tolerance
    # fp32 training drifts apart from any change in rounding; no farther from float64 than PyTorch also passes.
    as_close = from_float64 is not None and from_float64["convtune"] <= max(1.5 * from_float64["torch"], args.tolerance)
    passed = same_start and math.isfinite(difference) and (agree or as_close)

    print(f"\n{'step':>5} {'loss torch':>12} {'loss convtune':>14}" + ("" if from_float64 is None else f" {'torch float64':>14}"))
    for step in reported_steps(args.steps):
        line = f"{step:5} {results['torch']['losses'][step - 1]:12.6f} {results['convtune']['losses'][step - 1]:14.6f}"
        if from_float64 is not None:
            line += f" {results['torch_float64']['losses'][step - 1]:14.6f}"
        print(line)
    print(f"largest relative difference over {args.steps} steps: {difference:.3g} (tolerance {args.tolerance:g}): "
          f"{'agree' if agree else 'DISAGREE'}")
    if from_float64 is not None:
        print(f"largest relative difference from float64 PyTorch: torch fp32 {from_float64['torch']:.3g}, convtune "
              f"{from_float64['convtune']:.3g}" + ("" if agree else f" ({'no' if as_close else 'MUCH'} farther than torch's)"))
    print(f"training check: {'passed' if passed else 'FAILED'}")
    t, o = results["torch"]["median_step_ms"], results["convtune"]["median_step_ms"]
    print(f"median step: torch {t:.2f} ms, convtune {o:.2f} ms (torch/convtune {t / o:.2f}x); warm-up torch "
          f"{results['torch']['warmup_s']:.2f} s, convtune {results['convtune']['warmup_s']:.2f} s", flush=True)

    rows, totals = conv_only(torch, shapes, args.samples)
    print(f"\nconvolutions alone: {len(rows)} distinct shapes, {sum(shapes.values())} convolutions a forward pass; "
          f"ms a step, each shape's median of {args.samples} times its count (the first convolution's backward-data "
          "left out: training never runs it)")
    print(f"{'pass':16} {'torch ms':>10} {'convtune ms':>12} {'torch/convtune':>15}")
    for which in PASSES:
        s = totals[which]
        print(f"{which:16} {s['torch_ms']:10.3f} {s['convtune_ms']:12.3f} {s['torch_over_convtune']:14.2f}x")
    all_torch = sum(totals[p]["torch_ms"] for p in PASSES)
    all_ours = sum(totals[p]["convtune_ms"] for p in PASSES)
    print(f"{'all three':16} {all_torch:10.3f} {all_ours:12.3f} {all_torch / all_ours:14.2f}x")

    with open(args.json, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "model": source, "replaced_convolutions": replaced,
                   "identical_start": same_start, "batch": args.batch, "steps": args.steps, "warmup": args.warmup,
                   "lr": args.lr, "seed": args.seed, "tolerance": args.tolerance,
                   "cudnn_benchmark": args.cudnn_benchmark, "first_use_tuning": not args.no_tune,
                   "compiled_ahead_s": prepare_s, "prepare_workers": args.prepare_workers,
                   "max_relative_loss_difference": difference, "agree": agree,
                   "max_relative_difference_from_float64": from_float64, "passed": passed,
                   "loss_at": {str(s): {"torch": results["torch"]["losses"][s - 1],
                                        "convtune": results["convtune"]["losses"][s - 1]}
                               for s in reported_steps(args.steps)},
                   "training": results, "conv_shapes": rows, "conv_totals_ms": totals,
                   "conv_all_passes_ms": {"torch": all_torch, "convtune": all_ours}}, f, indent=1)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
