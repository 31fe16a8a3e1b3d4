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


def fresh_on_time(inst, plan, allowance: float, count: int = 20) -> int:
    """Replays on streams the allowance loop never used, on time with the deadline."""
    setup = replay.setup_of_plan(inst, plan)
    spans = [replay.replicate(setup, [10_000 + i, 0]).makespan for i in range(count)]
    return sum(span <= inst.schedule.deadline for span in spans)


@pytest.mark.parametrize("mode", ["pipelined-0", "colocated"])
def test_a_batch_plan_under_hold_is_on_time_in_fresh_replays(mode):
    plans, raised = 0, 0
    for seed in range(24, 40):
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
    assert plans >= 12  # enough plans for the on-time check to mean something
    if mode == "pipelined-0":  # the spread of a batch's slowest attempt made a plan late at Δ = 0: the loop raised Δ
        assert raised >= 1


def test_the_launch_peak_under_hold_carries_the_beta_term():
    """Each of a batch's N attempts draws its backend: under hold (MODEL §11 with §14) the launch row holds
    N·s_b + β·sqrt(N·s_b·(1 - s_b)) per backend, on steady_state N·s_b; the plans solved on each basis carry it."""
    from trainground.solver.regimes.batch import batch_of, launch_peak

    base = edited(
        load_instance("instances/two-backends-cloud.yaml"),
        {
            "regime": {"mode": "colocated", "rollout_timeout": 3600.0},
            "schedule.deadline": 60 * 86400.0,
            "schedule.cadence.step": 60.0,
        },
    )
    steady = edited(base, {"planning.basis": "steady_state"})
    held = edited(base, {"planning.basis": "hold"})
    beta = safety_factor(held.planning.sandbox_wait)
    shares = np.array([b.share for b in base.environment.backends])  # 0.7 and 0.3
    n = batch_of(held).attempts
    assert launch_peak(steady, batch_of(steady)) == pytest.approx(n * shares, rel=1e-12)
    expected = n * shares + beta * np.sqrt(n * shares * (1 - shares))
    assert launch_peak(held, batch_of(held)) == pytest.approx(expected, rel=1e-12)
    assert beta > 0 and np.all(expected > n * shares)
    assert math.isclose(solve_planned(held).metrics.launch_peak, float(expected.sum()), rel_tol=1e-9)
