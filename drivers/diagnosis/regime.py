"""Why a run regime's plan (MODEL.md §14) does not exist: which of its rows cut every cadence of the grid (every
(cadence, K) under async drop), and the change that the cut names (a rollout timeout, a longer deadline, a larger
pool, a larger cap or age limit)."""

from __future__ import annotations

import math

from trainground.models.instance import Instance
from trainground.models.limits import WHOLE_PLAN, set_limits
from trainground.models.regime_rules import described
from trainground.solver.laws import calculus as calc
from trainground.solver.regimes.admission import Admission, admission_pairs
from trainground.solver.regimes.batch import Batch, batch_pairs
from trainground.solver.regimes.drop import Drop, drop_pairs

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


DROP_HINTS = {
    "deadline": "a later schedule.deadline",
    "update_time": "more training GPUs (training.max_groups, the training pool) or longer cadences",
    "max_mean_gap": "raise freshness.max_mean_gap (or a shorter regime.rollout_timeout)",
    "effective_intake": "a larger freshness.max_versions_kept or a regime.rollout_timeout (every group is dropped)",
    "max_exceedance": "raise freshness.max_exceedance or freshness.max_versions_kept, or a regime.rollout_timeout",
    "max_group_drop": "raise freshness.max_group_drop or freshness.max_versions_kept, or a regime.rollout_timeout",
    "max_concurrent_attempts": "raise regime.max_concurrent_attempts (or allow longer cadences)",
    "pool_capacity": "more GPUs for generation (gpu_pools, inference.shapes) or longer cadences",
}


def drop_diagnosis(inst: Instance, d: Drop) -> dict:
    """MODEL §6's ``diagnosis`` of an infeasible async drop run with regime fields set: the (cadence, K) entries each
    of its rows cuts, and one sentence naming the row that cut most and its change (the cap's with the fewest
    running attempts any entry asks: the grid's longest cadence at the largest K)."""
    assert inst.regime is not None
    pairs = drop_pairs(inst, d)
    cut = dict(pairs.rejected)
    grid = calc.cadence_grid(inst)
    label = described(inst.regime)
    if not grid.size:
        conflict = f"{label}: the cadence grid is empty"
    elif pairs.size:
        entries = len({key[:2] for key in pairs.keys()})  # with the start-up counted, a row per group count
        caps = ", ".join(s.path for s in set_limits(inst, WHOLE_PLAN)) or "the pools"
        conflict = (
            f"{label}: {entries:,} (cadence, K) entries meet its rows, but no plan of any of them fits within "
            f"{caps}; raise one of them"
        )
    else:
        named = ", ".join(f"{name} ({count})" for name, count in sorted(cut.items(), key=lambda kv: -kv[1]))
        worst = max(cut, key=lambda name: cut[name])
        conflict = f"{label}: no (cadence, K) of the grid meets its rows (cut by: {named}); {DROP_HINTS.get(worst, '')}"
        if worst == "max_concurrent_attempts" and d.cap is not None:
            K, L = inst.freshness.max_versions_kept, float(grid[-1])
            fr, w = inst.freshness, inst.workload
            drop = float(calc.group_drop(d.exceedance(L, K), w.group_size, fr.overrun_policy, fr.group_correlation))
            least = w.batch_trajectories / (L * d.intake * (1 - drop)) * d.mean_cut if drop < 1 else math.inf
            conflict += (
                f"; at {L:,.1f} s and K = {K} the run keeps {least:,.0f} attempts running, over the cap {d.cap:,}"
            )
    return {
        "conflict": conflict,
        "rejected_pairs": cut,
        "cut_alone": cut,
        "relaxations": [],
        "notes": [
            f"the rows of {label} are MODEL §2–§3's over the lifetimes {'W_τ = min(W, τ)' if d.tau else 'W'}, with "
            "§14's cap, weight sync and resident versions"
        ],
        "solves": 0,
    }
