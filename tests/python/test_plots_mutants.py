"""Tests written against mutants of scripts/convtune_plots that survived mutmut (docs/MUTATION.md): each one
fails with its mutant applied and passes without it. Expected values are worked out by hand from the rule."""

import pytest

from convtune_plots.analysis import noise_threshold, select_best

KEY = "conv2d/h=64,r=1,w=64"


def rec(variant, ms, rel_stderr=0.0, complexity=5, k=1):
    return {"problem_key": KEY, "candidate": f"{variant}[k={k}]", "variant": variant, "status": "ok",
            "complexity": complexity, "time": {"median_ms": ms, "rel_stderr": rel_stderr}}


def test_noise_threshold_is_three_sigma_of_both_errors_or_one_percent():
    """analysis.py:16, 3.0 -> 4.0 survived: the ties test's values sit far from the edge. Errors 0.006 and
    0.008 combine to hypot = 0.01, so the threshold is 3 x 0.01 = 0.03; below 1/300 combined, 1% holds."""
    assert noise_threshold(rec("a", 1, 0.006), rec("b", 1, 0.008)) == pytest.approx(0.03)
    assert noise_threshold(rec("a", 1, 0.02), rec("b", 1, 0.0)) == pytest.approx(0.06)
    assert noise_threshold(rec("a", 1, 0.003), rec("b", 1, 0.0)) == pytest.approx(0.01)
    assert noise_threshold(rec("a", 1), rec("b", 1)) == pytest.approx(0.01)


def test_a_simpler_candidate_ties_up_to_exactly_three_sigma():
    """The same rule through select_best: with errors 0.006 and 0.008 (threshold 3%), a simpler candidate
    2.9% slower ties and is chosen; 3.5% slower does not (a 4-sigma rule would take it)."""
    fast = rec("conv2d.register_tiled", 1.0, 0.006, complexity=4)
    assert select_best([fast, rec("conv2d.constant", 1.029, 0.008, 1)])[KEY].best["variant"] == "conv2d.constant"
    assert select_best([fast, rec("conv2d.constant", 1.035, 0.008, 1)])[KEY].best["variant"] == "conv2d.register_tiled"


def test_one_variant_has_no_runner_up_margin_or_variant_margin():
    """analysis.py:25-26 (runner_up and margin defaulting to "" instead of None) and :39 (`len(meds) > 1` ->
    `>= 1`): a problem measured with one variant only (two configs) has no runner-up and no margin."""
    c = select_best([rec("conv2d.constant", 1.0, k=1), rec("conv2d.constant", 1.5, k=2)])[KEY]
    assert c.runner_up is None
    assert c.margin is None
    assert c.variant_margin is None
    assert not c.variant_tie


def test_variant_margin_of_two_and_of_three_variants():
    """analysis.py:39, `len(meds) > 1` -> `> 2`: two variants have a margin. Best per variant 1.0 and 1.25 ms
    (a slower config of the first ignored): 1.25 / 1.0 - 1 = 0.25; a third, slower variant leaves it."""
    two = [rec("conv2d.constant", 1.0), rec("conv2d.constant", 1.1, k=2), rec("conv2d.fft", 1.25)]
    c = select_best(two)[KEY]
    assert c.variant_margin == pytest.approx(0.25)
    assert c.margin == pytest.approx(0.25)
    assert c.runner_up["variant"] == "conv2d.fft"
    c3 = select_best(two + [rec("conv2d.naive", 3.0)])[KEY]
    assert c3.variant_margin == pytest.approx(0.25)


def test_variant_tie_within_noise_of_the_two_fastest_variants():
    """analysis.py:41, `@property` removed from variant_tie (a bound method is always true: the best map then
    wrote "≈" for every margin). Best per variant 1.0 and 1.005 ms with no error: within the 1% floor, a tie;
    1.0 and 1.25: not; 1.0 and 1.025 with errors 0.006 and 0.008 (threshold 3%): a tie again."""
    assert select_best([rec("conv2d.constant", 1.0), rec("conv2d.fft", 1.005)])[KEY].variant_tie is True
    assert select_best([rec("conv2d.constant", 1.0), rec("conv2d.fft", 1.25)])[KEY].variant_tie is False
    assert select_best([rec("conv2d.constant", 1.0, 0.006), rec("conv2d.fft", 1.025, 0.008)])[KEY].variant_tie is True
