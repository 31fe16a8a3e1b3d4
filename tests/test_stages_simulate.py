"""`simulate` plays the stages in order (MODEL.md §12 last item) and agrees with the staged closed forms on a plan
with slack: each stage's iterations at its cadence, its in-flight count by Little's law at its values, its
attempt rate, the first stage's fill (§8) and the run's makespan; attempts launched in a stage live by its law;
one stage equal to the instance replays as the instance; a switch under replan pauses launches; the sandbox
queue keeps its FIFO order when its capacity changes."""

from __future__ import annotations

import heapq
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from trainground.models.load import load_instance, validate
from trainground.simulation.engine import replicate
from trainground.simulation.runner import simulate_plan
from trainground.simulation.sandbox import SandboxQueue
from trainground.simulation.setup import setup_of
from trainground.simulation.stages import stage_metrics
from trainground.solver.solve import solve_instance
from trainground.solver.stages.solve import StagedPlanner

DATA = Path(__file__).parent / "data" / "simulate"


@pytest.fixture(scope="module")
def slack():
    inst = load_instance(DATA / "staged-slack.yaml")
    result = StagedPlanner(inst).solve()
    assert result.status == "optimal"
    return inst, result


def test_each_stage_runs_at_its_cadence_with_littles_law_at_its_values(slack):
    inst, result = slack
    plan = result.plan
    report = simulate_plan(inst, plan, metrics=result.metrics, seed=4)
    sim, pred = report.simulated, report.predicted
    assert sim["sandbox_wait_share"] == 0  # slack: sandboxes never bind
    cadences = [row.cadence_s for row in plan.stages]
    assert len(set(cadences)) == 3  # the stages really run at different paces
    for row, met in zip(plan.stages, stage_metrics(inst, plan)):
        mine = sim["stages"][row.name]
        assert mine["iteration_mean_s"] == pytest.approx(row.cadence_s, rel=0.01), row.name
        assert mine["attempts_per_s"] == pytest.approx(met.attempts_per_s, rel=0.01), row.name
        assert mine["inflight_mean"] == pytest.approx(met.inflight_mean, rel=0.03), row.name
        assert pred["stages"][row.name]["iteration_mean_s"] == row.cadence_s
    assert sim["startup_s"] == pytest.approx(pred["startup_s"], rel=0.05)
    assert pred["makespan_s"] == pytest.approx(plan.makespan_s, rel=1e-9)  # §12's T with the start-up counted
    assert sim["makespan_s"] == pytest.approx(plan.makespan_s, rel=0.005)


def test_attempts_launched_in_a_stage_live_by_its_law(slack):
    inst, result = slack
    setup = setup_of(inst, result.plan, result.metrics)
    run = replicate(setup, [7, 0])
    b = run.boundaries
    g = setup.group_size
    launch = np.repeat(run.launch, g)
    life = run.end - run.start
    starts = [0.0] + [float(b[s.first - 1]) for s in setup.stages[1:]] + [math.inf]
    medians = []
    for lo, hi in zip(starts, starts[1:]):
        mine = (launch >= lo) & (launch < hi)
        medians.append(float(np.median(life[mine])))
    assert medians == pytest.approx([200.0, 300.0, 450.0], rel=0.03)
    # Launches are evenly spaced at each stage's own rate.
    for stage, lo, hi in zip(setup.stages, starts, starts[1:]):
        gaps = np.diff(run.launch[(run.launch >= lo) & (run.launch < hi)])
        assert gaps == pytest.approx(g / stage.attempts_per_s, rel=1e-9)


def test_a_replay_without_records_has_the_recorded_makespan(slack):
    inst, result = slack
    setup = setup_of(inst, result.plan, result.metrics)
    full, bare = replicate(setup, [2, 0]), replicate(setup, [2, 0], record=False)
    assert bare.makespan == full.makespan
    assert np.array_equal(bare.boundaries, full.boundaries)


def test_one_stage_equal_to_the_instance_replays_as_the_instance():
    data = yaml.safe_load((DATA / "slack.yaml").read_text())
    plain = validate(data, "slack.yaml")
    data["stages"] = {"list": [{"name": "all", "iterations": plain.workload.iterations}]}
    data["planning"] = {"basis": "steady_state"}
    staged = validate(data, "staged.yaml")
    one = solve_instance(plain)
    both = StagedPlanner(staged).solve()
    a = replicate(setup_of(plain, one.plan, one.metrics), [5, 0])
    b = replicate(setup_of(staged, both.plan, both.metrics), [5, 0])
    assert a.makespan == b.makespan
    assert np.array_equal(a.boundaries, b.boundaries)


def test_a_switch_under_replan_pauses_the_launches():
    data = yaml.safe_load((DATA / "staged-slack.yaml").read_text())
    data["stages"]["capacity"] = "replan"
    data["stages"]["switch_time"] = 600
    inst = validate(data, "replan.yaml")
    result = StagedPlanner(inst).solve()
    setup = setup_of(inst, result.plan, result.metrics)
    paid = [s for s in setup.stages if s.switch_s > 0]
    assert paid, "the replan plan changes capacity"
    run = replicate(setup, [1, 0])
    b = run.boundaries
    for stage in paid:
        change = float(b[stage.first - 1])
        assert not np.any((run.launch >= change) & (run.launch < change + 600))
        assert b[stage.first] >= change + 600
    assert run.makespan == pytest.approx(result.plan.makespan_s, rel=0.01)


def _heap_with_change(arrivals, lifetimes, capacities, at: int) -> np.ndarray:
    """FIFO one attempt at a time; from arrival ``at`` on, a new attempt needs fewer than capacities[1] busy."""
    busy: list[float] = []
    starts = np.empty(arrivals.size)
    last = -math.inf
    for i, (a, w) in enumerate(zip(arrivals, lifetimes)):
        c = capacities[0] if i < at else capacities[1]
        t = max(a, last)
        while busy and busy[0] <= t:
            heapq.heappop(busy)
        while len(busy) >= c:
            t = max(t, heapq.heappop(busy))
        starts[i] = last = t
        heapq.heappush(busy, t + w)
    return starts


@pytest.mark.parametrize("capacities", [(40, 25), (25, 40)])
def test_a_queue_whose_capacity_changes_matches_a_heap(capacities):
    rng = np.random.default_rng(9)
    arrivals = np.cumsum(rng.exponential(1.0, 4000))
    lifetimes = rng.lognormal(3.3, 0.8, 4000)
    at = 2000
    queue = SandboxQueue(capacities[0])
    first = queue.admit(arrivals[:at], lifetimes[:at]).copy()
    queue.capacity = capacities[1]
    second = queue.admit(arrivals[at:], lifetimes[at:])
    expected = _heap_with_change(arrivals, lifetimes, capacities, at)
    assert np.allclose(np.concatenate((first, second)), expected, rtol=0, atol=1e-9)
    assert np.any(expected[at:] > arrivals[at:])  # the smaller capacity makes attempts wait


def test_a_staged_setup_keeps_each_stages_sandboxes(slack):
    inst, result = slack
    setup = setup_of(inst, result.plan, result.metrics)
    assert [s.name for s in setup.stages] == ["short", "middle", "long"]
    assert [s.first for s in setup.stages] == [0, 300, 600]
    assert setup.update_s == setup.stages[-1].update_s == pytest.approx(30.0)
    short = setup_of(inst, result.plan, result.metrics, iterations=450)  # `simulate --iterations`: pro rata
    assert short.iterations == 450 and [s.first for s in short.stages] == [0, 150, 300]
    assert short.deadline == pytest.approx(inst.schedule.deadline / 2)


def test_the_update_slack_of_a_staged_replay_is_read_in_the_tightest_stages_own_cadence():
    """A staged plan's cadence is the stages' mean: the update time is compared with the cadence of the stage
    it leaves the least share of, and the sentence names that stage."""
    from trainground.render.simulate import _tightest_update, partings

    inst = load_instance(Path(__file__).parents[1] / "instances" / "seed-week-stages.yaml")
    result = StagedPlanner(inst).solve()
    plan = result.plan.model_dump()
    update, own, whose = _tightest_update(plan, result.metrics.update_time_s, plan["cadence_s"])
    shares = {s["name"]: (s["cadence_s"] - s["update_time_s"]) / s["cadence_s"] for s in plan["stages"]}
    tight = min(shares, key=shares.__getitem__)
    assert whose == f" of stage '{tight}'" and (own - update) / own == pytest.approx(shares[tight])
    report = simulate_plan(inst, result.plan, metrics=result.metrics, iterations=60, seed=1)
    said = [s for s in partings(report) if "of slack" in s]
    assert said and all(f"stage '{tight}'" in s and f"in its {own:,.6g} s cadence" in s for s in said)
    assert _tightest_update({"cadence_s": 600.0}, 550.0, 600.0) == (550.0, 600.0, "")  # one stage: the plan's
