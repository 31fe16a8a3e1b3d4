"""calibrate from a verl step log alone: the lifetime law written into the instance comes
from the agent loop's per-step min/mean/max (tests/calibrate_logs.py: StepTruth, lognormal median 900 s,
p99 11,630 s), with a comment naming the keys and the interval, a note saying it is not per-trajectory, and
a lifetimes factor as wide as the wider of its intervals; a trajectory log, when given, is the law."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.calibrate_logs import Pool, StepTruth, TwoPools, step_records, two_pool_columns, write_records, write_table
from trainground.calibrate.figures import Z_LEVEL
from trainground.cli import main
from trainground.models.load import load_instance

ROOT = Path(__file__).resolve().parent.parent
TWO_POOLS = ROOT / "instances/logs/two-pools.yaml"
TRUTH = StepTruth()
KEYS = "timing_s/agent_loop/generate_sequences/{min,mean,max}"
POOLS = (Pool("h100", 90.0, 128), Pool("a100", 40.0, 128))
RATE = sum(p.tokens_per_gpu_s * p.gpus for p in POOLS) / TwoPools().tokens_mean  # attempts per second
SAME_RUN = TwoPools(pools=POOLS, log_end=TRUTH.responses * TRUTH.steps / RATE)  # the step log's trajectories
INTERVAL = re.compile(r"90 % interval ([0-9.]+)-([0-9.]+)")


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("agentloop")
    write_table(folder / "t.csv", two_pool_columns(SAME_RUN, 1))
    write_records(folder / "verl.jsonl", step_records(TRUTH, "verl", seed=2), "verl")
    write_records(folder / "slime.jsonl", step_records(TRUTH, "slime", seed=2), "slime")
    return folder


def calibrated(folder: Path, name: str, *args: str) -> tuple[dict, Path]:
    out_file = folder / f"{name}.yaml"
    got = CliRunner().invoke(
        main,
        ["calibrate", *args, "--columns", "training_gpus=trainer/gpus", "--into", str(TWO_POOLS), "-o", str(out_file)]
        + ["--json"],
    )
    assert got.exit_code == 0, got.output
    return json.loads(got.output), out_file


def field_line(text: str, key: str) -> str:
    (line,) = [s for s in text.splitlines() if s.strip().startswith(f"{key}:") and "calibrated" in s]
    return line


def lifetimes_sigma(path: Path) -> float:
    factors = yaml.safe_load(path.read_text())["uncertainty"]["factors"]
    (factor,) = [f for f in factors if f["name"] == "lifetimes"]
    assert factor["paths"] == ["environment.occupancy.median", "environment.occupancy.p99"]
    return factor["sigma"]


def test_a_verl_step_log_alone_writes_the_agent_loop_lifetimes(logs):
    # the log shows separate pools taking turns (pipelined k=0), which no command plans yet: --regime async writes
    # the seed's regime, so that the instance solves
    got, out_file = calibrated(logs, "alone", "--steps", str(logs / "verl.jsonl"), "--regime", "async")
    inst = load_instance(out_file)
    occ = inst.environment.occupancy
    assert occ.distribution == "lognormal"
    text = out_file.read_text()
    for key, written, true in (("median", occ.median, TRUTH.life_median), ("p99", occ.p99, TRUTH.life_p99)):
        line = field_line(text, key)
        assert KEYS in line and "not per-trajectory times" in line and "verl.jsonl" in line, line
        low, high = map(float, INTERVAL.search(line).groups())
        assert low <= true <= high, (key, line)
        assert low < written < high
        assert got["occupancy"][key]["value"] == pytest.approx(written, rel=1e-5)
    assert got["occupancy"]["from"] == "agent_loop" and got["trajectories"] is None
    notes = " ".join(got["notes"])
    assert "no trajectory log: the lifetime law" in notes and "not per-trajectory times" in notes
    assert "with a wider interval" in notes
    assert "environment.occupancy from the agent loop's per-step min/mean/max" in notes
    assert got["update_time"]["law"] == "amdahl"  # what else the step log holds is still fitted
    solved = CliRunner().invoke(main, ["solve", str(out_file), "--basis", "steady_state", "--json"])
    assert solved.exit_code == 0, solved.output
    assert json.loads(solved.output)["plan"]["inference_gpus"] > 0


def test_the_lifetimes_factor_is_as_wide_as_the_wider_agent_loop_interval(logs):
    _, alone = calibrated(logs, "wide", "--steps", str(logs / "verl.jsonl"))
    _, both = calibrated(logs, "narrow", "--trajectories", str(logs / "t.csv"), "--steps", str(logs / "verl.jsonl"))
    text = alone.read_text()
    widths = []
    for key in ("median", "p99"):
        low, high = map(float, INTERVAL.search(field_line(text, key)).groups())
        widths.append(math.log(high / low) / (2 * Z_LEVEL))
    assert lifetimes_sigma(alone) == pytest.approx(max(widths), rel=1e-3)
    assert lifetimes_sigma(alone) > 1.5 * lifetimes_sigma(both) > 0  # as many trajectories, logged per step


def test_a_trajectory_log_given_is_the_lifetime_law(logs):
    got, out_file = calibrated(logs, "both", "--trajectories", str(logs / "t.csv"), "--steps", str(logs / "verl.jsonl"))
    assert got["occupancy"]["from"] == "trajectories"
    inst = load_instance(out_file)
    assert inst.environment.occupancy.median == pytest.approx(got["occupancy"]["median"]["value"], rel=1e-5)
    assert inst.environment.occupancy.median != pytest.approx(got["step_log"]["agent_loop_median_s"]["value"])
    text = out_file.read_text()
    assert "censored lognormal MLE" in field_line(text, "median") and KEYS not in text
    assert any("the instance's law is the trajectory log's (per-trajectory times)" in n for n in got["notes"])


def test_a_trainground_step_log_alone_gives_the_update_law_and_keeps_the_rest(logs, tmp_path):
    """Updates at 64 and 128 GPUs, three each: the update law from the per-count medians (300 s, 160 s); the
    lifetimes and the throughput are not in the log, so --into's are kept, which a note says."""
    rows = "0,300,64\n1,301,64\n2,299,64\n3,160,128\n4,158,128\n5,161,128\n"
    (logs / "plain.csv").write_text("iteration,update_s,training_gpus\n" + rows)
    written = tmp_path / "plain.yaml"
    args = ["calibrate", "--steps", str(logs / "plain.csv"), "--into", str(TWO_POOLS), "-o", str(written), "--json"]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    got = json.loads(out.output)
    assert got["update_time"]["points"] == [{"gpus": 64.0, "seconds": 300.0}, {"gpus": 128.0, "seconds": 160.0}]
    assert any(
        n.startswith("lifetimes, tokens/s and tokens per attempt: not in a trainground step log") for n in got["notes"]
    )
    doc, into = yaml.safe_load(written.read_text()), yaml.safe_load(TWO_POOLS.read_text())
    assert doc["training"]["update_time"]["reference_gpus"] == 64.0
    assert doc["environment"]["occupancy"] == into["environment"]["occupancy"]
    assert doc["inference"]["shapes"] == into["inference"]["shapes"]  # tokens/s per GPU as --into has them


def test_a_framework_step_log_without_lifetimes_alone_keeps_the_instances_law(logs, tmp_path):
    """Issue 37: a slime log has no per-trajectory times; it is calibrated for what it holds and the lifetime
    law of --into is kept, which a note says (no fake trajectory log needed)."""
    out_file = tmp_path / "slime.yaml"
    got = CliRunner().invoke(
        main,
        ["calibrate", "--steps", str(logs / "slime.jsonl"), "--training-gpus", "64", "--into", str(TWO_POOLS)]
        + ["-o", str(out_file), "--json"],
    )
    assert got.exit_code == 0, got.output
    notes = json.loads(got.output)["notes"]
    assert any(n.startswith("lifetimes: not in this log (no per-trajectory times") for n in notes), notes
    assert any(n.startswith("environment.occupancy kept from --into") for n in notes), notes
    assert (
        yaml.safe_load(out_file.read_text())["environment"]["occupancy"]
        == yaml.safe_load(TWO_POOLS.read_text())["environment"]["occupancy"]
    )


def test_no_log_at_all_is_a_usage_error(logs):
    out = CliRunner().invoke(main, ["calibrate"])
    assert out.exit_code == 2 and "give the trajectory log" in out.output
    out = CliRunner().invoke(main, ["calibrate", "--steps", str(logs / "verl.jsonl"), "--timeout", "600"])
    assert out.exit_code == 2 and "--timeout censors a trajectory log's lifetimes" in out.output


def test_a_step_log_alone_draws_the_update_and_split_plots_and_writes_no_plan(logs, tmp_path):
    out_file = tmp_path / "c.yaml"
    got = CliRunner().invoke(
        main,
        ["calibrate", "--steps", str(logs / "verl.jsonl"), "--training-gpus", "256", "--into", str(TWO_POOLS)]
        + ["-o", str(out_file), "--plan", str(tmp_path / "p.json"), "--out", str(tmp_path / "out")],
    )
    assert got.exit_code == 0, got.output
    assert sorted(p.name for p in (tmp_path / "out").glob("*.png")) == [
        "calibrate-step-split.png",
        "calibrate-update.png",
    ]
    assert "logged plan: not written" in got.output and not (tmp_path / "p.json").exists()
    assert "lifetimes: lognormal from the agent loop's per-step min/mean/max (no trajectory log)" in got.output
