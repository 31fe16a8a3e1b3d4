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
    """The admissible (cadence, K = 1, training groups) rows of an admission run, ordered by cadence then groups:
    the fewest groups of each cadence, or with the start-up counted a row per group count worth having."""
    grid = calc.cadence_grid(inst)
    rejected: dict[str, int] = {}

    def cut(keep: np.ndarray, ok: np.ndarray, family: str) -> np.ndarray:
        return counted_cut(keep, np.broadcast_to(ok, keep.shape), family, rejected)

    keep, fewest = _admissible(inst, a, grid, cut)
    attempts = inst.workload.batch_trajectories / (grid * a.intake)
    demand = attempts * a.tokens_per_attempt(grid)  # tokens/s
    sync_kept = np.maximum(0.0, 1.0 - a.sync / grid)  # §13's sync factor: the sync takes t_s of each cadence
    if inst.counts_startup:
        at, groups, span, fill = _startup_rows(inst, a, grid, keep, fewest, demand * (1 - REL_TOL) / sync_kept, cut)
    else:
        groups = _freshest(inst, a, grid, fewest, keep, cut)
        keep = cut(keep, _most_supply(inst, groups) * sync_kept >= demand * (1 - REL_TOL), "pool_capacity")
        at = np.flatnonzero(keep)
        groups, span, fill = groups[at], calc.makespan(inst, grid[at]), np.zeros(at.size)
    return _columns(inst, a, grid, at, groups, span, fill, demand, sync_kept, rejected)


def _admissible(inst: Instance, a: Admission, grid: np.ndarray, cut) -> tuple[np.ndarray, np.ndarray]:
    """The grid points on time at n·L (a lower bound of T on every basis), whose trainer keeps up, where the
    admission row leaves U(m) room, within the concurrency cap; and each point's fewest groups with
    U(m) <= min(L, (k + 1/2)·L - E[M_g]/p - t_s)."""
    keep = np.ones(grid.shape, dtype=bool)
    keep = cut(keep, calc.makespan(inst, grid) <= inst.schedule.deadline * (1 + REL_TOL), "deadline")
    keeps_up = calc.min_groups_for(inst, grid) if grid.size else np.zeros(0, dtype=int)
    keep = cut(keep, keeps_up > 0, "update_time")
    room = np.minimum(a.room(grid), grid)
    groups = calc.min_groups_for(inst, np.maximum(room, 0.0)) if grid.size else np.zeros(0, dtype=int)
    keep = cut(keep, (groups > 0) & (room > 0), "admission")
    cap = inst.regime.max_concurrent_attempts if inst.regime is not None else None
    if cap is not None:
        attempts = inst.workload.batch_trajectories / (grid * a.intake)
        keep = cut(keep, attempts * a.mean_cut <= cap * (1 + REL_TOL), "max_concurrent_attempts")
    return keep, groups


def _freshest(inst: Instance, a: Admission, grid: np.ndarray, groups: np.ndarray, keep: np.ndarray, cut) -> np.ndarray:
    """The fewest groups whose consumed gap meets freshness.max_mean_gap: a tight row reports the gap as k, so
    more groups, for slack, may report E[M_g]/L instead (grid points where neither does are cut)."""
    limit = inst.freshness.max_mean_gap
    if limit is None:
        return groups
    gpg = inst.training.gpus_per_group
    update = calc.update_time(inst.training.update_time, np.maximum(groups, 1) * gpg)
    loose_room = np.minimum((a.steps_ahead + 0.5) * grid * (1 - TIGHT) - a.group_max / a.intake - a.sync, grid)
    loose = calc.min_groups_for(inst, np.maximum(loose_room, 0.0)) if grid.size else np.zeros(0, dtype=int)
    loose_update = calc.update_time(inst.training.update_time, np.maximum(loose, 1) * gpg)
    fits = a.mean_gap(grid, update) <= limit * (1 + REL_TOL)
    swap = ~fits & (loose > 0) & (loose_room > 0) & (a.mean_gap(grid, loose_update) <= limit * (1 + REL_TOL))
    keep[:] = cut(keep, fits | swap, "max_mean_gap")
    return np.where(swap, loose, groups)


def _most_supply(inst: Instance, groups: np.ndarray) -> np.ndarray:
    """Tokens/s with every pool filled by its best shape beside ``groups`` training groups, before the sync."""
    ones = np.ones(1, dtype=int)
    best = np.zeros(np.shape(groups))
    for pool in inst.gpu_pools:
        best = best + calc.free_gpus(inst, pool, groups) * float(pool_rate(inst, pool.name, ones)[0])
    return best


def _startup_rows(inst: Instance, a: Admission, grid: np.ndarray, keep: np.ndarray, fewest: np.ndarray, need, cut):
    """With the start-up counted (MODEL §8 with §14: the fill over W_τ at R_raw, ``T = fill + (n-1)·L + U(m) +
    extra_time``), a row per group count worth having at each admissible point: from the fewest, each count with
    a shorter U(m) than every smaller one, on time, whose pools can still supply ``need`` tokens/s beside it, and
    whose consumed gap meets max_mean_gap. Returns the rows' grid points, groups, makespans and fills."""
    lo, hi = calc.group_range(inst)
    counts = np.arange(lo, max(lo, hi) + 1)
    every = calc.update_time(inst.training.update_time, counts * inst.training.gpus_per_group)
    every = np.where(np.isnan(every), np.inf, every)
    supply = _most_supply(inst, counts)
    occ = calc.occupancy_of(inst.environment.occupancy)
    points = np.flatnonzero(keep)
    fills = np.zeros(grid.shape)
    if points.size:
        g, corr = inst.workload.group_size, inst.freshness.group_correlation
        fills[points] = law.cut_fill(occ, grid[points], g, corr, law.timeout_of(inst))
    late = inst.schedule.extra_time + (inst.workload.iterations - 1) * grid + fills
    limit = inst.freshness.max_mean_gap
    rows: list[tuple[int, np.ndarray]] = []
    on_time, fresh = np.zeros(grid.shape, dtype=bool), np.zeros(grid.shape, dtype=bool)
    for i in points:
        own = counts >= fewest[i]
        u = every[own]
        useful = u < np.minimum.accumulate(np.concatenate(([np.inf], u[:-1]))) * (1 - REL_TOL)
        timely = late[i] + u <= inst.schedule.deadline * (1 + REL_TOL)
        gap_ok = np.ones(u.shape, dtype=bool) if limit is None else a.mean_gap(grid[i], u) <= limit * (1 + REL_TOL)
        on_time[i], fresh[i] = bool((useful & timely).any()), bool((useful & timely & gap_ok).any())
        chosen = useful & timely & gap_ok & (supply[own] >= need[i])
        rows.append((int(i), counts[own][chosen]))
    keep = cut(keep, on_time, "deadline")
    keep = cut(keep, fresh, "max_mean_gap")
    cut(keep, np.isin(np.arange(grid.size), [i for i, m in rows if m.size]), "pool_capacity")
    at = np.array([i for i, m in rows for _ in m], dtype=int)
    groups = np.concatenate([m for _, m in rows]).astype(int) if rows else np.zeros(0, dtype=int)
    update = calc.update_time(inst.training.update_time, groups * inst.training.gpus_per_group)
    return at, groups, late[at] + update, fills[at]


def _columns(inst: Instance, a: Admission, grid, at, groups, span, fill, demand, sync_kept, rejected) -> Pairs:
    """The pair table's columns at rows ``at`` (grid points) with their groups, makespans and fills: the supply
    asked, E_b (E^hold_b over W_τ under hold: MODEL §11 item 2 with §14), row 6's max(peak_to_mean·E_b, the
    publish peak)."""
    w, env = inst.workload, inst.environment
    L = grid[at]
    attempts = w.batch_trajectories / (L * a.intake)
    shares = np.array([b.share for b in env.backends])
    occ = calc.occupancy_of(env.occupancy)
    tau = law.timeout_of(inst)
    if inst.holds:
        load = law.hold_inflight(inst, occ, tau, attempts)
    else:
        load = (attempts * a.w_use)[:, None] * shares[None, :]
    points, row_point = np.unique(at, return_inverse=True)  # the publish peak once per cadence, not per row
    burst = np.array([law.publish_peak(w.batch_trajectories, a.intake, 1.0, occ, tau, float(grid[i])) for i in points])
    burst = burst[row_point] if at.size else np.zeros(0)
    peak = np.maximum(load * env.peak_to_mean, burst[:, None] * shares[None, :])
    per_replica = np.array(
        [x * s.gpus_per_replica * s.tokens_per_gpu_s for x, s in zip(shape_availability(inst), inst.inference.shapes)]
    )
    w_bound = occ.mean if inst.holds else calc.occupancy_used(occ, env.littles_law_uses)
    active = shares > 0
    if inst.holds and active.any():  # the rate whose loads rate·s_b·mean(W) stay within each E^hold_b
        rate = np.min(load[:, active] / (shares[active] * w_bound)[None, :], axis=1)
    else:
        rate = attempts * a.w_use / w_bound
    zeros = np.zeros(at.size)
    return Pairs(
        cadence=L,
        kept=np.ones(at.size, dtype=int),
        makespan=np.asarray(span, dtype=float),
        startup=np.asarray(fill, dtype=float),
        groups=np.asarray(groups, dtype=int),
        exceedance=zeros,
        drop=zeros,
        attempts=demand[at] / w.tokens_per_attempt,  # the supply asked, in attempts of tokens_per_attempt
        inflight=load,
        peak=peak,
        supply_per_replica=per_replica[None, :] * sync_kept[at, None],
        rejected=rejected,
        grid_points=int(grid.size),
        sandbox_rate=rate,
    )


def publish_peaks(inst: Instance, a: Admission, cadence: float) -> np.ndarray:
    """(backends,) row 6's publish peak at ``cadence``: (B/p)·s_b·Σ_i S_τ(i·L)."""
    occ = calc.occupancy_of(inst.environment.occupancy)
    shares = np.array([b.share for b in inst.environment.backends])
    total = law.publish_peak(inst.workload.batch_trajectories, a.intake, 1.0, occ, law.timeout_of(inst), cadence)
    return total * shares
