"""The pair table of an async run with admission control (MODEL.md §14: ``staleness: admission``, ``steps_ahead``
k, in-flight updates).

Groups launch continuously at ``R_raw/g`` with ``R_raw = B/(L·p_eff)`` (nothing is dropped for age), each while
one of ``ceil((k+1)·B/g)`` slots is free; running attempts move to each new version, so one version is resident
(no slowdown). By Little's law the slots allow the cadence ``L >= (E[M_g]/p_eff + U + t_s)/(k + 1/2)``, ``M_g`` a
group's completion time (the max of its ``g`` lifetimes ``W_τ``): with the trainer's own row ``U <= L`` this sets
the fewest training groups of each grid point, ``U(m) <= min(L, (k + 1/2)·L - E[M_g]/p_eff - t_s)``. A pair is
(L, K = 1, those groups). Its supply row carries ``R_raw·tokens`` plus, under ``recompute: prefix``, the
re-prefill of every running attempt at each publish, ``R_raw·mean(W_τ)·prefill_cost·(context_tokens +
tokens·E[W_τ²]/(2·E[W_τ]²))/L``; the weight sync takes ``t_s/L`` of every replica's time (§13's sync factor).
Sandboxes hold ``E_b = R_raw·s_b·W_use`` and, at row 6, at least the publish peak ``(B/p)·s_b·Σ_i S_τ(i·L)``.
The consumed gap is ``E[M_g]/L`` (``k`` when the admission row has under 1 % slack), +1 under ``post_publish``.
``T = n·L + extra_time``. No pyomo.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import regimes as law
from trainground.solver.table.pairs import Pairs, counted_cut, pool_rate, shape_availability
from trainground.solver.tolerances import REL_TOL

TIGHT = 0.01  # under this slack of the admission row, launches follow publishes: the consumed gap is k


@dataclass(frozen=True)
class Admission:
    """The quantities of an admission run set by the run alone (MODEL §14)."""

    steps_ahead: float  # k
    intake: float  # p_eff
    tokens: float  # tokens per attempt after the timeout's scale
    group_max: float  # E[M_g], s
    mean_cut: float  # mean(W_τ), s
    w_use: float  # the occupancy Little's law uses, after the timeout, s
    sync: float  # t_s, s
    recompute: float  # tokens re-prefilled per attempt per publish (0 without recompute: prefix), times L
    post: float  # 1 under post_publish

    def room(self, cadence):
        """The update time the admission row leaves at each cadence: (k + 1/2)·L - E[M_g]/p_eff - t_s."""
        return (self.steps_ahead + 0.5) * np.asarray(cadence, dtype=float) - self.group_max / self.intake - self.sync

    def slack(self, cadence, update):
        """The admission row's slack: 1 - (E[M_g]/p_eff + U + t_s)/((k + 1/2)·L)."""
        cadence = np.asarray(cadence, dtype=float)
        need = self.group_max / self.intake + np.asarray(update, dtype=float) + self.sync
        return 1.0 - need / ((self.steps_ahead + 0.5) * cadence)

    def mean_gap(self, cadence, update):
        """The consumed mean gap: E[M_g]/L, or k where the row has under TIGHT slack (+1 under post_publish)."""
        cadence = np.asarray(cadence, dtype=float)
        free = self.group_max / cadence
        return np.where(self.slack(cadence, update) < TIGHT, self.steps_ahead, free) + self.post

    def tokens_per_attempt(self, cadence):
        """Tokens of supply each attempt asks at cadence L: its own and its re-prefills."""
        return self.tokens + self.recompute / np.asarray(cadence, dtype=float)


def admission_of(inst: Instance) -> Admission | None:
    """The admission quantities of ``inst`` (None unless its regime is async with staleness admission)."""
    r = inst.regime
    if r is None or r.mode != "async" or r.staleness != "admission":
        return None
    occ = calc.occupancy_of(inst.environment.occupancy)
    tau = law.timeout_of(inst)
    mean_cut = law.timeout_mean(occ, tau)
    tokens = inst.workload.tokens_per_attempt * law.token_scale(occ, tau)
    recompute = 0.0
    if r.recompute == "prefix":
        recompute = mean_cut * r.prefill_cost * (r.context_tokens + tokens * law.length_bias(occ, tau))
    if inst.environment.littles_law_uses == "mean":
        w_use = mean_cut
    else:
        w_use = occ.median if tau is None else min(occ.median, tau)
    return Admission(
        steps_ahead=float(r.steps_ahead or 1.0),
        intake=law.intake(inst, occ),
        tokens=tokens,
        group_max=law.expected_max(occ, law.group_draws(inst), tau),
        mean_cut=mean_cut,
        w_use=w_use,
        sync=law.sync_time(inst),
        recompute=recompute,
        post=1.0 if inst.freshness.gap_convention == "post_publish" else 0.0,
    )


def admission_pairs(inst: Instance, a: Admission) -> Pairs:
    """The admissible (cadence, K = 1, fewest groups) pairs of an admission run, ordered by cadence."""
    grid = calc.cadence_grid(inst)
    rejected: dict[str, int] = {}

    def cut(keep: np.ndarray, ok: np.ndarray, family: str) -> np.ndarray:
        return counted_cut(keep, np.broadcast_to(ok, keep.shape), family, rejected)

    w = inst.workload
    keep = np.ones(grid.shape, dtype=bool)
    span = calc.makespan(inst, grid)
    keep = cut(keep, span <= inst.schedule.deadline * (1 + REL_TOL), "deadline")
    keeps_up = calc.min_groups_for(inst, grid) if grid.size else np.zeros(0, dtype=int)
    keep = cut(keep, keeps_up > 0, "update_time")
    room = np.minimum(a.room(grid), grid)
    groups = calc.min_groups_for(inst, np.maximum(room, 0.0)) if grid.size else np.zeros(0, dtype=int)
    keep = cut(keep, (groups > 0) & (room > 0), "admission")
    attempts = w.batch_trajectories / (grid * a.intake)
    cap = inst.regime.max_concurrent_attempts if inst.regime is not None else None
    if cap is not None:
        keep = cut(keep, attempts * a.mean_cut <= cap * (1 + REL_TOL), "max_concurrent_attempts")
    gpg = inst.training.gpus_per_group
    update = calc.update_time(inst.training.update_time, np.maximum(groups, 1) * gpg)
    limit = inst.freshness.max_mean_gap
    if limit is not None:  # a tight row reports the gap as k: more groups, for slack, may report E[M_g]/L instead
        loose_room = np.minimum((a.steps_ahead + 0.5) * grid * (1 - TIGHT) - a.group_max / a.intake - a.sync, grid)
        loose = calc.min_groups_for(inst, np.maximum(loose_room, 0.0)) if grid.size else np.zeros(0, dtype=int)
        loose_update = calc.update_time(inst.training.update_time, np.maximum(loose, 1) * gpg)
        fits = a.mean_gap(grid, update) <= limit * (1 + REL_TOL)
        swap = ~fits & (loose > 0) & (loose_room > 0) & (a.mean_gap(grid, loose_update) <= limit * (1 + REL_TOL))
        groups, update = np.where(swap, loose, groups), np.where(swap, loose_update, update)
        keep = cut(keep, fits | swap, "max_mean_gap")
    sync_kept = np.maximum(0.0, 1.0 - a.sync / grid)  # §13's sync factor: the sync takes t_s of each cadence
    demand = attempts * a.tokens_per_attempt(grid)  # tokens/s
    ones = np.ones(1, dtype=int)
    best = np.zeros(grid.shape)
    for pool in inst.gpu_pools:
        best += calc.free_gpus(inst, pool, groups) * float(pool_rate(inst, pool.name, ones)[0])
    keep = cut(keep, best * sync_kept >= demand * (1 - REL_TOL), "pool_capacity")
    at = np.flatnonzero(keep)
    L = grid[at]
    shares = np.array([b.share for b in inst.environment.backends])
    mean_load = (attempts[at] * a.w_use)[:, None] * shares[None, :]
    occ = calc.occupancy_of(inst.environment.occupancy)
    tau = law.timeout_of(inst)
    burst = np.array([law.publish_peak(w.batch_trajectories, a.intake, 1.0, occ, tau, float(x)) for x in L])
    peak = np.maximum(mean_load * inst.environment.peak_to_mean, burst[:, None] * shares[None, :])
    per_replica = np.array(
        [x * s.gpus_per_replica * s.tokens_per_gpu_s for x, s in zip(shape_availability(inst), inst.inference.shapes)]
    )
    w_bound = occ.mean if inst.holds else calc.occupancy_used(occ, inst.environment.littles_law_uses)
    zeros = np.zeros(at.size)
    return Pairs(
        cadence=L,
        kept=np.ones(at.size, dtype=int),
        makespan=span[at],
        startup=zeros,
        groups=groups[at],
        exceedance=zeros,
        drop=zeros,
        attempts=demand[at] / w.tokens_per_attempt,  # the supply asked, in attempts of tokens_per_attempt
        inflight=mean_load,
        peak=peak,
        supply_per_replica=per_replica[None, :] * sync_kept[at, None],
        rejected=rejected,
        grid_points=int(grid.size),
        sandbox_rate=attempts[at] * a.w_use / w_bound,
    )


def publish_peaks(inst: Instance, a: Admission, cadence: float) -> np.ndarray:
    """(backends,) row 6's publish peak at ``cadence``: (B/p)·s_b·Σ_i S_τ(i·L)."""
    occ = calc.occupancy_of(inst.environment.occupancy)
    shares = np.array([b.share for b in inst.environment.backends])
    total = law.publish_peak(inst.workload.batch_trajectories, a.intake, 1.0, occ, law.timeout_of(inst), cadence)
    return total * shares
