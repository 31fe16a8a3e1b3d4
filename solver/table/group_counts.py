"""With start-up counted (MODEL §8, and under the hold basis §11), U(m) is part of the makespan, so each
admissible (cadence, K) pair becomes one row per training-group count m worth having: from the fewest that
keep up, while each more group still shortens U(m), the pool-capacity bound still holds with the GPUs it
takes and T meets the deadline. :func:`group_rows` lists them all (what a cost or makespan solve needs);
:func:`fewest_rows` only the fewest on-time count of each pair (what a feasibility question needs: fewer
groups leave the pools more GPUs and ask nothing else more), found without listing the others.

A confidence solve lists the rows of every count worth having without start-up too (``pairs.build``'s
``every_count``: a scenario's slower update may ask for more groups; T = n·L/γ(m) + extra_time there), pair by
pair.

No pyomo here; :mod:`solver.table.pairs` calls these on its (cadence, K) entries.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import goodput
from trainground.solver.table.row_cap import check_rows, table_rows_cap_of
from trainground.solver.tolerances import DOUBT_SLACK, REL_TOL


@dataclass(frozen=True)
class Counts:
    """What every pair's group counts read: the admissible counts lo..hi, U(m) and 1/γ(m) over them, and per
    pair (indexed like ``at``) its grid point, K column, fewest count, start-up, and the most groups the pool
    capacity bound can spare beyond the fewest."""

    counts: np.ndarray
    update: np.ndarray  # U(m) over ``counts``, s (NaN outside a table law's range)
    factor: np.ndarray  # 1/γ(m) over ``counts`` (1 without MODEL §13)
    at: np.ndarray  # grid point of each pair
    k: np.ndarray  # K column of each pair
    cadence: np.ndarray  # L of each pair, s
    fewest: np.ndarray  # fewest groups with U <= L, per pair
    startup: np.ndarray  # fill of each pair, s
    extra: np.ndarray  # groups the pool could still give up, per pair (inf: no limit)


def counts_of(
    inst: Instance,
    d,
    at: np.ndarray,
    k: np.ndarray,
    spare_tokens: np.ndarray,
    rate: np.ndarray,
    fills: np.ndarray,
    most: np.ndarray | None = None,
) -> Counts:
    """The group counts of the pairs at grid points ``at``, K columns ``k`` of the run's Demand ``d``;
    ``spare_tokens``: each pair's best-shape supply beyond its demand at the fewest groups; ``rate``: (K,) the
    tokens/s the pool-capacity bound counts per free training-pool GPU, slowdown included (spare / rate is then
    exactly the GPUs the bound can spare: a higher rate would cut group counts the bound admits); ``fills``:
    (grid, K) the start-up fill of each entry; ``most``: per pair, the most groups a budget leaves room for
    (:func:`budget_groups`), None: no budget."""
    t = inst.training
    lo, hi = calc.group_range(inst)
    counts = np.arange(lo, hi + 1)
    sync = goodput.weight_sync_factor(inst, d.grid) if inst.reliability is not None else np.ones(d.grid.shape)
    per_group = rate[k] * sync[at] * t.gpus_per_group
    with np.errstate(divide="ignore", invalid="ignore"):
        extra = np.where(per_group == 0, np.inf, spare_tokens / np.where(per_group == 0, 1.0, per_group))
    fewest = np.asarray(d.groups)[at].astype(int)
    if most is not None:  # never below the fewest: a pair over budget keeps its one row, for the budget to cut
        extra = np.minimum(extra, np.maximum(most - fewest, 0))
    return Counts(
        counts=counts,
        update=calc.update_time(t.update_time, counts * t.gpus_per_group),
        factor=goodput.progress(inst, counts),
        at=at,
        k=k,
        cadence=d.grid[at],
        fewest=fewest,
        startup=fills[at, k],
        extra=extra,
    )


def most_groups(
    inst: Instance,
    pool_rates: dict[str, np.ndarray],
    cover: CostCover | None,
    grid: np.ndarray,
    at: np.ndarray,
    k: np.ndarray,
    fewest: np.ndarray,
    demand: np.ndarray,
    shortest: np.ndarray,
) -> np.ndarray | None:
    """Per pair, the most training groups a row may have: within the instance's budgets
    (:func:`budget_groups`) and, given a ``cover``, within its cost (:func:`covered_groups`); None: no bound."""
    most = budget_groups(inst, pool_rates, k, demand, shortest)
    bound = None if cover is None else covered_groups(inst, cover, grid, at, k, fewest, shortest)
    if bound is None:
        return most
    return bound if most is None else np.minimum(most, bound)


def budget_groups(
    inst: Instance, pool_rates: dict[str, np.ndarray], k: np.ndarray, demand: np.ndarray, shortest: np.ndarray
) -> np.ndarray | None:
    """Per pair (K column ``k``, token demand ``demand``, shortest makespan ``shortest``), the most training
    groups any plan within the instance's budgets can have (None without a budget): a row with more has an
    hourly cost above max_hourly_cost, or a total cost above max_total_cost, by a bound weaker than the
    cost searches' own (:func:`solver.table.bounds.hourly_lower_bound`, which closes such rows anyway): the reserved
    pools, training at its pool's price, and the demand at the lowest price per token/s any pool offers at K
    (``pool_rates``: the tokens/s per GPU of each pool's best shape, by K). A pool raised far above what a
    plan uses then lists the counts a budget can pay for, not every count it could spare."""
    limits, t = inst.limits, inst.training
    if limits.max_hourly_cost is None and limits.max_total_cost is None:
        return None
    priced = {p.name: 0.0 if p.billing == "reserved" else p.gpu_hour_cost for p in inst.gpu_pools}
    fixed = sum(p.gpus * p.gpu_hour_cost for p in inst.gpu_pools if p.billing == "reserved")
    per_token = np.full(next(iter(pool_rates.values())).shape, np.inf)
    for name, rate in pool_rates.items():
        with np.errstate(divide="ignore", invalid="ignore"):
            per_token = np.minimum(per_token, np.where(rate > 0, priced[name] / np.where(rate > 0, rate, 1.0), np.inf))
    per_group = priced[t.pool] * t.gpus_per_group
    floor = fixed + demand * np.where(np.isfinite(per_token[k]), per_token[k], 0.0)
    room = np.full(k.shape, np.inf)
    slack = 1 + DOUBT_SLACK
    if limits.max_hourly_cost is not None:
        room = np.minimum(room, limits.max_hourly_cost * slack - floor)
    if limits.max_total_cost is not None:
        with np.errstate(divide="ignore"):
            room = np.minimum(room, limits.max_total_cost * slack * 3600.0 / shortest - floor)
    if per_group <= 0:
        return None
    return np.floor(np.maximum(room, 0.0) / per_group)


@dataclass(frozen=True)
class CostCover:
    """Which group counts a cost search needs (:mod:`solver.table.rows`): the rows of ``criterion`` (total_cost or
    hourly_cost) whose lower bound is at most ``most_cost``, read from the lower bound ``lower`` of each pair's
    fewest-groups row (at ``cadence``, ``kept``) and the training pool's price of a group."""

    criterion: str
    most_cost: float
    cadence: np.ndarray
    kept: np.ndarray
    groups: np.ndarray  # the fewest-groups row's count: the pair's fewest on time
    lower: np.ndarray  # $/h: a valid lower bound on the hourly cost of the pair's fewest-groups row


def covered_groups(
    inst: Instance,
    cover: CostCover,
    grid: np.ndarray,
    at: np.ndarray,
    k: np.ndarray,
    fewest: np.ndarray,
    shortest: np.ndarray,
) -> np.ndarray | None:
    """Per pair (grid point ``at``, K column ``k``, fewest groups that keep up ``fewest``, shortest makespan
    ``shortest``), the most training groups a row may have and still cost at most ``cover.most_cost``: m more
    groups than the fewest-groups row's (the fewest on time) add m groups' GPUs at the training pool's price
    to that row's bound (the inference bound only grows as the pool gives GPUs to training; the sandboxes are
    the pair's), and its makespan is at least the pair's shortest. A pair the cover does not know keeps
    every count; None when a group costs nothing (a reserved training pool): every count is kept."""
    t = inst.training
    pool = inst.pool(t.pool)
    per_group = (0.0 if pool.billing == "reserved" else pool.gpu_hour_cost) * t.gpus_per_group
    if per_group <= 0:
        return None
    shape = (grid.size, int(inst.freshness.max_versions_kept))
    lower, first = np.full(shape, -np.inf), np.zeros(shape)
    where = (np.searchsorted(grid, cover.cadence), cover.kept - 1)
    lower[where], first[where] = cover.lower, cover.groups
    base, start = lower[at, k], np.maximum(first[at, k], fewest)
    hourly = np.full(base.shape, cover.most_cost * (1 + DOUBT_SLACK))
    if cover.criterion == "total_cost":
        with np.errstate(divide="ignore"):
            hourly = hourly * 3600.0 / shortest
    with np.errstate(invalid="ignore"):
        room = np.where(base == np.inf, 0.0, hourly - base)  # -inf: a pair not in the cover, every count
    return start + np.floor(np.maximum(room, 0.0) / per_group)


def steady_spans(inst: Instance, grid: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Per cadence, the shortest T less the fill that any admissible group count gives, (n-1)·L + U(m) +
    extra_time (MODEL §8; ((n-1)·L + U(m))/γ(m) with §13's goodput), inf where no count keeps up; the
    fewest that keep up are ``groups`` (0: none)."""
    w = inst.workload
    if inst.reliability is not None:
        trainer = goodput.shortest_trainer_time(inst, grid, groups)
    else:
        trainer = (w.iterations - 1) * grid + _shortest_updates(inst, groups)
    return trainer + inst.schedule.extra_time


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


def _pair_rows(inst: Instance, c: Counts, i: int) -> tuple[np.ndarray, np.ndarray]:
    """(counts, makespans) of pair ``i``'s rows: each count worth having that meets the deadline."""
    w, lo = inst.workload, int(c.counts[0]) if c.counts.size else 0
    L, fewest = float(c.cadence[i]), int(c.fewest[i])
    options = c.counts[(c.counts >= fewest) & (c.counts <= fewest + c.extra[i] * (1 + REL_TOL))]
    u = c.update[options - lo]
    best_before = np.minimum.accumulate(np.concatenate(([np.inf], u[:-1])))
    useful = np.isfinite(u) & (u <= L * (1 + REL_TOL)) & (u < best_before) & np.isfinite(c.factor[options - lo])
    if inst.counts_startup:
        trainer = (w.iterations - 1) * L + u[useful]
    else:  # a confidence solve's rows per count (solver.table.pairs.build every_count): T = n·L + extra_time
        trainer = np.full(int(useful.sum()), w.iterations * L)
    if inst.reliability is not None:  # MODEL §13: the trainer-paced part divided by γ(m)
        trainer = trainer * c.factor[options - lo][useful]
    span = c.startup[i] + trainer + inst.schedule.extra_time
    on_time = span <= inst.schedule.deadline * (1 + REL_TOL)
    return options[useful][on_time], span[on_time]


def group_rows(inst: Instance, c: Counts, rejected: dict[str, int]) -> tuple[np.ndarray, ...]:
    """(grid point, K column, groups, makespan) of every row, by pair then groups: each pair's counts worth
    having that meet the deadline; a pair with none counts under ``deadline`` in ``rejected``. Where U(m)
    does not rise with m and there is no MODEL §13 goodput factor, a pair's rows are its fewest on-time count
    (:func:`fewest_rows`) and each later count up to what the pool can spare at which U(m) drops (every
    later count keeps up and is on time); otherwise each pair's rows are listed (:func:`listed_rows`)."""
    key, head = _update_key(c)
    if head is None or inst.reliability is not None or not inst.counts_startup:
        return listed_rows(inst, c, rejected)
    lo = int(c.counts[0])
    first, ok = _first_on_time(inst, c, key, head)
    _count_lost(rejected, ok)
    with np.errstate(invalid="ignore"):
        end = np.where(np.isfinite(c.extra), np.floor(c.fewest + c.extra * (1 + REL_TOL)), np.inf)
    drops = lo + 1 + np.flatnonzero(head[1:] < head[:-1])  # counts whose U is below the count before's
    start = np.searchsorted(drops, first, side="right")
    more = np.maximum(np.searchsorted(drops, np.minimum(end, lo + head.size - 1), side="right") - start, 0)
    pair = np.flatnonzero(ok)
    size = 1 + more[pair]
    check_rows(inst, int(size.sum()), c.at.size)
    idx = np.repeat(pair, size)
    nth = np.arange(int(size.sum())) - np.repeat(np.cumsum(size) - size, size)
    later = drops[np.minimum(start[idx] + nth - 1, max(drops.size - 1, 0))] if drops.size else first[idx]
    m = np.where(nth == 0, first[idx], later)
    span = c.startup[idx] + ((inst.workload.iterations - 1) * c.cadence[idx] + key[m - lo]) + inst.schedule.extra_time
    return c.at[idx], c.k[idx], m, span


def listed_rows(inst: Instance, c: Counts, rejected: dict[str, int]) -> tuple[np.ndarray, ...]:
    """:func:`group_rows` by listing each pair's counts (any update law, goodput), the rows counted as they are
    listed: a table past the cap (:func:`check_rows`) is refused before it holds more than the cap's rows."""
    cap = table_rows_cap_of()
    listed, pair_of, rows_m, rows_span = 0, [], [], []
    for i in range(c.at.size):
        m, span = _pair_rows(inst, c, i)
        if not m.size:
            rejected["deadline"] = rejected.get("deadline", 0) + 1
            continue
        listed += m.size
        if listed > cap:  # refused now: the rest would be listed only to be dropped, their count is bounded
            check_rows(inst, listed, c.at.size, most=listed + _rows_bound(c, i + 1))
        pair_of.append(np.full(m.size, i))
        rows_m.append(m)
        rows_span.append(span)
    idx = np.concatenate(pair_of) if pair_of else np.zeros(0, dtype=int)
    return (
        np.asarray(c.at[idx], dtype=int),
        np.asarray(c.k[idx], dtype=int),
        np.concatenate(rows_m).astype(int) if rows_m else np.zeros(0, dtype=int),
        np.concatenate(rows_span).astype(float) if rows_span else np.zeros(0, dtype=float),
    )


def _rows_bound(c: Counts, start: int) -> int:
    """At most how many rows the pairs from ``start`` on still add: each its fewest count and every count the
    pool can spare beyond it (no more than the admissible counts)."""
    spare = np.minimum(c.extra[start:], c.counts.size - 1)
    return int(np.sum(1 + np.floor(np.maximum(spare, 0.0)))) if spare.size else 0


def fewest_rows(inst: Instance, c: Counts, rejected: dict[str, int]) -> tuple[np.ndarray, ...]:
    """The row of :func:`group_rows` with the fewest groups of each pair (pairs without one counted under
    ``deadline``), found by one search per pair when U(m) does not rise with m and there is no MODEL §13
    goodput factor: the fewest on-time count is then the first count from the fewest with U(m) at most both L
    and the time the deadline leaves the last update. Otherwise (a table law that rises, goodput), each
    pair's rows are listed and the first kept."""
    key, head = _update_key(c)
    if head is None or inst.reliability is not None or not inst.counts_startup:
        return _first_of_each(inst, c, rejected)
    m, ok = _first_on_time(inst, c, key, head)
    _count_lost(rejected, ok)
    u = key[np.clip(m - int(c.counts[0]), 0, key.size - 1)]
    return c.at[ok], c.k[ok], m[ok], _span(inst, c, u)[ok]


def _update_key(c: Counts) -> tuple[np.ndarray, np.ndarray | None]:
    """U over the counts with NaN read as inf, and its head up to the last finite count (a table law is NaN
    below and above its measured range: the counts past its last point never pass); the head is None when U
    rises somewhere (or is nowhere finite): the rows are then listed pair by pair."""
    key = np.where(np.isnan(c.update), np.inf, c.update)
    finite = np.flatnonzero(np.isfinite(key))
    if not finite.size or np.any(np.diff(key[finite[0] : finite[-1] + 1]) > 0):
        return key, None
    return key, key[: finite[-1] + 1]


def _first_on_time(inst: Instance, c: Counts, key: np.ndarray, head: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pair, the fewest on-time count (where U does not rise) and whether it is a row (on time, within
    what the pool can spare)."""
    w, lo = inst.workload, int(c.counts[0])
    steady = c.startup + (w.iterations - 1) * c.cadence + inst.schedule.extra_time
    room = np.minimum(c.cadence * (1 + REL_TOL), inst.schedule.deadline * (1 + REL_TOL) - steady)
    first = np.searchsorted(-head, -room, side="left")  # counts (from lo) whose U is above the room
    m = np.maximum(c.fewest, lo + first)
    passes = _row_test(inst, c, key)
    # the room is a difference, so the search may land one count off the row test's own verdict
    m = np.where((m - 1 >= c.fewest) & passes(m - 1), m - 1, m)
    m = np.where(~passes(m) & passes(m + 1), m + 1, m)
    return m, passes(m) & (m <= c.fewest + c.extra * (1 + REL_TOL))


def _count_lost(rejected: dict[str, int], ok: np.ndarray) -> None:
    lost = int(np.count_nonzero(~ok))
    if lost:
        rejected["deadline"] = rejected.get("deadline", 0) + lost


def _row_test(inst: Instance, c: Counts, key: np.ndarray):
    """Whether a count per pair (an array like the pairs) passes the row test of :func:`_pair_rows`: an
    admissible count with U(m) <= L and T <= deadline."""
    lo, size = int(c.counts[0]), c.counts.size

    def passes(count: np.ndarray) -> np.ndarray:
        inside = (count >= lo) & (count < lo + size)
        u = np.where(inside, key[np.clip(count - lo, 0, size - 1)], np.inf)
        span = _span(inst, c, u)
        return inside & (u <= c.cadence * (1 + REL_TOL)) & (span <= inst.schedule.deadline * (1 + REL_TOL))

    return passes


def _span(inst: Instance, c: Counts, u: np.ndarray) -> np.ndarray:
    """T = fill + ((n-1)·L + U(m)) + extra_time per pair, summed in :func:`_pair_rows`'s order (the same
    floats)."""
    return c.startup + ((inst.workload.iterations - 1) * c.cadence + u) + inst.schedule.extra_time


def _first_of_each(inst: Instance, c: Counts, rejected: dict[str, int]) -> tuple[np.ndarray, ...]:
    """The fewest on-time row of each pair, from each pair's listed rows."""
    keep, first_m, first_span = [], [], []
    for i in range(c.at.size):
        m, span = _pair_rows(inst, c, i)
        if m.size:
            keep.append(i)
            first_m.append(int(m[0]))
            first_span.append(float(span[0]))
        else:
            rejected["deadline"] = rejected.get("deadline", 0) + 1
    rows = np.array(keep, dtype=int)
    return c.at[rows], c.k[rows], np.array(first_m, dtype=int), np.array(first_span, dtype=float)
