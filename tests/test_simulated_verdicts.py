"""`compare --simulate R` and `frontier --simulate R`: each plan shown carries the verdict of its replay
(MODEL.md §10), the same figures `simulate_plan` gives for that plan; identical plans are replayed once;
the tables say on time or LATE."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainground.cli import main
from trainground.models.edits import load_edited
from trainground.models.result import Result
from trainground.render.simulate import short_verdict
from trainground.simulation.runner import simulate_plan
from trainground.simulation.verdicts import VERDICT_KEYS, verdicts
from trainground.solver.solve import solve_instance

CONSTANT = Path(__file__).parent / "data" / "simulate" / "constant.yaml"
# Every lifetime 250 s: the replay ends about 250 s + U after n·L, so with this deadline the slow
# end of the frontier is late in simulation while every plan meets the deadline in the model.
EDITS = ["schedule.cadence.min=20s", "schedule.cadence.max=40s", "schedule.deadline=1650s"]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def with_edits(*args):
    return [*args, *(x for edit in EDITS for x in ("--set", edit))]


def replayed(inst, result_json: dict, replications: int) -> dict:
    result = Result.model_validate(result_json)
    return simulate_plan(inst, result.plan, metrics=result.metrics, replications=replications, seed=0).simulated


@pytest.fixture(scope="module")
def inst():
    return load_edited(CONSTANT, EDITS)


def test_frontier_corners_carry_their_simulated_verdict(inst, tmp_path):
    run = invoke(*with_edits("frontier", CONSTANT, "--out", tmp_path, "--json", "--simulate"))
    assert run.exit_code == 0, run.output
    found = json.loads(run.output)
    verdicts_seen = []
    for front in found["frontiers"].values():
        for i, point in enumerate(front["points"]):
            if i not in front["corners"]:
                assert "simulation" not in point
                continue
            sim = point["simulation"]
            assert set(VERDICT_KEYS) <= set(sim) and sim["replications"] == 1
            expected = replayed(inst, point["result"], 1)
            assert sim["makespan_s"] == pytest.approx(expected["makespan_s"], rel=1e-12)
            assert sim["on_time"] == (sim["makespan_s"] <= 1650) and point["makespan_s"] <= 1650
            assert sim["makespan_s"] > point["makespan_s"] + 200  # 250 s lifetimes: the first batch comes late
            verdicts_seen.append(sim["on_time"])
    assert True in verdicts_seen and False in verdicts_seen  # the deadline splits the frontier
    assert json.loads((tmp_path / "frontier.json").read_text()) == found
    human = invoke(*with_edits("frontier", CONSTANT, "--out", tmp_path, "--simulate"))
    assert human.exit_code == 0, human.output
    assert "verdict" in human.output and "LATE by" in human.output and "early" in human.output


def test_frontier_without_simulate_has_no_verdict(tmp_path):
    run = invoke(*with_edits("frontier", CONSTANT, "--out", tmp_path))
    assert run.exit_code == 0, run.output
    assert "verdict" not in run.output
    points = [
        p for f in json.loads((tmp_path / "frontier.json").read_text())["frontiers"].values() for p in f["points"]
    ]
    assert points and not any("simulation" in p for p in points)


def test_compare_plan_columns_carry_their_simulated_verdict(inst):
    run = invoke(*with_edits("compare", CONSTANT, "--json", "--simulate"))
    assert run.exit_code == 0, run.output
    columns = json.loads(run.output)["columns"]
    for col in columns:
        if col["kind"] != "plan" or col["status"] != "optimal":
            assert "simulation" not in col
            continue
        sim = col["simulation"]
        assert sim["replications"] == 1
        assert sim["makespan_s"] == pytest.approx(replayed(inst, col["result"], 1)["makespan_s"], rel=1e-12)
        assert sim["on_time"] == (sim["lateness_s"] <= 0)
    assert sum("simulation" in c for c in columns) >= 2
    human = invoke(*with_edits("compare", CONSTANT, "--simulate"))
    assert human.exit_code == 0, human.output
    assert "simulated makespan" in human.output and "simulated verdict" in human.output
    assert "simulated" not in invoke(*with_edits("compare", CONSTANT)).output


def test_identical_plans_are_replayed_once_with_every_replication(inst):
    result = solve_instance(inst)
    told = []
    out = verdicts(inst, [result, None, result], 3, on_progress=lambda done, total: told.append((done, total)))
    assert told == [(1, 1)]
    assert out[1] is None and out[0] == out[2] and out[0] is not out[2]
    expected = replayed(inst, result.to_json(), 3)
    assert out[0]["replications"] == 3 and out[0]["on_time_share"] == expected["on_time_share"]
    assert out[0]["makespan_s"] == pytest.approx(expected["makespan_s"], rel=1e-12)


def test_short_verdict_says_early_late_and_the_share():
    assert short_verdict({"lateness_s": -780.0, "replications": 1}) == "on time, 13.0 min early"
    assert (
        short_verdict({"lateness_s": 4968.0, "replications": 5, "on_time_share": 0.4}) == "LATE by 1.38 h (2/5 on time)"
    )
    assert short_verdict({"lateness_s": None}) == "did not finish" and short_verdict(None) == ""
