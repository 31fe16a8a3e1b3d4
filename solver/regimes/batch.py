"""The pair table of a batch run (MODEL.md §14): pipelined (one batch generated at a time on separate pools) or
colocated (the training pool's GPUs generate a batch, then train on it).

Every batch launches ``N = g·ceil(B/(g·p_eff))`` attempts together and waits for the slowest, ``M_N``; its
generation phase is ``D = max(N·tokens/S, M_N)``. A cadence ``L`` on the grid is admissible with ``m`` training
groups iff

- ``k = 0`` (generate, then train): ``D + U(m) + t_s <= L``, i.e. ``M_N + U(m) + t_s <= L`` and a token supply
  ``S >= N·tokens/(L - t_s - U(m))``: more groups leave more of ``L`` to generate in, so each group count that
  asks less supply than every smaller count (and fits the pools) is a row of its own;
- ``k = 1`` (generate batch i+1 while batch i trains): ``max(D, U(m)) + t_s <= L``, i.e. the fewest groups with
  ``U(m) <= L - t_s``, ``M_N + t_s <= L`` and ``S >= N·tokens/(L - t_s)``;
- colocated: as ``k = 0`` with ``switch_time`` beside ``t_s``, the replicas and the groups on the training pool's
  GPUs in turn: each fits the pool alone, and the pool bills the larger (:mod:`solver.regimes.rows`).

A row is (L, K = 1, m): one version is resident, nothing is dropped for age, every consumed trajectory has gap
``k`` (+1 under ``post_publish``); its ``attempts`` column is the supply the batch asks with its groups
(:func:`demand`'s unit), a constant of the row, so the model's rows are the seed regime's rows. Sandboxes hold
``E_b = (N/L)·s_b·W_use`` on average and ``max(peak_to_mean·E_b, N·s_b)`` at the launch of a batch (under hold
``N·s_b + β·sqrt(N·s_b·(1 - s_b))``: :func:`launch_peak`). ``T = n·L + extra_time`` (the start-up is inside
``L``). A rollout timeout τ cuts every lifetime at τ (``W_τ``), and tokens per attempt by
``mean(W_τ)/mean(W)``. No pyomo.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import holding
from trainground.solver.laws import regimes as law
from trainground.solver.table.pairs import (
    Pairs,
    best_supply,
    counted_cut,
    pool_rate,
    shape_availability,
    supply_multipliers,
)
from trainground.solver.tolerances import REL_TOL


@dataclass(frozen=True)
class Batch:
    """The quantities of one batch, set by the run alone (MODEL §14)."""

    steps_ahead: int  # k (0 under colocated)
    shared: bool  # colocated: generation and training take turns on the training pool's GPUs
    switch: float  # colocated: switch_time, s (0 otherwise)
    attempts: int  # N
    slowest: float  # M_N, s
    tokens: float  # tokens per attempt after the timeout's scale
    sync: float  # t_s, s
    intake: float  # p_eff
    w_use: float  # the occupancy Little's law uses, after the timeout, s
    gap: float  # every consumed trajectory's version gap

    def generation_budget(self, cadence, update):
        """The time a batch may take to generate: ``L - t_s - U`` (k = 0), ``L - t_s`` (k = 1), ``L - t_s - U -
        switch_time`` (colocated)."""
        spare = np.asarray(cadence, dtype=float) - self.sync - self.switch
        return spare - np.asarray(update, dtype=float) if self.steps_ahead == 0 else spare


def batch_of(inst: Instance) -> Batch | None:
    """The batch of ``inst``'s regime when it is a batch mode, pipelined or colocated (None otherwise)."""
    r = inst.regime
    if r is None or not r.batched:
        return None
    occ = calc.occupancy_of(inst.environment.occupancy)
    tau = law.timeout_of(inst)
    intake = law.intake(inst, occ)
    attempts = law.attempts_per_batch(inst.workload.batch_trajectories, inst.workload.group_size, intake)
    if inst.environment.littles_law_uses == "mean":
        w_use = law.timeout_mean(occ, tau)
    else:
        w_use = occ.median if tau is None else min(occ.median, tau)
    k = int(r.steps_ahead or 0)
    post = 1.0 if inst.freshness.gap_convention == "post_publish" else 0.0
    shared = r.mode == "colocated"
    return Batch(
        steps_ahead=k,
        shared=shared,
        switch=r.switch_time if shared else 0.0,
        attempts=attempts,
        slowest=law.expected_max(occ, law.batch_draws(inst, attempts), tau),
        tokens=inst.workload.tokens_per_attempt * law.token_scale(occ, tau),
        sync=law.sync_time(inst),
        intake=intake,
        w_use=w_use,
        gap=k + post,
    )


def batch_pairs(inst: Instance, batch: Batch) -> Pairs:
    """The admissible (cadence, K = 1, training groups) rows of a batch run, ordered by cadence then groups."""
    grid = calc.cadence_grid(inst)
    rejected: dict[str, int] = {}

    def cut(keep: np.ndarray, ok: np.ndarray, family: str) -> np.ndarray:
        return counted_cut(keep, np.broadcast_to(ok, keep.shape), family, rejected)

    keep = np.ones(grid.shape, dtype=bool)
    span = calc.makespan(inst, grid)
    keep = cut(keep, span <= inst.schedule.deadline * (1 + REL_TOL), "deadline")
    fr = inst.freshness
    if fr.max_mean_gap is not None:
        keep = cut(keep, np.full(grid.shape, batch.gap <= fr.max_mean_gap * (1 + REL_TOL)), "max_mean_gap")
    keep = cut(keep, grid - batch.sync - batch.switch >= batch.slowest * (1 - REL_TOL), "slowest_attempt")
    cap = inst.regime.max_concurrent_attempts if inst.regime is not None else None
    if cap is not None:
        keep = cut(keep, np.full(grid.shape, batch.attempts <= cap), "max_concurrent_attempts")
    if batch.steps_ahead == 0:
        room = grid - batch.sync - batch.switch - batch.slowest  # U(m) must fit beside the slowest attempt
    else:
        room = grid - batch.sync
    groups = calc.min_groups_for(inst, np.maximum(room, 0.0)) if grid.size else np.zeros(0, dtype=int)
    keep = cut(keep, (groups > 0) & (room > 0), "update_time")
    lo, hi = calc.group_range(inst)
    every_count = np.arange(lo, max(lo, hi) + 1)
    at_rows, counts_rows, need_rows = [], [], []  # each (cadence, group count) row worth having
    for i in np.flatnonzero(keep):
        counts = every_count if batch.steps_ahead == 0 else np.array([groups[i]])
        need = demand(inst, batch, float(grid[i]), counts)
        before = np.minimum.accumulate(np.concatenate(([np.inf], need[:-1])))
        useful = np.isfinite(need) & (need < before * (1 - REL_TOL))  # a count that shortens the generation's need
        fits = most_supply(inst, batch, counts, grid[i]) >= need * inst.workload.tokens_per_attempt * (1 - REL_TOL)
        chosen = np.flatnonzero(useful & fits)
        at_rows += [i] * chosen.size
        counts_rows.append(counts[chosen])
        need_rows.append(need[chosen])
    listed = np.zeros(grid.shape, dtype=bool)
    listed[at_rows] = True
    cut(keep, listed, "pool_capacity")  # counts the grid points left without a row
    at = np.array(at_rows, dtype=int)
    m = np.concatenate(counts_rows).astype(int) if counts_rows else np.zeros(0, dtype=int)
    least = np.concatenate(need_rows) if need_rows else np.zeros(0)
    L = grid[at]
    shares = np.array([b.share for b in inst.environment.backends])
    mean_load = (batch.attempts / L * batch.w_use)[:, None] * shares[None, :]
    launch = launch_peak(inst, batch)
    peak = np.maximum(mean_load * inst.environment.peak_to_mean, launch[None, :])
    per_replica = np.array(
        [a * s.gpus_per_replica * s.tokens_per_gpu_s for a, s in zip(shape_availability(inst), inst.inference.shapes)]
    )
    mult = supply_multipliers(inst, np.ones(1, dtype=int))
    occ = calc.occupancy_of(inst.environment.occupancy)
    w_bound = occ.mean if inst.holds else calc.occupancy_used(occ, inst.environment.littles_law_uses)
    zeros = np.zeros(at.size)
    return Pairs(
        cadence=L,
        kept=np.ones(at.size, dtype=int),
        makespan=span[at],
        startup=zeros,
        groups=m,
        exceedance=zeros,
        drop=zeros,
        attempts=least,
        inflight=mean_load,
        peak=peak,
        supply_per_replica=np.repeat(per_replica[None, :] * mult, at.size, axis=0),
        rejected=rejected,
        grid_points=int(grid.size),
        # the rate whose loads rate·s_b·W (W as the sandbox bound reads it) are E_b; 0 under hold, whose bound
        # reads E^hold of a rate, more than a batch's E_b (the pair's own loads still bound it)
        sandbox_rate=np.zeros(at.size) if inst.holds else batch.attempts / L * batch.w_use / w_bound,
    )


def launch_peak(inst: Instance, batch: Batch) -> np.ndarray:
    """(backends,) the environments a batch's launch asks at once: N·s_b, and under hold (MODEL §11 with §14)
    N·s_b + β·sqrt(N·s_b·(1 - s_b)), each member drawing its backend."""
    shares = np.array([b.share for b in inst.environment.backends])
    mean = batch.attempts * shares
    if not inst.holds:
        return mean
    beta = holding.safety_factor(inst.planning.sandbox_wait)
    return mean + beta * np.sqrt(np.maximum(mean * (1.0 - shares), 0.0))


def most_supply(inst: Instance, batch: Batch, counts: np.ndarray, cadence: float) -> np.ndarray:
    """Tokens/s with every pool filled by its best shape beside each of ``counts`` training groups; under
    colocated the training pool's every GPU generates, whatever the groups (they take turns)."""
    ones = np.ones(1, dtype=int)
    if not batch.shared:
        return best_supply(inst, counts, ones, np.full(counts.size, cadence))[:, 0]
    pool = inst.pool(inst.training.pool)
    return np.full(counts.size, pool.gpus * float(pool_rate(inst, pool.name, ones)[0]))


def demand(inst: Instance, batch: Batch, cadence: float, counts: np.ndarray) -> np.ndarray:
    """The supply ``cadence`` asks with each of ``counts`` training groups, in attempts/s of
    ``workload.tokens_per_attempt`` tokens each (the unit of the model's supply row): N·tokens/tokens_per_attempt
    over the generation budget (inf where the budget is shorter than the slowest attempt or U is unmeasured)."""
    update = calc.update_time(inst.training.update_time, counts * inst.training.gpus_per_group)
    budget = np.broadcast_to(batch.generation_budget(cadence, update), np.shape(update))
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = np.isfinite(budget) & (budget >= batch.slowest * (1 - REL_TOL)) & (budget > 0)
        work = batch.attempts * batch.tokens / inst.workload.tokens_per_attempt
        return np.where(ok, work / np.where(ok, budget, 1.0), math.inf)
