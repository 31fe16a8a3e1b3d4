"""MIP coefficients per admissible (cadence, versions kept) pair, from the calculus (MODEL.md §2).

Every nonlinear quantity — exceedance, group drop, attempts, in-flight counts, update
time, version gaps — depends on the cadence ``L`` only through its grid point and on
``K`` only through drop and slowdown, so the model sees them as constants of a pair.
A pair is admissible when it passes the constraints that need no other decision:
deadline (§3.4), update time (§3.3, via the fewest groups that keep up), freshness
(§3.7) and a finite attempt rate. Within one cadence, a ``K`` whose attempt rate is no
lower and whose every shape's throughput is no higher than another ``K``'s is dominated
and left out: it can never be strictly better.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from models.instance import Instance
from solver import calculus as calc


@dataclass(frozen=True)
class Pairs:
    """Coefficient columns, one entry per admissible (cadence, K) pair, ordered by cadence then K."""

    cadence: np.ndarray  # s
    kept: np.ndarray  # versions kept K
    makespan: np.ndarray  # s
    groups: np.ndarray  # fewest training groups with U <= L
    exceedance: np.ndarray
    drop: np.ndarray
    attempts: np.ndarray  # R_raw, 1/s
    inflight: np.ndarray  # (pairs, backends) E_b
    peak: np.ndarray  # (pairs, backends) E^pk_b
    supply_per_replica: np.ndarray  # (pairs, shapes) tokens/s one replica delivers
    rejected: dict[str, int] = field(default_factory=dict)  # grid points or pairs cut, by constraint family
    grid_points: int = 0

    @property
    def size(self) -> int:
        return int(self.cadence.size)

    def keys(self) -> list[tuple[float, int]]:
        """(cadence, K) of each pair, cadence rounded so equal grid points compare equal."""
        return list(zip(np.round(self.cadence, 9).tolist(), self.kept.tolist()))


_EXCEEDANCE: dict[tuple[str, bytes, int], np.ndarray] = {}  # q tables by (occupancy spec, grid, K), oldest first
EXCEEDANCE_CACHE_SIZE = 16


def _exceedance_table(spec, occ, grid: np.ndarray, kept: int) -> np.ndarray:
    """q(L, K) over the grid × 1..kept for occupancy ``occ`` (the distribution of ``spec``); cached by
    the spec's JSON, since sweeps change it rarely and it dominates the table."""
    key = (spec.model_dump_json(), np.ascontiguousarray(grid, dtype=float).tobytes(), kept)
    table = _EXCEEDANCE.get(key)
    if table is None:
        LL, KK = np.meshgrid(grid, np.arange(1, kept + 1), indexing="ij")
        table = calc.exceedance(occ, LL, KK) if grid.size else np.zeros(LL.shape)
        table.setflags(write=False)
        if len(_EXCEEDANCE) >= EXCEEDANCE_CACHE_SIZE:
            del _EXCEEDANCE[next(iter(_EXCEEDANCE))]
        _EXCEEDANCE[key] = table
    return table


BOUND_SLACK = 1e-7  # a cost bound rounds up only past this: HiGHS's 1e-9 tolerance must not make it invalid


@dataclass(frozen=True)
class Demand:
    """The (grid, K) quantities set by the run alone — workload, schedule, training, freshness and
    occupancy — before any inference shape or pool size is looked at; arrays are (grid, K), read-only."""

    grid: np.ndarray  # cadence grid, s
    kept: np.ndarray  # 1..max_versions_kept
    w_use: float  # the occupancy Little's law uses, s
    span: np.ndarray  # (grid,) makespan, s
    groups: np.ndarray  # (grid,) fewest training groups with U <= L
    exceedance: np.ndarray
    drop: np.ndarray
    attempts: np.ndarray  # R_raw, 1/s; inf where the effective intake is 0
    keep: np.ndarray  # passes deadline, update time, freshness and effective intake
    rejected: dict[str, int]  # entries cut so far, by constraint family


def _demand_inputs(inst: Instance) -> tuple:
    """Everything :func:`_demand` reads (a sweep point with equal inputs reuses its Demand)."""
    env = inst.environment
    return (inst.workload, inst.schedule, inst.training, inst.freshness, env.occupancy, env.littles_law_uses,
            inst.pool(inst.training.pool).gpus)


_DEMAND: list[tuple[tuple, Demand]] = []  # (inputs, demand), most recent last
DEMAND_CACHE_SIZE = 4


def demand(inst: Instance) -> Demand:
    """The run's Demand, computed once per set of inputs (a throughput or price sweep reuses it)."""
    inputs = _demand_inputs(inst)
    for seen, found in reversed(_DEMAND):
        if seen == inputs:
            return found
    found = _demand(inst)
    if len(_DEMAND) >= DEMAND_CACHE_SIZE:
        del _DEMAND[0]
    _DEMAND.append((inputs, found))
    return found


def _demand(inst: Instance) -> Demand:
    w, env, fr = inst.workload, inst.environment, inst.freshness
    occ = calc.occupancy_of(env.occupancy)
    w_use = calc.occupancy_used(occ, env.littles_law_uses)
    grid = calc.cadence_grid(inst)
    rejected: dict[str, int] = {}
    Ks = np.arange(1, fr.max_versions_kept + 1)
    shape = (grid.size, Ks.size)
    keep = np.ones(shape, dtype=bool)

    def cut(mask: np.ndarray, family: str) -> None:
        nonlocal keep
        keep = _cut(keep, mask, family, rejected)

    span = calc.makespan(inst, grid)
    cut(span <= inst.schedule.deadline * (1 + calc.REL_TOL), "deadline")
    groups = calc.min_groups_for(inst, grid) if grid.size else np.zeros(0, dtype=int)
    cut(groups > 0, "update_time")
    if fr.max_mean_gap is not None:
        gap = calc.mean_version_gap(w_use, grid, fr.gap_convention)
        cut(gap <= fr.max_mean_gap * (1 + calc.REL_TOL), "max_mean_gap")

    q = _exceedance_table(env.occupancy, occ, grid, fr.max_versions_kept)
    drop = calc.group_drop(q, w.group_size, fr.overrun_policy, fr.group_correlation)
    intake = w.intake_rate * (1.0 - drop)
    cut(intake > 0, "effective_intake")
    if fr.max_exceedance is not None:
        cut(q <= fr.max_exceedance * (1 + calc.REL_TOL) + 1e-15, "max_exceedance")
    if fr.max_group_drop is not None:
        cut(drop <= fr.max_group_drop * (1 + calc.REL_TOL) + 1e-15, "max_group_drop")
    with np.errstate(divide="ignore"):
        attempts = np.where(intake > 0, w.batch_trajectories / (grid[:, None] * np.where(intake > 0, intake, 1.0)), np.inf)
    found = Demand(grid=grid, kept=Ks, w_use=w_use, span=span, groups=groups, exceedance=q, drop=drop,
                   attempts=attempts, keep=keep, rejected=rejected)
    for name in ("grid", "kept", "span", "groups", "exceedance", "drop", "attempts", "keep"):
        getattr(found, name).setflags(write=False)
    return found


def _cut(keep: np.ndarray, mask: np.ndarray, family: str, rejected: dict[str, int]) -> np.ndarray:
    """``keep`` and ``mask`` (per cadence or per (cadence, K)), counting the entries it loses under ``family``."""
    mask = np.broadcast_to(mask if mask.ndim == 2 else mask[:, None], keep.shape)
    lost = int(np.count_nonzero(keep & ~mask))
    if lost:
        rejected[family] = rejected.get(family, 0) + lost
    return keep & mask


def build(inst: Instance) -> Pairs:
    """The admissible, undominated (cadence, K) pairs of an instance: the model's index."""
    d = demand(inst)
    env, w = inst.environment, inst.workload
    grid, Ks, groups, attempts = d.grid, d.kept, d.groups, d.attempts
    rejected = dict(d.rejected)
    shapes = inst.inference.shapes
    a = inst.inference.availability
    mult = np.stack([calc.supply_multiplier(s.version_slowdown, Ks) for s in shapes], axis=1)  # (K, S)
    # Pool bound: even filling every pool with its best shape cannot meet the demand.
    demand_tokens = attempts * w.tokens_per_attempt
    best = np.zeros(attempts.shape)
    for pool in inst.gpu_pools:
        rates = [a * s.tokens_per_gpu_s * mult[:, i] for i, s in enumerate(shapes) if s.pool == pool.name]
        if not rates:
            continue
        best += calc.free_gpus(inst, pool, groups)[:, None] * np.max(rates, axis=0)[None, :]
    keep = _cut(d.keep, best >= demand_tokens * (1 - calc.REL_TOL), "pool_capacity", rejected)
    keep &= _undominated(np.where(keep, attempts, np.inf), mult)

    at, k = np.nonzero(keep)  # grid point and K column of each pair, by cadence then K
    pair_attempts = attempts[at, k]
    inflight = (pair_attempts * d.w_use)[:, None] * np.array([b.share for b in env.backends])[None, :]
    per_replica = np.array([a * s.gpus_per_replica * s.tokens_per_gpu_s for s in shapes])
    return Pairs(
        cadence=grid[at],
        kept=Ks[k],
        makespan=d.span[at],
        groups=groups[at],
        exceedance=d.exceedance[at, k],
        drop=d.drop[at, k],
        attempts=pair_attempts,
        inflight=inflight,
        peak=inflight * env.peak_to_mean,
        supply_per_replica=per_replica[None, :] * mult[k],
        rejected=rejected,
        grid_points=int(grid.size),
    )


def _undominated(attempts: np.ndarray, mult: np.ndarray) -> np.ndarray:
    """Mask of (grid, K) entries not dominated by another admissible K at the same cadence.

    Inadmissible entries carry an infinite attempt rate. K' dominates K when its attempt rate is no
    higher and every shape's supply multiplier no lower; among exact equals the smaller K is kept.
    """
    n_k = attempts.shape[1]
    if n_k == 0 or np.all(mult == mult[0]):
        # No slowdown difference between the K: only the lowest attempt rate (smallest such K) survives.
        best = np.argmin(attempts, axis=1) if n_k else np.zeros(attempts.shape[0], dtype=int)
        keep = np.zeros(attempts.shape, dtype=bool)
        keep[np.arange(attempts.shape[0]), best] = True
        return keep & np.isfinite(attempts)
    ks = np.arange(n_k)
    mult_ok = np.all(mult[:, None, :] >= mult[None, :, :], axis=2)  # [k2, k]: k2's supply >= k's
    mult_equal = np.all(mult[:, None, :] == mult[None, :, :], axis=2)
    other = ks[:, None] != ks[None, :]
    a2, a1 = attempts[:, :, None], attempts[:, None, :]  # [grid, k2, k]
    better = a2 <= a1
    equal = (a2 == a1) & mult_equal[None]
    wins = np.isfinite(a2) & mult_ok[None] & other[None] & ((better & ~equal) | (equal & (ks[:, None] < ks[None, :])[None]))
    return np.isfinite(attempts) & ~wins.any(axis=1)


def hourly_lower_bound(inst: Instance, pairs: Pairs, shared: dict[str, dict] | None = None) -> np.ndarray:
    """A valid lower bound on the hourly cost of any plan at each pair ($/h); inf where none can exist.

    Training: the pair's fewest groups at the training pool's price. Inference: the LP relaxation over
    shapes and pool sizes (integrality relaxed). Sandboxes: the environments that must stay on local
    nodes — the steady load, and the non-eligible share of the peak — at the cheapest node price per
    environment of one resource row at a time. VMs cost at least 0. ``shared``: the model's
    ``global_values`` of ``inst``, when the caller has them.
    """
    env = inst.environment
    tok = inst.workload.tokens_per_attempt
    price = {p.name: p.gpu_hour_cost for p in inst.gpu_pools}
    train_gpus = pairs.groups * inst.training.gpus_per_group
    train = price[inst.training.pool] * train_gpus
    # Inference: the LP relaxation of min cost s.t. supply >= demand and pool sizes. Within a pool the
    # cheapest shape per attempt is also the one with the most attempts per GPU, so each pool offers one
    # rate; across pools, filling the cheapest first is optimal (a fractional knapsack).
    offers = []  # (cost per attempt, attempts/s the pool can give) per pool, each (pairs,)
    for pool in inst.gpu_pools:
        per_gpu = np.zeros(pairs.size)  # attempts/s per GPU of the pool's best shape
        for i, s in enumerate(inst.inference.shapes):
            if s.pool == pool.name:
                per_gpu = np.maximum(per_gpu, pairs.supply_per_replica[:, i] / tok / s.gpus_per_replica)
        free = calc.free_gpus(inst, pool, pairs.groups)
        with np.errstate(divide="ignore"):
            cost = np.where(per_gpu > 0, pool.gpu_hour_cost / np.where(per_gpu > 0, per_gpu, 1.0), np.inf)
        offers.append((cost, free * per_gpu))
    costs = np.stack([c for c, _ in offers], axis=1) if offers else np.zeros((pairs.size, 0))
    caps = np.stack([c for _, c in offers], axis=1) if offers else np.zeros((pairs.size, 0))
    order = np.argsort(costs, axis=1, kind="stable")
    need = pairs.attempts.astype(float).copy()
    inference = np.zeros(pairs.size)
    for j in range(costs.shape[1]):
        pick = order[:, j]
        cost = np.take_along_axis(costs, pick[:, None], axis=1)[:, 0]
        cap = np.take_along_axis(caps, pick[:, None], axis=1)[:, 0]
        take = np.where(np.isfinite(cost), np.minimum(need, cap), 0.0)
        inference += np.where(take > 0, take * np.where(np.isfinite(cost), cost, 0.0), 0.0)
        need -= take
    inference = np.where(need > 1e-9 * np.maximum(pairs.attempts, 1.0), np.inf, inference)
    shapes = inst.inference.shapes
    if len(shapes) == 1:  # one shape: its replica count is an integer, so round the LP bound up
        per_replica = pairs.supply_per_replica[:, 0] / tok
        with np.errstate(divide="ignore", invalid="ignore"):
            needed = np.where(per_replica > 0, pairs.attempts * (1 - calc.REL_TOL) / per_replica, np.inf)
            replicas = calc.ceil_tol(needed, BOUND_SLACK)
        price_replica = price[shapes[0].pool] * shapes[0].gpus_per_replica
        inference = np.maximum(inference, np.where(np.isfinite(replicas), replicas * price_replica, np.inf))
    # Sandboxes: the steady split and the local part of the peak split each need their environments on
    # nodes, and each resource row (density, cores, memory) alone bounds what those nodes cost: every
    # environment of b takes coef_b of a row's capacity on some node type that runs b. Each (split,
    # row) bound is valid, so is the largest; a sum of per-backend worst cases would not be.
    from solver.model import global_values, index_of  # the rows and coefficients the model builds

    if shared is None:
        shared = global_values(inst, index_of(inst))
    row_load, row_cap = shared["row_load"], shared["row_cap"]  # per environment and per node, of each resource row
    active = [(j, b) for j, b in enumerate(env.backends) if b.share > 0]
    resources = ("density", "cores", "memory")
    cheapest = np.full((len(active), len(resources)), np.inf)  # $/h per environment of b on row r, best node type
    for i, (_, b) in enumerate(active):
        for r, resource in enumerate(resources):
            for k in env.node_types:
                if b.name not in k.density:
                    continue
                row = ("node", k.name, resource)
                if row not in row_cap:  # this node type has no such row: the row costs nothing there
                    cheapest[i, r] = 0.0
                    continue
                cheapest[i, r] = min(cheapest[i, r], k.hour_cost * row_load[(*row, b.name)] / row_cap[row])
    columns = [j for j, _ in active]
    local = np.array([1 - env.cloud.eligible_share.get(b.name, 0.0) for _, b in active])
    loads = np.stack([pairs.inflight[:, columns], local * pairs.peak[:, columns]])  # (split, pair, backend)
    with np.errstate(invalid="ignore"):
        bound = np.where(loads[..., None] > 0, loads[..., None] * cheapest, 0.0).sum(axis=2)  # (split, pair, row)
    if len(env.node_types) == 1 and env.node_types[0].hour_cost > 0:
        # one node type: the bound is its price times a node count, which is an integer
        price_node = env.node_types[0].hour_cost
        bound = calc.ceil_tol(bound / price_node, BOUND_SLACK) * price_node
    sandbox = bound.max(axis=(0, 2), initial=0.0)  # the largest (split, row) bound, at least 0
    return train + inference + sandbox
