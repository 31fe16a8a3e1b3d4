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
from trainground.models.regime_rules import refuse_unplanned
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import goodput, holding, startup
from trainground.solver.table import group_counts
from trainground.solver.table.dominance import undominated_where
from trainground.solver.tolerances import REL_TOL, ZERO_SHARE_TOL


@dataclass(frozen=True)
class Pairs:
    """Coefficient columns, one entry per admissible (cadence, K) pair, ordered by cadence then K."""

    cadence: np.ndarray  # s
    kept: np.ndarray  # versions kept K (under staleness drop the age limit, MODEL §14)
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
    resident: np.ndarray | None = None  # versions resident when not K (in-flight updates keep one: MODEL §14)

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
    as JSON, the grid's bytes, max K); the consumed mean gaps of the hold basis by (occupancy spec as JSON,
    group size, correlation, gap convention, overrun policy), with the grid and max K they cover; the start-up fills
    by (occupancy spec as JSON, batch, group size, intake, correlation), each holding the fills of every
    attempt rate met so far (a rate's fill is a function of the rate alone, so a re-solve that moves a pool
    size, a price or a limit reuses them). At most ``size`` entries of each are kept, oldest dropped first.
    """

    def __init__(self, size: int = 4):
        self.size = size
        self._demand: list[tuple[tuple, Demand]] = []
        self._exceedance: list[tuple[tuple, np.ndarray]] = []
        self._gaps: list[tuple[tuple, tuple[np.ndarray, np.ndarray]]] = []
        self._fills: list[tuple[tuple, list[np.ndarray]]] = []

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

    def consumed_gaps(self, inst: Instance, occ: calc.Occupancy, grid: np.ndarray, kept: int) -> np.ndarray:
        """:func:`solver.laws.holding.consumed_mean_gap` over ``grid`` × 1..``kept`` (read-only). Column K reads
        the gap's tails up to K alone and a grid widened to a later top keeps its first points, so a table
        kept for a longer grid and more K serves a shorter one by slicing."""
        fr = inst.freshness
        key = (
            inst.environment.occupancy.model_dump_json(),
            inst.workload.group_size,
            fr.group_correlation,
            fr.gap_convention,
            fr.overrun_policy,
        )
        found = self._find(self._gaps, key)
        if found is not None:
            wide, table = found
            if wide.size >= grid.size and table.shape[1] >= kept and np.array_equal(wide[: grid.size], grid):
                return table[: grid.size, :kept]
        table = holding.consumed_mean_gap(occ, grid, kept, inst)
        table.setflags(write=False)
        self._keep(self._gaps, key, (np.array(grid, dtype=float), table))
        return table

    def fill(self, inst: Instance, occ: calc.Occupancy, rates: np.ndarray) -> np.ndarray:
        """:func:`solver.laws.startup.fill` of ``inst``'s run at attempt rates ``rates``, computed for the rates not
        met before."""
        w, corr = inst.workload, inst.freshness.group_correlation
        key = (inst.environment.occupancy.model_dump_json(), w.batch_trajectories, w.group_size, w.intake_rate, corr)
        known = self._find(self._fills, key)
        if known is None:
            known = [np.zeros(0), np.zeros(0)]
            self._keep(self._fills, key, known)
        seen, fills = known
        at = np.minimum(np.searchsorted(seen, rates), max(seen.size - 1, 0))
        hit = (seen[at] == rates) if seen.size else np.zeros(rates.shape, dtype=bool)
        new = np.unique(rates[~hit])
        if new.size:
            found = startup.fill(occ, new, w.batch_trajectories, w.group_size, w.intake_rate, corr)
            every = np.concatenate([seen, new])
            order = np.argsort(every, kind="stable")
            known[0], known[1] = every[order], np.concatenate([fills, np.atleast_1d(found)])[order]
            seen, fills = known
            at = np.searchsorted(seen, rates)
        return fills[at]

    @staticmethod
    def _find(store: list, key):
        return next((value for seen, value in reversed(store) if seen == key), None)

    def _keep(self, store: list, key, value) -> None:
        if len(store) >= self.size:
            del store[0]
        store.append((key, value))


def exceedance_table(occ: calc.Occupancy, grid: np.ndarray, kept: int) -> np.ndarray:
    """q(L, K) over the grid × 1..kept (read-only): :func:`solver.laws.calculus.exceedance`'s
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
    """Everything the run's Demand reads (a sweep point with equal inputs reuses its Demand). With the start-up
    counted and no MODEL §13 goodput it reads of the schedule the grid and the extra time alone (:func:`build` cuts
    at the deadline), so a table of the rows within a makespan cap (:mod:`solver.table.rows`) reuses it."""
    env, sched = inst.environment, inst.schedule
    read: object = sched
    if inst.counts_startup and inst.reliability is None:
        read = ((sched.cadence.min, sched.cadence.step, calc.cadence_top(inst)), sched.extra_time, sched.count_startup)
    run = (inst.workload, read, inst.training, inst.freshness, env.occupancy, env.littles_law_uses)
    return (*run, inst.pool(inst.training.pool).gpus, inst.planning.basis, inst.reliability)


@dataclass(frozen=True)
class Demand:
    """The (grid, K) quantities set by the run alone — workload, schedule, training, freshness and
    occupancy — before any inference shape or pool size is looked at; arrays are (grid, K), read-only."""

    grid: np.ndarray  # cadence grid, s
    kept: np.ndarray  # 1..max_versions_kept
    w_use: float  # the occupancy Little's law uses, s
    span: np.ndarray  # (grid, K) makespan T, s (MODEL §2; with count_startup, T less the fill: see build)
    startup: np.ndarray  # (grid, K) zeros: with count_startup, build computes the fill of the entries it keeps
    occupancy: calc.Occupancy
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
        keep = counted_cut(keep, mask, family, rejected)

    span = np.broadcast_to(calc.makespan(inst, grid)[:, None], keep.shape)
    failing = inst.reliability is not None  # MODEL §13: the makespan depends on the groups' goodput
    if not inst.counts_startup and not failing:  # else the makespan depends on the attempt rate, known below
        cut(span <= sched.deadline * (1 + REL_TOL), "deadline")
    groups = calc.min_groups_for(inst, grid) if grid.size else np.zeros(0, dtype=int)
    cut(groups > 0, "update_time")
    if failing:
        span = goodput.pair_spans(inst, grid, groups, keep, cut)
    if fr.max_mean_gap is not None:
        gap = mean_gaps(inst, occ, w_use, grid, fr.max_versions_kept, inst.holds, cache)
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
    if inst.counts_startup:  # T less the fill, which build computes for the entries the pools can supply
        span = np.broadcast_to(group_counts.steady_spans(inst, grid, groups)[:, None], keep.shape)
    found = Demand(
        grid=grid,
        kept=Ks,
        w_use=w_use,
        span=np.array(span),
        startup=np.zeros(keep.shape),
        occupancy=occ,
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
    inst: Instance,
    occ: calc.Occupancy,
    w_use: float,
    grid: np.ndarray,
    kept: int,
    consumed: bool,
    cache: TableCache | None = None,
) -> np.ndarray:
    """(grid, K = 1..kept) the mean version gap constraint 7 limits: W_use/L (MODEL §2), or with ``consumed``
    (the hold basis) the consumed gap's, which depends on K (§11 item 3); ``inst`` gives the conventions."""
    if consumed and grid.size:
        if cache is not None:
            return cache.consumed_gaps(inst, occ, grid, kept)
        return holding.consumed_mean_gap(occ, grid, kept, inst)
    steady = calc.mean_version_gap(w_use, grid, inst.freshness.gap_convention)
    return np.broadcast_to(np.asarray(steady)[:, None], (grid.size, kept))


def counted_cut(keep: np.ndarray, mask: np.ndarray, family: str, rejected: dict[str, int]) -> np.ndarray:
    """``keep`` and ``mask`` (per cadence, or per (cadence, K) for a (cadence, K) ``keep``), counting the entries it
    loses under ``family`` in ``rejected``."""
    mask = np.broadcast_to(mask if mask.ndim == keep.ndim else mask[:, None], keep.shape)
    lost = int(np.count_nonzero(keep & ~mask))
    if lost:
        rejected[family] = rejected.get(family, 0) + lost
    return keep & mask


def build(
    inst: Instance,
    cache: TableCache | None = None,
    dominated: bool = False,
    fewest_groups: bool = False,
    cover: group_counts.CostCover | None = None,
    every_count: bool = False,
) -> Pairs:
    """The admissible, undominated (cadence, K) pairs of an instance: the model's index. ``dominated`` keeps
    the dominated K too (a staged model, MODEL §12, shares K between stages). With start-up counted,
    ``fewest_groups``: only each pair's fewest on-time training groups (one row a pair, whatever the pool
    holds: :func:`solver.table.group_counts.fewest_rows`); ``cover``: only the group counts a cost search within its
    cost needs (:func:`solver.table.group_counts.covered_groups`). ``every_count``: one pair per training-group count
    worth having even where the makespan does not count the update time (a confidence solve: a scenario's
    slower update may ask for more groups than the fewest that keep up at the nominal values, and with MODEL
    §13's goodput they change T)."""
    d = _run_part(inst, cache)
    grid, Ks, groups, attempts = d.grid, d.kept, d.groups, d.attempts
    rejected = dict(d.rejected)
    mult = supply_multipliers(inst, Ks)
    demand_tokens = attempts * inst.workload.tokens_per_attempt
    best = best_supply(inst, groups, Ks, grid)
    keep = counted_cut(d.keep, best >= demand_tokens * (1 - REL_TOL), "pool_capacity", rejected)
    spans, fills = d.span, d.startup
    if inst.counts_startup:  # the fill only where the pools can supply the demand: a fine grid's few entries
        fills = _fills(inst, d, keep, cache)
        spans = fills + d.span
        keep = counted_cut(keep, spans <= inst.schedule.deadline * (1 + REL_TOL), "deadline", rejected)
    if not dominated:
        keep &= undominated_where(keep, attempts, mult, spans if inst.counts_startup else None)
    at, k = np.nonzero(keep)  # grid point and K column of each pair, by cadence then K
    m, span, startup = groups[at], spans[at, k], fills[at, k]
    if inst.counts_startup or every_count:
        rates = {p.name: pool_rate(inst, p.name, Ks) for p in inst.gpu_pools}
        most = group_counts.most_groups(inst, rates, cover, grid, at, k, m, demand_tokens[at, k], span)
        spare = best[at, k] - demand_tokens[at, k]
        counts = group_counts.counts_of(inst, d, at, k, spare, rates[inst.training.pool], fills, most)
        listing = group_counts.fewest_rows if fewest_groups else group_counts.group_rows
        at, k, m, span = listing(inst, counts, rejected)
        startup = fills[at, k]
    pair_attempts = attempts[at, k]
    inflight, sandbox_rate = holding.sandbox_loads(inst, pair_attempts, d.w_use)
    availability = zip(shape_availability(inst), inst.inference.shapes)
    per_replica = np.array([a * s.gpus_per_replica * s.tokens_per_gpu_s for a, s in availability])
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
        peak=inflight * inst.environment.peak_to_mean,
        supply_per_replica=per_replica[None, :] * mult[k] * goodput.weight_sync_factor(inst, grid[at])[:, None],
        rejected=rejected,
        grid_points=int(grid.size),
        sandbox_rate=sandbox_rate,
    )


def _run_part(inst: Instance, cache: TableCache | None) -> Demand:
    """The run's part of the table (from ``cache`` when given). Every plan's model is indexed by this table, so a
    run regime the model does not plan yet (MODEL §14) is refused here: one check for every command."""
    refuse_unplanned(inst)
    return cache.demand(inst) if cache is not None else _demand(inst, None)


def _fills(inst: Instance, d: Demand, keep: np.ndarray, cache: TableCache | None) -> np.ndarray:
    """(grid, K) the start-up fill of MODEL §8 at each entry of ``keep`` whose attempt rate is finite (inf
    elsewhere)."""
    w = inst.workload
    out = np.full(keep.shape, np.inf)
    at = keep & np.isfinite(d.attempts)
    if at.any() and cache is not None:
        out[at] = cache.fill(inst, d.occupancy, d.attempts[at])
    elif at.any():
        corr = inst.freshness.group_correlation
        out[at] = startup.fill(d.occupancy, d.attempts[at], w.batch_trajectories, w.group_size, w.intake_rate, corr)
    return out


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
