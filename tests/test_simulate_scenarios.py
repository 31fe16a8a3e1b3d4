"""simulate --scenarios: replication r replays the plan in the scenario drawn with seed + r (docs/model.md §9)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.test_hold import small
from trainground.cli import main
from trainground.models.edits import edited
from trainground.models.load import read_document, validate
from trainground.simulation.runner import simulate_plan
from trainground.simulation.scenarios import scenario_setup, scenario_setups
from trainground.simulation.setup import setup_of
from trainground.solver.solve import Planner
from trainground.solver.uncertainty import scenarios as sc
from trainground.solver.verify.plan import verify_plan

UNCERTAIN = Path(__file__).resolve().parent.parent / "instances" / "seed-week-75-uncertain.yaml"


def uncertain(factor: dict):
    inst = edited(small(), {"planning.basis": "steady_state"})
    return edited(inst, {"uncertainty": {"samples": 10, "seed": 0, "factors": [factor]}})


def planned(inst):
    from trainground.drivers.hold import solve_planned

    result = solve_planned(inst)
    return result.plan, verify_plan(inst, result.plan).metrics


def test_degenerate_scenarios_replay_the_nominal_run():
    inst = uncertain(
        {"name": "t", "paths": ["inference.shapes[*].tokens_per_gpu_s"], "dist": "normal", "mean": 1.0, "sd": 0.0}
    )
    plan, metrics = planned(inst)
    nominal = simulate_plan(inst, plan, metrics=metrics, replications=3, seed=4)
    varied = simulate_plan(
        inst, plan, metrics=metrics, replications=3, seed=4, setups=scenario_setups(inst, plan, metrics, 3, 4)
    )
    # the scenario's attempt rate comes from its own evaluation (a bisection on the cadence), equal to the
    # plan's up to rounding: the same draws, launches a few 1e-16 apart
    assert [r["makespan_s"] for r in varied.runs] == pytest.approx([r["makespan_s"] for r in nominal.runs], rel=1e-12)


def test_a_slower_fleet_in_a_scenario_launches_at_what_its_supply_sustains():
    inst = uncertain(
        {"name": "t", "paths": ["inference.shapes[*].tokens_per_gpu_s"], "dist": "normal", "mean": 0.8, "sd": 0.0}
    )
    plan, metrics = planned(inst)
    setup = scenario_setup(inst, plan, metrics, seed=0)
    nominal = setup_of(inst, plan, metrics)
    assert setup.attempts_per_s == pytest.approx(
        min(metrics.attempts_per_s, 0.8 * metrics.token_supply_per_s / inst.workload.tokens_per_attempt), rel=1e-9
    )
    slow = simulate_plan(inst, plan, metrics=metrics, replications=2, seed=0, setups=[setup, setup])
    fast = simulate_plan(inst, plan, metrics=metrics, replications=2, seed=0)
    assert setup.attempts_per_s < nominal.attempts_per_s
    assert min(r["makespan_s"] for r in slow.runs) > max(r["makespan_s"] for r in fast.runs)


def test_a_scenario_replay_runs_at_the_plans_realised_cadence():
    """Shorter lifetimes drop fewer groups and faster updates leave the trainer slack: paced at its cadence
    (MODEL §9's realised cadence L_s = L), the plan needs fewer attempts, so the replay launches at R_raw(L_s)
    and its batches come every L_s on average. Launched at the planned rate they would come 5 % faster, and a
    confidence solve's allowance (makespan - T_s, MODEL §11) would count the input's variance as the run's."""
    factor = lambda name, paths, mean: {"name": name, "paths": paths, "dist": "normal", "mean": mean, "sd": 0.0}
    inst = edited(
        validate(read_document(UNCERTAIN), str(UNCERTAIN)),
        {
            "workload.iterations": 200,
            "schedule.deadline": "1.4d",
            "uncertainty.factors": [
                factor("lifetimes", ["environment.occupancy.median", "environment.occupancy.p99"], 0.88),
                factor("updates", ["training.update_time.reference_time"], 0.8),
            ],
        },
    )
    result = Planner(inst).solve()
    plan, metrics = result.plan, verify_plan(inst, result.plan).metrics
    out = sc.evaluate(inst, plan, sc.draw(inst, 1, 0))
    setup = scenario_setup(inst, plan, metrics, seed=0)
    assert out.cadence[0] == pytest.approx(plan.cadence_s, rel=1e-9)
    assert setup.attempts_per_s == pytest.approx(float(out.attempts[0]), rel=1e-12)
    assert setup.attempts_per_s < 0.95 * metrics.attempts_per_s
    at_plan_rate = dataclasses.replace(setup, attempts_per_s=metrics.attempts_per_s)
    paced = simulate_plan(inst, plan, metrics=metrics, replications=2, seed=0, setups=[setup] * 2)
    rushed = simulate_plan(inst, plan, metrics=metrics, replications=2, seed=0, setups=[at_plan_rate] * 2)
    assert paced.simulated["iteration_mean_s"] == pytest.approx(plan.cadence_s, rel=0.01)
    assert rushed.simulated["iteration_mean_s"] < 0.97 * plan.cadence_s


def test_replication_r_draws_the_scenario_of_seed_plus_r():
    inst = uncertain(
        {"name": "u", "paths": ["training.update_time.reference_time"], "dist": "uniform", "low": 0.5, "high": 1.0}
    )
    plan, metrics = planned(inst)
    setups = scenario_setups(inst, plan, metrics, 3, 7)
    for r, setup in enumerate(setups):
        scen = sc.draw(inst, 1, 7 + r)
        assert setup.update_s == pytest.approx(float(sc.update_time(inst, scen, plan.training_gpus)[0]), rel=1e-12)
    assert len({s.update_s for s in setups}) == 3


def test_the_command_needs_an_uncertainty_section(tmp_path):
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(small().model_dump(mode="json")))
    result = CliRunner().invoke(main, ["simulate", str(path), "--scenarios"])
    assert result.exit_code == 2 and "uncertainty" in result.output


def test_the_command_replays_scenarios(tmp_path):
    inst = uncertain(
        {"name": "u", "paths": ["training.update_time.reference_time"], "dist": "uniform", "low": 0.5, "high": 1.0}
    )
    path = tmp_path / "u.json"
    path.write_text(json.dumps(inst.model_dump(mode="json")))
    result = CliRunner().invoke(main, ["simulate", str(path), "--scenarios", "--replications", "3", "--json"])
    assert result.exit_code == 0, result.output
    runs = json.loads(result.output)["runs"]
    assert len(runs) == 3 and all(r["finished"] for r in runs)


def test_scenario_replays_inject_failures_at_the_scenarios_figures():
    """With MODEL §13's terms, replication r injects failures at scenario r's figures (here the GPU MTBF
    halved in every scenario); launches run at the plan's attempt rate in the scenario (its realised cadence
    counts a_s and weight sync), capped by the supply before §13, which the injection takes."""
    inst = edited(
        small(),
        {
            "planning.basis": "steady_state",
            "reliability": {
                "gpu_mtbf": "2000h",
                "restart_time": "10m",
                "checkpoint_time": "30s",
                "weight_sync_time": "5s",
            },
        },
    )
    inst = edited(
        inst,
        {
            "uncertainty": {
                "samples": 10,
                "seed": 0,
                "factors": [{"name": "m", "paths": ["reliability.gpu_mtbf"], "dist": "normal", "mean": 0.5, "sd": 0.0}],
            }
        },
    )
    plan, metrics = planned(inst)
    nominal = setup_of(inst, plan, metrics)
    setup = scenario_setup(inst, plan, metrics, seed=3)
    assert setup.failures is not None and nominal.failures is not None
    assert setup.failures.training_mtbf == pytest.approx(nominal.failures.training_mtbf / 2, rel=1e-12)
    realised = sc.evaluate(inst, plan, sc.draw(inst, 1, 3))
    assert realised.cadence[0] > plan.cadence_s  # the replicas' availability falls, so the plan slows down
    assert setup.attempts_per_s == pytest.approx(float(realised.attempts[0]), rel=1e-12)
    assert setup.attempts_per_s < nominal.attempts_per_s
    runs = simulate_plan(inst, plan, metrics=metrics, replications=2, seed=3, setups=[setup, setup]).runs
    assert all("failures" in r for r in runs)
