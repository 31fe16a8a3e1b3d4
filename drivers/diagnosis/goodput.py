"""Why training cannot make progress, when MODEL.md §13's goodput is what rules out every plan.

γ = 1 - checkpoint_time/τ - (restart_time + τ/2)/M_train falls as the training GPUs G_t grow
(M_train = gpu_mtbf/G_t), so the fewest groups the cadence grid admits decide: when even they make
no progress, no other change (a longer deadline, more pools) helps, and the diagnosis says so with
the smallest change of each reliability input (or of the training GPUs) that gives γ > 0, in closed
form. With L <= weight_sync_time at every cadence, generation never runs: the fix is on the sync.
"""

from __future__ import annotations

import math

import numpy as np

from trainground.models.instance import Instance
from trainground.models.units import format_duration
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import goodput


def least_mtbf(checkpoint: float, restart: float, interval: float | None) -> float:
    """The smallest M_train (s) with γ > 0: with Young's interval 1 - sqrt(2c/M) - r/M > 0, a quadratic
    in x = 1/sqrt(M); with a given τ, M > (r + τ/2)/(1 - c/τ) (inf when c >= τ)."""
    if interval is not None:
        return math.inf if checkpoint >= interval else (restart + interval / 2) / (1 - checkpoint / interval)
    if restart == 0:
        return 2 * checkpoint
    x = (-math.sqrt(2 * checkpoint) + math.sqrt(2 * checkpoint + 4 * restart)) / (2 * restart)
    return 1 / (x * x)


def goodput_conflict(inst: Instance) -> dict | None:
    """The diagnosis of an instance whose every admissible training choice has γ <= 0, or whose every
    cadence is at most weight_sync_time (None otherwise)."""
    rel = inst.reliability
    if rel is None:
        return None
    grid = calc.cadence_grid(inst)
    if grid.size and np.all(grid <= rel.weight_sync_time):
        return {
            "conflict": f"weight sync: every cadence on the grid (at most {grid.max():g} s) is within "
            f"weight_sync_time {format_duration(rel.weight_sync_time)}, so generation never runs; the smallest "
            f"fix: reliability.weight_sync_time below {grid.max():g} s, or schedule.cadence.max above "
            f"{rel.weight_sync_time:g} s",
            "relaxations": ["reliability.weight_sync_time", "schedule.cadence.max"],
        }
    groups = calc.min_groups_for(inst, grid) if grid.size else np.zeros(0, dtype=int)
    if not (groups > 0).any():
        return None
    fewest = int(groups[groups > 0].min())
    gpus = fewest * inst.training.gpus_per_group
    terms = goodput.training_terms(rel, gpus)
    if float(terms.goodput) > 0:
        return None
    return {"conflict": _no_progress(inst, gpus, float(terms.mtbf)), "relaxations": _inputs(rel)}


def _inputs(rel) -> list[str]:
    names = ["reliability.gpu_mtbf", "reliability.restart_time", "reliability.checkpoint_time"]
    return names + (["reliability.checkpoint_interval"] if rel.checked_interval() is not None else [])


def interval_window(checkpoint: float, restart: float, mtbf: float) -> tuple[float, float] | None:
    """The checkpoint intervals τ (s) with γ > 0 at M_train = ``mtbf``: 1 - c/τ - (r + τ/2)/M > 0 is, times τ,
    the quadratic -τ²/(2M) + (1 - r/M)τ - c > 0, positive between its roots (None: no interval helps)."""
    b = 1 - restart / mtbf
    disc = b * b - 2 * checkpoint / mtbf
    if b <= 0 or disc <= 0:
        return None
    return mtbf * (b - math.sqrt(disc)), mtbf * (b + math.sqrt(disc))


def _no_progress(inst: Instance, gpus: int, mtbf: float) -> str:
    rel = inst.reliability
    c, r, tau = rel.checkpoint_time, rel.restart_time, rel.checked_interval()
    need = least_mtbf(c, r, tau)
    fixes = []
    if tau is not None:
        window = interval_window(c, r, mtbf)
        if window is not None:
            lo, hi = window
            fixes.append(
                f"checkpoint_interval between {format_duration(lo)} and {format_duration(hi)} (or auto, "
                f"Young's interval {format_duration(math.sqrt(2 * c * mtbf))})"
            )
    if math.isfinite(need):
        fixes.append(f"gpu_mtbf above {format_duration(need * gpus)}")
        fixes.append(f"at most {int(rel.gpu_mtbf / need):,} training GPUs (you need {gpus:,} to keep up)")
    if tau is None:
        spare = mtbf * (1 - math.sqrt(2 * c / mtbf))
        if spare > 0:
            fixes.append(f"restart_time below {format_duration(spare)}")
        if mtbf > r:
            fixes.append(f"checkpoint_time below {format_duration(mtbf * (1 - r / mtbf) ** 2 / 2)}")
    else:
        spare = mtbf * (1 - c / tau) - tau / 2
        if spare > 0:
            fixes.append(f"restart_time below {format_duration(spare)}")
        if tau * (1 - (r + tau / 2) / mtbf) > 0:
            fixes.append(f"checkpoint_time below {format_duration(tau * (1 - (r + tau / 2) / mtbf))}")
    every = "" if tau is None else f" every {format_duration(tau)} (checkpoint_interval)"
    why = (
        f"; a checkpoint of {format_duration(c)} every {format_duration(tau)} leaves no time to train, whatever "
        "gpu_mtbf"
        if tau is not None and c >= tau
        else ""
    )
    return (
        f"training goodput: failures every {format_duration(mtbf)} on {gpus:,} training GPUs (gpu_mtbf "
        f"{format_duration(rel.gpu_mtbf)}), restarts {format_duration(r)}, checkpoints {format_duration(c)}{every}: "
        f"training cannot make progress (γ <= 0){why}; the smallest fix: " + ", or ".join(fixes)
    )
