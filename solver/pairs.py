"""The admissible (cadence, K) pairs of an instance and their per-pair quantities (MODEL.md §2).

Every nonlinear quantity — exceedance, group drop, attempts, in-flight counts, update
time, version gaps — depends on the cadence ``L`` only through its grid point and on
``K`` only through drop and slowdown, so the model sees them as constants of a pair.
A pair is admissible when it passes the constraints that need no other decision:
deadline (§3.4), update time (§3.3, via the fewest groups that keep up), freshness
(§3.7), a finite attempt rate, and pool capacity (even the best shapes filling every
pool cannot supply the demand). Within one cadence, a ``K`` whose attempt rate is no
lower and whose every shape's throughput is no higher than another ``K``'s is
dominated and left out: it can never be strictly better.

No pyomo here. A sweep reuses the run's quantities between points through a
:class:`TableCache` it owns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from trainground.models.instance import Instance
from trainground.solver import calculus as calc
from trainground.solver import goodput, group_counts, holding, startup
from trainground.solver.dominance import undominated
from trainground.solver.tolerances import REL_TOL, ZERO_SHARE_TOL


@dataclass(frozen=True)
class Pairs:
    """Coefficient columns, one entry per admissible (cadence, K) pair, ordered by cadence then K."""

    cadence: np.ndarray  # s
    kept: np.ndarray  # versions kept K
    makespan: np.ndarray  # s
    startup: np.ndarray  # s, the pipeline fill counted in the makespan (0 unless count_startup)
    groups: np.ndarray  # fewest training groups with U <= L
    exceedance: np.ndarray
    drop: np.ndarray
    attempts: np.ndarray  # R_raw, 1/s
    inflight: np.ndarray  # (pairs, backends) E_b (E^hold_b under planning.basis hold, MODEL §11)
    peak: np.ndarray  # (pairs, backends) E^pk_b
    supply_per_replica: np.ndarray  # (pairs, shapes) tokens/s one replica delivers
    rejected: dict[str, int] = field(default_factory=dict)  # grid points or pairs cut, by constraint family
    grid_points: int = 0
    sandbox_rate: np.ndarray | None = None  # attempts/s whose Little's-law loads stay within ``inflight``

    @property
    def size(self) -> int:
        return int(self.cadence.size)

    def keys(self) -> list[tuple[float, int, int]]:
        """(cadence, K, training groups) of each pair, cadence rounded so equal grid points compare equal."""
        return list(zip(np.round(self.cadence, 9).tolist(), self.kept.tolist(), self.groups.tolist()))


class TableCache:
    """Work that points of a sweep share, owned by whoever re-solves (a sweep, a diagnosis).

    Keys: the run's :class:`Demand` by every input it reads (:func:`demand_inputs`, compared by
    equality: they hold pydantic models with lists); the exceedance table q(L, K) by (occupancy spec
    as JSON, the grid's bytes, max K). At most ``size`` entries of each are kept, oldest dropped first.
    """

    def __init__(self, size: int = 4):
        self.size = size
        self._demand: list[tuple[tuple, Demand]] = []
        self._exceedance: list[tuple[tuple, np.ndarray]] = []

    def demand(self, inst: Instance) -> Demand:
        key = demand_inputs(inst)
        found = self._find(self._demand, key)
        if found is None:
            found = _demand(inst, self)
            self._keep(self._demand, key, found)
        return found

    def exceedance(self, spec, occ: calc.Occupancy, grid: np.ndarray, kept: int) -> np.ndarray:
        key = (spec.model_dump_json(), np.ascontiguousarray(grid, dtype=float).tobytes(), kept)
        table = self._find(self._exceedance, key)
        if table is None:
            table = exceedance_table(occ, grid, kept)
            self._keep(self._exceedance, key, table)
        return table

    @staticmethod
    def _find(store: list, key):
        return next((value for seen, value in reversed(store) if seen == key), None)

    def _keep(self, store: list, key, value) -> None:
        if len(store) >= self.size:
            del store[0]
        store.append((key, value))


def exceedance_table(occ: calc.Occupancy, grid: np.ndarray, kept: int) -> np.ndarray:
    """q(L, K) over the grid × 1..kept (read-only): :func:`solver.calculus.exceedance`'s
    (E[min(W,(K+1)L)] - E[min(W,KL)]) / L, with E[min(W, jL)] computed once per multiple j = 1..kept+1
    (each serves two adjacent K)."""
    LL, JJ = np.meshgrid(grid, np.arange(1, kept + 2), indexing="ij")
    if grid.size:
        means = occ.limited_mean(JJ * LL)
        table = calc.exceedance_of_means(means[:, :-1], means[:, 1:], LL[:, 1:])
    else:
        table = np.zeros((0, kept))
    table.setflags(write=False)
    return table


def demand_inputs(inst: Instance) -> tuple:
    """Everything the run's Demand reads (a sweep point with equal inputs reuses its Demand)."""
    env = inst.environment
    return (
        inst.workload,
        inst.schedule,
        inst.training,
        inst.freshness,
        env.occupancy,
        env.littles_law_uses,
        inst.pool(inst.training.pool).gpus,
        inst.planning.basis,
        inst.reliability,
    )


@dataclass(frozen=True)
class Demand:
    """The (grid, K) quantities set by the run alone — workload, schedule, training, freshness and
    occupancy — before any inference shape or pool size is looked at; arrays are (grid, K), read-only."""

    grid: np.ndarray  # cadence grid, s
    kept: np.ndarray  # 1..max_versions_kept
    w_use: float  # the occupancy Little's law uses, s
    span: np.ndarray  # (grid, K) makespan T, s (MODEL §2, or §8 with count_startup)
    startup: np.ndarray  # (grid, K) pipeline fill before the first batch, s (0 unless count_startup)
    groups: np.ndarray  # (grid,) fewest training groups with U <= L
    exceedance: np.ndarray
    drop: np.ndarray
    attempts: np.ndarray  # R_raw, 1/s; inf where the effective intake is 0
    keep: np.ndarray  # passes deadline, update time, freshness and effective intake
    rejected: dict[str, int]  # entries cut so far, by constraint family


def _demand(inst: Instance, cache: TableCache | None) -> Demand:
    w, env, fr, sched = inst.workload, inst.environment, inst.freshness, inst.schedule
    occ = calc.occupancy_of(env.occupancy)
    w_use = calc.occupancy_used(occ, env.littles_law_uses)
    grid = calc.cadence_grid(inst)
    rejected: dict[str, int] = {}
    Ks = np.arange(1, fr.max_versions_kept + 1)
    keep = np.ones((grid.size, Ks.size), dtype=bool)

    def cut(mask: np.ndarray, family: str) -> None:
        nonlocal keep
        keep = _cut(keep, mask, family, rejected)

    span = np.broadcast_to(calc.makespan(inst, grid)[:, None], keep.shape)
    failing = inst.reliability is not None  # MODEL §13: the makespan depends on the groups' goodput
    if not inst.counts_startup and not failing:  # else the makespan depends on the attempt rate, known below
        cut(span <= sched.deadline * (1 + REL_TOL), "deadline")
    groups = calc.min_groups_for(inst, grid) if grid.size else np.zeros(0, dtype=int)
    cut(groups > 0, "update_time")
    if failing:
        span = goodput.pair_spans(inst, grid, groups, keep, cut)
    if fr.max_mean_gap is not None:
        gap = mean_gaps(inst, occ, w_use, grid, fr.max_versions_kept, inst.holds)
        cut(gap <= fr.max_mean_gap * (1 + REL_TOL), "max_mean_gap")
    q = (
        exceedance_table(occ, grid, fr.max_versions_kept)
        if cache is None
        else cache.exceedance(env.occupancy, occ, grid, fr.max_versions_kept)
    )
    drop = calc.group_drop(q, w.group_size, fr.overrun_policy, fr.group_correlation)
    intake = w.intake_rate * (1.0 - drop)
    cut(intake > 0, "effective_intake")
    if fr.max_exceedance is not None:
        cut(q <= fr.max_exceedance * (1 + REL_TOL) + ZERO_SHARE_TOL, "max_exceedance")
    if fr.max_group_drop is not None:
        cut(drop <= fr.max_group_drop * (1 + REL_TOL) + ZERO_SHARE_TOL, "max_group_drop")
    with np.errstate(divide="ignore"):
        attempts = np.where(
            intake > 0, w.batch_trajectories / (grid[:, None] * np.where(intake > 0, intake, 1.0)), np.inf
        )
    startup = np.zeros(keep.shape)
    if inst.counts_startup:
        startup, span = _with_startup(inst, occ, grid, groups, attempts, keep)
        cut(span <= sched.deadline * (1 + REL_TOL), "deadline")
    found = Demand(
        grid=grid,
        kept=Ks,
        w_use=w_use,
        span=np.array(span),
        startup=startup,
        groups=groups,
        exceedance=q,
        drop=drop,
        attempts=attempts,
        keep=keep,
        rejected=rejected,
    )
    for name in ("grid", "kept", "span", "startup", "groups", "exceedance", "drop", "attempts", "keep"):
        getattr(found, name).setflags(write=False)
    return found


def mean_gaps(
    inst: Instance, occ: calc.Occupancy, w_use: float, grid: np.ndarray, kept: int, consumed: bool
) -> np.ndarray:
    """(grid, K = 1..kept) the mean version gap constraint 7 limits: W_use/L (MODEL §2), or with ``consumed``
    (the hold basis) the consumed gap's, which depends on K (§11 item 3); ``inst`` gives the conventions."""
    if consumed and grid.size:
        return holding.consumed_mean_gap(occ, grid, kept, inst)
    steady = calc.mean_version_gap(w_use, grid, inst.freshness.gap_convention)
    return np.broadcast_to(np.asarray(steady)[:, None], (grid.size, kept))


def _with_startup(
    inst: Instance, occ: calc.Occupancy, grid: np.ndarray, groups: np.ndarray, attempts: np.ndarray, keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """MODEL §8: the pipeline fill before the first batch, and the shortest T = fill + (n-1)·L + U(m) +
    extra_time any admissible group count m gives, per (grid, K) entry (inf where not admissible).
    More groups than the fewest that keep up shorten U(m) in T; :func:`build` lists each count."""
    w = inst.workload
    fill = np.full(keep.shape, np.inf)
    at = keep & np.isfinite(attempts)
    if at.any():
        fill[at] = startup.fill(
            occ, attempts[at], w.batch_trajectories, w.group_size, w.intake_rate, inst.freshness.group_correlation
        )
    if inst.reliability is not None:
        trainer = goodput.shortest_trainer_time(inst, grid, groups)
    else:
        trainer = (w.iterations - 1) * grid + _shortest_updates(inst, groups)
    steady = trainer + inst.schedule.extra_time
    return fill, fill + steady[:, None]


def _shortest_updates(inst: Instance, groups: np.ndarray) -> np.ndarray:
    """Per cadence, the shortest update time of any admissible group count from its fewest (``groups``; 0:
    none) up: the minimum of U over counts m..max_groups, read off one suffix minimum over every count."""
    _, top = calc.group_range(inst)
    counts = np.arange(1, top + 1)
    u = calc.update_time(inst.training.update_time, counts * inst.training.gpus_per_group)
    suffix = np.minimum.accumulate(np.where(np.isnan(u), np.inf, u)[::-1])[::-1]  # min of U over counts >= m
    fewest = np.asarray(groups, dtype=int)
    found = (fewest > 0) & (fewest <= top)
    out = np.full(fewest.shape, np.inf)
    out[found] = suffix[fewest[found] - 1]
    return out


def _cut(keep: np.ndarray, mask: np.ndarray, family: str, rejected: dict[str, int]) -> np.ndarray:
    """``keep`` and ``mask`` (per cadence or per (cadence, K)), counting the entries it loses under ``family``."""
    mask = np.broadcast_to(mask if mask.ndim == 2 else mask[:, None], keep.shape)
    lost = int(np.count_nonzero(keep & ~mask))
    if lost:
        rejected[family] = rejected.get(family, 0) + lost
    return keep & mask


def build(
    inst: Instance, cache: TableCache | None = None, dominated: bool = False, fewest_groups: bool = False
) -> Pairs:
    """The admissible, undominated (cadence, K) pairs of an instance: the model's index. ``dominated`` keeps
    the dominated K too (a staged model, MODEL §12, shares K between stages: one stage's dominated K can be
    another's best). ``fewest_groups``: with start-up counted, each pair keeps only its fewest training-group
    count that meets the deadline, not every count worth having (:mod:`solver.group_counts`): the rows that
    answer whether a plan exists when no budget or confidence asks for more (``Planner.fewest_groups_only``),
    one per pair however many groups the pool holds."""
    d = cache.demand(inst) if cache is not None else _demand(inst, None)
    env, w = inst.environment, inst.workload
    grid, Ks, groups, attempts = d.grid, d.kept, d.groups, d.attempts
    rejected = dict(d.rejected)
    shapes = inst.inference.shapes
    mult = supply_multipliers(inst, Ks)
    demand_tokens = attempts * w.tokens_per_attempt
    best = best_supply(inst, groups, Ks, grid)
    keep = _cut(d.keep, best >= demand_tokens * (1 - REL_TOL), "pool_capacity", rejected)
    if not dominated:
        keep &= undominated(np.where(keep, attempts, np.inf), mult, d.span if inst.counts_startup else None)

    at, k = np.nonzero(keep)  # grid point and K column of each pair, by cadence then K
    m, span, startup = groups[at], d.span[at, k], d.startup[at, k]
    if inst.counts_startup:
        # The rate best_supply counts per free training-pool GPU at each K, slowdown and weight sync included:
        # spare / rate is then exactly the groups the bound can spare (a higher rate would cut counts it admits).
        sync = goodput.weight_sync_factor(inst, grid) if inst.reliability is not None else np.ones(grid.shape)
        per_group = pool_rate(inst, inst.training.pool, Ks)[k] * sync[at] * inst.training.gpus_per_group
        spare = best[at, k] - demand_tokens[at, k]
        rows, m, span = group_counts.rows(
            inst, groups[at], grid[at], d.startup[at, k], per_group, spare, rejected, fewest_groups
        )
        at, k = at[rows], k[rows]
        startup = d.startup[at, k]
    pair_attempts = attempts[at, k]
    inflight, sandbox_rate = holding.sandbox_loads(inst, pair_attempts, d.w_use)
    a = shape_availability(inst)
    sync = goodput.weight_sync_factor(inst, grid[at])
    per_replica = np.array([a[i] * s.gpus_per_replica * s.tokens_per_gpu_s for i, s in enumerate(shapes)])
    return Pairs(
        cadence=grid[at],
        kept=Ks[k],
        makespan=span,
        startup=startup,
        groups=m,
        exceedance=d.exceedance[at, k],
        drop=d.drop[at, k],
        attempts=pair_attempts,
        inflight=inflight,
        peak=inflight * env.peak_to_mean,
        supply_per_replica=per_replica[None, :] * mult[k] * sync[:, None],
        rejected=rejected,
        grid_points=int(grid.size),
        sandbox_rate=sandbox_rate,
    )


def supply_multipliers(inst: Instance, kept: np.ndarray) -> np.ndarray:
    """(K, shapes): the throughput each shape keeps with K resident versions."""
    return np.stack([calc.supply_multiplier(s.version_slowdown, kept) for s in inst.inference.shapes], axis=1)


def best_supply(inst: Instance, groups: np.ndarray, kept: np.ndarray, cadence: np.ndarray) -> np.ndarray:
    """(cadence, K) tokens/s with every pool filled by its best shape beside ``groups`` training groups
    (per cadence): the pool-capacity bound, which a pair's token demand must not exceed; weight sync
    (MODEL §13) takes its share at each ``cadence``."""
    best = np.zeros((np.asarray(groups).size, np.asarray(kept).size))
    for pool in inst.gpu_pools:
        best += calc.free_gpus(inst, pool, groups)[:, None] * pool_rate(inst, pool.name, kept)[None, :]
    if inst.reliability is not None:
        best = best * goodput.weight_sync_factor(inst, cadence)[:, None]
    return best


def shape_availability(inst: Instance) -> np.ndarray:
    """(shapes,) each shape's availability: ``a``, or a_s with failures and preemptions (MODEL §13)."""
    return goodput.availabilities(inst, calc.occupancy_of(inst.environment.occupancy).mean)


def pool_rate(inst: Instance, pool: str, kept: np.ndarray) -> np.ndarray:
    """(K,): tokens/s one GPU of ``pool`` gives with its best shape and K versions resident (0 with no shape)."""
    a, shapes = shape_availability(inst), inst.inference.shapes
    mult = supply_multipliers(inst, kept)
    rates = [a[i] * s.tokens_per_gpu_s * mult[:, i] for i, s in enumerate(shapes) if s.pool == pool]
    return np.max(rates, axis=0) if rates else np.zeros(np.asarray(kept).size)
