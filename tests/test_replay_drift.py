"""The model's estimate of its replays' lateness (docs/model.md, "The replays' lateness") and the allowance
loop's start from it (MODEL §11: Δ_0, rules ii and iii, ``hold.predicted_makespan_s``)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.test_hold import small as hold_small
from trainground.drivers.hold import TOO_SAFE, HoldingPlanner, solve_planned
from trainground.drivers.replays import run_replays
from trainground.models.edits import load_edited_checked
from trainground.simulation.setup import setup_of
from trainground.solver.laws.replay_drift import replay_estimate
from trainground.solver.solve import Planner

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = ROOT / "instances"


def load(name: str, *edits: str):
    return load_edited_checked(INSTANCES / name, ["planning.basis=hold", *edits])[0]


def small(**overrides):
    """tests/test_hold.py's small run (40 iterations of 64 trajectories), its allowance set by 9 replays."""
    return hold_small(**{"planning.replays": 9, **overrides})


@pytest.mark.parametrize("name", ["seed-week-75.yaml", "seed-drop-comonotone.yaml"])
def test_the_replays_median_makespan_is_where_the_model_predicts(name):
    inst = load(name)
    result = Planner(inst).solve(allowance=2500.0)
    estimate = replay_estimate(inst, result.plan, result.metrics)
    spans = run_replays(setup_of(inst, result.plan, result.metrics), list(range(8))).makespans
    median = float(np.median(spans))
    standard_error = 1.2533 * float(spans.std(ddof=1)) / math.sqrt(spans.size)
    predicted = estimate.predicted_makespan(result.plan)
    assert abs(median - predicted) <= max(0.001 * median, 2 * standard_error)
    assert predicted > result.plan.makespan_s  # the replays end after T: the model says so before any replay


def test_the_drift_and_the_wait_shrink_when_the_update_leaves_slack():
    inst = load("seed-week-75.yaml")
    result = Planner(inst).solve(allowance=2500.0)
    tight = replay_estimate(inst, result.plan, result.metrics)
    slack = result.metrics.model_copy(update={"update_time_s": 0.9 * result.plan.cadence_s})
    loose = replay_estimate(inst, result.plan, slack)
    assert loose.wait_s < tight.wait_s and loose.drift_s < tight.drift_s
    assert tight.spacing_s > result.plan.cadence_s  # the wait's extra drops stretch the ready-time spacing
    assert tight.start_s >= tight.drift_s  # the start adds the wait's quantile at on_time


def test_without_drops_the_wait_does_not_stretch_the_spacing():
    inst = load("seed-downweight.yaml")
    result = Planner(inst).solve(allowance=2500.0)
    estimate = replay_estimate(inst, result.plan, result.metrics)
    assert estimate.spacing_s == pytest.approx(result.plan.cadence_s, rel=1e-12)


def test_a_staged_instance_has_no_estimate():
    """The bundled staged run on a cadence grid of 51 points (400 s to 900 s): a plan, and no estimate of it."""
    inst = load(
        "seed-week-stages.yaml", "schedule.cadence.min=400s", "schedule.cadence.max=900s", "schedule.cadence.step=10s"
    )
    plan = HoldingPlanner(inst).planner.solve(allowance=0.0)
    assert plan.plan is not None and replay_estimate(inst, plan.plan, plan.metrics) is None


def test_the_seed_holds_in_one_round_from_the_estimate():
    result = solve_planned(load("seed-week-75.yaml", "planning.replays=9"))
    hold = result.hold
    assert result.status == "optimal" and hold.allowance_converged
    assert hold.allowance_start == "estimate" and hold.rounds == 1
    assert hold.predicted_makespan_s > result.plan.makespan_s


def test_a_generous_start_is_solved_again_at_its_order_statistic():
    inst = small()
    deadline = inst.schedule.deadline
    result = HoldingPlanner(inst).solve(start=0.05 * deadline)
    hold = result.hold
    assert hold.allowance_start == "neighbour" and hold.allowance_converged
    assert hold.allowance_s < 0.05 * deadline - TOO_SAFE * deadline  # not the generous start's plan
    assert hold.rounds == 2


def test_an_infeasible_start_restarts_from_zero():
    inst = small()
    result = HoldingPlanner(inst).solve(start=0.9 * inst.schedule.deadline)
    hold = result.hold
    assert result.plan is not None and hold.allowance_converged
    assert hold.allowance_start == "zero"
    assert hold.allowance_s < 0.9 * inst.schedule.deadline


def test_a_sweep_starts_each_point_from_the_allowance_of_the_point_before(tmp_path):
    import yaml

    from trainground.api import _document_of
    from trainground.drivers.tradeoffs.sweep import parse_axis, run_sweep

    file = tmp_path / "small.yaml"
    file.write_text(yaml.safe_dump(_document_of(small())))
    report = run_sweep(file, [parse_axis("workload.iterations=40,42")])
    holds = [row["result"]["hold"] for row in report.rows]
    assert [h["allowance_start"] for h in holds] == ["estimate", "neighbour"]
    assert all(h["allowance_converged"] for h in holds)
