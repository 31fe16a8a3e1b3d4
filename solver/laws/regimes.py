"""The closed forms of MODEL.md §14 (run regimes) over the occupancy law of solver/laws/calculus.py.

A rollout timeout τ cuts every lifetime at τ: ``W_τ = min(W, τ)`` (``tau=None``: no timeout). The batch
modes wait for the slowest attempt of a batch, ``M_N = E[max of N' draws of W_τ] = ∫_0^τ (1 - F(t)^N') dt``;
admission control waits for the slowest member of a group, ``E[M_g]``, the same integral with ``g`` draws.
These are the laws the model already has: the max of ``n`` lifetimes is MODEL §8's group-completion law with
``n`` members (solver/laws/startup.py), the cut mean is the limited mean of solver/laws/calculus.py. No pyomo, no scipy
(docs/design.md). Times are seconds.
"""

from __future__ import annotations

import math

import numpy as np

from trainground.models.instance import Instance
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import holding, startup
from trainground.solver.laws.normal import ndtr

SURVIVOR_FLOOR = 1e-12  # the publish peak's sum of survivors S(i·L) stops where S falls below this
PANEL_NODES = 48  # Gauss-Legendre nodes per panel of E[min(W_τ, W'_τ)]: a smooth integrand, exact to ~1e-13


def _z_of(occ: calc.Occupancy, t: float) -> float:
    assert occ.mu is not None and occ.sigma is not None
    return (math.log(t) - occ.mu) / occ.sigma


def timeout_mean(occ: calc.Occupancy, tau: float | None) -> float:
    """mean(W_τ) = E[min(W, τ)]; mean(W) without a timeout."""
    return occ.mean if tau is None else float(occ.limited_mean(tau))


def timeout_cdf(occ: calc.Occupancy, tau: float | None) -> float:
    """F(τ) = P(W <= τ): the share of attempts that end before the timeout (1 without one)."""
    return 1.0 if tau is None else float(1.0 - occ.survival(tau))


def token_scale(occ: calc.Occupancy, tau: float | None) -> float:
    """mean(W_τ)/mean(W): tokens of an attempt scale with its time, so a timeout cuts tokens per attempt by this."""
    return timeout_mean(occ, tau) / occ.mean


def timeout_used(occ: calc.Occupancy, tau: float | None, uses: str) -> float:
    """W_use of the lifetimes W_τ (MODEL §2 with §14): mean(W_τ), or the median min(median(W), τ)."""
    if uses == "mean":
        return timeout_mean(occ, tau)
    return occ.median if tau is None else min(occ.median, tau)


def timeout_p99(occ: calc.Occupancy, tau: float | None) -> float:
    """quantile_0.99(W_τ): min(p99, τ) for a lognormal, the 0.99 quantile of the cut samples for an empirical law."""
    if tau is None:
        return occ.p99
    if occ.samples is not None:
        return float(np.quantile(np.minimum(occ.samples, tau), 0.99))
    return min(occ.p99, tau)


def timeout_exceedance(occ: calc.Occupancy, tau: float | None, cadence, kept):
    """MODEL §2's q(L, K) of the lifetimes W_τ: (E[min(W_τ, (K+1)L)] - E[min(W_τ, KL)])/L, where E[min(W_τ, t)] =
    E[min(W, min(t, τ))] (broadcasting over cadence and K); §2's q itself without a timeout."""
    L = np.asarray(cadence, dtype=float)
    K = np.asarray(kept, dtype=float)
    low, high = K * L, (K + 1.0) * L
    if tau is not None:
        low, high = np.minimum(low, tau), np.minimum(high, tau)
    return calc.exceedance_of_means(occ.limited_mean(low), occ.limited_mean(high), L)


def second_moment(occ: calc.Occupancy, tau: float | None) -> float:
    """E[W_τ²] = E[W²; W < τ] + τ²·S(τ)."""
    if occ.samples is not None:
        cut = occ.samples if tau is None else np.minimum(occ.samples, tau)
        return float(np.mean(cut * cut))
    assert occ.mu is not None and occ.sigma is not None
    whole = math.exp(2.0 * occ.mu + 2.0 * occ.sigma**2)
    if tau is None:
        return whole
    below = whole * float(ndtr(_z_of(occ, tau) - 2.0 * occ.sigma))
    return below + tau * tau * float(occ.survival(tau))


def length_bias(occ: calc.Occupancy, tau: float | None) -> float:
    """E[W_τ²]/(2·E[W_τ]²): a running attempt's elapsed share of its own lifetime, on average, in units of the
    mean lifetime (running attempts are length-biased); 1.725 for the seed's occupancy."""
    mean = timeout_mean(occ, tau)
    return second_moment(occ, tau) / (2.0 * mean * mean)


def expected_max(occ: calc.Occupancy, draws: int, tau: float | None) -> float:
    """E[max of ``draws`` independent W_τ] = ∫_0^τ (1 - F(t)^draws) dt: the group-completion law of MODEL §8
    (solver/laws/startup.py) with ``draws`` members, cut at τ as E[min(M, τ)] = τ - ∫_0^τ F(t)^draws dt."""
    if tau is None:
        return startup.group_completion_mean(occ, draws, "independent")
    return tau - float(startup.completed_group_time(occ, tau, draws, "independent"))


def consumed_gaps(occ: calc.Occupancy, draws: int, tau: float | None, cadence: float) -> tuple[float, int]:
    """(mean, p99) of the consumed gap G = floor(u + M/L), M the max of ``draws`` lifetimes W_τ, not truncated
    at any K (admission, MODEL §14; §11 item 3's law): the mean is E[M]/L, the p99 the smallest k with
    P(G <= k) >= 0.99, where P(G > k) = (E[min(M, (k+1)L)] - E[min(M, kL)])/L. Consumer convention."""
    top = 16
    while True:
        multiples = np.arange(top + 2) * cadence
        cut = multiples if tau is None else np.minimum(multiples, tau)
        limited = cut - startup.completed_group_time(occ, cut, draws, "independent")  # E[min(M, cut)]
        tails = np.clip(np.diff(limited) / cadence, 0.0, 1.0)
        reached = np.flatnonzero(1.0 - tails >= 0.99)
        if reached.size:
            return expected_max(occ, draws, tau) / cadence, int(reached[0])
        top *= 2


def survivors_sum(occ: calc.Occupancy, tau: float | None, cadence: float) -> float:
    """Σ_{i>=0} S_τ(i·L): the attempts of a burst launched at one publish still running at a later one, summed
    over the bursts before (S_τ(t) = S(t) below τ, 0 from τ on); the terms stop where S falls below SURVIVOR_FLOOR."""
    far = occ.quantile(1.0 - SURVIVOR_FLOOR) if tau is None else tau
    times = np.arange(int(math.ceil(far / cadence)) + 1) * cadence
    alive = occ.survival(times)
    if tau is not None:
        alive = np.where(times < tau, alive, 0.0)
    return float(np.sum(alive))


def publish_peak(batch: int, intake_eff: float, share: float, occ, tau: float | None, cadence: float) -> float:
    """Admission's sandbox peak of one backend: (B/p)·s_b·Σ_{i>=0} S_τ(i·L), groups launched in a burst at each
    publish when the admission row binds, plus the survivors of earlier bursts."""
    return batch / intake_eff * share * survivors_sum(occ, tau, cadence)


def max_quantile(occ: calc.Occupancy, draws: int, q: float, tau: float | None) -> float:
    """The q-quantile of the max of ``draws`` independent W_τ: F⁻¹(q^(1/draws)), at most τ."""
    level = q ** (1.0 / draws)
    value = occ.quantile(level)
    return value if tau is None else min(value, tau)


def sync_time(inst: Instance) -> float:
    """t_s: regime.weight_sync_time, else reliability.weight_sync_time, else 0."""
    own = inst.regime.weight_sync_time if inst.regime is not None else None
    if own is not None:
        return own
    return inst.reliability.weight_sync_time if inst.reliability is not None else 0.0


def timeout_of(inst: Instance) -> float | None:
    return inst.regime.rollout_timeout if inst.regime is not None else None


def intake(inst: Instance, occ: calc.Occupancy) -> float:
    """p, or p·F(τ) when cut-short attempts are filtered (truncated: filter)."""
    p = inst.workload.intake_rate
    r = inst.regime
    if r is not None and r.rollout_timeout is not None and r.truncated == "filter":
        return p * timeout_cdf(occ, r.rollout_timeout)
    return p


def attempts_per_batch(batch: int, group_size: int, intake_eff: float) -> int:
    """N = g·ceil(B/(g·p_eff)): the attempts a batch mode launches together."""
    return group_size * int(calc.ceil_tol(batch / (group_size * intake_eff)))


def batch_draws(inst: Instance, attempts: int) -> int:
    """N': the independent lifetimes among a batch's N attempts (N, or N/g when members are comonotone)."""
    if inst.freshness.group_correlation == "comonotone":
        return attempts // inst.workload.group_size
    return attempts


def group_draws(inst: Instance) -> int:
    """The independent lifetimes of one group: g, or 1 when members are comonotone."""
    return 1 if inst.freshness.group_correlation == "comonotone" else inst.workload.group_size


def generation_phase(attempts: int, tokens: float, supply: float, slowest: float) -> float:
    """D = max(N·tokens/S, M_N): the throughput-bound time, or the wait for the slowest attempt."""
    return max(attempts * tokens / supply, slowest)


def busy_share(attempts: int, tokens: float, supply: float, phase: float) -> float:
    """N·tokens/(S·D): the share of the generation phase the supply is busy."""
    return attempts * tokens / (supply * phase)


def colocated_cadence(phase: float, update: float, sync: float, switch: float) -> float:
    """The least admissible L of colocated: D + U + t_s + switch_time."""
    return phase + update + sync + switch


def pipelined_cadence(phase: float, update: float, sync: float, steps_ahead: float) -> float:
    """The least admissible L of pipelined: k = 0 D + U + t_s; k = 1 max(D, U) + t_s."""
    return (phase + update if steps_ahead == 0 else max(phase, update)) + sync


def admission_cadence(group_max: float, intake_eff: float, update: float, sync: float, steps_ahead: float) -> float:
    """The admission row (Little's law over the (k+1)·B/g slots): L >= (E[M_g]/p + U + t_s)/(k + 1/2)."""
    return (group_max / intake_eff + update + sync) / (steps_ahead + 0.5)


def recompute_demand(
    attempts_per_s: float, mean_tau: float, prefill_cost: float, context: float, tokens: float, bias: float, cadence
) -> float:
    """Tokens/s that recompute: prefix adds: R_raw·mean(W_τ)·prefill_cost·(context + tokens·bias)/L, the
    running attempts re-prefilled at every publish."""
    return attempts_per_s * mean_tau * prefill_cost * (context + tokens * bias) / cadence


def pair_min_mean(occ: calc.Occupancy, tau: float | None) -> float:
    """E[min(W_τ, W'_τ)] = ∫_0^τ S(t)² dt for two independent cut lifetimes (MODEL §11 item 2 on W_τ): §11's
    E[min(W, W')] without a timeout; an empirical law's squared step survival up to τ; a lognormal's by
    Gauss-Legendre panels over z = (ln t - mu)/sigma, where the integrand is sigma·e^(mu + sigma·z)·Φ(-z)²."""
    if tau is None:
        return holding.pair_min_mean(occ)
    if occ.samples is not None:
        knots = np.minimum(np.concatenate(([0.0], occ.samples)), tau)
        n = occ.samples.size
        survival = (n - np.arange(n)) / n  # S on [w_(i), w_(i+1))
        return float(np.sum(survival**2 * np.diff(knots)))
    assert occ.mu is not None and occ.sigma is not None
    top = _z_of(occ, tau)
    nodes, weights = np.polynomial.legendre.leggauss(PANEL_NODES)
    cuts = [c for c in (-40.0, -8.0, -4.0, -2.0, 0.0, 2.0, 4.0, 8.0) if c < top] + [top]
    total = math.exp(occ.mu + occ.sigma * cuts[0])  # below e^(mu - 40·sigma) the survival is 1
    for lo, hi in zip(cuts, cuts[1:]):
        z = (hi - lo) / 2.0 * nodes + (hi + lo) / 2.0
        tail = ndtr(-z)
        total += (hi - lo) / 2.0 * float(np.sum(weights * occ.sigma * np.exp(occ.mu + occ.sigma * z) * tail * tail))
    return total


def hold_inflight(inst: Instance, occ: calc.Occupancy, tau: float | None, attempts) -> np.ndarray:
    """(rates, backends) E^hold_b = R_raw·s_b·mean(W_τ) + β·sqrt(V_b) of MODEL §11 item 2 over the cut lifetimes
    W_τ (§14: every formula reads W_τ), at attempt rates ``attempts``."""
    beta = holding.safety_factor(inst.planning.sandbox_wait)
    mean, pair = timeout_mean(occ, tau), pair_min_mean(occ, tau)
    attempts = np.asarray(attempts, dtype=float)
    g, correlation = inst.workload.group_size, inst.freshness.group_correlation
    columns = [
        attempts * b.share * mean
        + beta * np.sqrt(np.maximum(attempts * holding.variance_rate(mean, pair, b.share, g, correlation), 0.0))
        for b in inst.environment.backends
    ]
    return np.stack(columns, axis=-1) if columns else np.zeros(attempts.shape + (0,))


def cut_fill(occ: calc.Occupancy, batch_time: np.ndarray, group_size: int, correlation: str, tau: float | None):
    """The start-up fill of MODEL §8 over cut lifetimes: the smallest t with ∫_0^t F_grp,τ(s) ds = ``batch_time``,
    the time one batch's launches take (B/(p·R_raw); L for an admission run). F_grp,τ is F_grp below τ and 1 from
    τ on, so past τ the integral grows at rate 1."""
    batch_time = np.asarray(batch_time, dtype=float)
    uncut = startup.fill(occ, 1.0 / batch_time, 1.0, group_size, 1.0, correlation)
    if tau is None:
        return uncut
    by_tau = float(startup.completed_group_time(occ, tau, group_size, correlation))
    return np.where(batch_time <= by_tau, np.minimum(uncut, tau), tau + (batch_time - by_tau))
