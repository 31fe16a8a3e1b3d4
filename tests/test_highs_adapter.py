"""The HiGHS adapter's contract: after every kind of change the solve layer makes — blocks added, pairs
opened and closed (bound changes), caps added and removed, objective switched, coefficients retargeted
to another instance — the problem HiGHS holds equals the one a fresh load of the same pyomo model gives.

The adapter reads private attributes of pyomo's persistent HiGHS interface; this test is what fails
when a pyomo release changes them (pyproject.toml pins the versions it passes on).
"""

from __future__ import annotations

import dataclasses
import math
import random
from pathlib import Path
from types import SimpleNamespace

import highspy
import numpy as np
import pytest

from trainground.models.edits import edited
from trainground.models.load import load_instance
from trainground.models.result import Status
from trainground.solver.highs import HighsModel, outcome_of
from trainground.solver.solve import Planner

INSTANCES = Path(__file__).resolve().parents[1] / "instances"


def _same_number(a: float, b: float) -> bool:
    if math.isinf(a) or math.isinf(b) or abs(a) >= 1e20 or abs(b) >= 1e20:
        return (a >= 1e20) == (b >= 1e20) and (a <= -1e20) == (b <= -1e20)
    return abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b))


def assert_same_problem(held: dict, fresh: dict) -> None:
    assert held["sense"] == fresh["sense"]
    assert _same_number(held["offset"], fresh["offset"])
    assert set(held["columns"]) == set(fresh["columns"])
    for name, (lo, hi, cost, integer) in fresh["columns"].items():
        h = held["columns"][name]
        assert _same_number(h[0], lo) and _same_number(h[1], hi), (name, h, (lo, hi))
        assert _same_number(h[2], cost), (name, "cost", h[2], cost)
        assert h[3] == integer, (name, "integrality")
    assert set(held["rows"]) == set(fresh["rows"])
    for name, (lo, hi, coefs) in fresh["rows"].items():
        h = held["rows"][name]
        assert _same_number(h[0], lo) and _same_number(h[1], hi), (name, h[:2], (lo, hi))
        assert set(h[2]) == set(coefs), (name, set(h[2]) ^ set(coefs))
        for var, value in coefs.items():
            assert _same_number(h[2][var], value), (name, var, h[2][var], value)


def check(planner: Planner) -> None:
    fresh = HighsModel()
    fresh.load(planner.live.model)
    assert_same_problem(planner.live.highs.problem(), fresh.problem())


EDITS = [
    ("inference.shapes[0].tokens_per_gpu_s", lambda v: v * 1.3),
    ("gpu_pools[0].gpu_hour_cost", lambda v: v * 0.7),
    ("environment.node_types[0].hour_cost", lambda v: v * 2.0),
    ("schedule.deadline", lambda v: v * 1.05),
    ("workload.intake_rate", lambda v: v * 0.9),
    ("environment.peak_to_mean", lambda v: v + 0.3),
]


@pytest.mark.parametrize("name", ["seed-week-75.yaml", "large-three-pools.yaml", "seed-dsec-mixed.yaml"])
def test_highs_holds_what_a_fresh_load_holds_after_every_change(name):
    rng = random.Random(name)
    base = load_instance(INSTANCES / name)
    planner = Planner(base, reusable=True)
    check(planner)
    current = base
    for _ in range(8):
        kind = rng.choice(["objective", "cap", "retarget", "makespan", "cadence"])
        if kind == "objective":
            planner.solve(rng.choice(["total_cost", "hourly_cost", "makespan"]))
        elif kind == "cap":
            first = planner.solve("total_cost")
            if first.plan is not None:
                planner.solve(
                    "makespan",
                    max_hourly_cost=first.plan.hourly_cost * 1.01,
                    max_inference_gpus=first.plan.inference_gpus,
                )
        elif kind == "makespan":
            planner.solve("total_cost", max_makespan=current.schedule.deadline * rng.uniform(0.6, 1.0))
        elif kind == "cadence":
            pairs = planner.pairs
            planner.solve("total_cost", cadence=float(pairs.cadence[rng.randrange(pairs.size)]))
        else:
            path, change = rng.choice(EDITS)
            value = _read(base, path)
            candidate = edited(
                base, {path: change(value) if path != "workload.intake_rate" else min(1.0, change(value))}
            )
            if planner.retarget(candidate):
                current = candidate
                planner.solve("total_cost")
        check(planner)
    assert len(planner.live.blocks) > 1  # the walk built blocks beyond the first probe


def _read(inst, path: str):
    node = inst.model_dump()
    for part in path.replace("]", "").replace("[", ".").split("."):
        node = node[int(part)] if part.isdigit() else node[part]
    return node


def test_highs_holds_what_a_fresh_load_holds_after_blocks_are_rekeyed():
    """A retarget whose shortest pairs are new points the blocks left from the earlier instance at them (a
    parameter update, no new block): HiGHS then holds what a fresh load of the model gives, and the plan is
    a fresh model's."""
    base = load_instance(INSTANCES / "seed-week-75.yaml")
    planner = Planner(base, reusable=True)
    planner.solve("makespan")
    built = dict(planner.live.blocks)
    target = edited(base, {"environment.occupancy.median": 1100.0})
    assert planner.retarget(target)
    result = planner.solve("makespan")
    check(planner)
    assert [id(b) for b in planner.live.blocks.values()] == [id(b) for b in built.values()]
    assert set(planner.live.blocks) != set(built)
    assert all(blk.key == key for key, blk in planner.live.blocks.items())
    fresh = Planner(target).solve("makespan")
    assert result.plan == fresh.plan and result.objective_value == fresh.objective_value


def test_a_run_whose_solution_lacks_its_reported_objective_is_repeated_without_presolve():
    """On this instance HiGHS 1.16, after a makespan search changed the model in place, reported a least
    hourly cost of 4 with the previous run's solution (cost 8): the adapter checks a solution's cost against
    the reported value, and the search's plan is a fresh model's."""
    inst = load_instance(Path(__file__).parent / "data" / "highs-stale-solution.yaml")
    fresh = Planner(inst).solve("hourly_cost")
    planner = Planner(inst, reusable=True, fewest_groups=True, covered=False)
    planner.solve("makespan", feasibility=True)
    again = planner.solve("hourly_cost", feasibility=True)
    assert again.plan is not None and fresh.plan is not None
    assert again.plan.hourly_cost == fresh.plan.hourly_cost
    # the same plan's cost, summed by two HiGHS models (a fresh one, one changed in place): equal to rounding
    assert math.isclose(again.objective_value, fresh.objective_value, rel_tol=1e-9)


class _FakeHighs:
    """What :func:`outcome_of` reads of a HiGHS run: one column of cost 2 at ``value``, a reported
    objective and a model status."""

    def __init__(self, status, objective: float, value: float):
        self._status, self._objective, self._value = status, objective, value

    def getModelStatus(self):
        return self._status

    def getInfo(self):
        return SimpleNamespace(
            primal_solution_status=2, objective_function_value=self._objective, mip_dual_bound=0.0, mip_node_count=1
        )

    def getSolution(self):
        return SimpleNamespace(col_value=[self._value])

    def getNumCol(self):
        return 1

    def getCols(self, n, indices):
        return (n, None, np.array([2.0]))

    def getObjectiveOffset(self):
        return (None, 0.0)

    def getRunTime(self):
        return 0.1


@pytest.mark.parametrize(
    ("status", "value", "expected", "kept"),
    [
        (highspy.HighsModelStatus.kOptimal, 4.0, Status.OPTIMAL, True),
        (highspy.HighsModelStatus.kOptimal, 3.0, Status.ERROR, False),
        (highspy.HighsModelStatus.kTimeLimit, 4.0, Status.TIME_LIMIT, True),
        (highspy.HighsModelStatus.kTimeLimit, 3.0, Status.TIME_LIMIT, False),
        (highspy.HighsModelStatus.kObjectiveBound, 4.0, Status.INFEASIBLE, True),
        (highspy.HighsModelStatus.kObjectiveBound, 3.0, Status.ERROR, False),
    ],
)
def test_a_solution_is_kept_only_when_its_cost_is_the_reported_objective(status, value, expected, kept):
    """Reported objective 8: a column of cost 2 at 4 reaches it, at 3 does not. A time-limit incumbent
    that reaches it is kept (it is the plan of a run out of time); one that does not is dropped, and the
    status stays a time limit rather than an error, which the live model would repeat with no time left.
    Any other run with such a solution is an error (repeated without presolve), whatever its status."""
    outcome = outcome_of(_FakeHighs(status, 8.0, value), {7: 0})
    assert outcome.status == expected
    assert (outcome.values is not None) == kept
    assert (outcome.objective_value == 8.0) == kept


def test_a_run_whose_start_comes_back_as_a_wrong_optimum_is_repeated_from_no_start(monkeypatch):
    """HiGHS 1.16 can return a starting solution as an optimum it does not reach (the solution check makes that
    a solve error): the run is repeated after HiGHS's solution is cleared, within what is left of its time
    limit, and answers as a run with no start."""
    import pyomo.core as pyo

    from trainground.solver import highs as adapter

    m = pyo.ConcreteModel()
    m.x = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, 10))
    m.y = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, 10))
    m.need = pyo.Constraint(expr=2 * m.x + 3 * m.y >= 7)
    m.cost = pyo.Objective(expr=3 * m.x + 4 * m.y, sense=pyo.minimize)
    plain = HighsModel()
    plain.load(m)
    expected = plain.run({}, 60.0)
    model = HighsModel()
    model.load(m)
    start = model.run({}, 60.0).values  # a solution of these columns
    limits, calls = [], []
    real_run, real_outcome = adapter._run, adapter.outcome_of

    def spy_run(highs, given, options, threads, time_limit):
        limits.append(time_limit)
        real_run(highs, given, options, threads, time_limit)

    def first_fails(highs, columns):
        calls.append(1)
        found = real_outcome(highs, columns)
        return dataclasses.replace(found, status=Status.ERROR) if len(calls) == 1 else found

    monkeypatch.setattr(adapter, "_run", spy_run)
    monkeypatch.setattr(adapter, "outcome_of", first_fails)
    found = model.run({}, 60.0, start)
    assert found.runs == 2 and found.status == Status.OPTIMAL
    assert found.objective_value == expected.objective_value == 10.0  # x = 2, y = 1
    assert limits[0] == 60.0 and limits[1] < 60.0
    calls.clear()
    monkeypatch.setattr(adapter, "outcome_of", real_outcome)
    assert model.run({}, 60.0, start).runs == 1  # a start that holds: one run
