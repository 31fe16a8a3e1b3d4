"""An async drop run with regime fields set (MODEL.md §14) in every scenario of §9, vectorised over scenarios.

The quantities of :mod:`solver.regimes.drop` per scenario, over each scenario's own cut lifetimes
``W_τ = min(W, τ)`` (its lognormal refitted, or its empirical law scaled, then cut at τ; τ per scenario when a
factor reaches ``regime.rollout_timeout``): the exceedance of W_τ, the intake ``p·F(τ)`` under ``truncated:
filter``, tokens per attempt scaled by ``mean(W_τ)/mean(W)``, one version resident under in-flight updates, the
re-prefill demand under ``recompute: prefix``, the regime's sync time ``t_s`` (a factor may reach
``regime.weight_sync_time``, ``prefill_cost`` and ``context_tokens`` too), the cap ``R_raw·mean(W_τ) <= cap`` as a
floor on the cadence, the start-up fill over W_τ (the first batch drops nothing) and, on the hold basis, E^hold
from the cut moments ``mean(W_τ)`` and ``E[min(W_τ, W'_τ)] = ∫_0^τ S(t)² dt`` (MODEL §11 item 2).

:func:`evaluate` is :func:`solver.uncertainty.scenarios.evaluate` for such a run
(:func:`solver.uncertainty.stages.evaluate_any` picks it): the realised cadence is the
smallest ``L' >= L`` at which §3's rows 2, 3, 5, 6 and 7 hold with the scenario's values, each of which only gets
easier as ``L'`` grows. The mean-gap row is ``W_use/L'`` over W_τ, and on the hold basis the consumed gap's
(§11 item 3) at the age limit K over each scenario's W_τ (:func:`consumed_mean_gap`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.solver.laws import holding
from trainground.solver.laws.calculus import exceedance_of_means
from trainground.solver.laws.goodput import inverse_goodput
from trainground.solver.laws.normal import ndtr
from trainground.solver.tolerances import REL_TOL
from trainground.solver.uncertainty import goodput
from trainground.solver.uncertainty import scenarios as sc
from trainground.solver.uncertainty.lifetimes import Lifetimes

PANEL_NODES = 48  # Gauss-Legendre nodes per panel of E[min(W_τ, W'_τ)], as solver/laws/regimes.py's
PANEL_CUTS = (-40.0, -8.0, -4.0, -2.0, 0.0, 2.0, 4.0, 8.0)  # panel edges in z = (ln t - mu)/sigma, τ's z closes


def applies(inst: Instance) -> bool:
    """``inst`` runs async drop with some regime field off its default (the seed's regime is §9's own)."""
    r = inst.regime
    return r is not None and not r.is_default and r.mode == "async" and r.staleness == "drop"


@dataclass(frozen=True)
class DropValues:
    """The regime's quantities in every scenario, (S,) arrays."""

    tau: np.ndarray | None  # the rollout timeout, s (None: no timeout)
    intake: np.ndarray  # p, or p·F(τ) under truncated: filter, before drops
    tokens: np.ndarray  # tokens per attempt after the timeout's scale
    mean_cut: np.ndarray  # mean(W_τ), s
    w_use: np.ndarray  # W_use of W_τ, s
    pair: np.ndarray  # E[min(W_τ, W'_τ)], s
    in_flight: bool
    recompute: np.ndarray | None  # per attempt of the running ones, the re-prefill tokens per publish
    sync: np.ndarray  # t_s, s
    cap: int | None

    def resident(self, kept: int) -> int:
        """The versions resident with age limit ``kept``: one under in-flight updates, else K."""
        return 1 if self.in_flight else kept

    def cut(self, t) -> np.ndarray:
        """min(t, τ) per scenario."""
        t = np.asarray(t, dtype=float)
        return t if self.tau is None else np.minimum(t, self.tau)


def values_of(inst: Instance, scen: sc.Scenarios, v: sc.Values) -> DropValues:
    """The regime's quantities per scenario, from the scenario's own lifetimes ``v.lifetimes``."""
    r = inst.regime
    assert r is not None
    life, value = v.lifetimes, scen.value
    tau = None if r.rollout_timeout is None else value("regime.rollout_timeout", r.rollout_timeout)
    mean_cut = life.mean if tau is None else life.limited_mean(tau)
    intake = v.intake
    if tau is not None and r.truncated == "filter":
        intake = v.intake * (1.0 - life.survival(tau))
    if tau is None:
        w_use = v.w_use
    else:
        w_use = mean_cut if inst.environment.littles_law_uses == "mean" else np.minimum(life.median, tau)
    tokens = v.tokens * mean_cut / life.mean
    recompute = None
    if r.in_flight_updates and r.recompute == "prefix":
        bias = second_moment(life, tau) / (2.0 * mean_cut * mean_cut)
        cost = value("regime.prefill_cost", r.prefill_cost)
        context = value("regime.context_tokens", r.context_tokens)
        recompute = mean_cut * cost * (context + tokens * bias)
    sync = v.weight_sync if r.weight_sync_time is None else value("regime.weight_sync_time", r.weight_sync_time)
    return DropValues(
        tau=tau,
        intake=intake,
        tokens=tokens,
        mean_cut=mean_cut,
        w_use=w_use,
        pair=life.pair_min_mean() if tau is None else pair_min_mean(life, tau),
        in_flight=r.in_flight_updates,
        recompute=recompute,
        sync=sync,
        cap=r.max_concurrent_attempts,
    )


def second_moment(life: Lifetimes, tau: np.ndarray | None) -> np.ndarray:
    """E[W_τ²] per scenario: E[W²; W < τ] + τ²·S(τ) (E[W²] without a timeout)."""
    if life.base is not None:
        assert life.scale is not None
        base = life.base.draws()
        x = np.full(life.scale.shape, np.inf) if tau is None else tau / life.scale
        below = np.searchsorted(base, x, side="right")
        squares = np.concatenate(([0.0], np.cumsum(base * base)))
        with np.errstate(invalid="ignore"):
            rest = np.where(below < base.size, x * x * (base.size - below), 0.0)
        return life.scale**2 * (squares[below] + rest) / base.size
    assert life.mu is not None and life.sigma is not None
    whole = np.exp(2.0 * life.mu + 2.0 * life.sigma**2)
    if tau is None:
        return whole
    z = (np.log(tau) - life.mu) / life.sigma
    return whole * ndtr(z - 2.0 * life.sigma) + tau * tau * life.survival(tau)


def pair_min_mean(life: Lifetimes, tau: np.ndarray) -> np.ndarray:
    """E[min(W_τ, W'_τ)] = ∫_0^τ S(t)² dt per scenario, W and W' independent (MODEL §11 item 2 over W_τ).

    An empirical law: its nominal law's integral, piecewise linear between samples, at τ/scale, times the scale.
    A lognormal: Gauss-Legendre panels over z = (ln t - mu)/sigma, where the integrand is
    sigma·e^(mu + sigma·z)·Φ(-z)², every scenario's panels cut at its own z of τ (a panel above it has width 0)."""
    if life.base is not None:
        assert life.scale is not None
        base = life.base.draws()
        n = base.size
        knots = np.concatenate(([0.0], base))
        survival = (n - np.arange(n)) / n  # S on [w_(i), w_(i+1))
        ramp = np.concatenate(([0.0], np.cumsum(survival**2 * np.diff(knots))))
        return life.scale * np.interp(tau / life.scale, knots, ramp)
    assert life.mu is not None and life.sigma is not None
    mu, sigma = life.mu, life.sigma
    top = (np.log(tau) - mu) / sigma
    nodes, weights = np.polynomial.legendre.leggauss(PANEL_NODES)
    total = np.exp(mu + sigma * np.minimum(PANEL_CUTS[0], top))  # below e^(mu - 40·sigma) the survival is 1
    edges = PANEL_CUTS + (np.inf,)
    for lo_edge, hi_edge in zip(edges, edges[1:]):
        lo, hi = np.minimum(lo_edge, top), np.minimum(hi_edge, top)
        z = ((hi - lo) / 2.0)[:, None] * nodes[None, :] + ((hi + lo) / 2.0)[:, None]
        tail = ndtr(-z)
        inner = weights[None, :] * sigma[:, None] * np.exp(mu[:, None] + sigma[:, None] * z) * tail * tail
        total = total + (hi - lo) / 2.0 * inner.sum(axis=1)
    return total


def evaluate(inst: Instance, plan, scen: sc.Scenarios, allowance: float = 0.0) -> sc.Outcome:
    """``plan`` (fitting ``inst``, an async drop run with regime fields set) in every scenario of ``scen``, on time
    iff ``T_s + allowance <= deadline`` (MODEL §9 with §14)."""
    from trainground.solver.uncertainty.hosts import room

    v = sc.values_of(inst, scen)
    d = values_of(inst, scen, v)
    w, K = inst.workload, age_limit(inst, plan)
    B = w.batch_trajectories
    theta = room(inst, plan, scen, v.peak_to_mean)
    if inst.holds:  # MODEL §11 item 2 over W_τ: the hosts hold E^hold from the cut moments
        rate = holding.hold_attempt_limit(inst, theta, d.mean_cut, d.pair)
    else:
        rate = theta / d.w_use
    supply = sc.token_supply(inst, plan, v, d.resident(K))
    with np.errstate(divide="ignore", invalid="ignore"):
        # each need is per unit of kept share 1 - drop(L'): the attempt rate is B/(L'·p·(1 - drop))
        need_tokens = B / d.intake * d.tokens / supply
        need_recompute = np.zeros(scen.size) if d.recompute is None else B / d.intake * d.recompute / supply
        need_rooms = B / d.intake / rate
        if d.cap is not None:  # R_raw·mean(W_τ) <= cap
            need_rooms = np.maximum(need_rooms, B * d.mean_cut / (d.intake * d.cap * (1 + REL_TOL)))
    update = np.nan_to_num(sc.update_time(inst, scen, plan.training_gpus), nan=np.inf)
    floor = np.maximum(plan.cadence_s, update / (1 + REL_TOL))
    gap_limit = np.full(scen.size, np.inf)  # on the hold basis the mean-gap row is the consumed gap's (§11 item 3)
    if v.max_mean_gap is not None and inst.holds:
        gap_limit = v.max_mean_gap * (1 + REL_TOL)
    elif v.max_mean_gap is not None:  # W_use(W_τ)/L' + post <= limit: a floor on L'
        room_gap = v.max_mean_gap * (1 + REL_TOL) - (1.0 if inst.freshness.gap_convention == "post_publish" else 0.0)
        floor = np.maximum(floor, np.where(room_gap > 0, d.w_use / np.where(room_gap > 0, room_gap, 1.0), np.inf))
    tokens, recompute, rooms = (need * (1 - REL_TOL) for need in (need_tokens, need_recompute, need_rooms))
    q_limit = sc.exceedance_limit(inst, v)

    def ok(L: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            q = exceedance(v.lifetimes, d, L, K)
            kept = 1.0 - sc.group_drop(inst, q)
            met = ((L - d.sync) * kept >= tokens + recompute / L) & (L * kept >= rooms) & (q <= q_limit)
            if np.isfinite(gap_limit).any():
                met &= consumed_mean_gap(inst, v.lifetimes, d, L, K) <= gap_limit
            return met

    need = np.maximum(tokens + recompute / np.maximum(floor, 1.0) + d.sync, rooms)
    cadence = sc.smallest_where(ok, floor, need)
    attempts = _attempts_at(inst, v, d, K, cadence)
    pace = inverse_goodput(goodput.training_goodput(inst, scen, plan.training_gpus))
    with np.errstate(invalid="ignore"):
        makespan = w.iterations * cadence * pace + v.extra
        if inst.counts_startup:
            steady = ((w.iterations - 1) * cadence + update) * pace + v.extra
            makespan = np.where(np.isfinite(attempts), cut_fill(inst, v.lifetimes, d, attempts) + steady, np.inf)
    hourly = sc.hourly_cost(inst, plan, scen)
    return sc.Outcome.of(cadence, attempts, makespan, v.deadline, hourly, allowance)


def age_limit(inst: Instance, plan) -> int:
    """The K that bounds a consumed gap: the plan's ``age_limit``, or its ``versions_kept`` without in-flight
    updates (as the verifier reads it, solver/verify/drop.py)."""
    return plan.age_limit if plan.age_limit is not None else plan.versions_kept


def exceedance(life: Lifetimes, d: DropValues, cadence, kept: int) -> np.ndarray:
    """q(L, K) of every scenario's W_τ: (E[min(W, min((K+1)L, τ))] - E[min(W, min(KL, τ))])/L (MODEL §2, §14)."""
    L = np.asarray(cadence, dtype=float)
    ends = np.broadcast_arrays(d.cut(kept * L), d.cut((kept + 1) * L), life.mean)[:2]
    at_k, at_next = life.limited_mean(np.stack(ends))
    return exceedance_of_means(at_k, at_next, L)


def consumed_mean_gap(inst: Instance, life: Lifetimes, d: DropValues, cadence: np.ndarray, kept: int) -> np.ndarray:
    """(S,) the mean consumed gap at age limit ``kept`` over every scenario's W_τ (MODEL §11 item 3), convention
    included: G = floor(u + M/L), M a group's completion time, P(G > k) = (E[min(M_τ, (k+1)L)] - E[min(M_τ, kL)])/L,
    and the mean given G <= K, (Σ_{j<K} P(G > j) - K·P(G > K))/(1 - P(G > K)); under downweight E[M_τ]/L (as
    :func:`solver.laws.holding.consumed_mean_gap` for one law)."""
    fr, g = inst.freshness, inst.workload.group_size
    post = 1.0 if fr.gap_convention == "post_publish" else 0.0
    L = np.asarray(cadence, dtype=float)

    def limited(t: np.ndarray) -> np.ndarray:  # E[min(M_τ, t)] = t' - ∫_0^t' F_grp, t' = min(t, τ)
        t = d.cut(t)
        return np.where(t > 0, t - life.completed_group_time(np.maximum(t, 1e-300), g, fr.group_correlation), 0.0)

    if fr.overrun_policy == "downweight":
        return limited(life.far() if d.tau is None else d.tau) / L + post
    means = [limited(k * L) for k in range(kept + 2)]
    tails = [np.clip((hi - lo) / L, 0.0, 1.0) for lo, hi in zip(means, means[1:])]
    below = np.sum(tails[:kept], axis=0)
    t_K = tails[kept]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (below - kept * t_K) / (1.0 - t_K)
    return np.where(t_K < 1.0, mean, np.inf) + post


def _attempts_at(inst: Instance, v: sc.Values, d: DropValues, K: int, cadence: np.ndarray) -> np.ndarray:
    """(S,) R_raw = B/(L_s·p·(1 - drop(L_s, K))) over W_τ at the realised cadences (inf where none works)."""
    at = np.isfinite(cadence)
    L = np.where(at, cadence, 1.0)
    intake = d.intake * (1.0 - sc.group_drop(inst, exceedance(v.lifetimes, d, L, K)))
    with np.errstate(divide="ignore"):
        return np.where(at & (intake > 0), inst.workload.batch_trajectories / (L * intake), np.inf)


def cut_fill(inst: Instance, life: Lifetimes, d: DropValues, attempts: np.ndarray) -> np.ndarray:
    """MODEL §8's fill over W_τ per scenario (inf where no cadence works): the smallest t with ∫_0^t F_grp,τ(s) ds =
    B/(p·R_raw), ``p`` before drops (the first batch drops nothing); F_grp,τ is 1 from τ on, so past τ the integral
    grows at rate 1 (as :func:`solver.laws.regimes.cut_fill`)."""
    w, corr = inst.workload, inst.freshness.group_correlation
    out = np.full(attempts.shape, np.inf)
    at = np.isfinite(attempts)
    if not at.any():
        return out
    sub = life.take(at)
    batch_time = w.batch_trajectories / (d.intake[at] * attempts[at])
    uncut = sub.fill(1.0 / batch_time, 1, w.group_size, 1.0, corr)
    if d.tau is None:
        out[at] = uncut
        return out
    tau = d.tau[at]
    by_tau = sub.completed_group_time(tau, w.group_size, corr)
    out[at] = np.where(batch_time <= by_tau, np.minimum(uncut, tau), tau + (batch_time - by_tau))
    return out
