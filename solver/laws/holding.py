"""The closed forms of MODEL.md §11 (plans that hold) that the model's rows read: sandboxes sized for the
in-flight count's fluctuation, and the version gap of what batches consume. No pyomo; vectorised.

- E[min(W, W')] for two independent lifetimes, and the variance ``V_b`` of backend b's in-flight count
  under the launch process `simulate` uses by default (evenly spaced groups of g members);
- β of the Halfin–Whitt rule ``1/(1 + β·Φ(β)/φ(β)) = sandbox_wait``, and ``E^hold_b = R_raw·s_b·mean(W)
  + β·sqrt(V_b)``;
- the consumed gap ``G = floor(u + M/L)``, M a group's completion time: its mean and p99 given
  ``G <= K`` (drop) or unconditioned (downweight).
"""

from __future__ import annotations

import math

import numpy as np

from trainground.models.instance import Instance
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import startup
from trainground.solver.tolerances import QUANTILE_TOL


def pair_min_mean(occ: calc.Occupancy) -> float:
    """E[min(W, W')] = ∫_0^∞ S(t)² dt, W and W' independent lifetimes: 2·mean·Φ(-sigma/√2) for a lognormal
    (E[max] = 2·mean·Φ(sigma/√2)); for an empirical law (draws from its samples), the integral of the
    squared step survival function."""
    if occ.samples is None:
        return 2.0 * occ.mean * 0.5 * math.erfc(occ.sigma / 2.0)
    n = occ.samples.size
    widths = np.diff(np.concatenate(([0.0], occ.samples)))
    survival = (n - np.arange(n)) / n  # S on [w_(i), w_(i+1)), w_(0) = 0
    return float(np.sum(survival**2 * widths))


def variance_rate(mean, pair_min, share: float, group_size: int, correlation: str):
    """V_b / R_raw of MODEL §11 item 2 (V_b is proportional to the attempt rate) for a backend of share
    ``share``, from mean(W) and E[min(W, W')] (numbers, or arrays over scenarios)."""
    mean, pair_min = np.asarray(mean, dtype=float), np.asarray(pair_min, dtype=float)
    if correlation == "comonotone":
        return share * (1.0 - share) * mean + group_size * share**2 * (mean - pair_min)
    return share * (mean - share * pair_min)


def inflight_variance(occ: calc.Occupancy, attempts, share: float, group_size: int, correlation: str):
    """V_b of MODEL §11 item 2 at attempt rates ``attempts`` (1/s) for a backend of share ``share``."""
    attempts = np.asarray(attempts, dtype=float)
    return attempts * variance_rate(occ.mean, pair_min_mean(occ), share, group_size, correlation)


def _halfin_whitt(beta: float) -> float:
    """β·Φ(β)/φ(β), increasing in β > 0."""
    cdf = 0.5 * math.erfc(-beta / math.sqrt(2.0))
    return beta * cdf * math.sqrt(2.0 * math.pi) * math.exp(beta * beta / 2.0)


def safety_factor(sandbox_wait: float) -> float:
    """β > 0 with 1/(1 + β·Φ(β)/φ(β)) = sandbox_wait (bisection to the last bits)."""
    target = 1.0 / sandbox_wait - 1.0
    lo, hi = 0.0, 1.0
    while _halfin_whitt(hi) < target:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if _halfin_whitt(mid) < target else (lo, mid)
    return hi


def wait_probability(capacity: float, load: float, variance: float) -> float:
    """The share of one backend's attempts that wait for one of ``capacity`` sandboxes, its in-flight count of
    mean ``load`` and variance ``variance``: Halfin–Whitt's 1/(1 + β·Φ(β)/φ(β)) at β = (capacity - load)/sqrt(V),
    the rule of MODEL §11 item 2 read the other way (the share a given capacity gives); 1 where the sandboxes do
    not exceed the mean (β <= 0), 0 where they are unlimited or the count does not vary."""
    if not math.isfinite(capacity) or load <= 0:
        return 0.0
    if capacity <= load:
        return 1.0
    if variance <= 0:
        return 0.0
    beta = (capacity - load) / math.sqrt(variance)
    if beta > WAIT_BETA_MAX:
        return 0.0
    return 1.0 / (1.0 + _halfin_whitt(beta))


WAIT_BETA_MAX = 35.0  # beyond, the share is below 1e-260 and φ(β) underflows: no attempt waits


def wait_share(
    occ: calc.Occupancy,
    attempts: float,
    shares,
    capacity,
    group_size: int,
    correlation: str,
    moments: tuple[float, float] | None = None,
) -> float:
    """The model's share of all attempts that wait for a sandbox: each backend's :func:`wait_probability` at its
    ``capacity`` (sandboxes, inf for unlimited), its load R_raw·s_b·mean(W) and V_b (MODEL §11 item 2), weighted
    by its share of the attempts ``shares``. ``moments``: (mean(W), E[min(W, W')]) of lifetimes other than the
    law's own (MODEL §14's W_τ under a rollout timeout)."""
    mean, pair = moments or (occ.mean, pair_min_mean(occ))
    total = 0.0
    for share, sandboxes in zip(shares, capacity):
        if share <= 0:
            continue
        variance = float(attempts * variance_rate(mean, pair, share, group_size, correlation))
        total += share * wait_probability(float(sandboxes), attempts * share * mean, variance)
    return total


def hold_inflight(inst, occ: calc.Occupancy, attempts) -> np.ndarray:
    """(pairs, backends) E^hold_b = R_raw·s_b·mean(W) + β·sqrt(V_b) at attempt rates ``attempts``."""
    env, w = inst.environment, inst.workload
    beta = safety_factor(inst.planning.sandbox_wait)
    attempts = np.asarray(attempts, dtype=float)
    columns = []
    for b in env.backends:
        variance = inflight_variance(occ, attempts, b.share, w.group_size, inst.freshness.group_correlation)
        columns.append(attempts * b.share * occ.mean + beta * np.sqrt(np.maximum(variance, 0.0)))
    return np.stack(columns, axis=-1) if columns else np.zeros(attempts.shape + (0,))


def _group_limited_mean(occ: calc.Occupancy, t, group_size: int, correlation: str, tau: float | None = None):
    """E[min(M, t)] = t - ∫_0^t F_grp(s) ds, M a group's completion time; with a rollout timeout τ (MODEL §14)
    the group's lifetimes are W_τ = min(W, τ), so M_τ = min(M, τ) and E[min(M_τ, t)] = E[min(M, min(t, τ))]."""
    t = np.asarray(t, dtype=float)
    if tau is not None:
        t = np.minimum(t, tau)
    return t - startup.completed_group_time(occ, t, group_size, correlation)


def gap_tails(
    occ: calc.Occupancy, cadence, top: int, group_size: int, correlation: str, tau: float | None = None
) -> np.ndarray:
    """(grid, top + 1): P(G > k) = ∫_k^{k+1} S_M(vL) dv for k = 0..top, G the consumed gap floor(u + M/L) (M of
    lifetimes cut at ``tau``, when given)."""
    L = np.atleast_1d(np.asarray(cadence, dtype=float))
    multiples = np.arange(top + 2)[None, :] * L[:, None]
    means = _group_limited_mean(occ, multiples, group_size, correlation, tau)
    return np.clip(np.diff(means, axis=1) / L[:, None], 0.0, 1.0)


def consumed_mean_gap(occ: calc.Occupancy, cadence, kept_top: int, inst, tau: float | None = None) -> np.ndarray:
    """(grid, kept_top): the mean consumed gap at K = 1..kept_top (MODEL §11 item 3), convention included;
    ``tau``: the rollout timeout that cuts every lifetime (MODEL §14), None without one."""
    fr, g = inst.freshness, inst.workload.group_size
    post = 1.0 if fr.gap_convention == "post_publish" else 0.0
    tails = gap_tails(occ, cadence, kept_top, g, fr.group_correlation, tau)
    if fr.overrun_policy == "downweight":
        L = np.atleast_1d(np.asarray(cadence, dtype=float))
        whole = (
            startup.group_completion_mean(occ, g, fr.group_correlation)
            if tau is None
            else float(_group_limited_mean(occ, tau, g, fr.group_correlation))
        )
        mean = whole / L
        return np.repeat(mean[:, None], kept_top, axis=1) + post
    below = np.cumsum(tails, axis=1)  # Σ_{j=0}^{K-1} t_j at column K-1
    K = np.arange(1, kept_top + 1)[None, :]
    t_K = tails[:, 1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (below[:, :-1] - K * t_K) / (1.0 - t_K)
    return np.where(t_K < 1.0, mean, np.inf) + post


def consumed_gaps(
    inst, occ: calc.Occupancy, cadence: float, kept: int, tau: float | None = None
) -> tuple[float, float]:
    """(mean, p99) of the consumed gap at one (L, K) (MODEL §11 item 3), convention included; ``tau`` as
    :func:`consumed_mean_gap`'s."""
    fr, g = inst.freshness, inst.workload.group_size
    post = 1.0 if fr.gap_convention == "post_publish" else 0.0
    mean = float(consumed_mean_gap(occ, cadence, kept, inst, tau)[0, kept - 1])
    if fr.overrun_policy == "downweight":
        top = kept
        while True:
            tails = gap_tails(occ, cadence, top, g, fr.group_correlation, tau)[0]
            reached = np.flatnonzero(1.0 - tails >= 0.99)
            if reached.size:
                return mean, float(reached[0]) + post
            top *= 2
    tails = gap_tails(occ, cadence, kept, g, fr.group_correlation, tau)[0]
    kept_share = 1.0 - tails[kept]
    reached = np.flatnonzero(1.0 - tails[: kept + 1] >= 0.99 * kept_share * (1 - QUANTILE_TOL))
    return mean, float(reached[0] if reached.size else kept) + post


def sandbox_loads(inst: Instance, attempts: np.ndarray, w_use: float) -> tuple[np.ndarray, np.ndarray]:
    """(pairs, backends) in-flight environments at attempt rates ``attempts``, and per pair the attempt rate
    whose Little's-law loads ``rate·s_b·W`` (W as the sandbox bounds use it: :func:`sandbox_occupancy`) stay
    within every backend's: E_b = R_raw·s_b·W_use (MODEL §2), or E^hold_b under hold (§11 item 2)."""
    shares = np.array([b.share for b in inst.environment.backends])
    if not inst.holds:
        return (attempts * w_use)[:, None] * shares[None, :], attempts
    occ = calc.occupancy_of(inst.environment.occupancy)
    inflight = hold_inflight(inst, occ, attempts)
    active = shares > 0
    if not active.any():
        return inflight, attempts
    return inflight, np.min(inflight[:, active] / (shares[active] * occ.mean)[None, :], axis=1)


def sandbox_occupancy(inst: Instance) -> float:
    """The in-flight environments per attempt/s that the sandbox loads are proportional to: W_use (MODEL §2),
    or mean(W) under hold, whatever littles_law_uses says (§11 item 2)."""
    occ = calc.occupancy_of(inst.environment.occupancy)
    return occ.mean if inst.holds else calc.occupancy_used(occ, inst.environment.littles_law_uses)


def hold_level(inst: Instance, attempts, mean, pair_min) -> np.ndarray:
    """The environments ℓ whose split by the backends' shares holds every E^hold_b (MODEL §11 item 2):
    max over active backends of E^hold_b / s_b = R_raw·mean(W) + β·max_b sqrt(R_raw·c_b)/s_b, with
    ``c_b = V_b/R_raw``. ``attempts``, ``mean`` and ``pair_min`` broadcast (e.g. over scenarios)."""
    attempts = np.asarray(attempts, dtype=float)
    return attempts * np.asarray(mean, dtype=float) + _spread(inst, mean, pair_min) * np.sqrt(attempts)


def hold_attempt_limit(inst: Instance, room, mean, pair_min) -> np.ndarray:
    """The largest attempt rate R_raw whose :func:`hold_level` stays within ``room`` environments: the root
    in x = sqrt(R) of mean·x² + a·x = room, a = β·max_b sqrt(c_b)/s_b (broadcasting)."""
    room, mean = np.asarray(room, dtype=float), np.asarray(mean, dtype=float)
    a = _spread(inst, mean, pair_min)
    with np.errstate(invalid="ignore", over="ignore"):
        x = 2.0 * room / (a + np.sqrt(a * a + 4.0 * mean * room))  # the root, stable when a dominates
    return np.where(room > 0, x * x, 0.0)


def _spread(inst: Instance, mean, pair_min) -> np.ndarray:
    """β·max_b sqrt(c_b)/s_b over the backends with a share (0 without any)."""
    w, env = inst.workload, inst.environment
    beta = safety_factor(inst.planning.sandbox_wait)
    terms = [
        np.sqrt(np.maximum(variance_rate(mean, pair_min, b.share, w.group_size, inst.freshness.group_correlation), 0))
        / b.share
        for b in env.backends
        if b.share > 0
    ]
    return beta * np.max(np.stack(terms), axis=0) if terms else np.zeros(np.shape(mean))
