"""`simulate` of an admission run (MODEL.md §14): the plan's replications by :mod:`simulation.admission_replay`,
each figure's mean beside the model's (the plan's cadence and metrics), and how many finish by the deadline.

The model's in-flight figures count every running attempt, whatever sandboxes hold them: the mean
``R_raw·mean(W_τ)`` (Little's law), the publish peak ``(B/p)·Σ_i S_τ(i·L)`` and the larger of it and
``peak_to_mean`` times the mean (row 6 over all backends).

With ``iterations`` other than the run's, the deadline is pro rata, ``extra_time + (deadline - extra_time)·N/n``,
and the model's makespan drops ``(n - N)·L``, as the seed regime's replay does.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainground.models.instance import Instance
from trainground.models.result import Metrics, Plan
from trainground.simulation import admission_replay as replay
from trainground.simulation.admission import setup_of_plan
from trainground.simulation.admission_figures import figures
from trainground.simulation.regimes import mean_figures
from trainground.solver.laws import regimes as rg

ROWS = (
    ("makespan_s", "makespan (s)"),
    ("startup_s", "first batch (s)"),
    ("iteration_mean_s", "iteration (s)"),
    ("slowest_attempt_s", "group's slowest member E[M_g] (s)"),
    ("attempts_per_s", "attempts launched (/s)"),
    ("held_back_share", "launches held by the slots"),
    ("inflight_mean", "in flight, mean"),
    ("launch_peak", "in flight after a publish"),
    ("inflight_max", "in flight, most"),
    ("version_switches", "version moves per attempt"),
    ("generation_busy_share", "generation busy share"),
    ("recompute_share", "re-prefill share"),
    ("consumed_mean_gap", "consumed gap, mean"),
    ("consumed_p99_gap", "consumed gap, p99"),
)


@dataclass
class AdmissionReport:
    inst: Instance
    plan: Plan
    replications: list[dict]
    seed: int
    iterations: int
    deadline: float  # pro rata to ``iterations``
    predicted: dict  # the model's figure per ROWS key (None where it has none)
    rows = ROWS
    note = (
        "the model's iteration is the cadence, which the admission row (E[M_g]/p + U + t_s)/(k + 1/2) must fit; "
        "sandbox waits and the token supply are not replayed (their loads are)"
    )

    @property
    def on_time(self) -> int:
        return sum(r["makespan_s"] <= self.deadline * (1 + 1e-12) for r in self.replications)

    def simulated(self) -> dict:
        """The mean of each figure over the replications (None where a replication has none)."""
        return mean_figures(self.replications)

    def to_json(self) -> dict:
        sim = self.simulated()
        r = self.inst.regime
        assert r is not None
        return {
            "instance": self.inst.name,
            "regime": {"mode": r.mode, "staleness": r.staleness, "steps_ahead": r.steps_ahead},
            "replications": len(self.replications),
            "seed": self.seed,
            "iterations": self.iterations,
            "deadline_s": self.deadline,
            "on_time": self.on_time,
            "figures": {key: {"model": self.predicted.get(key), "simulated": sim.get(key)} for key, _ in ROWS},
            "makespans_s": [x["makespan_s"] for x in self.replications],
        }


def admission_report(
    inst: Instance, plan: Plan, metrics: Metrics, replications: int, seed: int, iterations: int | None = None
) -> AdmissionReport:
    """``replications`` replays of ``plan`` (replication r seeded ``[seed, r]``), beside the model's figures."""
    n = iterations or inst.workload.iterations
    sched, L = inst.schedule, plan.cadence_s
    deadline = sched.extra_time + (sched.deadline - sched.extra_time) * n / inst.workload.iterations
    setup = setup_of_plan(inst, plan, iterations=n)
    each = [figures(replay.replicate(setup, [seed, r])) for r in range(replications)]
    running = metrics.attempts_per_s * metrics.occupancy_mean_s  # Little's law over every running attempt
    burst = rg.publish_peak(setup.batch, rg.intake(inst, setup.occupancy), 1.0, setup.occupancy, setup.timeout, L)
    predicted = {
        "makespan_s": plan.makespan_s - (inst.workload.iterations - n) * L,
        "startup_s": plan.startup_s,
        "iteration_mean_s": L,
        "slowest_attempt_s": metrics.slowest_attempt_s,
        "attempts_per_s": metrics.attempts_per_s,
        "inflight_mean": running,
        "launch_peak": burst,
        "inflight_max": max(running * inst.environment.peak_to_mean, burst),
        "version_switches": metrics.occupancy_mean_s / L,
        "generation_busy_share": metrics.generation_busy_share,
        "recompute_share": metrics.recompute_share,
        "consumed_mean_gap": metrics.consumed_mean_gap,
        "consumed_p99_gap": metrics.consumed_p99_gap,
    }
    return AdmissionReport(inst, plan, each, seed, n, deadline, predicted)
