"""The §10 replay of an async drop run with regime fields set (MODEL.md §14): lifetimes cut at the rollout timeout,
a cut-short attempt no sample under ``truncated: filter``, K an age limit under in-flight updates; long replays
agree with the model's closed forms (effective intake p·F(τ)·(1 - drop), the in-flight mean R_raw·mean(W_τ), the
cadence, the exceedance of W_τ); hold solves pass replays of their own regime; a plan file replays only under the
regime it was solved under."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from trainground.cli import main
from trainground.drivers.hold import solve_planned
from trainground.models.edits import edited
from trainground.models.load import load_instance
from trainground.simulation.engine import replicate
from trainground.simulation.runner import checked_metrics, simulate_plan
from trainground.simulation.setup import setup_of
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import regimes as rg
from trainground.solver.solve import Planner

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"
TAU = 3600.0


def planned(regime: dict | None, **fields):
    """The seed week on steady_state with ``regime`` (async drop), its optimal plan and the plan's metrics."""
    inst = edited(load_instance(SEED), {"planning.basis": "steady_state", **fields})
    if regime is not None:
        inst = edited(inst, {"regime": {"mode": "async", **regime}})
    result = Planner(inst).solve("total_cost")
    assert result.status == "optimal", result.status
    return inst, result.plan, checked_metrics(inst, result.plan, "plan")


@pytest.fixture(scope="module")
def filtered():
    return planned({"in_flight_updates": True, "rollout_timeout": f"{TAU:g}s", "truncated": "filter"})


def test_every_lifetime_ends_by_the_timeout_and_a_filtered_cut_attempt_is_no_sample(filtered):
    inst, plan, metrics = filtered
    setup = setup_of(inst, plan, metrics, iterations=60)
    assert setup.timeout == TAU and setup.filter_cut and setup.versions_kept == plan.age_limit > plan.versions_kept == 1
    run = replicate(setup, [5, 0])
    life = run.end - run.start
    cut = life >= TAU * (1 - 1e-12)  # end - start is τ to rounding
    assert life.max() == pytest.approx(TAU, rel=1e-12)  # cut exactly at τ, never past it
    assert (
        not run.attempt_effective[cut].any() and run.attempt_effective[~cut].all()
    )  # intake 1: every attempt ending before τ is a sample
    occ = calc.occupancy_of(inst.environment.occupancy)
    survival = 1.0 - rg.timeout_cdf(occ, TAU)  # S(τ) = 13.3 % of the seed's lifetimes (MODEL §14's check)
    share = cut.mean()
    assert share == pytest.approx(survival, abs=4 * np.sqrt(survival * (1 - survival) / cut.size))


def test_a_long_replay_agrees_with_the_closed_forms_over_cut_lifetimes(filtered):
    inst, plan, metrics = filtered
    report = simulate_plan(inst, plan, metrics=metrics, replications=2, seed=3, iterations=300)
    sim, model = report.simulated, report.predicted
    assert sim["effective_intake"] == pytest.approx(model["effective_intake"], rel=0.003)  # p·F(τ): 0.867
    assert model["effective_intake"] == pytest.approx(
        rg.timeout_cdf(calc.occupancy_of(inst.environment.occupancy), TAU)
    )
    assert sim["inflight_mean"] == pytest.approx(model["inflight_mean"], rel=0.005)  # R_raw·mean(W_τ)
    assert sim["iteration_mean_s"] == pytest.approx(plan.cadence_s, rel=0.005)
    assert sim["exceedance"] == model["exceedance"] == 0.0  # (K+1)·L is past τ: no attempt overruns the age limit
    assert max(int(k) for k in sim["version_gap_histogram"]) <= plan.age_limit  # K bounds every consumed gap
    assert 0 < sim["startup_s"] - TAU < plan.cadence_s  # the first batch fills after τ, as the cut fill says
    # MODEL §14 reads the filter as p·F(τ) over the whole fill, but a group that completes before τ loses no member
    # to it: the replay's first batch comes 1-2 % sooner than the model's fill (the model is on the safe side)
    assert 0 < model["startup_s"] - sim["startup_s"] < 0.025 * model["startup_s"]


def test_kept_cut_attempts_are_samples_and_the_cut_exceedance_drops_what_it_says():
    """An age limit that cut lifetimes overrun (K = 5 at the plan's 691 s: 5·L < τ): the share of attempts past their
    age limit is MODEL §2's q(L, K) of W_τ, and with ``keep`` every attempt that is not dropped is a sample."""
    fields = {"freshness.max_versions_kept": 5, "schedule.deadline": "8d"}
    inst, plan, metrics = planned({"rollout_timeout": f"{TAU:g}s"}, **fields)
    assert plan.versions_kept == plan.age_limit == 5 and 5 * plan.cadence_s < TAU
    report = simulate_plan(inst, plan, metrics=metrics, replications=2, seed=4, iterations=300)
    sim, model = report.simulated, report.predicted
    assert model["exceedance"] > 0.02 and model["group_drop_rate"] > 0.15  # the cut law overruns and drops groups
    assert sim["exceedance"] == pytest.approx(model["exceedance"], rel=0.03)
    assert sim["effective_intake"] == pytest.approx(model["effective_intake"], rel=0.03)
    assert max(int(k) for k in sim["version_gap_histogram"]) <= 5


def test_the_seed_replay_has_no_timeout_and_keeps_its_k():
    inst, plan, metrics = planned(None)
    setup = setup_of(inst, plan, metrics, iterations=5)
    assert setup.timeout is None and not setup.filter_cut and setup.versions_kept == plan.versions_kept


@pytest.mark.parametrize(
    "regime, start",
    [
        ({"in_flight_updates": True}, "estimate"),  # uncut lifetimes: the seed's estimate at the age limit K
        ({"rollout_timeout": f"{TAU:g}s", "truncated": "filter"}, "zero"),  # the estimate reads uncut lifetimes
    ],
)
def test_a_hold_solve_of_an_async_drop_run_passes_replays_of_its_own_regime(regime, start):
    """A quarter of the seed week on the hold basis: the allowance comes from replays of the drop run itself (the
    timeout and the filter in them), and a fresh simulate of the printed plan on other seeds ends by the deadline."""
    fields = {"planning.basis": "hold", "workload.iterations": 250, "schedule.deadline": "42h"}
    inst = edited(load_instance(SEED), {**fields, "regime": {"mode": "async", **regime}})
    result = solve_planned(inst)
    assert result.status == "optimal" and result.hold is not None, result.message
    hold = result.hold
    assert hold.allowance_start == start and hold.on_time_share >= inst.planning.on_time
    assert (hold.predicted_makespan_s is not None) == (start == "estimate")
    assert result.plan.makespan_s + hold.allowance_s <= inst.schedule.deadline
    metrics = checked_metrics(inst, result.plan, "plan", hold.allowance_s)
    fresh = simulate_plan(inst, result.plan, metrics=metrics, replications=4, seed=1000)
    assert fresh.simulated["on_time_share"] == 1.0
    assert fresh.simulated["sandbox_wait_share"] <= 2 * inst.planning.sandbox_wait
    if "rollout_timeout" in regime:  # the fresh replays filter what the timeout cuts, as the plan's intake says
        assert fresh.simulated["effective_intake"] == pytest.approx(fresh.predicted["effective_intake"], rel=0.01)


def test_a_plan_file_replays_only_under_the_regime_it_was_solved_under(tmp_path):
    filtered = str(ROOT / "instances" / "regimes" / "seed-week-timeout-filter.yaml")
    steady = ["--basis", "steady_state", "--iterations", "5"]
    solved = CliRunner().invoke(main, ["solve", filtered, "--basis", "steady_state", "--json", "--no-levers"])
    assert solved.exit_code == 0, solved.output
    plan = json.loads(solved.stdout)
    cases = {
        "same": (plan["regime"], None),
        "seed": (plan["regime"], "the instance has no regime section"),  # replayed on the seed week
        "admission": (
            {"mode": "async", "staleness": "admission", "steps_ahead": 8, "in_flight_updates": True},
            "the plan was solved under regime async admission k=8, in-flight updates, and the instance's regime is "
            "async drop (with rollout_timeout, truncated)",
        ),
        "text": ("async", "regime: must be the object {mode, staleness, steps_ahead, in_flight_updates}"),
    }
    for name, (regime, message) in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(plan | {"regime": regime}))
        instance = str(SEED) if name == "seed" else filtered
        result = CliRunner().invoke(main, ["simulate", instance, "--plan", str(path), *steady])
        if message is None:
            assert result.exit_code == 0, result.output
        else:
            assert result.exit_code == 2 and message in result.stderr, (name, result.output)


def test_solve_simulate_replays_a_drop_run_and_refuses_a_capped_one():
    filtered = str(ROOT / "instances" / "regimes" / "seed-week-timeout-filter.yaml")
    args = ["solve", filtered, "--basis", "steady_state", "--no-levers", "--simulate", "1"]
    replayed = CliRunner().invoke(main, [*args, "--set", "workload.iterations=100", "--set", "schedule.deadline=1d"])
    assert replayed.exit_code == 0, replayed.output
    assert "simulated (1 replication(s))" in replayed.stdout
    capped = CliRunner().invoke(main, [*args, "--set", "regime.max_concurrent_attempts=30000"])
    assert capped.exit_code == 2
    assert "async drop (with rollout_timeout, truncated, max_concurrent_attempts) is planned by solve on" in (
        capped.stderr
    )


def test_the_bundled_in_flight_week_plans_as_the_seed_week():
    """With the seed's version_slowdown of 0, in-flight updates change what is resident, not the plan."""
    start = {"planning.basis": "steady_state", "schedule.count_startup": True}
    seed = Planner(edited(load_instance(SEED), start)).solve("total_cost")
    inflight = Planner(edited(load_instance(ROOT / "instances" / "regimes" / "seed-week-inflight.yaml"), start))
    found = inflight.solve("total_cost")
    a, b = seed.plan, found.plan
    assert (a.cadence_s, a.versions_kept, a.training_groups, a.inference) == (
        b.cadence_s,
        b.age_limit,
        b.training_groups,
        b.inference,
    )
    assert b.versions_kept == 1 and b.total_cost == pytest.approx(a.total_cost, rel=1e-12)
