"""The closed-form candidates of the limits that cut (cadence, K) entries directly, read off the
per-pair screen (:mod:`drivers.diagnosis.screen`).

A limit that cuts entries by one per-entry quantity (a mean gap, an exceedance, a cadence, a K, a
makespan, a GPU count) restores entries exactly at the values that quantity takes on the entries
every *other* family lets through: those values, sorted in the direction that loosens the limit,
are its candidates; the first is the closed-form threshold, and an empty list means that limit
alone cannot restore a pair. No solve and no pyomo here: :mod:`drivers.diagnosis.thresholds` confirms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainground.drivers.diagnosis.screen import FAMILIES, WIDEST, Screen, screen
from trainground.models.edits import edited
from trainground.models.instance import Instance
from trainground.solver.laws import calculus as calc
from trainground.solver.table.pairs import TableCache, supply_multipliers
from trainground.solver.tolerances import REL_TOL

MAX_ENTRIES = 300_000  # (cadence, K) entries a widened screen may hold: the cost of its exceedance table
FARTHEST = 16.0  # a pool size or a tokens/s figure is raised at most this many times


@dataclass(frozen=True)
class Candidates:
    """The values at which one input restores entries, in the order that loosens it (``values[0]`` is the
    closed-form threshold; none: this input alone restores no entry). ``steps``: a plan can appear only
    at these values (exact), or anywhere between them (``False``: refine between two of them)."""

    input: str  # display name, e.g. "max_nodes[standard]"
    path: str  # MODEL path of the edit
    current: float | None
    values: np.ndarray
    raise_: bool = True  # loosening raises the value (False: lowers it)
    integer: bool = False
    steps: bool = True
    top: float | None = None  # the loosest value worth trying when ``values`` is empty or not a step list
    passing: bool = False  # some entry passes every family already (only whole plans are cut)
    exact_values: bool = True  # ``values`` are exact per-pair thresholds (False: found to 0.1 % by bisection)
    note: str = ""  # why there are no values, when known
    far: float | None = None  # the loosest value worth trying beside another change (None lifts the limit)


def _beyond(values: np.ndarray, current: float | None, raise_: bool = True) -> np.ndarray:
    values = np.unique(values[np.isfinite(values)])
    if current is None:
        return values if raise_ else values[::-1]
    if raise_:
        return values[values > current * (1 + REL_TOL)]
    return values[values < current * (1 - REL_TOL)][::-1]


def freshness_limit(s: Screen, name: str) -> Candidates:
    """max_mean_gap, max_exceedance or max_group_drop: the values its quantity takes on the entries every
    other family lets through."""
    ok = s.passing(name)
    quantity = {
        "max_mean_gap": np.broadcast_to(s.gap, ok.shape),
        "max_exceedance": s.exceedance,
        "max_group_drop": s.drop,
    }[name]
    return Candidates(
        name,
        f"freshness.{name}",
        getattr(s.judge.freshness, name),
        _beyond(quantity[ok], getattr(s.judge.freshness, name)),
    )


def versions_kept(inst: Instance, cache: TableCache, base: Screen) -> Candidates:
    """max_versions_kept raised: the K above it with an entry every family lets through (K doubled up to 16×,
    within MAX_ENTRIES on this grid). K leaves the mean gap, update time and (without start-up) the deadline
    as they are: where those cut every cadence, no K helps."""
    kept = inst.freshness.max_versions_kept
    points = max(1, base.grid.size)
    widest = int(min(16 * kept, max(kept + 1, MAX_ENTRIES // points)))
    out = Candidates(
        "max_versions_kept", "freshness.max_versions_kept", kept, np.zeros(0), integer=True, far=float(widest)
    )
    fr = inst.freshness
    if fr.overrun_policy == "downweight" and fr.max_exceedance is None:
        note = "without drops or an exceedance limit, more K only costs throughput"
        return Candidates(**{**out.__dict__, "note": note})
    fixed = ("update_time", "max_mean_gap") + (() if inst.counts_startup else ("deadline",))
    if not _rows_pass(base, fixed):
        return Candidates(**{**out.__dict__, "note": _cut_by(base, fixed)})
    for top in sorted({min(widest, kept * f) for f in (2, 4, 8, 16)}):
        s = screen(inst, cache, {"freshness.max_versions_kept": top})
        ok = s.passing() & (s.kept > kept)[None, :]
        if ok.any():
            values = _beyond(np.broadcast_to(s.kept[None, :], ok.shape)[ok].astype(float), kept)
            return Candidates(**{**out.__dict__, "values": values})
    return Candidates(**{**out.__dict__, "note": f"no K up to {widest} lets a (cadence, K) pair through"})


def _rows_pass(base: Screen, families: tuple[str, ...]) -> bool:
    """Whether some cadence passes every one of ``families`` (for some K)."""
    keep = np.ones((base.grid.size, base.kept.size), dtype=bool)
    for family in families:
        keep &= base.ok(family)
    return bool(keep.any())


def _cut_by(base: Screen, families: tuple[str, ...]) -> str:
    cutting = [f for f in families if not base.ok(f).all()]
    return f"{' and '.join(cutting)} cut every cadence whatever it is"


def deadline(inst: Instance, cache: TableCache) -> Candidates:
    """The deadline raised: the makespans of the entries every other family lets through, on a grid that
    reaches up to 2×, 4×, then WIDEST× the deadline's pace (the first that lets an entry through) when
    cadence.max is not set. A widened grid that would hold more than MAX_ENTRIES entries is screened at a
    multiple of the step (every point of it is a point of the instance's grid), so a fine grid never stops
    the deadline from being raised; its makespans are then upper bounds (``exact_values`` False) and the
    threshold is the shortest makespan the confirming solve finds (:func:`drivers.diagnosis.thresholds.settle`)."""
    sched, n = inst.schedule, inst.workload.iterations
    kept = inst.freshness.max_versions_kept
    c = sched.cadence
    factors = (1.0,) if c.max is not None else (2.0, 4.0, WIDEST)
    coarse = 1
    for factor in factors:
        far = sched.extra_time + (sched.deadline - sched.extra_time) * factor
        widen: dict = {}
        if c.max is None:
            longest = max((far - sched.extra_time) / n, c.min)
            coarse = max(1, math.ceil((longest - c.min) / c.step * kept / MAX_ENTRIES))
            widen = {"schedule.cadence.max": longest} | (
                {"schedule.cadence.step": c.step * coarse} if coarse > 1 else {}
            )
        s = screen(inst, cache, widen)
        ok = s.passing("deadline")
        if ok.any():
            break
    span = s.span
    if sched.cadence.max is None:  # the deadline also sets the grid's top: n·L + extra_time must fit too
        span = np.maximum(span, (n * s.grid + sched.extra_time)[:, None])
    values = _beyond(span[ok], sched.deadline)
    top = far if sched.cadence.max is None else float(values[-1]) if values.size else None
    far_span = float(np.max(span[np.isfinite(span)], initial=sched.deadline))
    return Candidates(
        "deadline",
        "schedule.deadline",
        sched.deadline,
        values,
        top=top if values.size else None,
        exact_values=coarse == 1,
        far=far if sched.cadence.max is None else far_span,
        note=f"no (cadence, K) pair passes even at {factor:.3g}× the deadline",
    )


def cadence_max(inst: Instance, cache: TableCache) -> Candidates:
    """cadence.max raised (when set below the deadline's pace): the longer cadences that let an entry through."""
    c, pace = inst.schedule.cadence, calc.deadline_pace(inst)
    room = MAX_ENTRIES // inst.freshness.max_versions_kept
    s = screen(inst, cache, {"schedule.cadence.max": min(pace, c.max + room * c.step)})
    ok = s.passing() & (s.grid > c.max * (1 + REL_TOL))[:, None]
    return Candidates(
        "cadence.max",
        "schedule.cadence.max",
        c.max,
        far=pace,
        values=_beyond(np.broadcast_to(s.grid[:, None], ok.shape)[ok], c.max),
        note="no longer cadence up to the deadline's pace lets a pair through",
    )


def cadence_min_room(inst: Instance) -> int:
    """Grid steps cadence.min can be lowered by (to the lowest positive point, within MAX_ENTRIES)."""
    c = inst.schedule.cadence
    return max(0, min(math.ceil(c.min / c.step) - 1, MAX_ENTRIES // inst.freshness.max_versions_kept))


def cadence_min(inst: Instance, cache: TableCache) -> Candidates:
    """cadence.min lowered down the grid's step: the shorter cadences that let an entry through."""
    c, steps = inst.schedule.cadence, cadence_min_room(inst)
    s = screen(inst, cache, {"schedule.cadence.min": c.min - steps * c.step})
    ok = s.passing() & (s.grid < c.min * (1 - REL_TOL))[:, None]
    return Candidates(
        "cadence.min",
        "schedule.cadence.min",
        c.min,
        far=c.min - steps * c.step,
        raise_=False,
        values=_beyond(np.broadcast_to(s.grid[:, None], ok.shape)[ok], c.min, raise_=False),
        note="no shorter cadence lets a pair through",
    )


def max_groups(inst: Instance, cache: TableCache) -> Candidates:
    """training.max_groups raised (when set): the fewest groups that keep up, on entries every family lets through
    with the cap lifted."""
    cap = inst.training.max_groups
    s = screen(inst, cache, {"training.max_groups": None}, judge=edited(inst, {"training.max_groups": None}))
    ok = s.passing()
    groups = np.broadcast_to(s.groups[:, None], ok.shape)[ok].astype(float)
    return Candidates(
        "max_groups",
        "training.max_groups",
        cap,
        _beyond(groups, cap),
        integer=True,
        note="no group count keeps up within the training pool",
    )


def pool_size(inst: Instance, cache: TableCache, i: int) -> Candidates:
    """gpu_pools[i].gpus raised: per entry the GPUs the pool needs for the token demand the other pools leave
    (whole replicas when one shape uses it), plus the training groups when it is the training pool."""
    pool = inst.gpu_pools[i]
    training = pool.name == inst.training.pool
    s = screen(inst, cache, {f"gpu_pools[{i}].gpus": pool.gpus * 64} if training else None)
    ok = s.passing("pool_capacity")
    short, rate, replica = _shortfall(inst, s, pool)
    with np.errstate(divide="ignore", invalid="ignore"):
        free = np.where(short > 0, short / np.where(rate > 0, rate, 1.0), 0.0)
        free = np.where((short > 0) & (rate <= 0), np.inf, free)
    if replica:
        free = calc.ceil_tol(free / replica) * replica
    need = calc.ceil_tol(free + (s.groups * inst.training.gpus_per_group)[:, None] * training)
    values = _beyond(need[ok & (need <= pool.gpus * FARTHEST)], pool.gpus)
    return Candidates(
        f"gpus[{pool.name}]",
        f"gpu_pools[{i}].gpus",
        pool.gpus,
        values,
        integer=True,
        steps=False,
        far=float(pool.gpus * FARTHEST),
        note=f"even {FARTHEST:.0f}× the GPUs in this pool leave every pair cut",
    )


def tokens_per_gpu_s(inst: Instance, cache: TableCache, j: int) -> Candidates:
    """inference.shapes[j].tokens_per_gpu_s raised: per entry the rate at which its pool, filled with this shape,
    meets the token demand the other pools leave."""
    shape = inst.inference.shapes[j]
    pool = inst.pool(shape.pool)
    s = screen(inst, cache)
    ok = s.passing("pool_capacity")
    short, _, replica = _shortfall(inst, s, pool)
    free = calc.free_gpus(inst, pool, s.groups).astype(float)
    if replica:
        free = np.floor(free / replica) * replica
    per = free[:, None] * inst.inference.availability * supply_multipliers(inst, s.kept)[None, :, j]
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(per > 0, short / np.where(per > 0, per, 1.0), np.inf)
    values = _beyond(rate[ok & (rate <= shape.tokens_per_gpu_s * FARTHEST)], shape.tokens_per_gpu_s)
    return Candidates(
        f"tokens_per_gpu_s[{shape.name}]",
        f"inference.shapes[{j}].tokens_per_gpu_s",
        shape.tokens_per_gpu_s,
        values,
        steps=False,
        far=shape.tokens_per_gpu_s * FARTHEST,
        note=f"even {FARTHEST:.0f}× its tokens/s leaves every pair cut",
    )


def supply_scale(inst: Instance, cache: TableCache, name: str) -> Candidates:
    """availability or intake_rate raised (at most 1): the token demand over the pools' best supply scales
    with 1/a (availability) and with 1/p (intake), so each entry needs the current value × demand/supply."""
    path = {"availability": "inference.availability", "intake_rate": "workload.intake_rate"}[name]
    current = inst.inference.availability if name == "availability" else inst.workload.intake_rate
    s = screen(inst, cache)
    ok = s.passing("pool_capacity")
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(s.supply > 0, current * s.demand / np.where(s.supply > 0, s.supply, 1.0), np.inf)
    values = _beyond(need[ok & (need <= 1.0)], current)
    return Candidates(
        name, path, current, values, steps=False, top=1.0, far=1.0, note=f"{name} 1 leaves every pair cut"
    )


def _shortfall(inst: Instance, s: Screen, pool) -> tuple[np.ndarray, np.ndarray, int]:
    """(token demand ``pool`` must meet beyond the other pools' best supply (G, K), the pool's best rate per GPU
    (K,), its replica size when one shape uses it, else 0)."""
    a = inst.inference.availability
    mult = supply_multipliers(inst, s.kept)
    inside = [(j, sh) for j, sh in enumerate(inst.inference.shapes) if sh.pool == pool.name]
    rates = [a * sh.tokens_per_gpu_s * mult[:, j] for j, sh in inside]
    rate = np.max(rates, axis=0) if rates else np.zeros(s.kept.size)
    own = calc.free_gpus(inst, pool, s.groups)[:, None] * rate[None, :]
    short = np.maximum(s.demand - (s.supply - own), 0.0)
    return short, rate, inside[0][1].gpus_per_replica if len(inside) == 1 else 0


def occupancy_changes(inst: Instance, scale: float) -> dict:
    """The edits that scale every sandbox lifetime by ``scale``."""
    occ = inst.environment.occupancy
    if occ.distribution == "empirical":
        return {"environment.occupancy.samples": [v * scale for v in occ.samples]}
    return {
        f"environment.occupancy.{k}": getattr(occ, k) * scale
        for k in ("median", "p99", "mean")
        if getattr(occ, k) is not None
    }


def occupancy_scale(inst: Instance, cache: TableCache, base: Screen, lowest: float = 1 / 64) -> Candidates:
    """Every sandbox lifetime scaled down: the largest scale at which an entry passes. The mean gap scales with
    the lifetimes, so the gap limit gives that scale in closed form; otherwise (or when another family still
    cuts there) a bisection over screens to 0.1 % (gap, exceedance, drop and attempts all fall as lifetimes
    shorten; update time and, without start-up, the deadline do not move)."""
    out = Candidates(
        "occupancy_scale", "", 1.0, np.zeros(0), raise_=False, steps=False, top=lowest, exact_values=False, far=lowest
    )
    fixed = ("update_time",) + (() if inst.counts_startup else ("deadline",))
    if base.passing().any():
        return out  # entries pass already: only solves can tell
    if not _rows_pass(base, fixed):
        return Candidates(**{**out.__dict__, "top": None, "note": _cut_by(base, fixed)})

    def admits(scale: float) -> bool:
        scaled = edited(inst, occupancy_changes(inst, scale))
        return bool(screen(scaled, cache).passing().any())

    high, limit = 1.0, inst.freshness.max_mean_gap
    if limit is not None:  # gap·scale must meet the limit at some cadence the fixed families let through
        rows = base.passing(*[f for f in FAMILIES if f not in fixed]).any(axis=1)
        offset = 1.0 if inst.freshness.gap_convention == "post_publish" else 0.0
        if rows.any() and limit > offset:
            high = min(1.0, float(((limit - offset) / (base.gap[rows] - offset)).max()))
            if admits(high):
                return Candidates(**{**out.__dict__, "values": np.array([high]), "exact_values": True})
    if not admits(lowest):
        note = f"lifetimes {1 / lowest:.0f}× shorter still leave every pair cut"
        return Candidates(**{**out.__dict__, "top": None, "note": note})
    low = lowest  # admits at low, not at high
    while high / low > 1 + 1e-3:
        mid = math.sqrt(low * high)
        low, high = (mid, high) if admits(mid) else (low, mid)
    return Candidates(**{**out.__dict__, "values": np.array([low])})


def edit_of(inst: Instance, cand: Candidates, value: float | None) -> dict:
    """The edits that set ``cand``'s input to ``value`` (None lifts a limit)."""
    if cand.input == "occupancy_scale":
        return occupancy_changes(inst, value)
    if value is not None and cand.integer:
        value = int(round(value))
    return {cand.path: value}
