"""Confidence solves under hold (MODEL.md §11's last paragraphs): the MIP against the brute force of
tests/confidence_reference.py, the scenarios on time iff T_s + Δ <= deadline with §8's start-up counted; the
allowance loop of a confidence solve converges on replays that draw a scenario each, reports their realised
costs beside the nominal one, and its plan is on time in fresh scenario replays it was not tuned on."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tests.confidence_reference import brute_force, small_instance
from tests.strategies import cases
from tests.test_hold import small
from trainground.drivers.hold import HoldingPlanner, order_statistic
from trainground.models.edits import edited
from trainground.simulation.runner import simulate_plan
from trainground.simulation.scenarios import scenario_setups
from trainground.solver.confidence.planning import needed
from trainground.solver.solve import Planner
from trainground.solver.uncertainty import scenarios as sc
from trainground.solver.verify.plan import verify_plan


def deterministic(inst):
    return inst.model_copy(update={"uncertainty": inst.uncertainty.model_copy(update={"confidence": None})})


@pytest.mark.parametrize(
    "seed,alpha,allowance",
    cases([(14, 0.8, 15.0), (5, 0.8, 0.0), (3, 0.8, 15.0), (6, 0.5, 15.0), (10, 0.8, 0.0), (13, 0.5, 15.0)], 2),
)  # each above its deterministic optimum (the CI profile runs the first two, with and without an allowance, the
# shortest enumerations of each: tests/strategies.py)
def test_the_mip_agrees_with_brute_force_under_hold(seed, alpha, allowance):
    inst = small_instance(seed, alpha, samples=20, basis="hold")
    result = Planner(inst).solve("total_cost", allowance=allowance)
    expected = brute_force(inst, allowance)
    assert math.isfinite(expected) and result.status == "optimal"
    assert result.objective_value == pytest.approx(expected, rel=1e-9)
    base = Planner(deterministic(inst)).solve("total_cost", allowance=allowance)
    assert result.objective_value > base.objective_value * (1 + 1e-6)
    assert verify_plan(inst, result.plan, allowance).ok
    assert result.confidence.allowance_s == allowance
    assert result.confidence.in_sample >= needed(alpha, 20) / 20


def test_a_larger_allowance_never_costs_less():
    inst = small_instance(14, 0.8, samples=20, basis="hold")
    planner = Planner(inst)
    costs = [planner.solve("total_cost", allowance=a).objective_value or math.inf for a in (0.0, 10.0, 20.0, 30.0)]
    assert all(a <= b * (1 + 1e-9) for a, b in zip(costs, costs[1:]))
    assert costs[0] < costs[-1]


FACTORS = [
    {
        "name": "throughput",
        "paths": ["inference.shapes[*].tokens_per_gpu_s"],
        "dist": "normal",
        "mean": 1.0,
        "sd": 0.05,
    },
    {
        "name": "lifetimes",
        "paths": ["environment.occupancy.median", "environment.occupancy.p99"],
        "dist": "lognormal",
        "median": 1.0,
        "sigma": 0.1,
    },
    {"name": "updates", "paths": ["training.update_time.reference_time"], "dist": "uniform", "low": 0.95, "high": 1.3},
]


def uncertain_hold(**edits):
    """tests/test_hold.py's small run (40 iterations: replays take milliseconds) with the seed's uncertainty."""
    inst = small(**{"planning.basis": "hold", "schedule.deadline": "5.4h", **edits})
    return edited(inst, {"uncertainty": {"samples": 200, "seed": 0, "confidence": 0.9, "factors": FACTORS}})


def test_the_allowance_loop_of_a_confidence_solve_converges_and_holds_in_fresh_scenario_replays():
    """MODEL §11: the order statistic k = ceil(α(R + 1)) of makespan - T_s over replays that draw a scenario
    each; the plan passes when T + D_(k) <= deadline and its scenarios are on time with Δ = D_(k) in
    ceil(α·S) of them. Replayed 20 times on seeds it was not tuned on (a scenario each), it is on time at least
    as often as the exact binomial test at 1 % lets a plan on time with probability 0.8 be (2α - 1: the input's
    and the run's variance each late in at most 1 - α)."""
    inst = uncertain_hold()
    result = HoldingPlanner(inst).solve()
    hold, conf = result.hold, result.confidence
    assert result.status == "optimal" and hold.allowance_converged
    k = math.ceil(0.9 * (hold.replays + 1) - 1e-9)
    assert hold.order == k and hold.replays >= math.ceil(0.9 / 0.1 - 1e-9)
    assert result.plan.makespan_s + hold.lateness_s <= inst.schedule.deadline
    scen = sc.draw(inst)
    on_time = sc.evaluate(inst, result.plan, scen, hold.lateness_s).on_time
    assert int(on_time.sum()) >= needed(0.9, scen.size)
    assert conf.allowance_s == hold.allowance_s and conf.replays == hold.replays
    metrics = verify_plan(inst, result.plan, hold.allowance_s).metrics
    fresh = scenario_setups(inst, result.plan, metrics, 20, 1000)  # seeds 1000.. : the loop replayed seeds 0..15
    runs = simulate_plan(inst, result.plan, metrics=metrics, replications=20, seed=1000, setups=fresh).runs
    late = sum(r["makespan_s"] > inst.schedule.deadline for r in runs)
    assert stats.binom.sf(late - 1, 20, 0.2) >= 0.01, late  # P(at least this many late | 20 % late) >= 1 %


def test_a_confidence_solve_reports_its_replays_realised_costs_beside_the_nominal_one():
    """The confidence object carries the expected and p90 realised cost (hourly cost at each replay's scenario
    prices times its makespan) over the final plan's replays, with the allowance they set."""
    inst = uncertain_hold(**{"schedule.deadline": "5.2h"})
    planner = HoldingPlanner(inst)
    result = planner.solve()
    conf = result.confidence
    replays = planner.cache.scenario_replays(inst, result.plan, result.metrics, inst.planning.seed, conf.replays)
    realised = replays.hourly * replays.makespans / 3600.0
    assert conf.expected_total_cost == pytest.approx(float(realised.mean()), rel=1e-12)
    assert conf.p90_total_cost == pytest.approx(float(np.percentile(realised, 90)), rel=1e-12)
    assert conf.expected_total_cost != pytest.approx(result.plan.total_cost, rel=1e-6)  # the replays' own figure
    lateness = order_statistic(replays.makespans - replays.planned, result.hold.order)
    assert lateness == pytest.approx(result.hold.lateness_s, rel=1e-12)


def test_the_price_of_certainty_under_hold_shares_its_work_and_gives_each_alpha_its_own_solve():
    """frontier --confidence-curve on the hold basis: each point runs its allowance loop; sharing the pair
    table, the scenario needs and the replays across the points changes no point (a lone solve gives it)."""
    from trainground.drivers.tradeoffs.certainty import curve, with_alpha

    inst = uncertain_hold()
    found = curve(inst, [0.9, 0.5])
    assert [a for a, _ in found.points] == [0.5, 0.9]
    assert found.deterministic.hold is not None and found.deterministic.confidence is None
    for alpha, result in found.points:
        alone = HoldingPlanner(with_alpha(inst, alpha)).solve()
        assert result.objective_value == pytest.approx(alone.objective_value, rel=1e-12)
        assert result.hold.allowance_s == alone.hold.allowance_s and result.confidence.target == alpha
    rows = found.rows()
    assert all(row["allowance_s"] is not None and row["expected_total_cost"] is not None for row in rows)
