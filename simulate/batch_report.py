"""`simulate` of a batch run (MODEL.md §14): the plan's replications by :mod:`simulation.regimes`, each figure's mean
beside the model's (its metrics and cadence), and how many replications finish by the deadline.

With ``iterations`` other than the run's, the deadline is pro rata, ``extra_time + (deadline - extra_time)·N/n``,
as the seed regime's replay does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.models.result import Metrics, Plan
from trainground.simulation import regimes as replay

ROWS = (
    ("makespan_s", "makespan (s)"),
    ("iteration_mean_s", "iteration (s)"),
    ("generation_phase_s", "generation phase D (s)"),
    ("slowest_attempt_s", "slowest attempt M_N (s)"),
    ("generation_busy_share", "generation busy share"),
    ("launch_peak", "launch (attempts)"),
    ("consumed_mean_gap", "consumed gap, mean"),
    ("consumed_p99_gap", "consumed gap, p99"),
)


@dataclass
class BatchReport:
    inst: Instance
    plan: Plan
    replications: list[dict]
    seed: int
    iterations: int
    deadline: float  # pro rata to ``iterations``
    predicted: dict  # the model's figure per ROWS key
    rows = ROWS
    note = "the model's iteration is the cadence, which the batch's D + U + t_s (+ switch) must fit"

    @property
    def on_time(self) -> int:
        return sum(r["makespan_s"] <= self.deadline * (1 + 1e-12) for r in self.replications)

    def simulated(self) -> dict:
        """The mean of each figure over the replications (launches summed over backends)."""
        mean = replay.mean_figures(self.replications)
        mean["launch_peak"] = sum(mean["launch_peak"].values()) if mean["launch_peak"] else 0.0
        return mean

    def to_json(self) -> dict:
        sim = self.simulated()
        r = self.inst.regime
        assert r is not None
        return {
            "instance": self.inst.name,
            "regime": {"mode": r.mode, "steps_ahead": r.steps_ahead},
            "replications": len(self.replications),
            "seed": self.seed,
            "iterations": self.iterations,
            "deadline_s": self.deadline,
            "on_time": self.on_time,
            "figures": {key: {"model": self.predicted.get(key), "simulated": sim.get(key)} for key, _ in ROWS},
            "makespans_s": [r["makespan_s"] for r in self.replications],
        }


def batch_report(
    inst: Instance, plan: Plan, metrics: Metrics, replications: int, seed: int, iterations: int | None = None
) -> BatchReport:
    """``replications`` replays of ``plan`` (replication r seeded ``[seed, r]``), beside the model's figures."""
    n = iterations or inst.workload.iterations
    sched = inst.schedule
    deadline = sched.extra_time + (sched.deadline - sched.extra_time) * n / inst.workload.iterations
    setup = replay.setup_of_plan(inst, plan, iterations=n)
    each = replay.replications(setup, replications, seed)
    predicted = {
        "makespan_s": n * plan.cadence_s + sched.extra_time,
        "iteration_mean_s": plan.cadence_s,
        "generation_phase_s": metrics.generation_phase_s,
        "slowest_attempt_s": metrics.slowest_attempt_s,
        "generation_busy_share": metrics.generation_busy_share,
        "launch_peak": float(setup.attempts),
        "consumed_mean_gap": metrics.consumed_mean_gap,
        "consumed_p99_gap": metrics.consumed_p99_gap,
    }
    return BatchReport(inst, plan, each, seed, n, deadline, predicted)


def spread(report: BatchReport, key: str) -> tuple[float, float] | None:
    """The p10 and p90 of a figure over the replications (None when a replication has none)."""
    values = [r[key] for r in report.replications]
    if any(v is None for v in values):
        return None
    if isinstance(values[0], dict):
        values = [sum(v.values()) for v in values]
    return float(np.quantile(values, 0.1)), float(np.quantile(values, 0.9))
