"""MODEL.md §8's fill: the smallest t with p·R_raw·∫_0^t F_grp(s) ds >= B, against independent quadrature
(scipy), closed forms and brute-force sums over empirical samples."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from trainground.solver.laws import calculus as calc
from trainground.solver.laws import startup

SEED_OCC = calc.fit_lognormal(median=1044, p99=13900)


def quad_ramp(occ: calc.Occupancy, t: float, g: int) -> float:
    """∫_0^t F(s)^g ds by adaptive quadrature of scipy's lognormal CDF (shares no code with calculus)."""
    law = stats.lognorm(occ.sigma, scale=math.exp(occ.mu))
    return integrate.quad(
        lambda s: law.cdf(s) ** g, 0, t, limit=400, epsabs=0, epsrel=1e-12, points=[occ.median, occ.p99]
    )[0]


def test_seed_check_value():
    # MODEL.md §8: L=604, K=10, R_raw=10.455/s, independent, g=8, p=1, B=4096 -> fill ≈ 3,768 s.
    assert float(startup.fill(SEED_OCC, 10.455, 4096, 8, 1.0, "independent")) == pytest.approx(3768, abs=1)


@pytest.mark.parametrize("g", [2, 8, 32])
@pytest.mark.parametrize("t", [50.0, 1044.0, 3768.0, 2e5])
def test_lognormal_ramp_matches_quadrature(g, t):
    assert float(startup.completed_group_time(SEED_OCC, t, g, "independent")) == pytest.approx(
        quad_ramp(SEED_OCC, t, g), rel=1e-9
    )


@pytest.mark.parametrize(
    "median,sigma,g,rate,p",
    [(1044, 1.13, 8, 10.455, 1.0), (300, 0.5, 4, 3.0, 0.8), (60, 2.0, 16, 50.0, 0.5), (5000, 0.1, 8, 1.0, 1.0)],
)
def test_lognormal_fill_is_the_root_found_by_quadrature(median, sigma, g, rate, p):
    occ = calc.fit_lognormal(median=median, sigma=sigma)
    B = 512
    target = B / (p * rate)
    root = optimize.brentq(lambda t: quad_ramp(occ, t, g) - target, target, target + 50 * occ.p99, xtol=1e-9)
    assert float(startup.fill(occ, rate, B, g, p, "independent")) == pytest.approx(root, rel=1e-8)


def test_comonotone_ramp_is_t_minus_the_limited_mean():
    for t in (10.0, 900.0, 5000.0, 1e6):
        assert float(startup.completed_group_time(SEED_OCC, t, 8, "comonotone")) == pytest.approx(
            quad_ramp(SEED_OCC, t, 1), rel=1e-9
        )
    fill = float(startup.fill(SEED_OCC, 10.455, 4096, 8, 1.0, "comonotone"))
    assert 10.455 * (fill - float(SEED_OCC.limited_mean(fill))) == pytest.approx(4096, rel=1e-10)


def brute_empirical_ramp(samples, t: float, g: int) -> float:
    """∫_0^t F(s)^g ds of the empirical law, summed step by step in plain Python."""
    xs = sorted(samples)
    total = 0.0
    for i, x in enumerate(xs):
        right = xs[i + 1] if i + 1 < len(xs) else math.inf
        level = ((i + 1) / len(xs)) ** g if right > x else 0.0  # a tie's level starts at its last copy
        total += level * max(0.0, min(t, right) - x)
    return total


@pytest.mark.parametrize("seed", range(6))
def test_empirical_fill_is_exact(seed):
    rng = np.random.default_rng(seed)
    samples = np.round(rng.lognormal(6, 1, rng.integers(2, 60)), 1)
    samples[: len(samples) // 4] = samples[0]  # ties
    occ = calc.empirical(samples)
    for correlation, g in (("independent", 8), ("comonotone", 8), ("independent", 1)):
        rate, B, p = rng.uniform(0.5, 20), 64, rng.uniform(0.3, 1)
        fill = float(startup.fill(occ, rate, B, g, p, correlation))
        power = g if correlation == "independent" else 1
        assert p * rate * brute_empirical_ramp(samples, fill, power) == pytest.approx(B, rel=1e-10)
        assert p * rate * brute_empirical_ramp(samples, fill * (1 - 1e-7), power) < B
        assert float(startup.completed_group_time(occ, fill, g, correlation)) == pytest.approx(
            brute_empirical_ramp(samples, fill, power), rel=1e-10
        )


def test_zero_variance_fill_is_lifetime_plus_batch_time():
    occ = calc.empirical([250.0, 250.0, 250.0])
    for correlation in ("independent", "comonotone"):
        assert float(startup.fill(occ, 64 / 30, 64, 4, 1.0, correlation)) == pytest.approx(250 + 30, rel=1e-12)


def test_vectorised_over_rates_equals_one_by_one():
    rates = np.array([0.5, 3.0, 10.455, 80.0])
    for occ in (SEED_OCC, calc.empirical([10, 200, 200, 3000])):
        together = startup.fill(occ, rates, 4096, 8, 0.9, "independent")
        alone = [float(startup.fill(occ, r, 4096, 8, 0.9, "independent")) for r in rates]
        assert together == pytest.approx(alone, rel=1e-12)
        assert np.all(np.diff(together) < 0)  # a faster launch rate fills sooner


def test_group_completion_mean_is_the_max_of_g_lifetimes():
    law = stats.lognorm(SEED_OCC.sigma, scale=math.exp(SEED_OCC.mu))
    for g in (2, 8):
        expected = integrate.quad(lambda s, g=g: 1 - law.cdf(s) ** g, 0, np.inf, limit=400, epsrel=1e-11)[0]
        assert startup.group_completion_mean(SEED_OCC, g, "independent") == pytest.approx(expected, rel=1e-8)
    samples = [3.0, 5.0, 5.0, 11.0]
    brute = np.mean([max(c) for c in np.array(np.meshgrid(*[samples] * 3)).reshape(3, -1).T])
    assert startup.group_completion_mean(calc.empirical(samples), 3, "independent") == pytest.approx(brute, rel=1e-12)


@pytest.mark.parametrize("correlation", ["independent", "comonotone"])
def test_fill_at_many_rates_started_from_a_coarse_subset_is_each_rates_own(correlation):
    """Above FILL_COARSE_FROM rates, Newton starts at the fill of a slower rate of a coarse subset: the roots
    are the ones each rate's own solve finds (rates shuffled, repeated, and spanning two decades)."""
    rng = np.random.default_rng(4)
    rates = rng.permutation(np.concatenate((np.geomspace(0.5, 60, startup.FILL_COARSE_FROM + 900), [10.455] * 7)))
    many = startup.fill(SEED_OCC, rates, 4096, 8, 0.9, correlation)
    picked = rng.choice(rates.size, 60, replace=False)
    one = np.array([startup.fill(SEED_OCC, rates[i], 4096, 8, 0.9, correlation) for i in picked])
    assert many[picked] == pytest.approx(one, rel=1e-12)
    order = np.argsort(rates)
    assert np.all(np.diff(many[order]) <= 1e-9 * many[order][1:])  # slower rates fill later
