"""With start-up counted, a planner's table holds only the group counts each solve needs (solver/table/rows.py): a
cost solve lists the rows whose cost bound is within the cost of a plan on each pair's fewest groups. The
plans must be those of a table of every row, under every restriction a caller passes (a makespan cap, an
allowance, budgets, a pinned cadence), in any order of solves, and the table must be smaller. A makespan solve
under a cap holds the rows within the cap alone, and a cost solve after it the rows it needs again."""

from __future__ import annotations

import math
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import examples, instance_of, small_instances
from trainground.solver.solve import Planner
from trainground.solver.table.rows import EVERY, WITHIN


def _every(inst) -> Planner:
    planner = Planner(inst)
    planner.rows._cover(planner, EVERY)
    return planner


def _same(a, b, what) -> None:
    assert (a.plan is None) == (b.plan is None), (what, a.status, b.status)
    if a.plan is not None:
        for name in ("total_cost", "hourly_cost", "makespan_s"):
            assert math.isclose(getattr(a.plan, name), getattr(b.plan, name), rel_tol=1e-9), (what, name)
        assert a.plan.training_groups == b.plan.training_groups, what


@settings(
    max_examples=examples(12), deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
@given(small_instances(), st.sampled_from([1.0, 4.0]), st.floats(0.0, 1.0))
def test_a_covered_table_solves_as_a_table_of_every_row(data, pools, cut):
    data["schedule"]["count_startup"] = True
    data["schedule"]["deadline"] *= 1.5
    for pool in data["gpu_pools"]:
        pool["gpus"] = int(pool["gpus"] * pools)
    inst = instance_of(data)
    every = _every(inst)
    covered = Planner(inst)
    spans = sorted(every.pairs.makespan.tolist())
    cap = spans[int(cut * (len(spans) - 1))] if spans else None
    calls = [("total_cost", {}), ("hourly_cost", {}), ("total_cost", {"max_makespan": cap})]
    calls += [("makespan", {"max_makespan": cap}), ("hourly_cost", {}), ("total_cost", {"max_makespan": cap})]
    calls += [("total_cost", {"allowance": 0.2 * inst.schedule.deadline * cut}), ("makespan", {})]
    calls += [("total_cost", {}), ("hourly_cost", {"max_total_cost": 30.0})]
    for objective, restrictions in calls:
        _same(
            covered.solve(objective, **restrictions), every.solve(objective, **restrictions), (objective, restrictions)
        )
    _covers_its_cost(inst, every)
    _holds_the_rows_within_a_cap(inst, cap, every)


def _holds_the_rows_within_a_cap(inst, cap, every: Planner) -> None:
    """A fresh planner's makespan solve under a cap leaves a table of every row within the cap and, without a
    budget, of none past it (``every``: the planner of a table of every row, whose table no solve changes)."""
    if cap is None:
        return
    covered = Planner(inst)
    _same(covered.solve("makespan", max_makespan=cap), every.solve("makespan", max_makespan=cap), "capped makespan")
    budgeted = inst.limits.max_hourly_cost is not None or inst.limits.max_total_cost is not None
    assert covered.rows.covers[0] == ("every" if budgeted else WITHIN)  # a budget needs every row
    within = {key for key, span in zip(every.pairs.keys(), every.pairs.makespan) if span <= cap}
    held = dict(zip(covered.pairs.keys(), covered.pairs.makespan))
    assert within <= set(held)
    assert budgeted or all(span <= cap * (1 + 1e-8) for span in held.values())


def _covers_its_cost(inst, every: Planner) -> None:
    """After a cost solve, the table holds every row whose cost bound (that of the cost search over every
    row, ``every``'s table) is within the cost it covers."""
    for objective in ("total_cost", "hourly_cost"):
        covered = Planner(inst)
        covered.solve(objective)
        criterion, most = covered.rows.covers
        if criterion != objective:
            continue  # no plan on the fewest rows: nothing covered
        bound = every.hourly_lb * (every.pairs.makespan / 3600.0 if objective == "total_cost" else 1.0)
        held = set(covered.pairs.keys())
        assert {key[:2] for key in every.pairs.keys()} <= {key[:2] for key in held}  # no pair loses its rows
        for row, key in enumerate(every.pairs.keys()):
            if bound[row] <= most:
                assert key in held, (objective, key, bound[row], most)


def test_the_seed_under_hold_lists_few_rows_for_its_cost_solve():
    data = yaml.safe_load((Path(__file__).resolve().parents[1] / "instances" / "seed-two-pools.yaml").read_text())
    data["planning"] = {"basis": "hold"}
    inst = instance_of(data)
    covered, every = Planner(inst), _every(inst)
    _same(covered.solve(), every.solve(), "total_cost")
    assert covered.pairs.size < every.pairs.size / 10, (covered.pairs.size, every.pairs.size)
    data["gpu_pools"][1]["gpus"] = 16_000  # the training pool: more group counts than a plan can pay for
    more = instance_of(data)
    _covers_its_cost(more, _every(more))
