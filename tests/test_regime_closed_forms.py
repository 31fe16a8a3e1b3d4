"""MODEL §14's closed forms (solver/laws/regimes.py): every check figure of §14 on the seed's occupancy, and the
integrals checked against independent readings (a direct quadrature, exact enumeration over an empirical law,
seeded Monte Carlo)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainground.solver.laws import calculus as calc
from trainground.solver.laws import regimes as rg

SEED_W = calc.fit_lognormal(median=1044.0, p99=13900.0)  # the seed's occupancy (MODEL §2)
TAU = 3600.0
N = 4096  # the seed's batch: g·ceil(B/(g·p)) with B = 4096, g = 8, p = 1


def test_the_timeout_figures_of_the_seed():
    assert round(rg.timeout_mean(SEED_W, TAU)) == 1448
    assert round(rg.timeout_cdf(SEED_W, TAU), 4) == 0.8670
    assert round(rg.token_scale(SEED_W, TAU), 4) == 0.7467
    assert rg.timeout_mean(SEED_W, None) == SEED_W.mean and rg.timeout_cdf(SEED_W, None) == 1.0


def test_the_slowest_of_a_seed_batch():
    assert round(rg.expected_max(SEED_W, N, None)) == 63370
    assert round(rg.max_quantile(SEED_W, N, 0.1, None)) == 39177
    assert round(rg.max_quantile(SEED_W, N, 0.9, None)) == 94525
    assert rg.expected_max(SEED_W, N, TAU) == pytest.approx(TAU, abs=0.1)


def test_the_slowest_of_a_seed_group_and_the_admission_bounds():
    no_cut, cut = rg.expected_max(SEED_W, 8, None), rg.expected_max(SEED_W, 8, TAU)
    assert (round(no_cut), round(cut)) == (6558, 3264)
    assert round(rg.admission_cadence(no_cut, 1.0, 300.0, 0.0, 10), 1) == 653.2
    assert round(rg.admission_cadence(no_cut, 1.0, 300.0, 0.0, 16), 1) == 415.6
    assert round(rg.admission_cadence(cut, 1.0, 300.0, 0.0, 10), 1) == 339.5
    assert rg.admission_cadence(no_cut, 1.0, 300.0, 0.0, 10) > 604.8  # above the seed's deadline pace


def test_the_length_bias_of_the_seed():
    assert round(rg.length_bias(SEED_W, None), 3) == 1.725
    assert round(rg.length_bias(SEED_W, TAU), 3) == 0.822
    assert rg.length_bias(SEED_W, None) == pytest.approx(math.exp(SEED_W.sigma**2) / 2)  # lognormal: e^σ²/2


def test_the_colocated_seed_iteration():
    """All 10,000 GPUs generating at 75 tokens/s, τ = 3,600 s, t_s = 0; training on the same 10,000 GPUs."""
    supply = 10000 * 75.0
    tokens = 32768 * rg.token_scale(SEED_W, TAU)
    assert round(N * tokens / supply, 1) == 133.6
    assert round(N * 32768 / supply, 1) == 179.0
    phase = rg.generation_phase(N, tokens, supply, rg.expected_max(SEED_W, N, TAU))
    assert phase == pytest.approx(TAU, abs=0.1)
    assert round(rg.busy_share(N, tokens, supply, phase), 3) == 0.037
    update = 300.0 * 7000 / 10000  # the seed's inverse law at 10,000 GPUs
    assert update == 210.0
    cadence = rg.colocated_cadence(phase, update, 0.0, 0.0)
    assert cadence == pytest.approx(3810.0, abs=0.1)
    assert round(1000 * cadence / 86400, 1) == 44.1


def test_the_pipelined_cadences():
    assert rg.pipelined_cadence(3600.0, 210.0, 16.0, 0) == 3826.0  # D + U + t_s
    assert rg.pipelined_cadence(3600.0, 210.0, 16.0, 1) == 3616.0  # max(D, U) + t_s
    assert rg.pipelined_cadence(100.0, 210.0, 0.0, 1) == 210.0  # the trainer paces a short batch


def test_the_generation_phase_is_the_larger_of_its_two_bounds():
    assert rg.generation_phase(4096, 32768.0, 7.5e5, 3600.0) == 3600.0
    assert rg.generation_phase(4096, 32768.0, 1e4, 3600.0) == pytest.approx(4096 * 32768 / 1e4)


def test_the_slowest_agrees_with_a_direct_quadrature():
    """E[max of n draws of W_τ] against the trapezoid rule of ∫ (1 - (1 - S(t))^n) dt on a fine log grid, S the
    survival of solver/laws/calculus.py (no code shared with the group-completion law it reuses)."""
    for draws in (1, 8, 4096):
        for tau in (None, 600.0, 3600.0):
            top = SEED_W.mu + 12 * SEED_W.sigma if tau is None else math.log(tau)
            t = np.exp(np.linspace(SEED_W.mu - 12 * SEED_W.sigma, top, 400_001))
            with np.errstate(divide="ignore"):  # F = 0 far below the median: log 0, and the waiting share 1
                waiting = -np.expm1(draws * np.log1p(-SEED_W.survival(t)))
            direct = float(t[0] + np.sum((waiting[1:] + waiting[:-1]) / 2 * np.diff(t)))
            assert rg.expected_max(SEED_W, draws, tau) == pytest.approx(direct, rel=1e-6), (draws, tau)


def test_the_slowest_of_eight_agrees_with_monte_carlo():
    rng = np.random.default_rng(7)
    draws = np.exp(SEED_W.mu + SEED_W.sigma * rng.standard_normal((200_000, 8))).max(axis=1)
    for tau in (None, TAU):
        cut = draws if tau is None else np.minimum(draws, tau)
        error = cut.std() / math.sqrt(cut.size)
        assert abs(rg.expected_max(SEED_W, 8, tau) - cut.mean()) < 4 * error


def test_the_second_moment_agrees_with_monte_carlo():
    rng = np.random.default_rng(11)
    w = np.minimum(np.exp(SEED_W.mu + SEED_W.sigma * rng.standard_normal(1_000_000)), TAU)
    squares = w * w
    assert abs(rg.second_moment(SEED_W, TAU) - squares.mean()) < 4 * squares.std() / math.sqrt(w.size)


def test_an_empirical_law_is_exact_by_enumeration():
    """Over samples (600, 1200, 3000, 9000) every ordered pair of draws is equally likely: the mean of their
    max, cut at τ, is the expected max; the mean of squares is the second moment."""
    samples = [600.0, 1200.0, 3000.0, 9000.0]
    law = calc.empirical(samples)
    for tau in (None, 2000.0, 5000.0):
        cut = [s if tau is None else min(s, tau) for s in samples]
        pairs = [max(a, b) for a, b in itertools.product(cut, repeat=2)]
        triples = [max(t) for t in itertools.product(cut, repeat=3)]
        assert rg.expected_max(law, 2, tau) == pytest.approx(np.mean(pairs), rel=1e-12)
        assert rg.expected_max(law, 3, tau) == pytest.approx(np.mean(triples), rel=1e-12)
        assert rg.second_moment(law, tau) == pytest.approx(np.mean(np.square(cut)), rel=1e-12)
        assert rg.timeout_mean(law, tau) == pytest.approx(np.mean(cut), rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    draws=st.integers(1, 5000),
    tau=st.one_of(st.none(), st.floats(10.0, 1e5)),
    sigma=st.floats(0.2, 2.0),
)
def test_the_slowest_grows_with_the_draws_and_never_passes_the_timeout(draws, tau, sigma):
    law = calc.lognormal(math.log(1000.0), sigma)
    one, more = rg.expected_max(law, draws, tau), rg.expected_max(law, draws + 1, tau)
    assert more >= one * (1 - 1e-12)
    assert one >= rg.timeout_mean(law, tau) * (1 - 1e-9)
    if tau is not None:
        assert one <= tau * (1 + 1e-9)


def test_batch_draws_and_attempts():
    assert rg.attempts_per_batch(4096, 8, 1.0) == 4096
    assert rg.attempts_per_batch(4096, 8, 0.8) == 8 * math.ceil(4096 / 6.4)
    assert rg.attempts_per_batch(100, 8, 1.0) == 104  # whole groups


def test_the_recompute_demand():
    """R_raw·mean(W_τ)·prefill_cost·(context + tokens·bias)/L, linear in each factor."""
    base = rg.recompute_demand(10.0, 1448.0, 0.05, 0.0, 24468.0, 0.822, 600.0)
    assert base == pytest.approx(10.0 * 1448.0 * 0.05 * 24468.0 * 0.822 / 600.0)
    assert rg.recompute_demand(10.0, 1448.0, 0.10, 0.0, 24468.0, 0.822, 600.0) == pytest.approx(2 * base)
    assert rg.recompute_demand(10.0, 1448.0, 0.05, 0.0, 24468.0, 0.822, 1200.0) == pytest.approx(base / 2)


def test_the_consumed_gap_under_admission_is_the_group_law_without_k():
    """G = floor(u + M_8/L): its mean E[M_8]/L and p99 agree with seeded Monte Carlo, and without a timeout with
    §11's unconditioned (downweight) law of solver/laws/holding.py."""
    from trainground.models.edits import edited
    from trainground.models.load import load_instance
    from trainground.solver.laws import holding

    seed = load_instance(Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml")
    downweight = edited(seed, {"freshness.overrun_policy": "downweight"})
    mean, p99 = rg.consumed_gaps(SEED_W, 8, None, 604.0)
    assert (mean, float(p99)) == pytest.approx(holding.consumed_gaps(downweight, SEED_W, 604.0, 10), rel=1e-12)
    rng = np.random.default_rng(5)
    for tau, cadence in ((None, 604.0), (TAU, 339.5)):
        most = np.exp(SEED_W.mu + SEED_W.sigma * rng.standard_normal((400_000, 8))).max(axis=1)
        cut = most if tau is None else np.minimum(most, tau)
        gaps = np.floor(rng.random(cut.size) + cut / cadence)
        mean, p99 = rg.consumed_gaps(SEED_W, 8, tau, cadence)
        assert abs(mean - gaps.mean()) < 4 * gaps.std() / math.sqrt(gaps.size)
        spread = 4 * math.sqrt(0.99 * 0.01 / gaps.size)  # the p99 within the sampling error of the share
        assert np.mean(gaps <= p99) >= 0.99 - spread and np.mean(gaps <= p99 - 1) <= 0.99 + spread


def test_the_survivors_of_earlier_bursts():
    """Σ_{i>=0} S_τ(i·L): exactly mean(ceil(min(x, τ)/L)) over an empirical law's samples x, and for the seed's
    lognormal the Euler-Maclaurin reading mean(W)/L + 1/2 at a short cadence."""
    samples = np.array([600.0, 1200.0, 3000.0, 9000.0])
    law = calc.empirical(samples)
    for tau in (None, 2000.0, 5000.0):
        cut = samples if tau is None else np.minimum(samples, tau)
        assert rg.survivors_sum(law, tau, 700.0) == pytest.approx(np.mean(np.ceil(cut / 700.0)), rel=1e-12)
    assert rg.survivors_sum(SEED_W, None, 60.0) == pytest.approx(SEED_W.mean / 60.0 + 0.5, rel=1e-5)
    peak = rg.publish_peak(4096, 0.8, 0.25, SEED_W, TAU, 700.0)
    assert peak == pytest.approx(4096 / 0.8 * 0.25 * rg.survivors_sum(SEED_W, TAU, 700.0))
    assert rg.survivors_sum(SEED_W, TAU, 700.0) < rg.survivors_sum(SEED_W, None, 700.0)  # the timeout ends bursts
