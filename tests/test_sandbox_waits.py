"""Sandbox waits of a plan that holds (MODEL §11): the model's share of attempts that wait (Halfin–Whitt at the
plan's sandboxes) is the replay's, `simulate` shows it in its model column, and the allowance loop tests the
replays' waits as it tests their makespans: a printed plan's k-th smallest replay wait share is within
planning.sandbox_wait, so fresh replays stay within it."""

from __future__ import annotations

import io
import math

import pytest
from rich.console import Console

from tests.test_hold import fewest_on_time, small
from trainground.drivers.hold import HoldingPlanner, replay_seeds
from trainground.drivers.replays import run_replays
from trainground.models.edits import edited
from trainground.render.hold import render_hold
from trainground.render.simulate import partings
from trainground.simulation.report import model_wait_share
from trainground.simulation.runner import simulate_plan
from trainground.simulation.setup import setup_of
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import holding
from trainground.solver.solve import Planner

# A small run whose sandboxes are nodes of 4: the sandbox rows bind tightly, so a plan sized for exactly
# planning.sandbox_wait is at the limit, and its replays' waits spread beyond it.
TIGHT = {"environment.node_types[0].density.container": 4, "freshness.group_correlation": "comonotone"}


def loads(inst, attempts: float) -> tuple[calc.Occupancy, float, float]:
    """(occupancy, E, V) of the one backend at ``attempts`` per second (MODEL §11 item 2)."""
    occ = calc.occupancy_of(inst.environment.occupancy)
    g, corr = inst.workload.group_size, inst.freshness.group_correlation
    return occ, attempts * occ.mean, float(holding.inflight_variance(occ, attempts, 1.0, g, corr))


@pytest.mark.parametrize("target", [0.001, 0.01, 0.05, 0.3])
def test_the_wait_share_at_e_hold_is_the_share_it_was_sized_for(target):
    """wait_probability reads §11 item 2's rule the other way: at E + β·sqrt(V), β from sandbox_wait, the share is
    sandbox_wait; fewer sandboxes than the mean load make every attempt wait, unlimited ones none."""
    beta = holding.safety_factor(target)
    load, variance = 20_274.0, 107.4**2
    assert holding.wait_probability(load + beta * math.sqrt(variance), load, variance) == pytest.approx(target)
    assert holding.wait_probability(load, load, variance) == 1.0
    assert holding.wait_probability(math.inf, load, variance) == 0.0
    assert holding.wait_probability(load + 40 * math.sqrt(variance), load, variance) == 0.0  # no overflow


@pytest.mark.parametrize("correlation, beta", [("independent", 1.0), ("comonotone", 2.0)])
def test_replays_wait_as_often_as_the_model_says(correlation, beta):
    """Twenty replays of 400 iterations at E + β·sqrt(V) sandboxes (a capacity what-if) wait, on average, the
    model's Halfin–Whitt share within four standard errors of their mean (seeded: the figures are fixed)."""
    inst = small(**{**TIGHT, "freshness.group_correlation": correlation, "workload.iterations": 400})
    inst = edited(inst, {"schedule.deadline": "60h"})
    result = Planner(inst).solve()
    occ, load, variance = loads(inst, result.metrics.attempts_per_s)
    setup = setup_of(inst, result.plan, result.metrics, capacity={"container": load + beta * math.sqrt(variance)})
    shares = run_replays(setup, list(range(20))).wait_shares
    model = model_wait_share(setup, result.plan)
    assert model == pytest.approx(holding.wait_probability(setup.capacity[0], load, variance))
    error = shares.std(ddof=1) / math.sqrt(shares.size)
    assert 0.02 < model < 0.3 and abs(shares.mean() - model) <= 4 * error, (shares.mean(), model, error)


def test_simulate_shows_the_models_wait_share_beside_the_replays():
    """The model column holds §11's share at the plan's sandboxes, not 0; a steady-state plan, sized for the
    mean load, has no model figure; a replication above the limit is read against the model's share."""
    inst = small(**TIGHT)
    result = HoldingPlanner(inst).solve()
    report = simulate_plan(inst, result.plan, seed=3)
    setup = setup_of(inst, result.plan, result.metrics)
    occ, load, variance = loads(inst, result.metrics.attempts_per_s)
    expected = holding.wait_probability(setup.capacity[0], load, variance)
    assert report.predicted["sandbox_wait_share"] == pytest.approx(expected) and expected > 0
    assert report.predicted["sandbox_wait_share"] == pytest.approx(result.hold.sandbox_wait_model)
    assert report.sandbox_wait == inst.planning.sandbox_wait
    report.simulated["sandbox_wait_share"] = 0.02  # one replication above the limit: no verdict on the plan
    text = " ".join(" ".join(partings(report)).split())
    assert f"the model expects {expected:.2%} at these sandboxes" in text and "no verdict" in text
    steady = edited(inst, {"planning.basis": "steady_state"})
    plan = Planner(steady).solve().plan
    assert simulate_plan(steady, plan, seed=3).predicted["sandbox_wait_share"] is None


def test_the_printed_plan_passes_its_replays_sandbox_test_and_fresh_replays_stay_within_it():
    """A plan sized for exactly sandbox_wait waits 1.6 % in the 16th of its 16 replays here; the loop sizes the
    rows for a smaller share and returns a plan whose k-th replay is within the limit (the figure it reports is
    its replays'). In 20 fresh replays its mean share is within the limit, and no more of them exceed it than the
    exact binomial test at 1e-3 lets a plan within it with probability k/(R + 1) have."""
    inst = small(**TIGHT)
    result = HoldingPlanner(inst).solve()
    hold, limit = result.hold, inst.planning.sandbox_wait
    assert result.status == "optimal" and hold.allowance_converged
    assert hold.sandbox_wait_sized < limit  # sized down: the first plan's replays waited beyond the limit
    assert hold.sandbox_wait_bound <= limit
    setup = setup_of(inst, result.plan, result.metrics)
    replayed = run_replays(setup, replay_seeds(inst)).wait_shares
    assert sorted(replayed)[hold.order - 1] == hold.sandbox_wait_bound
    assert hold.sandbox_wait_model == pytest.approx(model_wait_share(setup, result.plan))
    fresh = run_replays(setup, list(range(1000, 1020))).wait_shares
    assert fresh.mean() <= limit, fresh
    within = int((fresh <= limit).sum())
    assert within >= fewest_on_time(20, hold.order / (hold.replays + 1)), fresh
    console = Console(file=io.StringIO(), width=300)
    render_hold(console, result, inst)
    printed = console.file.getvalue()  # type: ignore[attr-defined]
    assert printed.count("sandbox waits") == 1, printed  # the mean and the k-th smallest on one line
    both = f"{hold.sandbox_wait_share:.2%} of attempts on average, {hold.sandbox_wait_bound:.2%} in the {hold.order}th"
    assert both in printed, printed


def test_a_plan_whose_waits_cannot_be_sized_within_the_limit_is_not_said_to_hold():
    """With the nodes capped at the first plan's, no plan has the sandboxes its replays ask for: the loop returns
    that plan unconverged (time_limit) and says its replays wait beyond planning.sandbox_wait."""
    first = HoldingPlanner(small(**TIGHT)).solve()
    assert first.hold.sandbox_wait_sized < 0.01
    nodes = [c.count for c in first.plan.local_nodes][0]
    capped = small(**TIGHT, **{"environment.node_types[0].max_nodes": 24, "schedule.deadline": "5.7h"})
    result = HoldingPlanner(capped).solve()
    assert nodes > 24 and result.status == "time_limit" and not result.hold.allowance_converged
    assert result.hold.sandbox_wait_bound > 0.01
    assert "above planning.sandbox_wait 1.00%" in result.message
