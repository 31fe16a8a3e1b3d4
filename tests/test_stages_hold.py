"""Staged plans that hold (MODEL.md §12 under §11): the allowance loop replays the stages in order, its replays
are `simulate`'s, its allowance closes the rows it finds late; the staged verifier checks the hold rows (E^hold
per stage, the first stage's fill, the allowance in the deadline row); fresh replays of the plan are on time."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats

from trainground.drivers.hold import HoldingPlanner, planner_for, replay_seeds
from trainground.models.load import validate
from trainground.models.stage_rules import stage_instance
from trainground.simulation.engine import replicate
from trainground.simulation.runner import seed_for
from trainground.simulation.setup import setup_of
from trainground.simulation.stages import stage_metrics
from trainground.solver.verify.hold import hold_loads
from trainground.solver.verify.laws import law_of
from trainground.solver.verify.stages import verify_staged

DATA = Path(__file__).parent / "data" / "simulate"


def held(deadline: float | None = None):
    data = yaml.safe_load((DATA / "staged-slack.yaml").read_text())
    data["planning"] = {"basis": "hold", "replays": 16, "on_time": 0.9, "seed": 0}
    if deadline is not None:
        data["schedule"]["deadline"] = deadline
    return validate(data, "held.yaml")


@pytest.fixture(scope="module")
def tight():
    """A deadline a few replays' spread past the steady plan: round 1 is late, round 2 sets the allowance."""
    inst = held(60420.0)
    planner = planner_for(inst)
    assert isinstance(planner, HoldingPlanner)
    return inst, planner.solve()


def test_the_allowance_loop_plays_the_stages_and_closes_what_its_replays_find_late(tight):
    inst, result = tight
    assert result.status == "optimal", result.message
    hold = result.hold
    assert hold.rounds >= 2 and hold.allowance_s > 0 and hold.allowance_converged
    plan = result.plan
    assert plan.makespan_s + hold.allowance_s <= inst.schedule.deadline * (1 + 1e-9)
    # The replays are simulate's: replay i is `simulate --seed seed+i`'s first replication of the staged plan.
    setup = setup_of(inst, plan, result.metrics)
    spans = np.array([replicate(setup, seed_for(s, 0), record=False).makespan for s in replay_seeds(inst)])
    late = np.sort(spans - plan.makespan_s)[inst.planning.order - 1]
    assert late == pytest.approx(hold.lateness_s, rel=1e-12)
    assert plan.makespan_s + late <= inst.schedule.deadline
    assert hold.on_time_share == pytest.approx(np.mean(spans <= inst.schedule.deadline))
    assert verify_staged(inst, plan, hold.allowance_s).ok


def test_fresh_replays_of_the_held_plan_are_on_time(tight):
    inst, result = tight
    setup = setup_of(inst, result.plan, result.metrics)
    fresh = [replicate(setup, seed_for(1000 + i, 0), record=False) for i in range(20)]
    on_time = sum(run.makespan <= inst.schedule.deadline for run in fresh)
    # Exact binomial tolerance: at on_time = 0.9, fewer than this many of 20 has probability < 1 %.
    floor = int(stats.binom.ppf(0.01, 20, inst.planning.on_time))
    assert on_time >= floor, (on_time, floor)
    assert max(run.wait_share for run in fresh) <= inst.planning.sandbox_wait


def _broken(plan, stage: int, **changes):
    out = plan.model_copy(deep=True)
    for row, original in zip(out.stages, plan.stages):
        row.plan = original.plan.model_copy(deep=True)
    part = out.stages[stage].plan
    out.stages[stage].plan = part.model_copy(update=changes)
    return out


def test_the_staged_verifier_checks_the_hold_rows(tight):
    inst, result = tight
    plan, allowance = result.plan, result.hold.allowance_s
    assert verify_staged(inst, plan, allowance).ok
    slack = inst.schedule.deadline - plan.makespan_s
    late = verify_staged(inst, plan, slack * 1.5)
    assert any(v.startswith("deadline") for v in late.violations), late.violations
    part = plan.stages[1].plan
    # One fewer node than the stage's placement holds: E^hold no longer fits (row 5 or 6, at the stage's values).
    fewer = [c.model_copy(update={"count": c.count - 1}) for c in part.local_nodes]
    check = verify_staged(inst, _broken(plan, 1, local_nodes=fewer), allowance)
    assert any(v.startswith("stage middle:") for v in check.violations), check.violations
    # A first-stage fill that is not the stage's own (§8 at its values).
    check = verify_staged(inst, _broken(plan, 0, startup_s=plan.stages[0].plan.startup_s * 0.9), allowance)
    assert any("startup_s" in v for v in check.violations), check.violations
    # The run's makespan without the fill and the final update is not §12's with the start-up counted.
    steady = sum(s.iterations * s.cadence_s for s in plan.stages)
    check = verify_staged(inst, plan.model_copy(update={"makespan_s": steady}), allowance)
    assert any(v.startswith("makespan_s") for v in check.violations), check.violations


def test_the_held_plan_sizes_sandboxes_for_the_fluctuation_in_every_stage(tight):
    inst, result = tight
    for stage, row, met in zip(inst.stages.list, result.plan.stages, stage_metrics(inst, result.plan)):
        si = stage_instance(inst, stage)
        loads = hold_loads(si, law_of(si.environment.occupancy), met.attempts_per_s)
        placed = sum(sum(v.values()) for v in row.plan.placement.steady.values())
        assert placed >= sum(loads.values()) * (1 - 1e-8) > row.inflight_mean, row.name
    assert math.isfinite(result.hold.expected_total_cost)
