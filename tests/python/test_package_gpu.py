"""The Python package on a GPU: every function against float64 SciPy/NumPy/PyTorch on random inputs, outputs
poisoned with NaN first (the allocator's reused block), gradients against PyTorch's float64 conv2d,
streams, JAX, tables and the tuning cache. Skips without the extension or a GPU."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from package_support import NO_EXTENSION, ROOT, convtune, extension_or_none

EXT = extension_or_none()
pytestmark = [pytest.mark.skipif(EXT is None, reason=NO_EXTENSION),
              pytest.mark.skipif(EXT is not None and EXT.device_count() == 0, reason="no CUDA GPU")]
scipy_signal = pytest.importorskip("scipy.signal")
scipy_ndimage = pytest.importorskip("scipy.ndimage")
RNG = np.random.default_rng(36)


def close(out, ref, rel_l2=1e-4, rel_max=1e-3):
    """FFT candidates' tolerance (the direct ones meet it with room); NaN never passes."""
    out = np.asarray(out, dtype=np.float64)
    assert out.shape == ref.shape
    assert np.isfinite(out).all(), "NaN or Inf in the output (unwritten, or wrong)"
    scale = max(np.abs(ref).max(), 1e-30)
    assert np.linalg.norm(out - ref) <= rel_l2 * max(np.linalg.norm(ref), 1e-30)
    assert np.abs(out - ref).max() <= rel_max * scale


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# Backends: put a float32 host array on the GPU, poison the allocator, read a result back.
def _torch():
    torch = pytest.importorskip("torch")

    def put(a):
        torch.empty(max(a.size, 1) * 4, device="cuda").fill_(float("nan"))  # freed, reused for the output
        return torch.from_numpy(a).cuda()
    return put, lambda t: (isinstance(t, torch.Tensor) and t.is_cuda, t.cpu().numpy())


def _cupy():
    cp = pytest.importorskip("cupy")

    def put(a):
        cp.full(max(a.size, 1) * 4, np.nan, dtype=cp.float32)
        return cp.asarray(a)
    return put, lambda t: (isinstance(t, cp.ndarray), cp.asnumpy(t))


def _jax():
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX has no GPU here")
    return (lambda a: jax.device_put(a, jax.devices("gpu")[0]),
            lambda t: (isinstance(t, jax.Array), np.asarray(t)))


BACKENDS = {"torch": _torch, "cupy": _cupy, "jax": _jax}


@pytest.fixture(params=list(BACKENDS))
def backend(request):
    return BACKENDS[request.param]()


def run(backend, function, *arrays, **kwargs):  # numpy arrays go to the GPU; other arguments as given
    put, get = backend
    same_kind, out = get(function(*[put(a) if isinstance(a, np.ndarray) else a for a in arrays], **kwargs))
    assert same_kind, "the output is not of the inputs' kind"
    return out


@pytest.mark.parametrize("h, w, r", [(1, 1, 0), (37, 53, 1), (64, 64, 3), (129, 67, 7), (512, 512, 2), (300, 1000, 16)])
def test_conv2d_is_scipy_correlate_with_a_zero_border(backend, h, w, r):
    image, filt = rand(h, w), rand(2 * r + 1, 2 * r + 1)
    ref = scipy_ndimage.correlate(image.astype(np.float64), filt.astype(np.float64), mode="constant")
    close(run(backend, convtune.conv2d, image, filt), ref)
    # ... and SciPy's convolution with the filter flipped
    ref2 = scipy_signal.convolve2d(image.astype(np.float64), filt[::-1, ::-1].astype(np.float64), mode="same")
    close(ref, ref2, 1e-12, 1e-12)


@pytest.mark.parametrize("b, h, w, r", [(3, 1, 1, 1), (5, 37, 29, 3), (64, 128, 128, 2), (2, 300, 200, 9)])
def test_a_batch_of_images_is_each_image_filtered_alone(backend, b, h, w, r):
    images, filt = rand(b, h, w), rand(2 * r + 1, 2 * r + 1)
    ref = np.stack([scipy_ndimage.correlate(i.astype(np.float64), filt.astype(np.float64), mode="constant")
                    for i in images])
    close(run(backend, convtune.conv2d, images, filt), ref)


def test_an_image_of_four_axes_is_refused_naming_it(backend):
    put, _ = backend
    with pytest.raises(ValueError, match=r"^image: shape \(2, 3, 8, 8\); allowed: a 2D array"):
        convtune.conv2d(put(rand(2, 3, 8, 8)), put(rand(3, 3)))


@pytest.mark.parametrize("h, w, r", [(33, 41, 1), (256, 200, 4), (1024, 512, 9)])
def test_sep_conv2d_is_correlation_with_the_outer_product(backend, h, w, r):
    image, row, col = rand(h, w), rand(2 * r + 1), rand(2 * r + 1)
    ref = scipy_ndimage.correlate(image.astype(np.float64), np.outer(col, row).astype(np.float64), mode="constant")
    close(run(backend, convtune.sep_conv2d, image, row, col), ref)


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
@pytest.mark.parametrize("n, m", [(1, 1), (97, 5), (1000, 1000), (4099, 129), (100_003, 1025), (17, 300)])
def test_conv1d_is_numpy_convolve(backend, mode, n, m):
    x, h = rand(n), rand(m)
    ref = scipy_signal.convolve(x.astype(np.float64), h.astype(np.float64), mode=mode, method="direct")
    if mode != "same":
        close(ref, np.convolve(x.astype(np.float64), h.astype(np.float64), mode), 1e-12, 1e-12)
    close(run(backend, convtune.conv1d, x, h, mode=mode), ref)


@pytest.mark.parametrize("n, m, start, end", [(5, 3, 0, 7), (4099, 3001, 3000, 4099), (65537, 65521, 65536, 65536 + 4097)])
def test_conv1d_slice_is_a_slice_of_numpy_convolve(backend, n, m, start, end):
    a, b = rand(n), rand(m)
    ref = scipy_signal.fftconvolve(a.astype(np.float64), b.astype(np.float64))[start:end]
    close(run(backend, convtune.conv1d_slice, a, b, start, end), ref)


def test_bad_arrays_on_the_gpu_are_named():
    torch = pytest.importorskip("torch")
    x = torch.ones(8, 8, device="cuda")
    with pytest.raises(TypeError, match="^filt: dtype torch.float64; allowed: torch.float32"):
        convtune.conv2d(x, torch.ones(3, 3, device="cuda", dtype=torch.float64))
    with pytest.raises(ValueError, match="^image: not C-contiguous"):
        convtune.conv2d(torch.ones(8, 9, device="cuda").t(), torch.ones(3, 3, device="cuda"))
    with pytest.raises(ValueError, match=r"^filt: shape \(3, 5\); allowed: a square filter"):
        convtune.conv2d(x, torch.ones(3, 5, device="cuda"))
    with pytest.raises(ValueError, match=r"^filt: 4 taps; allowed: a square filter of odd size"):
        convtune.conv2d(x, torch.ones(4, 4, device="cuda"))
    with pytest.raises(ValueError, match=r"^filt: problem\.r: 33 is out of range; allowed 0\.\.32"):
        convtune.conv2d(x, torch.ones(67, 67, device="cuda"))
    with pytest.raises(ValueError, match=r"^image: shape \(64,\); allowed: a 2D array \(height, width\) or a batch"):
        convtune.conv2d(torch.ones(64, device="cuda"), torch.ones(3, 3, device="cuda"))  # (2, 8, 8): a batch of 2
    with pytest.raises(TypeError, match="^filt: a torch array on cpu"):
        convtune.conv2d(x, torch.ones(3, 3))
    cp = pytest.importorskip("cupy")
    with pytest.raises(TypeError, match="^filt: a cupy array, but image is a torch array"):
        convtune.conv2d(x, cp.ones((3, 3), dtype=cp.float32))


def test_out_receives_the_result(backend):
    put, get = backend
    image, filt = rand(300, 200), rand(5, 5)
    ref = scipy_ndimage.correlate(image.astype(np.float64), filt.astype(np.float64), mode="constant")
    x, f, out = put(image), put(filt), put(np.full((300, 200), np.nan, np.float32))
    if "jax" in type(x).__module__:
        with pytest.raises(TypeError, match="^out: a JAX array"):
            convtune.conv2d(x, f, out=out)
        return
    for _ in range(2):  # the checked path, then the fast path
        assert convtune.conv2d(x, f, out=out) is out
        close(get(out)[1], ref)
    with pytest.raises(ValueError, match=r"^out: shape \(200, 300\); allowed: \(300, 200\)"):
        convtune.conv2d(x, f, out=put(np.zeros((200, 300), np.float32)))
    with pytest.raises(ValueError, match="^out: shares memory with image"):
        convtune.conv2d(x, f, out=x)


def test_the_fast_path_sees_a_filter_changed_in_place_and_keeps_the_errors():
    torch = pytest.importorskip("torch")
    image, filt = rand(256, 256), rand(7, 7)
    ref = scipy_ndimage.correlate(image.astype(np.float64), filt.astype(np.float64), mode="constant")
    x, f = torch.from_numpy(image).cuda(), torch.from_numpy(filt).cuda()
    for _ in range(3):  # the checked path, then the fast path (with a new output each time)
        close(convtune.conv2d(x, f).cpu().numpy(), ref)
    f.mul_(2.0)
    close(convtune.conv2d(x, f).cpu().numpy(), 2 * ref)
    with pytest.raises(TypeError, match="^image: dtype torch.float64; allowed: torch.float32"):
        convtune.conv2d(x.double(), f)
    with pytest.raises(ValueError, match="^image: not C-contiguous"):
        convtune.conv2d(x.t(), f)
    with pytest.raises(TypeError, match="^filt: a torch array on cpu"):
        convtune.conv2d(x, f.cpu())


def test_runs_on_the_callers_torch_stream():
    torch = pytest.importorskip("torch")
    image, filt = rand(2048, 2048), rand(7, 7)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.from_numpy(image).cuda(non_blocking=False)
        f = torch.from_numpy(filt).cuda()
        x.mul_(1.0)  # queued on side before the convolution
        out = convtune.conv2d(x, f)
        host = out.to("cpu", non_blocking=False)
    side.synchronize()
    close(host.numpy(), scipy_ndimage.correlate(image.astype(np.float64), filt.astype(np.float64), mode="constant"))


# nn.functional.conv2d: forward and both gradients against PyTorch's float64 conv2d.
LAYERS = [  # n c h w k r s stride padding bias
    (2, 3, 17, 15, 8, 3, 3, 1, 1, True), (1, 5, 31, 29, 7, 7, 7, 2, 3, False), (4, 16, 14, 14, 32, 1, 1, 1, 0, True),
    (2, 8, 20, 16, 5, 3, 2, (2, 1), (1, 0), True), (8, 64, 28, 28, 64, 3, 3, 1, 1, False), (3, 4, 9, 9, 6, 5, 3, 1, "same", True)]


@pytest.mark.parametrize("n, c, h, w, k, r, s, stride, padding, bias", LAYERS)
def test_nn_conv2d_and_its_gradients_match_torch_float64(n, c, h, w, k, r, s, stride, padding, bias):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x64 = torch.from_numpy(RNG.standard_normal((n, c, h, w))).cuda().requires_grad_()
    w64 = torch.from_numpy(RNG.standard_normal((k, c, r, s))).cuda().requires_grad_()
    b64 = torch.from_numpy(RNG.standard_normal(k)).cuda().requires_grad_() if bias else None
    y64 = F.conv2d(x64, w64, b64, stride, padding)
    dy = torch.from_numpy(RNG.standard_normal(tuple(y64.shape))).cuda()
    y64.backward(dy)
    x, wt = x64.detach().float().requires_grad_(), w64.detach().float().requires_grad_()
    b = b64.detach().float().requires_grad_() if bias else None
    y = convtune.nn.functional.conv2d(x, wt, b, stride, padding)
    y.backward(dy.float())
    close(y.detach().cpu().numpy(), y64.detach().cpu().numpy())
    close(x.grad.cpu().numpy(), x64.grad.cpu().numpy())
    close(wt.grad.cpu().numpy(), w64.grad.cpu().numpy())
    if bias:
        close(b.grad.cpu().numpy(), b64.grad.cpu().numpy())


def test_nn_conv2d_fast_path_runs_each_calls_own_tensors_and_holds_none():
    torch = pytest.importorskip("torch")
    import gc
    import weakref
    from convtune import _dispatch
    F = torch.nn.functional
    convtune.use_table(None, tune_unseen=False)  # the fast path waits for first-use tuning's choice
    try:
        first = torch.from_numpy(rand(2, 6, 19, 23)).cuda()
        gone = weakref.ref(first)
        convtune.nn.functional.conv2d(first, torch.from_numpy(rand(5, 6, 3, 3)).cuda(), None, 1, 1)
        del first
        gc.collect()
        assert gone() is None, "a remembered plan keeps the first call's input alive"
        assert any(isinstance(k, tuple) and k[0] == "nn.conv2d" for k in _dispatch.fast_calls)
        for grad in (False, True, False):  # remembered plans, with and without autograd
            x = torch.from_numpy(rand(2, 6, 19, 23)).cuda().requires_grad_(grad)
            w, b = torch.from_numpy(rand(5, 6, 3, 3)).cuda(), torch.from_numpy(rand(5)).cuda()
            y = convtune.nn.functional.conv2d(x, w, b if grad else None, 1, 1)
            expected = F.conv2d(x.detach().double(), w.double(), b.double() if grad else None, 1, 1)
            close(y.detach().cpu().numpy(), expected.cpu().numpy())
            assert y.requires_grad == grad
            if grad:
                y.backward(torch.ones_like(y))
                close(x.grad.cpu().numpy(), F.conv_transpose2d(torch.ones_like(y).double(), w.double(), None, 1, 1).cpu().numpy())
        with pytest.raises(TypeError, match="^input: dtype torch.float64"):
            convtune.nn.functional.conv2d(x.detach().double(), w.double(), None, 1, 1)
        convtune.use_table(None)
        assert not any(isinstance(k, tuple) and k[0] == "nn.conv2d" for k in _dispatch.fast_calls)
    finally:
        convtune.use_table(None)


def test_nn_conv2d_module_is_a_drop_in():
    torch = pytest.importorskip("torch")
    ref = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1).cuda()
    ours = convtune.nn.Conv2d(8, 16, 3, stride=2, padding=1).cuda()
    assert list(ours.state_dict()) == list(ref.state_dict())
    ours.load_state_dict(ref.state_dict())
    x = torch.from_numpy(rand(4, 8, 33, 31)).cuda()
    with torch.no_grad():
        expected = torch.nn.functional.conv2d(x.double(), ref.weight.double(), ref.bias.double(), 2, 1)
        close(ours(x).cpu().numpy(), expected.cpu().numpy())
        close(convtune.nn.Conv2d.from_torch(ref)(x).cpu().numpy(), expected.cpu().numpy())
    with pytest.raises(ValueError, match="^groups: 2; allowed: 1"):
        convtune.nn.Conv2d(8, 16, 3, groups=2)


@pytest.mark.parametrize("kernel, stride, padding", [(3, 2, 1), (2, None, 0), (3, 1, 1), ((3, 2), (2, 1), (1, 0))])
@pytest.mark.parametrize("pool", ["max", "avg_include", "avg_exclude"])
def test_pooling_and_its_gradient_match_torch_float64(pool, kernel, stride, padding):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x64 = torch.from_numpy(RNG.standard_normal((2, 5, 17, 14))).cuda().requires_grad_()
    if pool == "max":
        theirs = lambda t: F.max_pool2d(t, kernel, stride, padding)
        ours = lambda t: convtune.nn.functional.max_pool2d(t, kernel, stride, padding)
    else:
        include = pool == "avg_include"
        theirs = lambda t: F.avg_pool2d(t, kernel, stride, padding, count_include_pad=include)
        ours = lambda t: convtune.nn.functional.avg_pool2d(t, kernel, stride, padding, count_include_pad=include)
    y64 = theirs(x64)
    dy = torch.from_numpy(RNG.standard_normal(tuple(y64.shape))).cuda()
    y64.backward(dy)
    x = x64.detach().float().requires_grad_()
    y = ours(x)
    y.backward(dy.float())
    close(y.detach().cpu().numpy(), y64.detach().cpu().numpy(), 1e-6, 1e-6)
    close(x.grad.cpu().numpy(), x64.grad.cpu().numpy(), 1e-6, 1e-6)


def test_explain_names_the_candidates_of_all_three_passes():
    torch = pytest.importorskip("torch")
    x, w = torch.ones(32, 64, 56, 56, device="cuda"), torch.ones(64, 64, 3, 3, device="cuda")
    passes = convtune.explain(convtune.nn.functional.conv2d, x, w, padding=1)
    assert [e.family for e in passes] == ["layer_fwd", "layer_bwd_data", "layer_bwd_filter"]
    for e in passes:
        assert e.candidate.startswith(e.family + ".") and e.rule in ("exact", "model", "nearest", "default", "cached")
        assert "(" in e.table and e.table_file.endswith(".json")
    (one,) = convtune.explain(convtune.conv2d, torch.ones(8192, 8192, device="cuda"), torch.ones(7, 7, device="cuda"))
    # the runtime's dims are the family's, each filled in: an image alone is a batch of one
    assert one.rule == "exact" and one.dims == {"b": 1, "h": 8192, "w": 8192, "r": 3}


def test_a_table_of_another_gpu_model_is_refused_naming_the_file():
    torch = pytest.importorskip("torch")
    here = EXT.device_name(0)
    with open(os.path.join(ROOT, "results/nvidia-h100-80gb-hbm3/default-20261126-052059/dispatch.json")) as f:
        other = ("results/nvidia-h200/default-20261126-051130/dispatch.json"
                 if json.load(f)["device"]["name"] == here else
                 "results/nvidia-h100-80gb-hbm3/default-20261126-052059/dispatch.json")
    x, f3 = torch.ones(64, 64, device="cuda"), torch.ones(3, 3, device="cuda")
    try:
        convtune.use_table(os.path.join(ROOT, other))
        with pytest.raises(ValueError, match="dispatch.json: measured on .* but GPU 0 is"):
            convtune.conv2d(x, f3)
        convtune.use_table(os.path.join(ROOT, other), other_gpu_ok=True)
        assert float(convtune.conv2d(x, f3)[10, 10]) == 9.0
    finally:
        convtune.use_table(None)


TUNE_ONCE = """
import sys; sys.path.insert(0, 'tests/python')
import package_support, convtune, torch
x, f = torch.ones(1111, 2345, device='cuda'), torch.ones(9, 9, device='cuda')
before = convtune.explain(convtune.conv2d, x, f)[0].rule
convtune.conv2d(x, f); torch.cuda.synchronize()
print(before, convtune.explain(convtune.conv2d, x, f)[0].rule)
"""


def test_first_use_tuning_is_remembered_by_the_next_process(tmp_path):
    pytest.importorskip("torch")
    env = dict(os.environ, CONVTUNE_CACHE_DIR=str(tmp_path))
    env.setdefault("CONVTUNE_EXTENSION", os.environ.get("CONVTUNE_EXTENSION", ""))
    if not env["CONVTUNE_EXTENSION"]:
        del env["CONVTUNE_EXTENSION"]
    first = subprocess.run([sys.executable, "-c", TUNE_ONCE], cwd=ROOT, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split()[0] in ("model", "nearest") and first.stdout.split()[1] == "tuned"
    second = subprocess.run([sys.executable, "-c", TUNE_ONCE], cwd=ROOT, env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["cached", "cached"]


WITHOUT_FRAMEWORKS = """
import sys; sys.path.insert(0, 'tests/python')
import package_support
from convtune import _dispatch
entry = _dispatch.convolution('conv2d', {'h': 500, 'w': 701, 'r': 3}, 0, {})
print(entry.conv.rule, 'torch' in sys.modules, 'cupy' in sys.modules)
"""


# A shape the table never measured prepares first-use tuning's shortlist, library algorithms too (cuDNN, cuFFT); in
# an interpreter where neither PyTorch nor CuPy had loaded those libraries first, that crashed it (the bench's
# compile-ahead workers died so).
def test_first_use_tuning_runs_in_an_interpreter_without_torch_or_cupy(tmp_path):
    env = dict(os.environ, CONVTUNE_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", WITHOUT_FRAMEWORKS], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    rule, torch_loaded, cupy_loaded = done.stdout.split()
    assert rule in ("model", "nearest") and (torch_loaded, cupy_loaded) == ("False", "False"), done.stdout
