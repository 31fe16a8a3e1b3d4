"""An async run with admission control (MODEL.md §14: ``staleness: admission``, ``steps_ahead`` k, in-flight updates)
in every scenario of §9, vectorised over scenarios.

The plan is fixed: its replicas, training groups, nodes and VMs. Scenario s has its own cut lifetimes W_τ and the
quantities :mod:`solver.uncertainty.drop` reads from them (intake ``p_eff``, tokens per attempt, ``mean(W_τ)``,
``W_use``, the re-prefill tokens under ``recompute: prefix``, ``t_s``, the cap), its own ``E[M_g]`` (the mean of the
max of a group's ``g`` lifetimes W_τ, one under comonotone: :func:`solver.uncertainty.batch.expected_max`) and the
update time ``U_s`` of the plan's training GPUs. Its realised cadence is the smallest ``L' >= L`` at which the rows of
:mod:`solver.regimes.admission` hold with those values, each of which only gets easier as ``L'`` grows:

- the trainer keeps up, ``U_s <= L'``; the admission row (Little's law over the slots),
  ``(E[M_g]/p_eff + U_s + t_s)/(k + 1/2) <= L'``; the cap, ``R_raw·mean(W_τ) <= cap``;
- the token row with one version resident and the sync factor, ``S·(1 - t_s/L') >= R_raw·(tokens + recompute/L')``
  with ``R_raw = B/(L'·p_eff)``: the root of a quadratic in ``L'``;
- the hosts hold ``E_b = R_raw·s_b·W_use`` (``E^hold_b`` over W_τ under hold) at rows 5-6, and at row 6 the publish
  peak ``(B/p_eff)·s_b·Σ_{i>=0} S_τ(i·L')`` (:func:`survivors_sum`), found by bisection where it binds. With one
  active backend, or on steady_state (every load proportional to the shares), row 6's max of the two is checked
  exactly; under hold with several backends each is checked on its own;
- ``max_mean_gap`` on the consumed mean gap, ``E[M_g]/L'`` or ``k`` while the admission row has under 1 % slack
  (+1 under post_publish; :func:`mean_gap`): not monotone in ``L'`` across the 1 % edge, so it is met in closed form
  after the other rows.

``T_s = n·L'_s + extra_time``, or with the start-up counted (always under hold) ``fill + (n-1)·L'_s + U_s +
extra_time``, the fill over W_τ at ``R_raw`` (:func:`solver.uncertainty.drop.cut_fill`). A reliability section is not
planned with admission, so no goodput divides T.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.solver.laws import holding
from trainground.solver.laws.calculus import ndtri
from trainground.solver.laws.regimes import SURVIVOR_FLOOR
from trainground.solver.regimes.admission import TIGHT
from trainground.solver.tolerances import REL_TOL
from trainground.solver.uncertainty import batch, drop
from trainground.solver.uncertainty import scenarios as sc
from trainground.solver.uncertainty.lifetimes import Lifetimes

TERMS_PER_BLOCK = 1 << 20  # survivor terms evaluated at once (the scenarios are taken in blocks of about this many)


def applies(inst: Instance) -> bool:
    """``inst`` runs async with admission control."""
    r = inst.regime
    return r is not None and r.mode == "async" and r.staleness == "admission"


@dataclass(frozen=True)
class AdmissionValues:
    """The admission run's quantities in every scenario, (S,) arrays."""

    cut: drop.DropValues  # what the cut lifetimes W_τ give: τ, p_eff, tokens, mean(W_τ), W_use, t_s, re-prefills, cap
    steps_ahead: float  # k
    group_max: np.ndarray  # E[M_g], s
    post: float  # 1 under post_publish

    def need(self, update: np.ndarray) -> np.ndarray:
        """E[M_g]/p_eff + U + t_s, s: what (k + 1/2)·L must cover (the admission row)."""
        return self.group_max / self.cut.intake + update + self.cut.sync


def values_of(inst: Instance, scen: sc.Scenarios, v: sc.Values) -> AdmissionValues:
    """The admission quantities per scenario, from the scenario's own lifetimes ``v.lifetimes`` (as
    :func:`solver.regimes.admission.admission_of` reads them for one instance)."""
    r = inst.regime
    assert r is not None and r.steps_ahead is not None
    d = drop.values_of(inst, scen, v)
    members = 1 if inst.freshness.group_correlation == "comonotone" else inst.workload.group_size
    return AdmissionValues(
        cut=d,
        steps_ahead=float(r.steps_ahead),
        group_max=batch.expected_max(v.lifetimes, np.full(scen.size, float(members)), d.tau),
        post=1.0 if inst.freshness.gap_convention == "post_publish" else 0.0,
    )


def mean_gap(a: AdmissionValues, cadence, update) -> np.ndarray:
    """(S,) the consumed mean gap at ``cadence``: k while the admission row's slack 1 - need/((k + 1/2)·L) is under
    1 %, else E[M_g]/L; +1 under post_publish (as :meth:`solver.regimes.admission.Admission.mean_gap`)."""
    L = np.asarray(cadence, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        slack = 1.0 - a.need(update) / ((a.steps_ahead + 0.5) * L)
        return np.where(slack < TIGHT, a.steps_ahead, a.group_max / L) + a.post


def survivors_sum(life: Lifetimes, tau: np.ndarray | None, cadence: np.ndarray) -> np.ndarray:
    """(S,) Σ_{i>=0} S_τ(i·L) per scenario (S_τ = S below τ, 0 from τ on): the terms up to τ, or without a timeout up
    to the time where S falls to SURVIVOR_FLOOR (as :func:`solver.laws.regimes.survivors_sum` for one law)."""
    L = np.asarray(cadence, dtype=float)
    if tau is not None:
        far = tau
    elif life.base is not None:
        assert life.scale is not None
        far = life.scale * life.base.quantile(1.0 - SURVIVOR_FLOOR)
    else:
        assert life.mu is not None and life.sigma is not None
        far = np.exp(life.mu + life.sigma * ndtri(1.0 - SURVIVOR_FLOOR))
    far = np.broadcast_to(far, L.shape)
    counts = np.ceil(far / L).astype(np.int64) + 1
    out = np.zeros(L.shape)
    start = 0
    while start < L.size:  # blocks of scenarios with about TERMS_PER_BLOCK terms in all
        stop = start + max(1, int(np.searchsorted(np.cumsum(counts[start:]), TERMS_PER_BLOCK, side="right")))
        rows = np.repeat(np.arange(start, stop), counts[start:stop])
        first = np.repeat(np.cumsum(counts[start:stop]) - counts[start:stop], counts[start:stop])
        times = (np.arange(rows.size) - first) * L[rows]
        alive = life.take(rows).survival(times)
        if tau is not None:
            alive = np.where(times < far[rows], alive, 0.0)
        out[start:stop] = np.bincount(rows - start, weights=alive, minlength=stop - start)
        start = stop
    return out


def evaluate(inst: Instance, plan, scen: sc.Scenarios, allowance: float = 0.0) -> sc.Outcome:
    """``plan`` (fitting ``inst``, an admission run) in every scenario of ``scen``, on time iff ``T_s + allowance <=
    deadline`` (MODEL §9 with §14); inf where no cadence works (no supply, a trainer outside a table's range, hosts
    that hold no load, a gap limit of at most the convention's 1)."""
    v = sc.values_of(inst, scen)
    a = values_of(inst, scen, v)
    d, B = a.cut, inst.workload.batch_trajectories
    update = np.nan_to_num(sc.update_time(inst, scen, plan.training_gpus), nan=np.inf)
    cadence = _floor(inst, plan, scen, v, a, update)
    if any(be.share > 0 for be in inst.environment.backends):  # without sandboxes rows 5 and 6 vanish
        cadence = _publish_row(inst, plan, scen, v, a, cadence)
    if v.max_mean_gap is not None:
        cadence = _gap_row(a, cadence, update, v.max_mean_gap * (1 + REL_TOL))
    at = np.isfinite(cadence)
    with np.errstate(divide="ignore", invalid="ignore"):
        attempts = np.where(at, B / (cadence * d.intake), np.inf)
        makespan = inst.workload.iterations * cadence + v.extra
        if inst.counts_startup:
            steady = (inst.workload.iterations - 1) * cadence + update + v.extra
            makespan = np.where(at, drop.cut_fill(inst, v.lifetimes, d, attempts) + steady, np.inf)
    return sc.Outcome.of(cadence, attempts, makespan, v.deadline, sc.hourly_cost(inst, plan, scen), allowance)


def _floor(inst: Instance, plan, scen: sc.Scenarios, v: sc.Values, a: AdmissionValues, update) -> np.ndarray:
    """(S,) the smallest L' >= L at which the rows with a closed form hold, each to REL_TOL of its need as the
    planner's: the trainer, the admission row, the cap, the token row's quadratic ``L'² - (t_s + B·t/(p·S))·L' -
    B·r/(p·S) >= 0`` and the hosts' mean load (inf where a row has no supply or no room to work with)."""
    from trainground.solver.uncertainty.hosts import room

    d, B = a.cut, inst.workload.batch_trajectories
    supply = sc.token_supply(inst, plan, v, 1)  # one version resident: no slowdown
    floors = [update, a.need(update) / (a.steps_ahead + 0.5)]
    with np.errstate(divide="ignore", invalid="ignore"):
        if d.cap is not None:  # R_raw·mean(W_τ) <= cap
            floors.append(B * d.mean_cut / (d.intake * d.cap))
        floors = [f / (1 + REL_TOL) for f in floors]
        per_supply = np.where(supply > 0, B / (d.intake * supply), np.inf) * (1 - REL_TOL)
        linear = d.sync + per_supply * d.tokens
        constant = np.zeros(scen.size) if d.recompute is None else per_supply * d.recompute
        floors.append(0.5 * (linear + np.sqrt(linear * linear + 4.0 * constant)))
        if any(be.share > 0 for be in inst.environment.backends):
            theta = room(inst, plan, scen, v.peak_to_mean)
            if inst.holds:  # MODEL §11 item 2 over W_τ: the hosts hold E^hold from the cut moments
                rate = holding.hold_attempt_limit(inst, theta, d.mean_cut, d.pair)
            else:
                rate = theta / d.w_use
            floors.append(np.where(rate > 0, B / (d.intake * rate) * (1 - REL_TOL), np.inf))
    floor = np.full(scen.size, plan.cadence_s)
    for other in floors:
        floor = np.maximum(floor, np.where(np.isnan(other), np.inf, other))
    return floor


def _publish_row(inst: Instance, plan, scen: sc.Scenarios, v: sc.Values, a: AdmissionValues, cadence) -> np.ndarray:
    """(S,) the smallest L' >= ``cadence`` at which the plan's nodes (under the cap u) and VMs hold row 6's publish
    peak (B/p_eff)·s_b·Σ_i S_τ(i·L'), which falls as L' grows: bisection where it does not hold at ``cadence``."""
    from trainground.solver.uncertainty.hosts import launch_room

    d, B = a.cut, inst.workload.batch_trajectories
    shares = np.array([be.share for be in inst.environment.backends])
    bursts = launch_room(inst, plan, scen, np.broadcast_to(shares, (scen.size, shares.size)))  # in environments
    limit = bursts * d.intake / B  # the largest Σ_i S_τ(i·L') the hosts hold

    def ok_at(rows: np.ndarray):
        life, tau = v.lifetimes.take(rows), None if d.tau is None else d.tau[rows]
        return lambda L: survivors_sum(life, tau, L) * (1 - REL_TOL) <= limit[rows]

    out = np.array(cadence, dtype=float)
    finite = np.flatnonzero(np.isfinite(out))
    short = finite[~ok_at(finite)(out[finite])]
    if short.size:
        need = np.where(limit[short] >= 1.0, out[short], np.inf)  # the burst at a publish alone is B/p_eff
        out[short] = sc.smallest_where(ok_at(short), out[short], need)
    return out


def _gap_row(a: AdmissionValues, cadence: np.ndarray, update: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """(S,) the smallest L' >= ``cadence`` whose consumed mean gap meets ``limit``: ``cadence`` itself where it does;
    else where k is over the limit, from where the admission row has 1 % slack, ``need/((k + 1/2)·(1 - 1 %))``, and
    E[M_g]/L' + post meets it, ``E[M_g]/(limit - post)`` (inf when ``limit <= post``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        met = mean_gap(a, cadence, update) <= limit
        loose = a.need(update) / ((a.steps_ahead + 0.5) * (1 - TIGHT)) * (1 + REL_TOL)
        fresh = np.where(limit > a.post, a.group_max / (limit - a.post), np.inf)
        return np.where(met | ~np.isfinite(cadence), cadence, np.maximum(cadence, np.maximum(loose, fresh)))
