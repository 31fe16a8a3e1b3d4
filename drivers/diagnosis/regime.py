"""Why a pipelined run (MODEL.md §14) has no plan: which of its rows cut every cadence of the grid, and the
smallest change that the cut names (a rollout timeout, a longer deadline, a larger pool)."""

from __future__ import annotations

from trainground.models.instance import Instance
from trainground.solver.laws import calculus as calc
from trainground.solver.regimes.admission import Admission, admission_pairs
from trainground.solver.regimes.batch import Batch, batch_pairs

HINTS = {
    "slowest_attempt": "set regime.rollout_timeout (or allow longer cadences: schedule.deadline, schedule.cadence.max)",
    "update_time": "more training GPUs (training.max_groups, the training pool) or longer cadences",
    "pool_capacity": "more GPUs for generation (gpu_pools, inference.shapes) or longer cadences",
    "deadline": "a later schedule.deadline",
    "max_mean_gap": "raise freshness.max_mean_gap to the batch's gap",
    "max_concurrent_attempts": "raise regime.max_concurrent_attempts to the batch's N",
}


def regime_diagnosis(inst: Instance, batch: Batch) -> dict:
    """MODEL §6's ``diagnosis`` of an infeasible pipelined run: the cut counts per row and one sentence."""
    pairs = batch_pairs(inst, batch)
    cut = dict(pairs.rejected)
    assert inst.regime is not None
    grid = calc.cadence_grid(inst)
    top = float(grid[-1]) if grid.size else 0.0
    label = inst.regime.label
    if not grid.size:
        conflict = f"{label}: the cadence grid is empty"
    elif cut.get("slowest_attempt", 0) == grid.size:
        conflict = (
            f"{label}: each batch waits {batch.slowest:,.0f} s on average for its slowest of {batch.attempts:,} "
            f"attempts (+ weight sync {batch.sync:g} s), above every cadence of the grid (at most {top:,.1f} s)"
        )
    else:
        named = ", ".join(f"{name} ({count})" for name, count in sorted(cut.items(), key=lambda kv: -kv[1]))
        conflict = f"{label}: no cadence of the grid meets the batch's rows (cut by: {named})"
    worst = max(cut, key=lambda name: cut[name]) if cut else None
    hint = HINTS.get(worst or "", "")
    if worst == "slowest_attempt" and inst.regime.rollout_timeout is not None:
        hint = "a shorter regime.rollout_timeout (or allow longer cadences: schedule.deadline, schedule.cadence.max)"
    return {
        "conflict": conflict + (f"; {hint}" if hint else ""),
        "rejected_pairs": cut,
        "cut_alone": cut,
        "relaxations": [],
        "notes": [f"the rows of {label} are MODEL §14's: D + U + t_s <= L (k = 0) or max(D, U) + t_s <= L (k = 1)"],
        "solves": 0,
    }


def admission_diagnosis(inst: Instance, a: Admission) -> dict:
    """MODEL §6's ``diagnosis`` of an infeasible admission run: the cut counts per row and one sentence."""
    pairs = admission_pairs(inst, a)
    cut = dict(pairs.rejected)
    assert inst.regime is not None
    grid = calc.cadence_grid(inst)
    label = inst.regime.label
    _, most = calc.group_range(inst)
    fastest = calc.update_time(inst.training.update_time, most * inst.training.gpus_per_group)
    least = (a.group_max / a.intake + float(fastest) + a.sync) / (a.steps_ahead + 0.5)
    if grid.size and cut.get("admission", 0) + cut.get("update_time", 0) >= grid.size:
        conflict = (
            f"{label}: each group waits {a.group_max:,.0f} s on average for its slowest member; (k + 1) batches "
            f"of slots allow at best a cadence of {least:,.1f} s (E[M_g]/p + U + t_s)/(k + 1/2) with the most "
            f"training groups, above the grid's longest {float(grid[-1]):,.1f} s; a larger regime.steps_ahead, a "
            "regime.rollout_timeout or a later deadline"
        )
    else:
        named = ", ".join(f"{name} ({count})" for name, count in sorted(cut.items(), key=lambda kv: -kv[1])) or "none"
        conflict = f"{label}: no cadence of the grid meets its rows with a plan (cut by: {named})"
    return {
        "conflict": conflict,
        "rejected_pairs": cut,
        "cut_alone": cut,
        "relaxations": [],
        "notes": [f"the rows of {label} are MODEL §14's admission row, U <= L and the supply with its re-prefills"],
        "solves": 0,
    }
