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

With the start-up counted (``schedule.count_startup``, and always on the hold basis: MODEL §8, §11 item 1, §14)
``T = fill + (n-1)·L + U(m) + extra_time``, the fill over W_τ at the pair's R_raw (launches of one batch take
``B/(p·R_raw) = L·(1 - drop)``: the first batch drops nothing), so each pair has a row per training-group count
worth having. On the hold basis rows 5 and 6 hold ``E^hold_b = R_raw·s_b·mean(W_τ) + β·sqrt(V_b)`` from the cut
moments (§11 item 2) and the mean-gap row reads the consumed gap ``G = floor(u + M/L)`` given ``G <= K``, ``M``
a group's completion time over W_τ (§11 item 3).

Within a cadence a K that asks no less supply than another and whose shapes deliver no more (and, with the
start-up counted, whose fill is no shorter) is dominated, as in the seed's table. No pyomo.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import holding
from trainground.solver.laws import regimes as law
from trainground.solver.table import group_counts
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
    K (with the start-up counted, a row per training-group count worth having of each pair); the ``attempts``
    column is the supply a pair asks, in attempts of ``workload.tokens_per_attempt`` tokens (the model's supply row
    reads that unit), and ``resident`` the versions each keeps resident."""
    w, fr = inst.workload, inst.freshness
    grid = calc.cadence_grid(inst)
    Ks = np.arange(1, fr.max_versions_kept + 1)
    rejected: dict[str, int] = {}
    keep = np.ones((grid.size, Ks.size), dtype=bool)

    def cut(mask, family: str) -> None:
        nonlocal keep
        keep = counted_cut(keep, np.asarray(mask), family, rejected)

    span = calc.makespan(inst, grid)
    # with the start-up counted T = fill + (n-1)·L + U(m) + extra_time, whose fill may be shorter than L (the
    # first batch drops nothing): (n-1)·L + extra_time is the bound every pair's T keeps
    bound = span - grid if inst.counts_startup else span
    cut(bound <= inst.schedule.deadline * (1 + REL_TOL), "deadline")
    groups = calc.min_groups_for(inst, grid) if grid.size else np.zeros(0, dtype=int)
    cut(groups > 0, "update_time")
    if fr.max_mean_gap is not None:
        cut(mean_gaps(inst, d, grid, Ks.size) <= fr.max_mean_gap * (1 + REL_TOL), "max_mean_gap")
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
    fills = np.zeros(keep.shape)
    if inst.counts_startup:
        fills = _fills(inst, d, keep, attempts)
        shortest = group_counts.steady_spans(inst, grid, groups)  # (n-1)·L + the shortest U(m) + extra_time
        cut(fills + shortest[:, None] <= inst.schedule.deadline * (1 + REL_TOL), "deadline")
    keep &= undominated_where(keep, demand, mult, fills if inst.counts_startup else None)
    if inst.counts_startup:
        at, k, m, makespan = _startup_rows(inst, d, grid, keep, groups, fills, demand, resident, rejected)
    else:
        at, k = np.nonzero(keep)
        m, makespan = groups[at], span[at]
    L, rate = grid[at], attempts[at, k]
    inflight, sandbox_rate = _loads(inst, d, rate)
    availability = zip(shape_availability(inst), inst.inference.shapes)
    per_replica = np.array([a * s.gpus_per_replica * s.tokens_per_gpu_s for a, s in availability])
    return Pairs(
        cadence=L,
        kept=Ks[k],
        makespan=np.asarray(makespan, dtype=float),
        startup=fills[at, k],
        groups=np.asarray(m, dtype=int),
        exceedance=q[at, k],
        drop=drop[at, k],
        attempts=demand[at, k] / w.tokens_per_attempt,
        inflight=inflight,
        peak=inflight * inst.environment.peak_to_mean,
        supply_per_replica=per_replica[None, :] * mult[k] * d.sync_kept(L)[:, None],
        rejected=rejected,
        grid_points=int(grid.size),
        sandbox_rate=sandbox_rate,
        resident=resident[k],
    )


def mean_gaps(inst: Instance, d: Drop, grid: np.ndarray, kept: int) -> np.ndarray:
    """(grid, K = 1..kept) the mean gap constraint 7 limits: ``W_use/L`` over W_τ (MODEL §2 with §14), or on the hold
    basis the consumed gap's, G = floor(u + M/L) given G <= K, M a group's completion time over W_τ (§11 item 3)."""
    if inst.holds and grid.size:
        return holding.consumed_mean_gap(d.occupancy, grid, kept, inst, d.tau)
    return np.broadcast_to((d.w_use / grid + d.post)[:, None], (grid.size, kept))


def _fills(inst: Instance, d: Drop, keep: np.ndarray, attempts: np.ndarray) -> np.ndarray:
    """(grid, K) the start-up fill of MODEL §8 over W_τ at each entry of ``keep`` (inf elsewhere): the smallest t with
    p·R_raw·∫_0^t F_grp,τ(s) ds = B, ``p`` the intake before drops (p·F(τ) under truncated: filter: the first batch
    drops nothing for age) and R_raw the pair's attempt rate, so the launches of one batch take B/(p·R_raw) = L·(1 -
    drop)."""
    w, corr = inst.workload, inst.freshness.group_correlation
    out = np.full(keep.shape, np.inf)
    if keep.any():
        batch_time = w.batch_trajectories / (d.intake * attempts[keep])
        out[keep] = law.cut_fill(d.occupancy, batch_time, w.group_size, corr, d.tau)
    return out


def _startup_rows(inst, d: Drop, grid, keep, fewest, fills, demand, resident, rejected):
    """With the start-up counted (``T = fill + (n-1)·L + U(m) + extra_time``), a row per training-group count worth
    having at each kept (cadence, K): from the pair's fewest groups, each count with a shorter U(m) than every smaller
    one, on time, whose pools can still supply the pair's demand beside it. Returns the rows' grid points, K columns,
    groups and makespans; entries left without a row are counted as cut by the deadline or the pools."""
    lo, hi = calc.group_range(inst)
    counts = np.arange(lo, max(lo, hi) + 1)
    every = calc.update_time(inst.training.update_time, counts * inst.training.gpus_per_group)
    every = np.where(np.isnan(every), np.inf, every)
    most = np.zeros((counts.size, resident.size))
    for pool in inst.gpu_pools:
        most += calc.free_gpus(inst, pool, counts)[:, None] * pool_rate(inst, pool.name, resident)[None, :]
    sched, n = inst.schedule, inst.workload.iterations
    late = sched.extra_time + (n - 1) * grid[:, None] + fills
    rows: list[tuple[int, int, np.ndarray]] = []
    on_time = np.zeros(keep.shape, dtype=bool)
    for i, k in zip(*np.nonzero(keep)):
        own = counts >= fewest[i]
        u = every[own]
        useful = u < np.minimum.accumulate(np.concatenate(([np.inf], u[:-1]))) * (1 - REL_TOL)
        timely = useful & (late[i, k] + u <= sched.deadline * (1 + REL_TOL))
        on_time[i, k] = bool(timely.any())
        supplied = most[own, k] * float(d.sync_kept(grid[i])) >= demand[i, k] * (1 - REL_TOL)
        rows.append((int(i), int(k), counts[own][timely & supplied]))
    keep = counted_cut(keep, on_time, "deadline", rejected)
    has_row = np.zeros(keep.shape, dtype=bool)
    for i, k, chosen in rows:
        has_row[i, k] = chosen.size > 0
    counted_cut(keep, has_row, "pool_capacity", rejected)
    at = np.array([i for i, _, chosen in rows for _ in chosen], dtype=int)
    kk = np.array([k for _, k, chosen in rows for _ in chosen], dtype=int)
    groups = np.concatenate([chosen for _, _, chosen in rows]).astype(int) if rows else np.zeros(0, dtype=int)
    update = calc.update_time(inst.training.update_time, groups * inst.training.gpus_per_group)
    return at, kk, groups, late[at, kk] + update


def _loads(inst: Instance, d: Drop, rate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pairs, backends) rows 5's in-flight environments at attempt rates ``rate``: E_b = R_raw·s_b·W_use over W_τ
    (MODEL §2 with §14), or on the hold basis E^hold_b = R_raw·s_b·mean(W_τ) + β·sqrt(V_b) from the cut moments
    (§11 item 2); and per pair the rate whose loads rate·s_b·W at the sandbox bounds' W (W_use of W, or mean(W)
    under hold) stay within them."""
    env = inst.environment
    shares = np.array([b.share for b in env.backends])
    if not inst.holds:
        w_bound = calc.occupancy_used(d.occupancy, env.littles_law_uses)
        return (rate * d.w_use)[:, None] * shares[None, :], rate * d.w_use / w_bound
    load = law.hold_inflight(inst, d.occupancy, d.tau, rate)
    active = shares > 0
    if not active.any():
        return load, rate * d.mean_cut / d.occupancy.mean
    return load, np.min(load[:, active] / (shares[active] * d.occupancy.mean)[None, :], axis=1)
