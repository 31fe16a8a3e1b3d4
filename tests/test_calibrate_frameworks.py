"""calibrate --steps on the metrics verl, slime and AReaL write, drawn from known parameters with a restart,
missing steps, NaN rows, extra keys and checkpoint steps (tests/calibrate_logs.py: StepTruth): the update law
at the training GPU counts, weight sync, checkpoint time, the cadence without the saves, tokens/s per
inference GPU and staleness; GPU counts never taken from verl's job-wide throughput divisor silently."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tests.calibrate_logs import StepTruth, TwoPools, step_records, two_pool_columns, write_records, write_table
from trainground.cli import main

TRUTH = StepTruth()
SEED = Path(__file__).resolve().parent.parent / "instances" / "seed-week-75.yaml"
FILES = {"verl": "verl.jsonl", "slime": "slime.jsonl", "areal": "areal.csv"}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("frameworks")
    write_table(folder / "t.csv", two_pool_columns(TwoPools(log_end=3000.0), 1))
    for name, file in FILES.items():
        write_records(folder / file, step_records(TRUTH, name, seed=2), name)
    write_records(folder / "verl-export.csv", step_records(TRUTH, "verl", seed=2), "verl")
    return folder


def fitted(folder, *args: str) -> dict:
    out = CliRunner().invoke(main, ["calibrate", "--trajectories", str(folder / "t.csv"), *args, "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


def rel(a: float, b: float) -> float:
    return abs(a / b - 1)


@pytest.mark.parametrize("framework", sorted(FILES))
def test_each_framework_step_log_gives_the_known_parameters(logs, framework):
    got = fitted(
        logs,
        "--steps",
        str(logs / FILES[framework]),
        "--columns",
        "training_gpus=trainer/gpus",
        "--inference-gpus",
        str(TRUTH.inference_gpus),
    )
    label = {"verl": "verl's JSONL", "slime": "slime's JSONL", "areal": "AReaL's export"}[framework]
    assert any(f"read as {label}: " in n for n in got["notes"]), got["notes"]
    law = got["update_time"]
    assert law["law"] == "amdahl" and law["reference_gpus"] in TRUTH.training_gpus
    for point in law["points"]:
        assert rel(point["seconds"], float(TRUTH.update(np.array(point["gpus"])))) < 0.03, point
    ref = law["reference_time_s"]
    serial_seconds = law["serial_fraction"] * ref["value"]  # amdahl's a, whatever the reference count
    assert rel(serial_seconds, TRUTH.serial_fraction * TRUTH.reference_time) < 0.15
    true = float(TRUTH.update(np.array(law["reference_gpus"])))
    half = (ref["interval"][1] - ref["interval"][0]) / 2  # coverage itself: tests/test_calibrate.py's repetitions
    assert abs(ref["value"] - true) < 3 * half, (ref, true)
    steps = got["step_log"]
    assert rel(steps["weight_sync_s"]["value"], TRUTH.weight_sync) < 0.03
    assert rel(steps["checkpoint_s"]["value"], TRUTH.checkpoint) < 0.05 and steps["checkpoint_s"]["rows"] == 6
    notes = " ".join(got["notes"])
    update_key = {"verl": "timing_s/update_actor", "slime": "perf/actor_train_time", "areal": "timeperf/train_step"}
    assert f"2 cells are NaN, negative or not a number ({update_key[framework]} 2 (first: row " in notes, notes
    assert "8 records repeat an earlier step number" in notes
    assert "3 step numbers between the first and the last have no record" in notes  # NaN rows are kept
    summed = framework == "areal"  # no step time logged: the sum of the phases, unknown where a phase is missing
    assert law["reference_time_s"]["rows"] == 297 - 2
    assert got["cadence"]["achieved_s"]["rows"] == 297 - (2 if summed else 0)
    mean_update = np.mean([float(TRUTH.update(np.array(g))) for g in TRUTH.training_gpus])
    phases = TRUTH.generation + mean_update + (10.0 if framework != "areal" else 0.0)
    assert rel(got["cadence"]["achieved_s"]["value"], phases) < 0.02  # saves and weight sync are their own terms
    if framework == "verl":
        assert rel(steps["generation_tokens_per_gpu_s"]["value"], TRUTH.tokens_per_gpu_s) < 0.02
        assert rel(steps["agent_loop_median_s"]["value"], TRUTH.life_median) < 0.05
        assert rel(steps["agent_loop_p99_s"]["value"], TRUTH.life_p99) < 0.10
        assert "a step-level estimate under an assumed lognormal, with a wider interval" in notes
    if framework == "slime":
        assert rel(steps["version_gap_mean"]["value"], TRUTH.staleness) < 0.03
        logged = phases + TRUTH.weight_sync + TRUTH.checkpoint / TRUTH.checkpoint_every
        assert rel(steps["trainer_wait_share"]["value"], TRUTH.generation / logged) < 0.03


def test_a_wandb_export_reads_like_the_file_logger(logs):
    a = fitted(logs, "--steps", str(logs / "verl.jsonl"), "--training-gpus", "256")
    b = fitted(logs, "--steps", str(logs / "verl-export.csv"), "--format", "verl", "--training-gpus", "256")
    assert a["update_time"]["reference_time_s"]["value"] == pytest.approx(b["update_time"]["reference_time_s"]["value"])
    assert a["step_log"]["weight_sync_s"]["value"] == pytest.approx(b["step_log"]["weight_sync_s"]["value"])


def test_verls_throughput_divisor_is_used_only_with_a_note_saying_what_it_counts(logs):
    got = fitted(logs, "--steps", str(logs / "verl.jsonl"))
    divisors = sorted(p["gpus"] for p in got["update_time"]["points"])
    assert divisors == [g + TRUTH.inference_gpus for g in TRUTH.training_gpus]  # every GPU of the job
    note = next(n for n in got["notes"] if "perf/throughput's divisor" in n)
    assert ", ".join(f"{g + TRUTH.inference_gpus:,.0f}" for g in TRUTH.training_gpus) in note
    assert "inference included" in note and "--training-gpus" in note
    # nothing in the log says its pools were separate (the truth): read as verl's RayPPOTrainer, colocated, every
    # GPU of the job generates, and the regime note says it was assumed
    regime = next(n for n in got["notes"] if n.startswith("regime: colocated (from the log)"))
    assert "assumed: the same GPUs generate and train" in regime and "--regime pipelined-0" in regime
    assert "colocated, every GPU of the run generates" in got["step_log"]["generation_tokens_per_gpu_s"]["note"]
    said = fitted(logs, "--steps", str(logs / "verl.jsonl"), "--regime", "pipelined-0")
    assert any("tokens/s per inference GPU not measured" in n for n in said["notes"])
    assert "generation_tokens_per_gpu_s" not in said["step_log"]


def test_a_wrong_format_names_the_missing_keys(logs):
    out = CliRunner().invoke(
        main,
        ["calibrate", "--trajectories", str(logs / "t.csv"), "--steps", str(logs / "verl.jsonl"), "--format", "slime"],
    )
    assert out.exit_code == 2, out.output
    assert "verl.jsonl: --format slime: no record holds perf/<phase>_time; 305 hold verl's timing_s/* or" in out.output
    assert "use --format verl (or auto)" in out.output


def test_weight_sync_and_checkpoint_times_are_written_as_a_reliability_section(logs, tmp_path):
    """The calibrated instance carries the step log's weight-sync and checkpoint times (MODEL §13) commented out
    with their sources; uncommented, it is a valid instance planning with them. An --into instance with its
    own reliability section gets them in place."""
    import yaml

    from trainground.models.load import load_instance, read_document

    out = tmp_path / "calibrated.yaml"
    args = ["calibrate", "--trajectories", str(logs / "t.csv"), "--steps", str(logs / "verl.jsonl")]
    args += ["--training-gpus", "256", "--into", str(SEED), "-o", str(out)]
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    text = out.read_text()
    block = text[text.index("# ---- optional, uncomment to use: reliability") :]
    assert "weight_sync_time:" in block and "checkpoint_time:" in block and "calibrated" in block
    opened = tmp_path / "opened.yaml"
    opened.write_text(text.replace("# reliability:", "reliability:").replace("#   ", "  "))
    inst = load_instance(opened)
    assert rel(inst.reliability.weight_sync_time, TRUTH.weight_sync) < 0.03
    assert rel(inst.reliability.checkpoint_time, TRUTH.checkpoint) < 0.05
    own = read_document(SEED)
    own["reliability"] = {"gpu_mtbf": "40000h", "weight_sync_time": "1s"}
    into = tmp_path / "into.yaml"
    into.write_text(yaml.safe_dump(own))
    args[args.index("--into") + 1 :] = [str(into), "-o", str(out)]
    assert CliRunner().invoke(main, args).exit_code == 0
    inst = load_instance(out)
    assert (
        inst.reliability.gpu_mtbf == 40000 * 3600.0 and rel(inst.reliability.weight_sync_time, TRUTH.weight_sync) < 0.03
    )
    assert "optional, uncomment to use: reliability" not in out.read_text()


def test_a_step_log_with_saves_writes_its_generation_rate_not_the_windows(logs, tmp_path):
    """Issue 37: the trajectory log's steady window holds the step log's saves (240 s every 50 steps here);
    the tokens/s per GPU written is the step log's, over each step's generation phase, and a note says so."""
    from trainground.models.load import load_instance

    out = tmp_path / "c.yaml"
    args = ["calibrate", "--trajectories", str(logs / "t.csv"), "--steps", str(logs / "verl.jsonl")]
    args += ["--training-gpus", "256", "--inference-gpus", "256", "--into", str(SEED), "-o", str(out), "--json"]
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    got = json.loads(done.output)
    step_rate = got["step_log"]["generation_tokens_per_gpu_s"]["value"]
    note = next(n for n in got["notes"] if n.startswith("tokens/s per GPU written from the step log"))
    assert f"({step_rate:,.4g})" in note and "not the trajectory log's window" in note
    assert rel(load_instance(out).inference.shapes[0].tokens_per_gpu_s, step_rate) < 1e-5
    assert rel(step_rate, TRUTH.tokens_per_gpu_s) < 0.02
    assert "timing_s/gen" in out.read_text().split("tokens_per_gpu_s:")[1].splitlines()[0]
