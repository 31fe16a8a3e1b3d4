"""MODEL.md §4 reserved billing and §8 start-up (count_startup), as the verifier and the brute-force
reference read them, on hand-built plans and hand-solved instances (no MIP support needed).

§8 by hand: with ``overrun_policy: downweight`` the fill's target is B/(p·R_raw) = L (no drop), so
for occupancy samples [10, 10] (F = 0 below 10 s, 1 from 10 s) ∫_0^t F = t - 10 and fill = L + 10.
For samples [10, 30] (F = 1/2 on [10, 30)): groups of g = 2 independent members have F² = 1/4
there, ∫ = 5 at 30 s, so fill(L = 20) = 30 + 15 = 45 s; comonotone groups (F) reach 10 at 30 s,
fill = 40 s.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest

from tests import reference
from tests.plans import recosted
from tests.test_known_optima import base
from trainground.models.load import read_document, validate
from trainground.models.result import Count
from trainground.solver.laws import calculus
from trainground.solver.solve import Planner, solve_instance
from trainground.solver.verify import laws as verify_laws
from trainground.solver.verify.plan import verify_plan

SEED = Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml"


def failing(inst, plan) -> set[str]:
    return {v.split(":")[0] for v in verify_plan(inst, plan).violations}


def instance(data: dict, **schedule):
    data = copy.deepcopy(data)
    data["schedule"].update(schedule)
    return validate(data, "hand.yaml")


# --- §8 start-up --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "samples, group_size, correlation, fill",
    [([10, 10], 1, "independent", 30.0), ([10, 30], 2, "independent", 45.0), ([10, 30], 2, "comonotone", 40.0)],
)
def test_fill_by_hand(samples, group_size, correlation, fill):
    law = verify_laws.empirical_law(samples)
    members = group_size if correlation == "independent" else 1
    assert verify_laws.fill_time(law, 20.0, members) == pytest.approx(fill, rel=1e-12)
    data = base()
    data["environment"]["occupancy"]["samples"] = samples
    data["workload"]["group_size"] = group_size
    data["freshness"]["group_correlation"] = correlation
    ref = reference.Law(validate(data, "hand.yaml").environment.occupancy)
    assert ref.fill(20.0, members) == pytest.approx(fill, rel=1e-12)


def test_fill_of_the_seed_plan_is_the_models_check_value():
    """MODEL §8: seed baseline plan L = 604, K = 10, independent groups of 8 → fill ≈ 3,768 s (the
    model's figure uses R_raw = 10.455/s; the plan's own 10.446/s gives 3,769.5 s, within 0.1 %)."""
    inst = instance(read_document(SEED), count_startup=True)
    law = verify_laws.law_of(inst.environment.occupancy)
    run = verify_laws.run_at(inst, law, 604.0, 10, 435, True)
    assert run.attempts == pytest.approx(10.455, rel=1e-3)
    assert run.startup == pytest.approx(3768.0, rel=1e-3)
    assert run.makespan == pytest.approx(run.startup + 999 * 604 + 300 * 7000 / (435 * 8), rel=1e-12)


@pytest.mark.parametrize(
    "median, p99, group_size, correlation",
    [
        (1044, 13900, 8, "independent"),
        (1044, 13900, 8, "comonotone"),
        (30, 60, 4, "independent"),
        (5, 400, 1, "independent"),
        (1000, 1200, 64, "independent"),
    ],
)
def test_fill_two_ways(median, p99, group_size, correlation):
    """The verifier's fill (its own Gauss-Legendre in time, Newton) and the reference's (scipy's quad in log
    time, brentq) agree, a narrow law with groups of 64 (a sharp integrand) included; for
    comonotone groups ∫_0^t F = t - E[min(W, t)], the model's closed-form limited mean, agrees too."""
    data = base()
    data["environment"]["occupancy"] = {"distribution": "lognormal", "median": median, "p99": p99}
    spec = validate(data, "hand.yaml").environment.occupancy
    members = group_size if correlation == "independent" else 1
    for need in (0.5 * median, 3 * median, 40 * median):
        mine = verify_laws.fill_time(verify_laws.law_of(spec), need, members)
        assert reference.Law(spec).fill(need, members) == pytest.approx(mine, rel=1e-9)
        if members == 1:
            assert mine - float(calculus.occupancy_of(spec).limited_mean(mine)) == pytest.approx(need, rel=1e-9)


def test_a_fill_deep_in_the_lower_tail():
    """Groups of 64 on a narrow law and a need far below the median: F_grp underflows early in the bracket,
    where Newton cannot step; the verifier's fill still meets the reference's (and never divides by 0)."""
    data = base()
    data["environment"]["occupancy"] = {"distribution": "lognormal", "median": 1000, "p99": 1100}
    spec = validate(data, "hand.yaml").environment.occupancy
    for need in (1e-6, 1e-3, 1.0):
        mine = verify_laws.fill_time(verify_laws.law_of(spec), need, 64)
        assert reference.Law(spec).fill(need, 64) == pytest.approx(mine, rel=1e-9)


def test_fill_two_ways_on_empirical_samples():
    """The verifier inverts the piecewise-linear integral exactly; the reference finds the root with brentq."""
    rng = np.random.default_rng(7)
    data = base()
    for size, members in ((2, 1), (9, 4), (200, 8)):
        data["environment"]["occupancy"]["samples"] = [float(x) for x in np.round(rng.lognormal(4, 1, size), 1)]
        spec = validate(data, "hand.yaml").environment.occupancy
        for need in (1.0, 50.0, 5000.0):
            mine = verify_laws.fill_time(verify_laws.law_of(spec), need, members)
            assert reference.Law(spec).fill(need, members) == pytest.approx(mine, rel=1e-9)


def test_plan_with_start_up_counted():
    """base() at L = 20 s: x = 3, m = 3 (U = 50/3 s), N = 3, 12 $/h. §8: T = (20 + 10) + 143·20 + 50/3
    = 2,906.67 s, startup_s 30 s; the §2 makespan 2,880 s is wrong once the start-up is counted."""
    plain = validate(base(), "hand.yaml")
    plan = Planner(plain).solve("total_cost", cadence=20.0).plan
    assert (plan.inference[0].replicas, plan.training_groups, plan.local_nodes[0].count) == (3, 3, 3)
    inst = instance(base(), count_startup=True)
    span = 30 + 143 * 20 + 50 / 3
    counted = recosted(inst, plan, span=span)
    assert failing(inst, counted) == set()
    assert failing(inst, counted.model_copy(update={"startup_s": 30.0})) == set()
    assert failing(inst, counted.model_copy(update={"startup_s": 20.0})) == {"startup_s"}
    assert failing(inst, recosted(inst, plan)) == {"makespan_s"}
    assert failing(plain, counted) == {"makespan_s"}
    check = verify_plan(inst, counted)
    assert check.metrics.time_margin == pytest.approx((3600 - span) / 3600, rel=1e-12)


def test_start_up_breaks_the_deadline_at_the_deadline_pace():
    """L = 25 s (the deadline pace) with m = 2: T = 35 + 143·25 + 25 = 3,635 s > 3,600 s."""
    plain = validate(base(), "hand.yaml")
    plan = solve_instance(plain).plan
    assert (plan.cadence_s, plan.training_groups) == (25.0, 2)
    inst = instance(base(), count_startup=True)
    assert failing(inst, recosted(inst, plan, span=35 + 143 * 25 + 25)) == {"deadline"}


def test_reference_counts_the_start_up():
    """Hand-solved (module docstring): L = 25 misses the deadline whatever m; L = 20, m = 3: 12 $/h ×
    2,906.67 s = $9.6889; L = 15, m = 4: 16 $/h × 2,182.5 s = $9.70. Makespan: L = 15 with the most
    groups the pool leaves (16 - 4 replicas = 12, U = 50/12 s): T = 25 + 2,145 + 4.17 = 2,174.17 s."""
    points = reference.feasible_points(instance(base(), count_startup=True))
    assert {p.cadence for p in points} == {15.0, 20.0}
    total = reference.best(points, "total_cost")
    assert (total.cadence, total.hourly) == (20.0, pytest.approx(12.0))
    assert total.total == pytest.approx(12 * (30 + 2860 + 50 / 3) / 3600, rel=1e-9)
    fastest = reference.best(points, "makespan")
    assert fastest.makespan == pytest.approx(25 + 2145 + 50 / 12, rel=1e-9)
    assert fastest.hourly == pytest.approx(4 + 12 + 8)
    assert reference.best(points, "hourly_cost").hourly == pytest.approx(12.0)


# --- §4 reserved billing ------------------------------------------------------------------------


def reserved() -> dict:
    data = base()
    data["gpu_pools"][0]["billing"] = "reserved"
    return data


def test_reserved_pool_bills_every_gpu():
    """base()'s optimum (L = 25, 2 replicas + 2 groups on a 16-GPU pool at 1 $/h, 2 nodes at 2 $/h):
    billed as used, GPUs 4 $/h; reserved, 16 $/h whatever the plan uses, hourly 20 $/h over 1 h."""
    plan = solve_instance(validate(base(), "hand.yaml")).plan
    inst = validate(reserved(), "hand.yaml")
    billed = recosted(inst, plan)
    assert (billed.cost_terms.gpu, billed.hourly_cost, billed.total_cost) == (16.0, 20.0, 20.0)
    assert failing(inst, billed) == set()
    assert failing(inst, plan) == {"cost_terms.gpu", "hourly_cost", "total_cost"}
    fewer = recosted(inst, plan, inference=[plan.inference[0].model_copy(update={"replicas": 1})])
    assert fewer.cost_terms.gpu == 16.0  # one replica fewer bills the same (and breaks throughput)
    assert failing(inst, fewer) == {"throughput"}


def test_reserved_pool_counts_against_the_hourly_budget():
    data = reserved()
    data["limits"] = {"max_hourly_cost": 10.0}
    inst = validate(data, "hand.yaml")
    plan = recosted(inst, solve_instance(validate(base(), "hand.yaml")).plan)
    assert failing(inst, plan) == {"max_hourly_cost"}


def test_reference_bills_reserved_pools():
    """Reserved GPUs cost 16 $/h at every cadence, so the nodes decide: L = 15 (4 nodes) 24 $/h × 0.6 h
    = $14.40 beats L = 20 (22 × 0.8 = $17.60) and L = 25 (20 × 1 = $20); hourly_cost still picks L = 25."""
    points = reference.feasible_points(validate(reserved(), "hand.yaml"))
    total = reference.best(points, "total_cost")
    assert (total.cadence, total.total) == (15.0, pytest.approx(14.4, rel=1e-12))
    hourly = reference.best(points, "hourly_cost")
    assert (hourly.cadence, hourly.hourly) == (25.0, pytest.approx(20.0, rel=1e-12))
    assert math.isclose(reference.best(points, "makespan").makespan, 144 * 15)


def test_counts_the_plan_lists_twice_or_unknown():
    inst = validate(base(), "hand.yaml")
    plan = solve_instance(inst).plan
    twice = plan.model_copy(update={"local_nodes": [*plan.local_nodes, Count(type="std", count=0)]})
    assert "local_nodes" in failing(inst, twice)
    unknown = plan.model_copy(update={"cloud_vms": [Count(type="burst", count=1)]})
    assert failing(inst, unknown) == {"cloud_vms"}
