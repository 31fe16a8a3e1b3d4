"""A staged replay's figures stage by stage, and the staged model's predictions beside them (MODEL.md §12, §10).

Simulated, per stage (under ``simulated.stages[name]``): its iterations' mean length (the spacing of its
boundaries, the first one's from the previous stage's last), its in-flight mean over its span (from the
boundary that publishes its first version, or the first batch, to the one its last iteration forms),
and its launches per second. Predicted: the stage's cadence ``L_p``, its in-flight mean (MODEL §2 at its
values) and attempt rate; the run's figures weigh the stages' by their time (in flight), their
attempts (exceedance, group drop, intake) or their iterations (version gaps), the start-up is the first
stage's fill (§8) and the makespan §12's.
"""

from __future__ import annotations

import numpy as np

from trainground.models.result import Metrics, Plan
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import startup


def _spans(setup) -> list[tuple[int, int]]:
    """Per stage, its iterations [first, last + 1) in the replay."""
    firsts = [s.first for s in setup.stages] + [setup.iterations]
    return list(zip(firsts[:-1], firsts[1:]))


def stage_figures(setup, run) -> dict:
    """``{"stages": {name: {"iterations", "iteration_mean_s", "inflight_mean", "attempts_per_s"}}}`` of one
    recorded replication (empty figures for a stage it did not reach)."""
    b = run.boundaries
    out = {}
    for stage, (lo, hi) in zip(setup.stages, _spans(setup)):
        spacing = np.diff(b[max(lo - 1, 0) : min(hi, b.size)]) if b.size > lo else np.empty(0)
        begin = b[lo - 1] if lo >= 1 and b.size >= lo else (b[0] if lo == 0 and b.size else None)
        end = b[hi - 1] if b.size >= hi else None
        figures: dict = {"iterations": hi - lo, "iteration_mean_s": float(spacing.mean()) if spacing.size else None}
        if begin is not None and end is not None and end > begin:
            held = np.minimum(run.end, end) - np.maximum(run.start, begin)
            figures["inflight_mean"] = float(np.clip(held, 0.0, None).sum() / (end - begin))
            launched = np.count_nonzero((run.launch >= begin) & (run.launch < end)) * run.group_size
            figures["attempts_per_s"] = launched / (end - begin)
        else:
            figures["inflight_mean"] = figures["attempts_per_s"] = None
        out[stage.name] = figures
    return {"stages": out}


def staged_prediction(setup, plan: Plan, metrics: list[Metrics], count_startup: bool) -> dict:
    """The staged model's value of each figure of :func:`simulate.report.predict` (module docstring), and
    per stage its cadence, in-flight mean and attempt rate."""
    assert plan.stages
    n = np.array([hi - lo for lo, hi in _spans(setup)], dtype=float)
    L = np.array([row.cadence_s for row in plan.stages])
    time = n * L
    rate = np.array([m.attempts_per_s for m in metrics])
    launched = rate * time
    first = setup.stages[0]
    fill = float(
        startup.fill(
            first.occupancy, first.attempts_per_s, setup.batch, setup.group_size, first.intake, setup.correlation
        )
    )
    switches = sum(s.switch_s for s in setup.stages[1:])
    steady = float(time.sum()) + setup.extra_time + switches
    with_startup = steady + fill - L[0] + setup.update_s
    makespan = with_startup if count_startup else steady

    def weighted(values, weights) -> float:
        return float(np.dot(values, weights) / weights.sum())

    drops = [calc.group_drop_bounds(m.exceedance, setup.group_size) for m in metrics]
    lower = weighted(np.array([d[0] for d in drops]), launched)
    upper = weighted(np.array([d[1] for d in drops]), launched)
    return {
        "makespan_s": makespan,
        "startup_s": fill,
        "iteration_mean_s": float(time.sum() / n.sum()),
        "iteration_p50_s": None,
        "iteration_p99_s": float(L.max()),
        "iteration_max_s": float(L.max()),
        "inflight_mean": weighted(np.array([m.inflight_mean for m in metrics]), time),
        "inflight_p99": None,
        "inflight_max": float(max(m.inflight_peak for m in metrics)),
        "mean_version_gap": weighted(np.array([m.mean_version_gap for m in metrics]), n),
        "p99_version_gap": float(max(m.p99_version_gap for m in metrics)),
        "exceedance": weighted(np.array([m.exceedance for m in metrics]), launched),
        "group_drop_rate": weighted(np.array([m.group_drop_rate for m in metrics]), launched),
        "group_drop_bounds": [lower, upper] if setup.policy == "drop" else [0.0, 0.0],
        "effective_intake": weighted(np.array([m.effective_intake for m in metrics]), launched),
        "on_time": bool(makespan <= setup.deadline),
        "lateness_s": makespan - setup.deadline,
        "makespan_steady_s": steady,
        "makespan_with_startup_s": with_startup,
        "update_time_s": setup.update_s,
        "gpu_hours": (plan.inference_gpus + plan.training_gpus) * makespan / 3600,
        "realised_cost": realised_cost(plan, makespan),
        "stages": {
            row.name: {
                "iterations": int(k),
                "iteration_mean_s": float(cadence),
                "inflight_mean": m.inflight_mean,
                "attempts_per_s": m.attempts_per_s,
            }
            for row, k, cadence, m in zip(plan.stages, n, L, metrics)
        },
    }


def realised_cost(plan: Plan, span: float) -> float:
    """A staged plan's cost over a run of ``span`` seconds: its planned cost, and the time beyond (or short of)
    its makespan at the last stage's hourly cost (under ``fixed`` the plan's: hourly·span/3600)."""
    assert plan.stages
    last = plan.stages[-1].hourly_cost if plan.stages[-1].hourly_cost is not None else plan.hourly_cost
    return plan.total_cost + last * (span - plan.makespan_s) / 3600.0
