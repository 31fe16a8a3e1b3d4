"""A run without tool sandboxes (plain reasoning RL, MODEL §14): `environment.backends: []` and no node or VM
types is valid input; the sandbox rows vanish, so the plan is the GPUs alone, and a replay's attempts start
as they arrive."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from trainground.cli import main
from trainground.models.load import InstanceError, validate
from trainground.simulation.runner import simulate_plan
from trainground.solver.explain import explain
from trainground.solver.solve import solve_instance
from trainground.solver.verify.plan import verify_plan

SEED = Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml"


def seed_doc() -> dict:
    doc = yaml.safe_load(SEED.read_text())
    doc["planning"] = {"basis": "steady_state"}
    return doc


def no_sandboxes() -> dict:
    doc = seed_doc()
    occupancy = doc["environment"]["occupancy"]
    doc["environment"] = {"occupancy": occupancy, "backends": [], "node_types": []}
    return doc


def test_a_run_without_sandboxes_is_valid_and_needs_no_nodes():
    inst = validate(no_sandboxes(), "reasoning.yaml")
    assert inst.environment.backends == [] and inst.environment.node_types == []
    assert explain(inst).values()["nodes_needed"] == {}


def test_its_plan_is_the_gpus_alone_and_never_dearer():
    bare, seed = validate(no_sandboxes(), "reasoning.yaml"), validate(seed_doc(), "seed.yaml")
    plain, boxed = solve_instance(bare), solve_instance(seed)
    assert plain.status == boxed.status == "optimal"
    assert verify_plan(bare, plain.plan).violations == []
    assert plain.plan.local_nodes == [] and plain.plan.cloud_vms == []
    gpus = plain.plan.inference_gpus + plain.plan.training_gpus
    assert plain.plan.hourly_cost == pytest.approx(2.0 * gpus)  # $2 per GPU-hour, nothing else
    assert plain.plan.total_cost <= boxed.plan.total_cost


def test_a_replay_without_sandboxes_never_waits_and_counts_its_attempts_in_flight():
    inst = validate(no_sandboxes(), "reasoning.yaml")
    result = solve_instance(inst)
    simulated = simulate_plan(inst, result.plan, metrics=result.metrics, iterations=30, seed=3).to_json()["simulated"]
    assert simulated["sandbox_wait_share"] == 0.0 and simulated["inflight_by_backend"] == {}
    assert 0 < simulated["inflight_mean"] <= simulated["inflight_p99"] <= simulated["inflight_max"]
    little = result.metrics.attempts_per_s * result.metrics.occupancy_mean_s  # Little's law
    assert simulated["inflight_mean"] == pytest.approx(little, rel=0.1)


def test_backends_that_are_given_must_still_share_everything():
    doc = seed_doc()
    doc["environment"]["backends"][0]["share"] = 0.5
    with pytest.raises(InstanceError, match="environment.backends: shares must sum to 1, got 0.5"):
        validate(doc, "x.yaml")


def test_the_cli_solves_and_simulates_it(tmp_path):
    path = tmp_path / "reasoning.yaml"
    path.write_text(yaml.safe_dump(no_sandboxes()))
    solved = CliRunner().invoke(main, ["solve", str(path)])
    assert solved.exit_code == 0 and "optimal" in solved.stdout, solved.output
    replayed = CliRunner().invoke(main, ["simulate", str(path), "--iterations", "20"])
    assert replayed.exit_code == 0, replayed.output
