"""The Python API (docs/api.md), used as a notebook would: its calls go through ``trainground`` alone. Its answers
are the commands' (the same drivers): each is compared with the command's JSON for the same instance, the command
run in this process by click's runner (nothing here needs a process of its own; the package keeps no cache between
calls, so the command answers afresh)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import trainground

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"
UNCERTAIN = ROOT / "instances" / "seed-week-75-uncertain.yaml"
STEADY = "steady_state"


def cli_json(*args: str) -> dict:
    from trainground.cli import main

    done = CliRunner().invoke(main, [*args, "--json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def without_clocks(payload: dict) -> dict:
    out = {k: v for k, v in payload.items() if k != "timings"}
    if "levers" in out:
        out["levers"] = {k: v for k, v in out["levers"].items() if k != "seconds"}
    return out


def is_flat(row: dict) -> bool:
    return all(isinstance(k, str) and (v is None or isinstance(v, (str, int, float, bool))) for k, v in row.items())


@pytest.fixture(scope="module")
def solved():
    return trainground.solve(SEED, basis=STEADY)


def test_load_reads_a_path_a_dict_and_edits_alike():
    from_file = trainground.load(SEED, ["schedule.deadline=8d"], basis=STEADY)
    document = yaml.safe_load(SEED.read_text(encoding="utf-8"))
    from_dict = trainground.load(document, ["schedule.deadline=8d"], basis=STEADY)
    assert from_file.schedule.deadline == from_dict.schedule.deadline == 8 * 86400
    assert from_file.model_dump(exclude={"name"}) == from_dict.model_dump(exclude={"name"})
    again = trainground.load(from_file, ["schedule.deadline=9d"])
    assert again.schedule.deadline == 9 * 86400 and from_file.schedule.deadline == 8 * 86400
    assert trainground.load(from_file) is from_file


def test_solve_is_solve_json(solved):
    assert solved.status == "optimal" and solved.plan is not None
    assert without_clocks(solved.to_dict()) == without_clocks(cli_json("solve", str(SEED), "--basis", STEADY))
    assert solved.result.model_dump()["plan"]["total_cost"] == solved.plan.total_cost


def test_a_solve_row_is_flat_and_reads_the_plan(solved):
    (row,) = solved.rows()
    assert is_flat(row)
    assert row["total_cost"] == solved.plan.total_cost and row["makespan_s"] == solved.plan.makespan_s
    assert row["gpus[main]"] == solved.plan.pools[0].gpus_used


def test_a_dict_solves_as_its_file(solved):
    document = yaml.safe_load(SEED.read_text(encoding="utf-8"))
    again = trainground.solve(document, basis=STEADY, levers=False)
    assert again.plan == solved.plan and "levers" not in again.to_dict()


def test_sweep_rows_are_the_sweep_commands(tmp_path):
    found = trainground.sweep(SEED, {"schedule.deadline": ["6d", "7d", "8d"]}, basis=STEADY)
    rows = found.rows()
    assert len(rows) == 3 and all(is_flat(r) for r in rows)
    cli = cli_json("sweep", str(SEED), "--set", "schedule.deadline=6d,7d,8d", "--basis", STEADY, "--out", str(tmp_path))
    assert [r["status"] for r in rows] == [p["status"] for p in cli["points"]]
    assert [r["total_cost"] for r in rows] == [p.get("total_cost") for p in cli["points"]]
    costs = [r["total_cost"] for r in rows if r["total_cost"] is not None]
    assert costs == sorted(costs, reverse=True), "a looser deadline never costs more"
    document = yaml.safe_load(SEED.read_text(encoding="utf-8"))
    from_dict = trainground.sweep(document, {"schedule.deadline": ["6d", "7d", "8d"]}, basis=STEADY)
    assert [r["total_cost"] for r in from_dict.rows()] == [r["total_cost"] for r in rows]


def test_frontier_rows_are_the_frontier_commands(tmp_path):
    found = trainground.frontier(SEED, basis=STEADY)
    rows = found.rows()
    assert rows and all(is_flat(r) for r in rows)
    cli = cli_json("frontier", str(SEED), "--basis", STEADY, "--out", str(tmp_path))
    points = [(name, p["makespan_s"], p["cost"]) for name, f in cli["frontiers"].items() for p in f["points"]]
    assert [(r["frontier"], r["makespan_s"], r["cost"]) for r in rows] == points
    assert found.to_dict()["frontiers"].keys() == cli["frontiers"].keys()


def test_simulate_replays_the_solved_plan_as_simulate_does(solved):
    sim = trainground.simulate(SEED, solved, basis=STEADY, iterations=40)
    cli = cli_json("simulate", str(SEED), "--basis", STEADY, "--iterations", "40")
    assert sim.to_dict()["simulated"] == cli["simulated"] and sim.to_dict()["plan"] == cli["plan"]
    rows = sim.rows()
    assert all(is_flat(r) for r in rows)
    assert {r["figure"]: r["simulated"] for r in rows}["makespan_s"] == cli["simulated"]["makespan_s"]


def test_risk_is_risk_json():
    found = trainground.risk(UNCERTAIN, samples=2000, basis=STEADY)
    cli = cli_json("risk", str(UNCERTAIN), "--samples", "2000", "--basis", STEADY)
    assert found.to_dict() == cli
    assert [r["name"] for r in found.rows()] == [f["name"] for f in cli["factors"]]
    assert all(is_flat(r) for r in found.rows())


def test_bad_input_raises_the_commands_message():
    document = yaml.safe_load(SEED.read_text(encoding="utf-8"))
    document["schedule"]["deadline"] = -1
    with pytest.raises(trainground.InstanceError) as caught:
        trainground.solve(document)
    assert caught.value.file == "<dict>" and any(p.path == "schedule.deadline" for p in caught.value.problems)
    with pytest.raises(trainground.InstanceError) as caught:
        trainground.load(SEED, ["schedule.deadlin=7d"])
    assert "--set schedule.deadlin=7d" in str(caught.value)
    with pytest.raises(trainground.InstanceError):
        trainground.risk(SEED, basis=STEADY)  # no uncertainty section


def test_a_plan_from_a_file_is_checked_against_the_instance(solved, tmp_path):
    saved = tmp_path / "plan.json"
    saved.write_text(json.dumps(solved.to_dict()), encoding="utf-8")
    assert trainground.risk(UNCERTAIN, saved, samples=500, basis=STEADY).risk.plan == solved.plan
    with pytest.raises(trainground.InstanceError):
        trainground.simulate(SEED, saved, edits=["gpu_pools[0].gpus=100"], basis=STEADY, iterations=5)


def test_simulate_is_the_function_and_the_package():
    """trainground.simulate names the API function and the subpackage simulate/: both readings hold."""
    import trainground.simulation.runner

    assert callable(trainground.simulate) and callable(trainground.simulation.runner.simulate_plan)
    assert "replications" in inspect.signature(trainground.simulate).parameters
