"""The pair table of an async drop run with regime fields set (MODEL.md §14): in-flight updates, a rollout timeout,
a concurrency cap, a weight-sync time, on the seed's rows of §2–§3.

It is the seed's table (:func:`solver.table.pairs.build`) over the lifetimes ``W_τ = min(W, τ)`` a rollout timeout
τ leaves (without one, ``W``): each (cadence L, versions K) pair has

- the exceedance of §2 at ``W_τ``, ``q(L, K) = (E[min(W_τ, (K+1)L)] - E[min(W_τ, KL)])/L``, its group drop and the
  attempt rate ``R_raw = B/(L·p_eff)``, ``p_eff = p·(1 - drop)`` with ``p`` taken as ``p·F(τ)`` under
  ``truncated: filter`` (a cut-short attempt is then not a sample);
- the token demand ``R_raw·tokens``, tokens per attempt scaled by ``mean(W_τ)/mean(W)``, plus under ``recompute:
  prefix`` the re-prefill of every running attempt at each publish,
  ``R_raw·mean(W_τ)·prefill_cost·(context_tokens + tokens·E[W_τ²]/(2·E[W_τ]²))/L``
  (:func:`solver.laws.regimes.recompute_demand`);
- the supply of §2 with ``K`` versions resident, or with in-flight updates one (running attempts move to each
  new version: no version slowdown, and ``K`` is only the age limit a consumed gap may reach), times §13's sync
  factor ``(1 - t_s/L)⁺`` for the regime's weight-sync time ``t_s``;
- the concurrency cap ``R_raw·mean(W_τ) <= max_concurrent_attempts``, the freshness limits of §3.7 on ``W_τ``
  (the mean gap ``W_use/L``), the sandbox loads ``E_b = R_raw·s_b·W_use`` and ``T = n·L + extra_time``.

Within a cadence a K that asks no less supply than another and whose shapes deliver no more is dominated, as in
the seed's table. Planned on ``steady_state`` (models/regime_rules.py refuses the rest by name). No pyomo.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import regimes as law
from trainground.solver.table.dominance import undominated_where
from trainground.solver.table.pairs import Pairs, counted_cut, pool_rate, shape_availability, supply_multipliers
from trainground.solver.tolerances import REL_TOL, ZERO_SHARE_TOL


@dataclass(frozen=True)
class Drop:
    """The quantities of an async drop run with regime fields set (MODEL §14), set by the run alone."""

    occupancy: calc.Occupancy  # W, before the timeout
    tau: float | None  # the rollout timeout, s
    intake: float  # p, or p·F(τ) under truncated: filter (before drops)
    tokens: float  # tokens per attempt after the timeout's scale
    mean_cut: float  # mean(W_τ), s
    w_use: float  # the occupancy Little's law uses, after the timeout, s
    p99: float  # quantile_0.99(W_τ), s
    in_flight: bool  # running attempts move to each new version: one version resident
    prefill: tuple[float, float, float] | None  # recompute: prefix: (prefill_cost, context_tokens, length bias)
    sync: float  # t_s, s
    cap: int | None  # max_concurrent_attempts
    post: float  # 1 under post_publish

    def resident(self, kept):
        """The versions resident with age limit ``kept``: one under in-flight updates, else K."""
        kept = np.asarray(kept)
        return np.ones_like(kept) if self.in_flight else kept

    def recompute(self, attempts, cadence):
        """Tokens/s the re-prefills at each publish ask (0 without recompute: prefix)."""
        if self.prefill is None:
            return np.zeros(np.broadcast(np.asarray(attempts), np.asarray(cadence)).shape)
        cost, context, bias = self.prefill
        return law.recompute_demand(attempts, self.mean_cut, cost, context, self.tokens, bias, cadence)

    def token_demand(self, attempts, cadence):
        """Tokens/s the attempts ask: their own and their re-prefills."""
        return np.asarray(attempts, dtype=float) * self.tokens + self.recompute(attempts, cadence)

    def sync_kept(self, cadence):
        """§13's sync factor of the regime's weight sync: (1 - t_s/L)⁺."""
        return np.maximum(0.0, 1.0 - self.sync / np.asarray(cadence, dtype=float))

    def exceedance(self, cadence, kept):
        """q(L, K) of the lifetimes W_τ."""
        return law.timeout_exceedance(self.occupancy, self.tau, cadence, kept)


def drop_of(inst: Instance) -> Drop | None:
    """The quantities of ``inst``'s regime when it is async drop with any regime field set (None otherwise: the
    seed's regime, a batch mode, admission)."""
    r = inst.regime
    if r is None or r.is_default or r.mode != "async" or r.staleness != "drop":
        return None
    occ = calc.occupancy_of(inst.environment.occupancy)
    tau = r.rollout_timeout
    tokens = inst.workload.tokens_per_attempt * law.token_scale(occ, tau)
    prefill = None
    if r.in_flight_updates and r.recompute == "prefix":
        prefill = (r.prefill_cost, r.context_tokens, law.length_bias(occ, tau))
    return Drop(
        occupancy=occ,
        tau=tau,
        intake=law.intake(inst, occ),
        tokens=tokens,
        mean_cut=law.timeout_mean(occ, tau),
        w_use=law.timeout_used(occ, tau, inst.environment.littles_law_uses),
        p99=law.timeout_p99(occ, tau),
        in_flight=r.in_flight_updates,
        prefill=prefill,
        sync=law.sync_time(inst),
        cap=r.max_concurrent_attempts,
        post=1.0 if inst.freshness.gap_convention == "post_publish" else 0.0,
    )


def drop_pairs(inst: Instance, d: Drop) -> Pairs:
    """The admissible, undominated (cadence, K) pairs of an async drop run with regime fields set, by cadence then
    K; the ``attempts`` column is the supply a pair asks, in attempts of ``workload.tokens_per_attempt`` tokens
    (the model's supply row reads that unit), and ``resident`` the versions each keeps resident."""
    w, fr = inst.workload, inst.freshness
    grid = calc.cadence_grid(inst)
    Ks = np.arange(1, fr.max_versions_kept + 1)
    rejected: dict[str, int] = {}
    keep = np.ones((grid.size, Ks.size), dtype=bool)

    def cut(mask, family: str) -> None:
        nonlocal keep
        keep = counted_cut(keep, np.asarray(mask), family, rejected)

    span = calc.makespan(inst, grid)
    cut(span <= inst.schedule.deadline * (1 + REL_TOL), "deadline")
    groups = calc.min_groups_for(inst, grid) if grid.size else np.zeros(0, dtype=int)
    cut(groups > 0, "update_time")
    if fr.max_mean_gap is not None:
        cut(d.w_use / grid + d.post <= fr.max_mean_gap * (1 + REL_TOL), "max_mean_gap")
    q = d.exceedance(grid[:, None], Ks[None, :]) if grid.size else np.zeros(keep.shape)
    drop = calc.group_drop(q, w.group_size, fr.overrun_policy, fr.group_correlation)
    intake = d.intake * (1.0 - drop)
    cut(intake > 0, "effective_intake")
    if fr.max_exceedance is not None:
        cut(q <= fr.max_exceedance * (1 + REL_TOL) + ZERO_SHARE_TOL, "max_exceedance")
    if fr.max_group_drop is not None:
        cut(drop <= fr.max_group_drop * (1 + REL_TOL) + ZERO_SHARE_TOL, "max_group_drop")
    with np.errstate(divide="ignore"):
        attempts = np.where(intake > 0, w.batch_trajectories / (grid[:, None] * np.where(intake > 0, intake, 1.0)), 0)
    if d.cap is not None:
        cut(attempts * d.mean_cut <= d.cap * (1 + REL_TOL), "max_concurrent_attempts")
    demand = d.token_demand(attempts, grid[:, None])  # tokens/s
    resident = d.resident(Ks)
    mult = supply_multipliers(inst, resident)
    best = np.zeros(keep.shape)
    for pool in inst.gpu_pools:
        best += calc.free_gpus(inst, pool, groups)[:, None] * pool_rate(inst, pool.name, resident)[None, :]
    cut(best * d.sync_kept(grid)[:, None] >= demand * (1 - REL_TOL), "pool_capacity")
    keep &= undominated_where(keep, demand, mult, None)
    at, k = np.nonzero(keep)
    L, rate = grid[at], attempts[at, k]
    shares = np.array([b.share for b in inst.environment.backends])
    inflight = (rate * d.w_use)[:, None] * shares[None, :]
    availability = zip(shape_availability(inst), inst.inference.shapes)
    per_replica = np.array([a * s.gpus_per_replica * s.tokens_per_gpu_s for a, s in availability])
    w_bound = calc.occupancy_used(d.occupancy, inst.environment.littles_law_uses)  # the sandbox bounds' W
    return Pairs(
        cadence=L,
        kept=Ks[k],
        makespan=span[at],
        startup=np.zeros(at.size),
        groups=groups[at],
        exceedance=q[at, k],
        drop=drop[at, k],
        attempts=demand[at, k] / w.tokens_per_attempt,
        inflight=inflight,
        peak=inflight * inst.environment.peak_to_mean,
        supply_per_replica=per_replica[None, :] * mult[k] * d.sync_kept(L)[:, None],
        rejected=rejected,
        grid_points=int(grid.size),
        sandbox_rate=rate * d.w_use / w_bound,
        resident=resident[k],
    )
