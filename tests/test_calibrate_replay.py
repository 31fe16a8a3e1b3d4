"""calibrate --plan: the logged run's own configuration as a plan that `simulate --plan` accepts, and the
replay of it reproduces the logged iteration time within its interval. The bundled logs are a simulated
run of the seed baseline (batch 256) whose plan is known: the solve of that instance."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from trainground.cli import main

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "instances/logs"
RUN = LOGS / "seed-small-run.yaml"  # the logged run's workload: 8 iterations of batch 256


def calibrate(tmp_path, into: Path = RUN, *extra: str):
    return CliRunner().invoke(
        main,
        [
            "calibrate",
            "--trajectories",
            str(LOGS / "seed-small-trajectories.csv"),
            "--steps",
            str(LOGS / "seed-small-steps.csv"),
            "--into",
            str(into),
            "-o",
            str(tmp_path / "calibrated.yaml"),
            "--plan",
            str(tmp_path / "plan.json"),
            "--json",
            *extra,
        ],
    )


def test_the_logged_plan_is_the_run_that_wrote_the_logs_and_its_replay_keeps_the_logged_cadence(tmp_path):
    out = calibrate(tmp_path)
    assert out.exit_code == 0, out.output
    logged = json.loads(out.output)["cadence"]["achieved_s"]
    plan = json.loads((tmp_path / "plan.json").read_text())["plan"]
    truth = CliRunner().invoke(
        main, ["solve", str(ROOT / "instances/seed-week-75.yaml"), "--set", "workload.batch_trajectories=256", "--json"]
    )
    original = json.loads(truth.output)["plan"]  # the plan `simulate` replayed to write the bundled logs
    for key in ("cadence_s", "inference_gpus", "training_gpus", "versions_kept"):
        assert plan[key] == original[key], key
    replay = CliRunner().invoke(
        main,
        [
            "simulate",
            str(tmp_path / "calibrated.yaml"),
            "--plan",
            str(tmp_path / "plan.json"),
            "--replications",
            "4",
            "--json",
        ],
    )
    assert replay.exit_code == 0, replay.output
    simulated = json.loads(replay.output)["simulated"]["iteration_mean_s"]
    assert logged["interval"][0] <= simulated <= logged["interval"][1], (simulated, logged)
    assert abs(simulated / logged["value"] - 1) < 0.05


def test_a_configuration_that_does_not_fit_the_instance_is_said_and_not_written(tmp_path):
    short = tmp_path / "short.yaml"
    short.write_text(RUN.read_text().replace("deadline: 1d", "deadline: 1h"))
    out = calibrate(tmp_path, short)
    assert out.exit_code == 0, out.output
    notes = json.loads(out.output)["notes"]
    assert any(n.startswith("no logged plan written") and "deadline" in n for n in notes), notes
    assert not (tmp_path / "plan.json").exists()


def test_plan_needs_the_calibrated_instance(tmp_path):
    out = CliRunner().invoke(
        main,
        ["calibrate", "--trajectories", str(LOGS / "seed-small-trajectories.csv"), "--plan", str(tmp_path / "p.json")],
    )
    assert out.exit_code == 2 and "--plan needs -o" in out.output
