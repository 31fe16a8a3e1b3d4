"""The cap on a table's (cadence, K, training groups) rows (:mod:`models.row_budget`), checked by
:mod:`solver.table.group_counts` once it knows how many rows a table would hold and before it allocates them: a
table above it is refused by :class:`TableTooLarge`, which names the fields that make the rows many. A command
blames it on the user's file (exit 2); a re-solve of an edited copy (a lever, a diagnosis's probe) is skipped
(:class:`drivers.diagnosis.feasibility.Feasibility`).
"""

from __future__ import annotations

from trainground.models.errors import InstanceError, Problem, RefusedInstance
from trainground.models.instance import Instance
from trainground.models.row_budget import TABLE_ROW_VARIABLE, rows_memory, table_rows_cap
from trainground.models.units import format_duration


class TableTooLarge(RefusedInstance):
    """A table whose (cadence, K, training groups) rows would exceed the cap on a table's rows
    (models.row_budget.table_rows_cap), found by counting them before any is allocated; ``rows``: how many (a
    lower bound when the listing stopped early), ``pairs``: the (cadence, K) pairs they belong to."""

    def __init__(self, file: str, problems: list[Problem], rows: int, pairs: int):
        super().__init__(file, problems)
        self.rows, self.pairs = rows, pairs


def table_rows_cap_of() -> int:
    """models.row_budget.table_rows_cap, a bad value of its variable refused as bad input."""
    try:
        return table_rows_cap()
    except ValueError as exc:
        raise InstanceError(TABLE_ROW_VARIABLE, [Problem("", f"the variable {TABLE_ROW_VARIABLE} {exc}")]) from None


def check_rows(inst: Instance, rows: int, pairs: int, most: int | None = None) -> None:
    """Refuse a table of ``rows`` rows over ``pairs`` (cadence, K) pairs above the cap (:class:`TableTooLarge`),
    naming the fields that make them many: the group counts each pair lists (training.max_groups, or as many as
    the training pool holds) and the cadence grid the pairs come from (its top: schedule.cadence.max, or the
    deadline pace). ``most``: the rows are at least ``rows`` and at most this (a listing stopped past the cap)."""
    cap = table_rows_cap_of()
    if rows <= cap:
        return
    t, sched = inst.training, inst.schedule
    index, pool = next((i, p) for i, p in enumerate(inst.gpu_pools) if p.name == t.pool)
    fit = pool.gpus // t.gpus_per_group
    if t.max_groups is not None and t.max_groups <= fit:
        path, counts = "training.max_groups", f"training.max_groups = {t.max_groups:,}"
    else:
        path = f"gpu_pools[{index}].gpus"
        counts = f"{fit:,} (the {pool.gpus:,} GPUs of pool {pool.name!r} hold {fit:,} groups of {t.gpus_per_group:,})"
    if sched.cadence.max is not None:
        grid = f"schedule.cadence.max = {format_duration(sched.cadence.max)}"
    else:
        pace = (sched.deadline - sched.extra_time) / inst.workload.iterations
        grid = (
            f"no schedule.cadence.max: the grid runs to the deadline pace, {format_duration(pace)} "
            f"(schedule.deadline {format_duration(sched.deadline)} over {inst.workload.iterations:,} iterations)"
        )
    held = f"{rows:,}" if most is None else f"at least {rows:,} (at most {most:,})"
    rule = (
        f"the table would hold {held} (cadence, K, training groups) rows, {rows_memory(rows, cap)}: "
        f"{pairs:,} (cadence, K) pairs ({grid}, step {format_duration(sched.cadence.step)}) each list the "
        f"group counts worth having (on time, each a shorter update than the count before), up to {counts}; set training.max_groups to the most "
        "groups a plan may use, a schedule.cadence.max (or a coarser step), or a shorter schedule.deadline"
    )
    raise TableTooLarge(inst.name or "instance", [Problem(path, rule)], rows, int(pairs))
