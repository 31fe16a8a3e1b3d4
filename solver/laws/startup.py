"""MODEL.md §8's start-up: when a group completes (F_grp), the completed-group time ∫_0^t F_grp, and the
fill, the time the first batch takes to form, vectorised over attempt rates. No pyomo here."""

from __future__ import annotations

import math

import numpy as np

from trainground.models.instance import Instance
from trainground.solver.laws.calculus import Occupancy, ndtr, occupancy_of
from trainground.solver.laws.normal import chunked
from trainground.solver.tolerances import NEWTON_STEP_TOL, SLOPE_FLOOR

_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(16)
_PANEL = 0.25
_Z_FLOOR, _Z_TOP = -12.0, 12.0
MASS_CHUNK = 512  # intervals per pass of _lognormal_mass: 8,192 nodes


def group_completion_cdf(occ: Occupancy, t, group_size: int, correlation: str):
    """F_grp(t): the CDF of a group's completion time, F(t)^g (independent) or F(t) (comonotone)."""
    cdf = 1.0 - occ.survival(np.maximum(np.asarray(t, dtype=float), 0.0))
    return cdf if correlation == "comonotone" or group_size == 1 else cdf**group_size


def completed_group_time(occ: Occupancy, t, group_size: int, correlation: str):
    """∫_0^t F_grp(s) ds for t >= 0 (vectorised).

    Comonotone (or g = 1): t - E[min(W, t)]. Independent: exact and piecewise linear for an
    empirical law; Gauss-Legendre panels over z for a lognormal, where the integrand
    sigma·e^(mu+sigma·z)·Φ(z)^g is smooth.
    """
    t = np.maximum(np.asarray(t, dtype=float), 0.0)
    if correlation == "comonotone" or group_size == 1:
        return t - occ.limited_mean(t)
    if occ.samples is not None:
        knots, level, ramp = _empirical_ramp(occ, group_size)
        i = np.searchsorted(knots, t, side="right") - 1
        return np.where(i >= 0, ramp[np.maximum(i, 0)] + level[np.maximum(i, 0)] * (t - knots[np.maximum(i, 0)]), 0.0)
    edges, cum = _lognormal_ramp(occ, group_size)
    mu, sigma = occ.log_params()
    with np.errstate(divide="ignore"):
        z = (np.log(t) - mu) / sigma
    zc = np.clip(np.nan_to_num(z, neginf=_Z_FLOOR), _Z_FLOOR, _Z_TOP)
    i = np.minimum(((zc - _Z_FLOOR) / _PANEL).astype(int), edges.size - 2)
    inside = cum[i] + _lognormal_mass(occ, group_size, edges[i], zc)
    beyond = cum[-1] + t - math.exp(mu + sigma * _Z_TOP)
    return np.where(z <= _Z_FLOOR, 0.0, np.where(z >= _Z_TOP, beyond, inside))


def _lognormal_mass(occ: Occupancy, group_size: int, lo, hi):
    """∫_lo^hi sigma·e^(mu+sigma·z)·Φ(z)^g dz by 16-point Gauss-Legendre (vectorised; each hi - lo <= _PANEL),
    MASS_CHUNK intervals at a time (their nodes' temporaries stay in cache)."""
    lo, hi = np.broadcast_arrays(np.asarray(lo, dtype=float), np.asarray(hi, dtype=float))
    mu, sigma = occ.log_params()

    def mass(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        half = (b - a) / 2
        z = (a + half)[:, None] + half[:, None] * _NODES
        f = sigma * np.exp(mu + sigma * z) * ndtr(z) ** group_size
        return (f * _WEIGHTS).sum(axis=-1) * half

    return chunked(mass, MASS_CHUNK, lo.ravel(), hi.ravel()).reshape(lo.shape)


def _lognormal_ramp(occ: Occupancy, group_size: int):
    """Panel edges in z and ∫_0^(e^(mu+sigma·edge)) F(s)^g ds at each."""
    edges = _Z_FLOOR + _PANEL * np.arange(round((_Z_TOP - _Z_FLOOR) / _PANEL) + 1)
    cum = np.concatenate(([0.0], np.cumsum(_lognormal_mass(occ, group_size, edges[:-1], edges[1:]))))
    return edges, cum


def _empirical_ramp(occ: Occupancy, group_size: int):
    """Knots of the exact piecewise-linear ∫_0^t F(s)^g ds of an empirical law: (knot, slope after it,
    integral at it), the first knot at 0."""
    samples = occ.draws()
    values, counts = np.unique(samples, return_counts=True)
    level: np.ndarray = np.concatenate(([0.0], (np.cumsum(counts) / samples.size) ** group_size))
    knots = np.concatenate(([0.0], values))
    ramp = np.concatenate(([0.0], np.cumsum(level[:-1] * np.diff(knots))))
    return knots, level, ramp


def group_completion_mean(occ: Occupancy, group_size: int, correlation: str) -> float:
    """E[group completion time] = ∫_0^∞ (1 - F_grp(s)) ds: E[W] (comonotone or g = 1), else E[max of g W]."""
    if correlation == "comonotone" or group_size == 1:
        return occ.mean
    if occ.samples is not None:
        knots, level, ramp = _empirical_ramp(occ, group_size)
        return float(knots[-1] - ramp[-1])
    # ∫ (1 - F^g) over z directly (not e^(mu + sigma·Z_TOP) - ∫ F^g, which cancels for a wide law); below
    # Z_FLOOR the survival is 1 to double precision, above Z_TOP its mass is below it.
    edges = _Z_FLOOR + _PANEL * np.arange(round((_Z_TOP - _Z_FLOOR) / _PANEL) + 1)
    half = (edges[1:] - edges[:-1]) / 2
    z = (edges[:-1] + half)[:, None] + half[:, None] * _NODES
    mu, sigma = occ.log_params()
    with np.errstate(divide="ignore"):  # F = 0 far below the median: log 0, and the survival 1
        f = sigma * np.exp(mu + sigma * z) * -np.expm1(group_size * np.log1p(-ndtr(-z)))
    return float(math.exp(mu + sigma * _Z_FLOOR) + ((f * _WEIGHTS).sum(axis=-1) * half).sum())


def fill(
    occ: Occupancy, attempts_per_s, batch_trajectories: float, group_size: int, intake_rate: float, correlation: str
):
    """Start-up time of MODEL.md §8 (vectorised over attempt rates R_raw): the smallest t >= 0 with
    p·R_raw·∫_0^t F_grp(s) ds >= B.

    An empirical law is inverted exactly (the integral is piecewise linear). Otherwise the
    integral lies between t - E[group completion] and t, and Newton's step from
    t0 = B/(p·R_raw) + E[group completion] descends monotonically onto the root of this
    convex increasing function.
    """
    target = batch_trajectories / (intake_rate * np.asarray(attempts_per_s, dtype=float))
    independent = correlation != "comonotone" and group_size > 1
    if occ.samples is not None:
        knots, level, ramp = _empirical_ramp(occ, group_size if independent else 1)
        i = np.clip(np.searchsorted(ramp, target, side="left") - 1, 0, knots.size - 1)
        return knots[i] + (target - ramp[i]) / level[i]
    t = np.array(target + group_completion_mean(occ, group_size, correlation), dtype=float)
    target = np.broadcast_to(target, t.shape)
    flat, goal = t.reshape(-1), target.reshape(-1)
    if flat.size > FILL_COARSE_FROM:  # start each rate at the fill of a slower rate: above its root, and close
        flat[:] = _fill_above(
            occ,
            np.asarray(attempts_per_s, dtype=float).reshape(-1),
            goal,
            flat,
            group_size,
            intake_rate,
            batch_trajectories,
            correlation,
        )
    live = np.arange(flat.size)  # the rates whose Newton step has not yet fallen below the tolerance
    for _ in range(100):
        here = flat[live]
        slope = group_completion_cdf(occ, here, group_size, correlation)
        step = (completed_group_time(occ, here, group_size, correlation) - goal[live]) / np.maximum(slope, SLOPE_FLOOR)
        flat[live] = np.maximum(here - np.maximum(step, 0.0), goal[live])
        live = live[step > NEWTON_STEP_TOL * flat[live]]
        if live.size == 0:
            break
    return t if t.ndim else float(t)


FILL_COARSE_FROM = 4096  # rates per fill call from which Newton starts at a coarse subset's fills
FILL_COARSE_EVERY = 64  # one rate in this many (in rate order) is solved first


def _fill_above(occ, rates, goal, start, group_size, intake_rate, batch_trajectories, correlation):
    """Newton starts for :func:`fill` at many rates: the fill is decreasing in the rate, so the fill at the
    nearest slower rate of a coarse subset (every FILL_COARSE_EVERY-th in rate order, the slowest included)
    is at or above each rate's root, where Newton descends from, and near it on a fine grid of rates."""
    order = np.argsort(rates, kind="stable")
    coarse = order[::FILL_COARSE_EVERY]
    upper = np.empty_like(start)
    upper[order] = np.repeat(
        fill(occ, rates[coarse], batch_trajectories, group_size, intake_rate, correlation), FILL_COARSE_EVERY
    )[: order.size]
    return np.clip(upper, goal, start)


def run_fill(inst: Instance, attempts_per_s):
    """:func:`fill` of ``inst``'s run (its occupancy, batch, groups, intake and correlation) at attempt rates
    ``attempts_per_s``: when the first batch of a plan with that rate forms (MODEL §8)."""
    w = inst.workload
    return fill(
        occupancy_of(inst.environment.occupancy),
        attempts_per_s,
        w.batch_trajectories,
        w.group_size,
        w.intake_rate,
        inst.freshness.group_correlation,
    )
