"""Property tests of solver.laws.calculus (MODEL.md §2) with hypothesis.

Monte-Carlo checks use numpy's generator with a fixed seed and run derandomized, so a
failure reproduces; their tolerance is six standard errors.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import integrate

from tests.strategies import examples
from trainground.models.instance import (
    AmdahlLaw,
    Cadence,
    GpuPool,
    Instance,
    InverseLaw,
    Schedule,
    TableLaw,
    TablePoint,
    Training,
)
from trainground.solver.laws import calculus as calc

SETTINGS = settings(max_examples=examples(100), deadline=None)
# Monte-Carlo properties draw 400,000 trajectories per example: they get fewer examples.
MC_SETTINGS = settings(max_examples=examples(40), deadline=None, derandomize=True)
MC_N = 400_000
# An adaptive quadrature to 1e-11 of each example's survival curve: fewer examples than the closed-form properties.
QUAD_SETTINGS = settings(max_examples=examples(50), deadline=None)
EPS = np.finfo(float).eps

BASE = Instance.model_validate(
    yaml.safe_load((Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml").read_text())
)

# --- strategies -------------------------------------------------------------------------------

medians = st.floats(10.0, 1e5)
sigmas = st.floats(0.05, 3.0)
cadences = st.floats(1.0, 5000.0)
kept = st.integers(1, 40)


@st.composite
def lognormals(draw):
    """A lognormal occupancy fixed by (median, p99) or by (median, sigma)."""
    median = draw(medians)
    if draw(st.booleans()):
        p99 = median * draw(st.floats(1.05, 1000.0))
        return calc.fit_lognormal(median=median, p99=p99)
    return calc.fit_lognormal(median=median, sigma=draw(sigmas))


sample_values = st.floats(1.0, 1e5)
empiricals = st.lists(sample_values, min_size=2, max_size=200).map(calc.empirical)
occupancies = st.one_of(lognormals(), empiricals)


def tail_tol(occ: calc.Occupancy, L: float, K: float) -> float:
    """Rounding allowance of q = (E[min(W,(K+1)L)] - E[min(W,KL)]) / L: a few ulps of the terms."""
    return 1e-13 + 8 * EPS * float(occ.limited_mean((K + 1) * L)) / L


# --- exceedance q(L, K) --------------------------------------------------------------------------


@SETTINGS
@given(occupancies, cadences, kept)
def test_exceedance_in_unit_interval(occ, L, K):
    q = float(calc.exceedance(occ, L, K))
    assert 0.0 <= q <= 1.0


@SETTINGS
@given(occupancies, cadences, kept, st.integers(1, 10))
def test_exceedance_non_increasing_in_versions_kept(occ, L, K, more):
    q1 = float(calc.exceedance(occ, L, K))
    q2 = float(calc.exceedance(occ, L, K + more))
    assert q2 <= q1 + tail_tol(occ, L, K)


@SETTINGS
@given(occupancies, cadences, st.floats(1.0, 10.0), kept)
def test_exceedance_non_increasing_in_cadence(occ, L, factor, K):
    q1 = float(calc.exceedance(occ, L, K))
    q2 = float(calc.exceedance(occ, L * factor, K))
    assert q2 <= q1 + tail_tol(occ, L, K)


@SETTINGS
@given(occupancies, st.lists(cadences, min_size=2, max_size=20), st.lists(kept, min_size=2, max_size=20))
def test_exceedance_vectorised_over_grid(occ, Ls, Ks):
    """The vectorised call agrees with scalar calls and is monotone along a sorted grid."""
    Ls, Ks = np.sort(Ls), np.sort(Ks)
    q = calc.exceedance(occ, Ls[:, None], Ks[None, :])
    assert q.shape == (Ls.size, Ks.size)
    for i in (0, Ls.size - 1):
        for j in (0, Ks.size - 1):
            assert q[i, j] == float(calc.exceedance(occ, Ls[i], Ks[j]))
    tol = 1e-13 + 8 * EPS * float(occ.mean) / Ls[0]
    assert np.all(np.diff(q, axis=0) <= tol)
    assert np.all(np.diff(q, axis=1) <= tol)


@SETTINGS
@given(st.lists(sample_values, min_size=2, max_size=200), cadences, kept)
def test_exceedance_empirical_is_mean_of_clipped_overshoot(samples, L, K):
    """For the empirical law, P(floor(u + W/L) > K) = mean over samples of clip(W/L - K, 0, 1)."""
    occ = calc.empirical(samples)
    brute = float(np.mean(np.clip(np.asarray(samples) / L - K, 0.0, 1.0)))
    assert float(calc.exceedance(occ, L, K)) == pytest.approx(brute, rel=1e-9, abs=tail_tol(occ, L, K))


@SETTINGS
@given(st.floats(100.0, 5000.0), st.floats(0.2, 2.5), st.floats(50.0, 3000.0), st.integers(1, 20))
def test_exceedance_is_the_survival_integral(median, sigma, L, K):
    """q(L,K) = ∫_K^{K+1} S(vL) dv (MODEL.md §2), against numerical quadrature."""
    occ = calc.fit_lognormal(median=median, sigma=sigma)
    direct, _ = integrate.quad(lambda v: float(occ.survival(v * L)), K, K + 1, epsabs=1e-13, epsrel=1e-10)
    assert float(calc.exceedance(occ, L, K)) == pytest.approx(direct, rel=1e-7, abs=1e-12)


def test_exceedance_check_values():
    """MODEL.md §2: lognormal(median 1044, p99 13900): L=600 K=4 → 0.1975, K=10 → 0.0532; L=500 K=10 → 0.0734."""
    occ = calc.fit_lognormal(median=1044, p99=13900)
    assert float(calc.exceedance(occ, 600, 4)) == pytest.approx(0.1975, abs=5e-5)
    assert float(calc.exceedance(occ, 600, 10)) == pytest.approx(0.0532, abs=5e-5)
    assert float(calc.exceedance(occ, 500, 10)) == pytest.approx(0.0734, abs=5e-5)


# --- version gap: closed forms vs simulation -----------------------------------------------------


@SETTINGS
@given(occupancies, cadences, st.sampled_from(["mean", "median"]), st.sampled_from(["consumer", "post_publish"]))
def test_mean_version_gap_is_w_use_over_cadence(occ, L, uses, convention):
    w_use = calc.occupancy_used(occ, uses)
    assert w_use == (occ.mean if uses == "mean" else occ.median)
    shift = 1.0 if convention == "post_publish" else 0.0
    assert float(calc.mean_version_gap(w_use, L, convention)) == w_use / L + shift
    assert float(calc.p99_version_gap(occ, L, convention)) == occ.p99 / L + shift


def _draw(occ: calc.Occupancy, rng: np.random.Generator, n: int) -> np.ndarray:
    if occ.samples is None:
        return rng.lognormal(occ.mu, occ.sigma, n)
    return rng.choice(occ.samples, n)


mc_occupancies = st.one_of(
    st.builds(lambda m, s: calc.fit_lognormal(median=m, sigma=s), st.floats(100.0, 5000.0), st.floats(0.05, 1.5)),
    st.lists(st.floats(10.0, 20000.0), min_size=2, max_size=100).map(calc.empirical),
)


@MC_SETTINGS
@given(mc_occupancies, st.floats(50.0, 3000.0))
def test_simulated_mean_gap_matches_mean_over_cadence(occ, L):
    """E[floor(u + W/L)] = E[W]/L: the simulated consumer-side gap against mean_version_gap(W_use=mean)."""
    rng = np.random.default_rng(20261005)
    w = _draw(occ, rng, MC_N)
    gap = np.floor(rng.random(MC_N) + w / L)
    expected = float(calc.mean_version_gap(calc.occupancy_used(occ, "mean"), L, "consumer"))
    var_w = occ.mean**2 * math.expm1(occ.sigma**2) if occ.samples is None else float(np.var(occ.samples))
    se = math.sqrt((var_w / L**2 + 0.25) / MC_N)
    assert abs(gap.mean() - expected) <= 6 * se


@MC_SETTINGS
@given(mc_occupancies, st.floats(50.0, 3000.0), st.integers(1, 12))
def test_simulated_exceedance_matches(occ, L, K):
    """P(floor(u + W/L) > K) simulated against exceedance(L, K)."""
    rng = np.random.default_rng(20261006)
    w = _draw(occ, rng, MC_N)
    gap = np.floor(rng.random(MC_N) + w / L)
    q = float(calc.exceedance(occ, L, K))
    share = float(np.mean(gap > K))
    assert abs(share - q) <= 6 * math.sqrt(q * (1 - q) / MC_N) + 5 / MC_N


# --- lognormal fit ----------------------------------------------------------------------------------


@SETTINGS
@given(medians, st.floats(1.05, 1000.0))
def test_fit_from_median_p99_round_trips(median, ratio):
    p99 = median * ratio
    occ = calc.fit_lognormal(median=median, p99=p99)
    assert occ.quantile(0.5) == pytest.approx(median, rel=1e-12)
    assert occ.quantile(0.99) == pytest.approx(p99, rel=1e-12)
    assert occ.median == pytest.approx(median, rel=1e-12)
    assert occ.p99 == pytest.approx(p99, rel=1e-12)
    assert occ.mean == pytest.approx(median * math.exp(occ.sigma**2 / 2), rel=1e-12)


PAIRS = [
    ("median", "p99"),
    ("median", "mean"),
    ("median", "sigma"),
    ("p99", "mean"),
    ("p99", "sigma"),
    ("mean", "sigma"),
]


@SETTINGS
@given(st.floats(math.log(10.0), math.log(1e5)), st.floats(0.05, 2.0), st.sampled_from(PAIRS))
def test_fit_from_any_pair_round_trips(mu, sigma, pair):
    """Any two of {median, p99, mean, sigma} recover the other two.

    sigma stays below z_0.99 ≈ 2.326: (p99, mean) fixes sigma only up to the two roots of
    z·s - s²/2 = ln(p99/mean); the fit takes the smaller one (see the test below).
    """
    truth = calc.lognormal(mu, sigma)
    given_ = {k: getattr(truth, k) for k in pair}
    occ = calc.fit_lognormal(**given_)
    for key in ("median", "p99", "mean", "sigma"):
        assert getattr(occ, key) == pytest.approx(getattr(truth, key), rel=1e-9), key
    assert occ.quantile(0.5) == pytest.approx(truth.median, rel=1e-9)
    assert occ.quantile(0.99) == pytest.approx(truth.p99, rel=1e-9)


@SETTINGS
@given(st.floats(math.log(10.0), math.log(1e5)), st.floats(0.05, 2.0))
def test_fit_from_p99_mean_takes_the_smaller_sigma(mu, sigma):
    """Both roots of (p99, mean) are lognormals with that p99 and mean; the fit is the smaller sigma."""
    truth = calc.lognormal(mu, sigma)
    other = calc.lognormal(mu + sigma**2 / 2 - (2 * calc.Z_99 - sigma) ** 2 / 2, 2 * calc.Z_99 - sigma)
    assert other.mean == pytest.approx(truth.mean, rel=1e-9)
    assert other.p99 == pytest.approx(truth.p99, rel=1e-9)
    fitted = calc.fit_lognormal(p99=truth.p99, mean=truth.mean)
    assert fitted.sigma == pytest.approx(min(sigma, 2 * calc.Z_99 - sigma), rel=1e-9)


# --- group drop -------------------------------------------------------------------------------------

probabilities = st.floats(0.0, 1.0)


# q = 1 takes log1p(-1) = -inf inside group_drop: the result (1.0) is right, numpy warns.
NO_LOG1P_WARNING = pytest.mark.filterwarnings("ignore:divide by zero encountered in log1p:RuntimeWarning")


@NO_LOG1P_WARNING
@SETTINGS
@given(probabilities, st.integers(1, 64))
def test_group_drop_bounds(q, g):
    independent = float(calc.group_drop(q, g, "drop", "independent"))
    comonotone = float(calc.group_drop(q, g, "drop", "comonotone"))
    assert comonotone == q
    # independent >= comonotone, up to one ulp: at g = 1, -expm1(log1p(-q)) can come out 1 ulp below q
    assert 0.0 <= comonotone <= independent * (1 + 2 * EPS) and independent <= 1.0
    # the naive 1-(1-q)^g loses ~g ulps to cancellation; group_drop uses expm1/log1p
    assert independent == pytest.approx(1 - (1 - q) ** g, rel=1e-9, abs=64 * EPS)
    for corr in ("independent", "comonotone"):
        assert float(calc.group_drop(q, g, "downweight", corr)) == 0.0
    lower, upper = calc.group_drop_bounds(q, g)
    assert (float(lower), float(upper)) == (comonotone, independent)


@NO_LOG1P_WARNING
@SETTINGS
@given(st.lists(probabilities, min_size=1, max_size=30), st.integers(1, 64))
def test_group_drop_vectorised(qs, g):
    q = np.asarray(qs)
    ind = calc.group_drop(q, g, "drop", "independent")
    assert ind.shape == q.shape
    assert np.all((ind * (1 + 2 * EPS) >= q) & (ind <= 1.0))
    assert np.all(calc.group_drop(q, g, "downweight", "independent") == 0.0)


def test_group_drop_single_member_group_is_q():
    assert float(calc.group_drop(0.25, 1, "drop", "independent")) == 0.25


# --- training groups: min_groups_for vs brute force --------------------------------------------------


def _update_time_brute(law, gpus: float) -> float | None:
    """U(G) from MODEL.md §2 written out again; None outside a table's measured range."""
    if isinstance(law, InverseLaw):
        return law.reference_time * law.reference_gpus / gpus
    if isinstance(law, AmdahlLaw):
        f = law.serial_fraction
        return law.reference_time * (f + (1 - f) * law.reference_gpus / gpus)
    pts = law.points
    if gpus < pts[0].gpus * (1 - calc.REL_TOL) or gpus > pts[-1].gpus * (1 + calc.REL_TOL):
        return None
    gpus = min(max(gpus, pts[0].gpus), pts[-1].gpus)
    for a, b in zip(pts, pts[1:]):
        if a.gpus <= gpus <= b.gpus:
            return a.seconds + (b.seconds - a.seconds) * (gpus - a.gpus) / (b.gpus - a.gpus)
    raise AssertionError("unreachable")


@st.composite
def update_laws(draw):
    kind = draw(st.sampled_from(["inverse", "amdahl", "table"]))
    if kind == "inverse":
        return InverseLaw(
            law="inverse", reference_gpus=draw(st.floats(8, 20000)), reference_time=draw(st.floats(10, 3000))
        )
    if kind == "amdahl":
        return AmdahlLaw(
            law="amdahl",
            reference_gpus=draw(st.floats(8, 20000)),
            reference_time=draw(st.floats(10, 3000)),
            serial_fraction=draw(st.floats(0.0, 1.0)),
        )
    gpus = draw(st.lists(st.integers(1, 12000), min_size=2, max_size=8, unique=True))
    seconds = draw(st.lists(st.floats(10, 3000), min_size=len(gpus), max_size=len(gpus)))  # any shape: non-monotone too
    return TableLaw(law="table", points=[TablePoint(gpus=g, seconds=s) for g, s in zip(sorted(gpus), seconds)])


@st.composite
def trainings(draw):
    pool = draw(st.integers(1, 10000))
    per_group = draw(st.sampled_from([1, 2, 4, 8, 16, 32, 64]))
    lo = draw(st.integers(1, 50))
    hi = draw(st.one_of(st.none(), st.integers(lo, 2000)))
    training = Training(
        pool="main", gpus_per_group=per_group, min_groups=lo, max_groups=hi, update_time=draw(update_laws())
    )
    return BASE.model_copy(
        update={"training": training, "gpu_pools": [GpuPool(name="main", gpus=pool, gpu_hour_cost=2.0)]}
    )


@SETTINGS
@given(trainings(), st.lists(st.floats(1.0, 4000.0), min_size=1, max_size=8))
def test_min_groups_for_is_smallest_keeping_up(inst, cadence_list):
    lo, hi = calc.group_range(inst)
    fit = inst.gpu_pools[0].gpus // inst.training.gpus_per_group
    assert lo == inst.training.min_groups
    assert hi == (fit if inst.training.max_groups is None else min(fit, inst.training.max_groups))
    law, per_group = inst.training.update_time, inst.training.gpus_per_group
    # include cadences equal to some U(m), where the comparison is tight
    times = [_update_time_brute(law, m * per_group) for m in range(lo, min(hi, lo + 5) + 1)]
    Ls = np.array(cadence_list + [t for t in times if t is not None])
    got = calc.min_groups_for(inst, Ls)
    assert got.shape == Ls.shape
    for L, m_got in zip(Ls, got):
        expected = 0
        for m in range(lo, hi + 1):
            u = _update_time_brute(law, m * per_group)
            if u is not None and u <= L * (1 + calc.REL_TOL):
                expected = m
                break
        assert m_got == expected, f"L={L}: expected {expected}, got {m_got}"


@SETTINGS
@given(trainings(), st.floats(1.0, 4000.0))
def test_min_groups_for_scalar_matches_vector(inst, L):
    vec = calc.min_groups_for(inst, np.array([L, L]))
    assert calc.min_groups_for(inst, L).tolist() == [vec[0]]


# --- cadence grid -----------------------------------------------------------------------------------


@st.composite
def schedules(draw):
    deadline = draw(st.floats(3600.0, 60 * 86400.0))
    extra = draw(st.floats(0.0, 0.5)) * deadline
    n = draw(st.integers(1, 5000))
    pace = (deadline - extra) / n
    lo = draw(st.floats(0.5, 2.0)) * pace if draw(st.booleans()) else draw(st.floats(1.0, 600.0))
    step = draw(st.sampled_from([1.0, 0.5, 2.0, 5.0, 0.1])) if draw(st.booleans()) else draw(st.floats(0.01, 100.0))
    top = None if draw(st.booleans()) else lo * draw(st.floats(1.0, 3.0))
    schedule = Schedule(deadline=deadline, extra_time=extra, cadence=Cadence(min=lo, max=top, step=step))
    workload = BASE.workload.model_copy(update={"iterations": n})
    inst = BASE.model_copy(update={"schedule": schedule, "workload": workload})
    assume((max(top or pace, lo) - lo) / step < 200_000)
    return inst


@SETTINGS
@given(schedules())
def test_cadence_grid_endpoints_and_step(inst):
    c = inst.schedule.cadence
    top = c.max if c.max is not None else calc.deadline_pace(inst)
    assert calc.deadline_pace(inst) == (inst.schedule.deadline - inst.schedule.extra_time) / inst.workload.iterations
    grid = calc.cadence_grid(inst)
    if top < c.min * (1 - calc.REL_TOL):
        assert grid.size == 0
        return
    assert grid.size >= 1
    assert grid[0] == c.min
    if grid.size > 1:
        assert np.allclose(np.diff(grid), c.step, rtol=1e-9, atol=0)
    slack = 1e-9 * max(top, 1.0)
    assert grid[-1] <= top + slack + 1e-9 * c.step  # never past the bound (beyond rounding)
    assert grid[-1] + c.step > top - slack  # and no further point fits
    assert np.allclose(grid, c.min + c.step * np.arange(grid.size), rtol=1e-12, atol=0)


def test_cadence_grid_of_the_baseline():
    """MODEL.md §7: the seed baseline has 545 grid points, 60 s .. 604 s by 1 s."""
    grid = calc.cadence_grid(BASE)
    assert grid.size == 545 and grid[0] == 60.0 and grid[-1] == 604.0


# --- limited mean E[min(W, t)] ------------------------------------------------------------------


@SETTINGS
@given(st.lists(sample_values, min_size=2, max_size=300), st.lists(st.floats(0.0, 2e5), min_size=1, max_size=20))
def test_limited_mean_empirical_is_brute_force(samples, ts):
    occ = calc.empirical(samples)
    w = np.asarray(samples)
    ts = ts + samples[:3]  # hit sample values exactly
    got = occ.limited_mean(np.asarray(ts))
    for t, value in zip(ts, got):
        assert value == pytest.approx(float(np.mean(np.minimum(w, t))), rel=1e-12, abs=1e-9)


@QUAD_SETTINGS
@given(st.floats(10.0, 1e4), st.floats(0.05, 2.5), st.floats(0.0, 20.0))
def test_limited_mean_lognormal_is_survival_integral(median, sigma, scale):
    occ = calc.fit_lognormal(median=median, sigma=sigma)
    t = scale * median
    direct, _ = integrate.quad(
        lambda x: float(occ.survival(x)),
        0.0,
        t,
        points=[median] if t > median else None,
        limit=200,
        epsabs=1e-10,
        epsrel=1e-11,
    )
    assert float(occ.limited_mean(t)) == pytest.approx(direct, rel=1e-8, abs=1e-8)
    assert 0.0 <= float(occ.limited_mean(t)) <= min(t, occ.mean) * (1 + 1e-12)


@SETTINGS
@given(occupancies)
def test_limited_mean_limits(occ):
    assert float(occ.limited_mean(0.0)) == 0.0
    assert float(occ.limited_mean(1e300)) == pytest.approx(occ.mean, rel=1e-9)
