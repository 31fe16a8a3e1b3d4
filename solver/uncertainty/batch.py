"""A batch run (MODEL.md §14: pipelined with steps_ahead 0 or 1, or colocated) in every scenario of §9, vectorised
over scenarios.

The plan is fixed: its replicas, training groups, nodes and VMs. Scenario s has its own values: the lifetimes W_τ of
:mod:`solver.uncertainty.drop` (its lognormal refitted, or its empirical law scaled, then cut at τ), intake ``p``
(``p·F(τ)`` under ``truncated: filter``), tokens per attempt times ``mean(W_τ)/mean(W)``, tokens/s per GPU, the
update time ``U_s`` of the plan's training GPUs, the sync time ``t_s`` and ``switch_time``. Then
``N_s = g·ceil(B/(g·p_eff,s))``, ``M_N,s = E[max of N' draws of W_τ] = ∫_0^τ (1 - F_s(t)^N') dt`` (``N' = N_s``, or
``N_s/g`` under comonotone; :func:`expected_max`), ``D_s = max(N_s·tokens_s/S_s, M_N,s)`` with ``S_s`` the plan's
replicas' supply at the scenario's rates (one version resident), and the realised cadence is the smallest
``L' >= L`` at which the regime's row holds (``k = 0``: ``D_s + U_s + t_s``; ``k = 1``: ``max(D_s, U_s) + t_s``;
colocated: ``D_s + U_s + t_s + switch_time``) and the plan's hosts hold the mean load ``(N_s/L')·W_use·s_b`` (rows
5-6 with ``peak_to_mean``). ``T_s = n·L'_s + extra_time``: the start-up is inside ``L`` (pipelined ``k = 1`` with
the start-up counted is not planned, and refused).

A batch launches all ``N_s`` attempts at once, so the hosts must hold the launch peak at any cadence
(:func:`solver.regimes.batch.launch_peak`: ``N·s_b``, under hold ``N·s_b + β·sqrt(N·s_b·(1 - s_b))``), and the
controller's cap asks ``N_s <= max_concurrent_attempts``: a scenario that breaks either has no cadence that works,
and its makespan is inf (never on time). With one active backend, or on the steady_state basis (where the launch
peak is proportional to the shares), the peak row's ``max(peak_to_mean·E_b, launch_b)`` is checked exactly; under
hold with several backends the mean-load and the launch rows are checked each on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.solver.laws import holding
from trainground.solver.laws.calculus import ceil_tol
from trainground.solver.laws.normal import ndtr
from trainground.solver.tolerances import REL_TOL
from trainground.solver.uncertainty import drop
from trainground.solver.uncertainty import scenarios as sc
from trainground.solver.uncertainty.lifetimes import Lifetimes

# E[max] of a lognormal over z = (ln t - mu)/sigma: 16-point Gauss-Legendre panels of width 0.25 from -12 (below it
# the max's survival is 1 to double precision) to 12 (above it N'·Φ(-z) is below 1e-25 for any batch of up to 1e8
# draws), as solver/laws/startup.py's panels for one law.
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(16)
_Z_FLOOR, _Z_TOP, _PANEL = -12.0, 12.0, 0.25
_EDGES = _Z_FLOOR + _PANEL * np.arange(round((_Z_TOP - _Z_FLOOR) / _PANEL) + 1)


def applies(inst: Instance) -> bool:
    """``inst`` runs a batch regime (pipelined or colocated)."""
    return inst.regime is not None and inst.regime.batched


@dataclass(frozen=True)
class BatchValues:
    """The batch's quantities in every scenario, (S,) arrays."""

    attempts: np.ndarray  # N_s
    slowest: np.ndarray  # M_N,s, s
    tokens: np.ndarray  # tokens per attempt after the timeout's scale
    w_use: np.ndarray  # W_use of W_τ, s
    sync: np.ndarray  # t_s, s
    switch: np.ndarray  # colocated: switch_time (0 otherwise), s


def values_of(inst: Instance, scen: sc.Scenarios, v: sc.Values) -> BatchValues:
    """The batch's quantities per scenario, from the scenario's own lifetimes ``v.lifetimes`` (as
    :func:`solver.regimes.batch.batch_of` reads them for one instance)."""
    r = inst.regime
    assert r is not None
    d = drop.values_of(inst, scen, v)
    g = inst.workload.group_size
    attempts = g * ceil_tol(inst.workload.batch_trajectories / (g * d.intake))
    draws = attempts / g if inst.freshness.group_correlation == "comonotone" else attempts
    switch = scen.value("regime.switch_time", r.switch_time) if r.mode == "colocated" else np.zeros(scen.size)
    return BatchValues(
        attempts=attempts,
        slowest=expected_max(v.lifetimes, draws, d.tau),
        tokens=d.tokens,
        w_use=d.w_use,
        sync=d.sync,
        switch=switch,
    )


def expected_max(life: Lifetimes, draws: np.ndarray, tau: np.ndarray | None) -> np.ndarray:
    """(S,) E[max of ``draws`` independent W_τ] = ∫_0^τ (1 - F(t)^draws) dt per scenario (to infinity without a
    timeout). An empirical law: F is the scaled samples' step function, so the integral is a sum over the samples'
    intervals. A lognormal: fixed Gauss-Legendre panels over z, where the integrand is
    sigma·e^(mu + sigma·z)·(1 - Φ(z)^draws), each scenario's panels cut at its own z of τ."""
    n = np.asarray(draws, dtype=float)
    if life.base is not None:
        assert life.scale is not None
        base = life.base.draws()
        knots = np.concatenate(([0.0], base))
        top = np.full(n.shape, np.inf) if tau is None else tau / life.scale
        widths = np.clip(np.minimum(knots[None, 1:], top[:, None]) - knots[None, :-1], 0.0, None)
        level = np.arange(base.size) / base.size  # F on [w_(i), w_(i+1))
        with np.errstate(divide="ignore"):
            alive = -np.expm1(n[:, None] * np.log(level)[None, :])
        return life.scale * (alive * widths).sum(axis=1)
    assert life.mu is not None and life.sigma is not None
    mu, sigma = life.mu, life.sigma
    top = np.full(n.shape, _Z_TOP) if tau is None else np.minimum((np.log(tau) - mu) / sigma, _Z_TOP)
    lo = np.minimum(_EDGES[None, :-1], top[:, None])  # (S, panels): a panel above τ's z has width 0
    half = (np.minimum(_EDGES[None, 1:], top[:, None]) - lo) / 2.0
    z = (lo + half)[:, :, None] + half[:, :, None] * _NODES  # (S, panels, nodes)
    with np.errstate(divide="ignore"):  # far below the median F = 0: log 0, and the survival of the max is 1
        alive = -np.expm1(n[:, None, None] * np.log1p(-ndtr(-z)))
    f = sigma[:, None, None] * np.exp(mu[:, None, None] + sigma[:, None, None] * z) * alive
    inner = ((f * _WEIGHTS).sum(axis=-1) * half).sum(axis=-1)
    return np.exp(mu + sigma * np.minimum(_Z_FLOOR, top)) + inner


def evaluate(inst: Instance, plan, scen: sc.Scenarios, allowance: float = 0.0) -> sc.Outcome:
    """``plan`` (fitting ``inst``, a batch run) in every scenario of ``scen``, on time iff ``T_s + allowance <=
    deadline`` (MODEL §9 with §14); inf where the launch does not fit the plan's hosts or breaks the cap."""
    from trainground.solver.uncertainty.hosts import launch_room, room

    r = inst.regime
    assert r is not None and r.batched
    if r.mode == "pipelined" and r.steps_ahead == 1 and inst.counts_startup:
        raise ValueError(f"{inst.name}: pipelined k = 1 with the start-up counted is not planned (MODEL §14)")
    v = sc.values_of(inst, scen)
    b = values_of(inst, scen, v)
    supply = sc.token_supply(inst, plan, v, 1)
    update = np.nan_to_num(sc.update_time(inst, scen, plan.training_gpus), nan=np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        phase = np.maximum(np.where(supply > 0, b.attempts * b.tokens / supply, np.inf), b.slowest)
        if r.mode == "pipelined" and r.steps_ahead == 1:
            own = np.maximum(phase, update) + b.sync
        else:
            own = phase + update + b.sync + b.switch
    works = np.ones(scen.size, dtype=bool)
    if any(be.share > 0 for be in inst.environment.backends):  # without sandboxes rows 5 and 6 vanish
        with np.errstate(divide="ignore", invalid="ignore"):
            own = np.maximum(own, b.attempts * b.w_use / room(inst, plan, scen, v.peak_to_mean))  # the mean load
        works = launch_room(inst, plan, scen, launch_peaks(inst, b.attempts)) >= 1.0 - REL_TOL
    cadence = np.where(own <= plan.cadence_s * (1 + REL_TOL), plan.cadence_s, own)
    cap = r.max_concurrent_attempts
    if cap is not None:
        works &= b.attempts <= cap
    cadence = np.where(works & ~np.isnan(cadence), cadence, np.inf)
    with np.errstate(invalid="ignore"):
        makespan = inst.workload.iterations * cadence + v.extra
    hourly = hourly_cost(inst, plan, scen)
    attempts = np.where(np.isfinite(cadence), b.attempts / cadence, np.inf)
    return sc.Outcome.of(cadence, attempts, makespan, v.deadline, hourly, allowance)


def launch_peaks(inst: Instance, attempts: np.ndarray) -> np.ndarray:
    """(S, backends) the environments a batch's launch asks at once (as
    :func:`solver.regimes.batch.launch_peak`): N·s_b, and under hold N·s_b + β·sqrt(N·s_b·(1 - s_b))."""
    shares = np.array([be.share for be in inst.environment.backends])
    mean = attempts[:, None] * shares[None, :]
    if not inst.holds:
        return mean
    beta = holding.safety_factor(inst.planning.sandbox_wait)
    return mean + beta * np.sqrt(np.maximum(mean * (1.0 - shares[None, :]), 0.0))


def hourly_cost(inst: Instance, plan, scen: sc.Scenarios) -> np.ndarray:
    """(S,) the plan's $/h at each scenario's prices; colocated bills the training pool's larger use, replicas or
    groups (they take turns on its GPUs), not their sum."""
    total = sc.hourly_cost(inst, plan, scen)
    r = inst.regime
    if r is None or r.mode != "colocated":
        return total
    i, pool = next((i, p) for i, p in enumerate(inst.gpu_pools) if p.name == inst.training.pool)
    if pool.billing == "reserved":
        return total
    shared = sum(rep.gpus for rep in plan.inference if rep.pool == pool.name)
    return total - min(shared, plan.training_gpus) * scen.value(f"gpu_pools[{i}].gpu_hour_cost", pool.gpu_hour_cost)
