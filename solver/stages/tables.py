"""The pair tables of a staged model (MODEL.md §12): each stage's admissible (cadence, K, groups) pairs, what
each pair adds to the run's makespan, and the pairs no optimum uses. No pyomo here.

The run's makespan is ``T = Σ_p part_p + extra_time (+ switches)``, with

- ``part_p = n_p·L_p`` without the start-up;
- with it (§8, and under hold, §11 item 1), the first stage's part adds its fill less one cadence
  (``fill_1 + (n_1 - 1)·L_1``) and the run adds the last stage's final update ``U_P(G_P)`` at the groups
  that stage has. One stage alone keeps the instance's own table, one row per group count worth having,
  and its part is §8's ``fill + (n - 1)·L + U(m)``; with more stages every table keeps one row per
  (cadence, K), its fewest groups (the staged model's ``extra_groups`` give any count above, and its
  final-update blocks count U_P at the last stage's groups, :func:`solver.stages.model.add_final_update`).

Each stage's table is that of the instance the stage's rows run as (:func:`models.stage_rules.stage_rows_instance`),
dominated K kept (K is shared: a K one stage would never pick can be the one another needs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from trainground.models.instance import Instance
from trainground.models.stage_rules import stage_instance, stage_rows_instance
from trainground.solver.laws import calculus as calc
from trainground.solver.table import pairs as pair_tables
from trainground.solver.tolerances import REL_TOL

STAGED_PAIRS = 50_000  # the pairs a staged model is built with (docs/stages.md: its time and memory)
WHOLE_ENTRIES = 200_000  # (cadence, K) entries the stages' grids may hold together to be counted whole at once
SAMPLE_ENTRIES = 20_000  # above that, the entries of each stage's grid read to estimate its pairs
COLUMNS = ("cadence", "kept", "makespan", "startup", "groups", "exceedance", "drop", "attempts", "inflight", "peak")


@dataclass(frozen=True)
class StageTables:
    """Per stage: the instance it runs as, its pair table and each pair's part of the run's makespan (s);
    ``top`` the most training groups any stage may have; ``final``: the final update U_P(G) of the last
    stage per group count G = lo..top (s), when the staged model counts it apart (None: no start-up
    counted, or one stage, whose pairs hold it)."""

    insts: list[Instance]
    tables: list[pair_tables.Pairs]
    parts: list[np.ndarray]
    top: int
    final: tuple[int, np.ndarray] | None = None  # (lo, U_P at lo..top)


def stage_tables(inst: Instance) -> StageTables:
    """The staged model's pairs of ``inst`` (which has ``stages``), pruned (:func:`prune`), refused
    (StagedUnsupported) above STAGED_PAIRS. Stages whose grids are long are first tabulated on a sample of
    their grid points (:func:`refuse_estimated`), so that a model above the cap is refused at the cost of the
    sample, before the whole grids are."""
    assert inst.stages is not None, "stage tables need stages"
    refuse_estimated(inst)
    found = tables_of(inst, [1] * len(inst.stages.list))
    check_size(inst, [t.size for t in found.tables])
    return found


def refuse_estimated(inst: Instance) -> None:
    """Refuse (StagedUnsupported) a staged model whose pairs, estimated from a sample of each stage's grid
    (:func:`sample_strides`), are above STAGED_PAIRS; nothing when the grids are small enough to be counted whole
    (:func:`stage_tables` counts them) or when the sample misses a stage's pairs altogether (then it says nothing
    of the room that stage leaves the others)."""
    strides = sample_strides(inst)
    if all(r == 1 for r in strides):
        return
    sample = tables_of(inst, strides)
    if all(t.size for t in sample.tables):
        check_size(inst, [t.size * r for t, r in zip(sample.tables, strides)], strides)


def sample_strides(inst: Instance) -> list[int]:
    """Per stage, every how many of its grid points an estimate of its pairs reads: 1 (every point) when the
    stages' grids hold at most WHOLE_ENTRIES (cadence, K) entries together, else as few as keep each stage's
    sample within SAMPLE_ENTRIES. A stage's pairs on its grid are about its sample's times the stride (the
    admissible cadences of each K are a range, which the sample cuts to within a stride at each end)."""
    assert inst.stages is not None
    kept = inst.freshness.max_versions_kept
    points = [calc.grid_points(stage_rows_instance(inst, s)) for s in inst.stages.list]
    if sum(points) * kept <= WHOLE_ENTRIES:
        return [1] * len(points)
    return [max(1, math.ceil(n * kept / SAMPLE_ENTRIES)) for n in points]


def sampled(si: Instance, stride: int) -> Instance:
    """``si`` on every ``stride``-th point of its cadence grid (the same top): a subset of its grid."""
    if stride == 1:
        return si
    c = si.schedule.cadence
    cadence = c.model_copy(update={"step": c.step * stride, "max": calc.cadence_top(si)})
    return si.model_copy(update={"schedule": si.schedule.model_copy(update={"cadence": cadence})})


def tables_of(inst: Instance, strides: list[int]) -> StageTables:
    """The stage tables of ``inst`` on every ``strides[p]``-th point of each stage's grid (1: the whole grid)."""
    assert inst.stages is not None
    stages = inst.stages.list
    insts = [stage_instance(inst, s) for s in stages]
    top = top_groups(inst, insts)
    if len(insts) == 1:  # one stage: the instance's own pair table (its K dominance holds)
        tables = [pair_tables.build(sampled(insts[0], strides[0]))]
        return StageTables(insts, tables, [run_part(inst, 0, insts[0], tables[0])], top)
    tables = [
        pair_tables.build(sampled(stage_rows_instance(inst, s), r), dominated=True, fewest_groups=True)
        for s, r in zip(stages, strides)
    ]
    final = None
    if inst.counts_startup:
        lo = int(tables[-1].groups.min()) if tables[-1].size else top
        hi = min(top, most_groups(insts[-1], tables[-1]))
        t = insts[-1].training
        final = (lo, calc.update_time(t.update_time, np.arange(lo, hi + 1) * t.gpus_per_group))
    parts = [run_part(inst, p, si, t) for p, (si, t) in enumerate(zip(insts, tables))]
    shortest_final = float(np.min(final[1])) if final is not None and final[1].size else 0.0
    tables, parts = prune(inst, tables, parts, shortest_final)
    return StageTables(insts, tables, parts, top, final)


def check_size(inst: Instance, sizes: list[int], strides: list[int] | None = None) -> None:
    """Refuse (StagedUnsupported) a staged model of more than STAGED_PAIRS pairs, ``sizes`` per stage: counted,
    or estimated from each stage's grid read every ``strides[p]`` points. The pairs shrink about as the grid's
    points do, so the step suggested (the step times the pairs over the cap, and a quarter more for the grids'
    ends) brings them under it. The field blamed is a stage's iterations when that stage alone holds most of the
    pairs because its few iterations let its grid run far (its top defaults to its deadline pace), else the step."""
    assert inst.stages is not None
    total = sum(sizes)
    if total <= STAGED_PAIRS:
        return
    step = math.ceil(1.25 * inst.schedule.cadence.step * total / STAGED_PAIRS * 10) / 10
    each = ", ".join(f"{s.name} {n:,}" for s, n in zip(inst.stages.list, sizes))
    read = ""
    if strides is not None:
        read = "; estimated from a sample of each stage's grid points, "
        read += ", ".join(f"every {r:,}" if r > 1 else "all" for r in strides)
    counted = f"{'about ' if strides is not None else ''}{total:,} (cadence, K) pairs ({each}{read})"
    where, fix = _blamed(inst, sizes, step)
    raise StagedUnsupported(
        where,
        f"the staged model would choose among {counted}, above the {STAGED_PAIRS:,} it plans in minutes: {fix}",
    )


def _blamed(inst: Instance, sizes: list[int], step: float) -> tuple[str, str]:
    """(field, how to fix) of a staged model over the cap (:func:`check_size`)."""
    assert inst.stages is not None
    stages, sched = inst.stages.list, inst.schedule
    most = max(range(len(sizes)), key=sizes.__getitem__)
    fewest = min(s.iterations for s in stages)
    if sched.cadence.max is None and len(stages) > 1 and 2 * sizes[most] > sum(sizes):
        stage = stages[most]
        if stage.iterations == fewest:
            pace = (sched.deadline - sched.extra_time) / stage.iterations
            return (
                f"stages.list[{most}].iterations",
                f"stage {stage.name!r} alone has {stage.iterations:,} iteration(s), so its cadence grid runs to its "
                f"deadline pace, {pace:,.0f} s: give it more iterations, set schedule.cadence.max, or use a cadence "
                f"step of {step:g} s or more",
            )
    return (
        "schedule.cadence.step",
        f"use a cadence step of {step:g} s or more, or a schedule.cadence.max (each stage's grid otherwise runs to "
        "its own deadline pace, (deadline - extra_time)/its iterations)",
    )


def run_part(inst: Instance, p: int, si: Instance, table: pair_tables.Pairs) -> np.ndarray:
    """Stage ``p``'s part of the run's makespan per pair of ``table`` (module docstring), s."""
    assert inst.stages is not None
    part = si.workload.iterations * table.cadence
    if not inst.counts_startup:
        return part
    if p == 0:
        part = part + table.startup - table.cadence
    if len(inst.stages.list) == 1:
        t = si.training
        part = part + calc.update_time(t.update_time, table.groups * t.gpus_per_group)
    return part


def most_groups(si: Instance, table: pair_tables.Pairs) -> int:
    """The most training groups any pair of ``table`` leaves enough GPUs for (MODEL §3.1): with every pool
    filled by its best shape beside G groups, the supply must still meet the pair's token demand, so
    G <= (best supply with no groups - demand) / (tokens/s a group's GPUs would give)."""
    if table.size == 0:
        return 0
    t = si.training
    Ks = np.arange(1, si.freshness.max_versions_kept + 1)
    free = pair_tables.best_supply(si, np.zeros(1, dtype=int), Ks, np.zeros(1))[0][table.kept - 1]
    per_group = pair_tables.pool_rate(si, t.pool, Ks)[table.kept - 1] * t.gpus_per_group
    spare = free - table.attempts * si.workload.tokens_per_attempt
    with np.errstate(divide="ignore", invalid="ignore"):
        most = np.where(
            per_group > 0, np.floor(spare / np.where(per_group > 0, per_group, 1.0) * (1 + REL_TOL)), np.inf
        )
    return int(min(np.max(most), np.iinfo(np.int64).max))


def prune(
    inst: Instance, tables: list[pair_tables.Pairs], parts: list[np.ndarray], final: float = 0.0
) -> tuple[list[pair_tables.Pairs], list[np.ndarray]]:
    """The pairs a staged plan may use, with no optimum lost: K that some other K dominates in every stage
    at every cadence are dropped (:func:`dominated_kept`), then each stage's pairs whose part leaves no
    room for the other stages at their shortest parts and the shortest final update ``final``, repeated
    until nothing changes: part_p <= deadline - extra_time - final - Σ_{q != p} min part_q."""
    gone = dominated_kept(inst, tables)
    rows = [~np.isin(t.kept, gone) for t in tables]
    room = inst.schedule.deadline - inst.schedule.extra_time - final
    while True:
        shortest = [float(part[r].min()) if r.any() else np.inf for part, r in zip(parts, rows)]
        if not np.all(np.isfinite(shortest)):
            break
        spent = sum(shortest)
        new = [r & (part <= (room - spent + low) * (1 + REL_TOL)) for part, r, low in zip(parts, rows, shortest)]
        if all(np.array_equal(a, b) for a, b in zip(new, rows)):
            break
        rows = new
    out = []
    for t, r in zip(tables, rows):
        cut = int(np.count_nonzero(~r))
        rejected = {**t.rejected, "deadline with the other stages": cut} if cut else t.rejected
        out.append(replace(subset(t, r), rejected=rejected))
    return out, [part[r] for part, r in zip(parts, rows)]


def _by_cadence(t: pair_tables.Pairs, column: np.ndarray, kept: int) -> np.ndarray:
    """(cadences of ``t``, K = 1..kept): ``column`` per (cadence, K) of the table (inf where it has no pair)."""
    cadences, at = np.unique(np.round(t.cadence, 9), return_inverse=True)
    table = np.full((cadences.size, kept), np.inf)
    table[at, t.kept - 1] = column
    return table


def dominated_kept(inst: Instance, tables: list[pair_tables.Pairs]) -> list[int]:
    """The K another K' beats in every stage at every cadence: K' admissible wherever K is, with an attempt
    rate no higher, every shape's supply multiplier no lower and, with the start-up counted, a first-stage
    fill no longer (a higher attempt rate fills the first batch sooner); among exact equals the smaller K
    stays."""
    kept = inst.freshness.max_versions_kept
    Ks = np.arange(1, kept + 1)
    mult = pair_tables.supply_multipliers(inst, Ks)
    blocks = [_by_cadence(t, t.attempts, kept) for t in tables]
    if inst.counts_startup and tables:
        blocks.append(_by_cadence(tables[0], tables[0].startup, kept))
    columns = np.vstack(blocks) if blocks else np.zeros((0, Ks.size))
    gone: list[int] = []
    for k in range(Ks.size):
        for k2 in range(Ks.size):
            if k2 == k or k2 in gone or not np.all(mult[k2] >= mult[k]):
                continue
            no_worse = np.all(columns[:, k2] <= columns[:, k])
            equal = np.array_equal(columns[:, k2], columns[:, k]) and np.array_equal(mult[k2], mult[k])
            if no_worse and (not equal or k2 < k):
                gone.append(k)
                break
    return [int(Ks[k]) for k in gone]


def subset(t: pair_tables.Pairs, rows: np.ndarray) -> pair_tables.Pairs:
    """The pair table ``t`` restricted to ``rows`` (a mask)."""
    update = {name: getattr(t, name)[rows] for name in COLUMNS}
    update["supply_per_replica"] = t.supply_per_replica[rows]
    if t.sandbox_rate is not None:
        update["sandbox_rate"] = t.sandbox_rate[rows]
    return replace(t, **update)


def top_groups(inst: Instance, insts: list[Instance]) -> int:
    """The most training groups a shared G may take: the pool's (or max_groups), and for a table law no
    more than its measured range. Refused when a stage's update time is not non-increasing over a
    contiguous range of counts (one G must keep up in every stage: any G from a pair's fewest up does
    only then)."""
    lo, hi = calc.group_range(inst)
    counts = np.arange(lo, hi + 1)
    top = hi
    for si in insts:
        u = calc.update_time(si.training.update_time, counts * si.training.gpus_per_group)
        finite = np.flatnonzero(np.isfinite(u))
        if finite.size == 0:
            continue
        run = u[finite[0] : finite[-1] + 1]
        if finite.size != run.size or np.any(np.diff(run) > REL_TOL * run[:-1]):
            raise StagedUnsupported(
                "training.update_time",
                "a table law whose update time rises with more GPUs (or has holes) cannot be planned with "
                "stages: one training count may serve several stages; use a non-increasing table",
            )
        top = min(top, int(counts[finite[-1]]))
    return top


class StagedUnsupported(Exception):
    """A staged instance this model cannot plan exactly: the field and the rule (exit 2, not a bug)."""

    def __init__(self, where: str, rule: str):
        super().__init__(rule)
        self.where, self.rule = where, rule
