"""A batch run (MODEL.md §14) under the hold basis (§11): the allowance loop replays the regime itself
(simulate/regimes.py), so the plan it prints is on time in fresh replays; the launch peak carries §11's β term."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.test_regimes_bruteforce import random_pipelined
from trainground.drivers.hold import solve_planned
from trainground.models.edits import edited
from trainground.models.load import load_instance, validate
from trainground.simulation import regimes as replay
from trainground.solver.laws.holding import safety_factor

COLOCATED = "instances/regimes/seed-week-colocated.yaml"


def fresh_on_time(inst, plan, allowance: float, count: int = 20) -> int:
    """Replays on streams the allowance loop never used, on time with the deadline."""
    setup = replay.setup_of_plan(inst, plan)
    spans = [replay.replicate(setup, [10_000 + i, 0]).makespan for i in range(count)]
    return sum(span <= inst.schedule.deadline for span in spans)


@pytest.mark.parametrize("mode", ["pipelined-0", "colocated"])
def test_a_batch_plan_under_hold_is_on_time_in_fresh_replays(mode):
    plans, raised = 0, 0
    for seed in range(16, 40):
        data = random_pipelined(seed)
        data["regime"] = {"mode": "colocated"} if mode == "colocated" else {"mode": "pipelined", "steps_ahead": 0}
        data["planning"] = {"basis": "hold", "replays": 16}
        data["inference"]["shapes"] = [s for s in data["inference"]["shapes"] if s["pool"] == "main"]
        data["gpu_pools"] = data["gpu_pools"][:1]
        data["workload"]["iterations"] = 24
        data["schedule"]["deadline"] = 24 * 60.0  # a 60 s pace: the slowest attempt's spread decides
        data["schedule"]["cadence"]["step"] = 1.0
        inst = validate(data, "random.yaml")
        result = solve_planned(inst)
        if result.plan is None:
            continue
        assert result.hold is not None and result.hold.allowance_s >= 0
        assert fresh_on_time(inst, result.plan, result.hold.allowance_s) >= 17, (seed, result.hold)
        plans += 1
        raised += result.hold.allowance_s > 0
    assert plans >= 20  # enough plans for the on-time check to mean something
    if mode == "pipelined-0":  # the spread of a batch's slowest attempt made a plan late at Δ = 0: the loop raised Δ
        assert raised >= 1


def test_the_launch_peak_under_hold_carries_the_beta_term():
    base = edited(load_instance(COLOCATED), {"schedule.deadline": 60 * 86400.0, "schedule.cadence.step": 10.0})
    steady = solve_planned(edited(base, {"planning.basis": "steady_state"}))
    held = solve_planned(edited(base, {"planning.basis": "hold"}))
    n = steady.metrics.launch_peak
    beta = safety_factor(base.planning.sandbox_wait)
    share = base.environment.backends[0].share
    assert n == 4096
    assert held.metrics.launch_peak == pytest.approx(n + beta * math.sqrt(n * share * (1 - share)), rel=1e-9)
    assert held.plan.total_cost >= steady.plan.total_cost * (1 - 1e-9)
    assert np.isfinite(held.hold.allowance_s)
