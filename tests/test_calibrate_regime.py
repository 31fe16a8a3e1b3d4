"""calibrate writes the run regime (docs/model.md §14): read from a verl step log's evidence (RayPPOTrainer's keys
and a step that is the sum of its phases: colocated; the one-step-off trainer's: pipelined k=1; the fully-async
trainer's: async admission) or said with --regime, with the terms the regime gives a place (a colocated run's
switch_time) and the validation passes as schedule.extra_time. The fixtures are ours, in the shapes verl writes
(tests/data/frameworks/README.md); every expected figure is worked out by hand from the values written in them.
No written instance is solved here: the planner takes the seed's regime only for now."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from trainground.cli import main
from trainground.models.load import load_instance

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests/data/frameworks"
SEED = ROOT / "instances/seed-week-75.yaml"
COLOCATED = DATA / "verl-colocated-console.log"
ONE_STEP_OFF = DATA / "verl-one-step-off.log"
FULLY_ASYNC = DATA / "verl-fully-async.jsonl"


def run(*args: str) -> dict:
    out = CliRunner().invoke(main, ["calibrate", *args, "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


def note(got: dict, start: str) -> str:
    found = [n for n in got["notes"] if n.startswith(start)]
    assert found, (start, got["notes"])
    return found[0]


def written(tmp_path: Path, *args: str) -> tuple[dict, dict, Path]:
    """The calibration, the written instance's document, and its path (loaded back by models.load)."""
    out_file = tmp_path / "c.yaml"
    got = run(*args, "--into", str(SEED), "-o", str(out_file))
    load_instance(out_file)
    return got, yaml.safe_load(out_file.read_text()), out_file


def test_a_colocated_verl_log_writes_its_regime_switch_time_and_validation_passes(tmp_path):
    """Steps 1-12 on 8 GPUs: gen 60 + i % 4, reward 2, old_log_prob 10, ref 8, adv 0.5, update_actor 30 + i % 2,
    0.5 s no timer holds; validations of 40, 42, 41 s at steps 4, 8, 12 and saves at 6 and 12, outside the step;
    1,024 responses of 600 tokens (prompts of 200) per step; the config says hybrid_engine: True."""
    got, doc, out_file = written(tmp_path, "--steps", str(COLOCATED))
    regime = got["regime"]
    assert regime["written"]["mode"] == "colocated" and regime["source"] == "the log" and not regime["assumed"]
    evidence = " ".join(regime["evidence"])
    assert "hybrid_engine: True in the logged config (line 6)" in evidence
    # phases 112.5 s of a 113 s step (medians): the 0.5 s unlogged, 0.4 %
    assert "its phases add up to 112.5 s against 113 s of step time" in evidence and "+0.4% unlogged" in evidence
    # what is neither generation nor the trainer's passes: reward 2 + adv 0.5 + the unlogged 0.5, every step
    switch = got["step_log"]["switch_time_s"]
    assert switch["value"] == pytest.approx(3.0) and switch["rows"] == 12
    assert "reward 2 + adv 0.5 + unlogged 0.5" in switch["note"]
    assert doc["regime"]["mode"] == "colocated" and doc["regime"]["switch_time"] == pytest.approx(3.0)
    # the CPU phases are not in the update law: old_log_prob 10 + ref 8 + update_actor 30 or 31, median 48.5
    law = got["update_time"]["reference_time_s"]
    assert law["value"] == pytest.approx(48.5) and "reward" not in law["source"] and "adv" not in law["source"]
    # every GPU of the run generates (8, perf/throughput's divisor), during gen only: 614,400 response tokens a
    # step over gen 61.5 s on average
    rate = got["step_log"]["generation_tokens_per_gpu_s"]
    assert rate["value"] == pytest.approx(614_400 / (8 * 61.5)) and "colocated, every GPU" in rate["note"]
    assert load_instance(out_file).inference.shapes[0].tokens_per_gpu_s == pytest.approx(614_400 / (8 * 61.5))
    # validations every 4 steps, 41 s median: ceil(1,000 / 4) = 250 passes over the seed's run, one-off time
    assert got["step_log"]["validation_s"]["value"] == 41
    assert doc["schedule"]["extra_time"] == pytest.approx(250 * 41)
    assert "ceil(1,000 iterations / every 4 steps) = 250 x 41 s per pass" in note(got, "schedule.extra_time:")
    assert got["cadence"]["achieved_s"]["value"] == pytest.approx(113)  # validations and saves are not in it
    inst = load_instance(out_file)
    assert inst.regime is not None and inst.regime.mode == "colocated" and inst.regime.switch_time == 3.0
    assert inst.schedule.extra_time == pytest.approx(10_250)


def test_the_regime_option_is_written_in_place_of_the_logs(tmp_path):
    got, doc, _ = written(tmp_path, "--steps", str(COLOCATED), "--regime", "pipelined-0")
    assert doc["regime"] == {"mode": "pipelined", "steps_ahead": 0.0}  # switch_time is colocated only
    assert got["regime"]["source"] == "--regime" and got["regime"]["seen"] == "colocated"
    assert "--regime pipelined k=0 is written in place of the log's colocated" in note(got, "regime: pipelined k=0")
    # separate pools: the generating GPUs are not the job's, so tokens/s waits for --inference-gpus
    assert "generation_tokens_per_gpu_s" not in got["step_log"]
    assert any("tokens/s per inference GPU not measured" in n for n in got["notes"])
    _, doc, _ = written(tmp_path, "--steps", str(COLOCATED), "--regime", "admission-2.5")
    assert doc["regime"] == {"mode": "async", "staleness": "admission", "steps_ahead": 2.5, "in_flight_updates": True}
    _, doc, _ = written(tmp_path, "--steps", str(COLOCATED), "--regime", "async")
    assert doc["regime"] == {"mode": "async"}


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("pipelined-2", "'pipelined-2' is not a regime: give one of colocated, pipelined-0, pipelined-1"),
        ("colocate", "'colocate' is not a regime"),
        ("admission-0.5", "admission-K needs a real K >= 1"),
        ("admission-many", "admission-K needs a real K >= 1"),
        ("admission-inf", "admission-K needs a real K >= 1"),
    ],
)
def test_a_bad_regime_value_is_one_clear_error(value, said):
    out = CliRunner().invoke(main, ["calibrate", "--steps", str(COLOCATED), "--regime", value])
    assert out.exit_code == 2, out.output
    assert "Invalid value for '--regime'" in out.output and said in out.output
    assert "Traceback" not in out.output and out.output.count("Error") == 1


def test_the_step_time_against_its_phases_decides_whether_they_took_turns(tmp_path):
    # the same log with 20 s less in every step than its phases hold: they overlapped, no regime is read
    shorter = tmp_path / "overlap.log"
    lines = []
    for line in COLOCATED.read_text().splitlines(keepends=True):
        if " - timing_s/step:" in line:
            head, _, rest = line.partition(" - timing_s/step:")
            value, sep, tail = rest.partition(" - ")
            line = f"{head} - timing_s/step:{float(value) - 20}{sep}{tail}"
        lines.append(line)
    shorter.write_text("".join(lines))
    got, doc, _ = written(tmp_path, "--steps", str(shorter))
    assert got["regime"]["written"] is None and "regime" not in doc
    assert "they overlapped, so generation and training did not take turns" in got["regime"]["not_written"]
    assert "switch_time_s" not in got["step_log"]


def test_training_gpus_below_the_jobs_say_the_pools_were_separate(tmp_path):
    # perf/throughput's divisor counts 8 GPUs in the job; 4 of them train: generation had its own pool
    got, doc, _ = written(tmp_path, "--steps", str(COLOCATED), "--training-gpus", "4")
    assert doc["regime"] == {"mode": "pipelined", "steps_ahead": 0.0}
    assert "perf/throughput counts 8 GPUs in the job against 4 training GPUs" in " ".join(got["regime"]["evidence"])
    got = run("--steps", str(COLOCATED), "--training-gpus", "8")
    assert got["regime"]["written"]["mode"] == "colocated"
    assert "the 8 that train" in " ".join(got["regime"]["evidence"])


def test_a_one_step_off_log_is_pipelined_one_step_ahead(tmp_path):
    """Steps 1-8: the batch's generation (generate_sequences) 100 + 2 (i % 3) s on 4 rollout GPUs; the trainer's
    side 97 s (sync 0.3, reward 1, old_log_prob 15, ref 10, adv 0.5, update_actor 70, 0.2 unlogged); it waits
    the whole first batch (102 s), then generation less 97 s."""
    got, doc, _ = written(tmp_path, "--steps", str(ONE_STEP_OFF), "--training-gpus", "12", "--inference-gpus", "4")
    assert doc["regime"] == {"mode": "pipelined", "steps_ahead": 1.0, "weight_sync_time": 0.3}
    evidence = " ".join(got["regime"]["evidence"])
    # generation: median of 100 100 102 102 102 104 104 104; waits 3 3 5 5 7 7 7 102: median 6
    assert "took 102 s while the trainer waited 6 s for it" in evidence and "96 s overlapped" in evidence
    # tokens/s over each batch's own generation, not over the trainer's wait: 8 x 409,600 tokens over 818 s x 4
    rate = got["step_log"]["generation_tokens_per_gpu_s"]
    assert rate["value"] == pytest.approx(8 * 409_600 / (818 * 4)) and "timing_s/generate_sequences" in rate["source"]
    assert got["update_time"]["reference_time_s"]["value"] == pytest.approx(95)
    waits = {t["keys"]: t["seconds"] for t in got["step_split"]["terms"] if t["term"] == "wait for rollouts"}
    assert waits == {"timing_s/wait_prev_gen": pytest.approx(139 / 8)}
    cpu = note(got, "timing_s/reward + timing_s/adv (1.5 s per step): no per-iteration term")
    assert "not folded into the update law" in cpu and "switch_time_s" not in got["step_log"]
    assert "beside the step" in got["bottleneck"]


def test_a_fully_async_log_is_async_admission_with_its_logged_threshold(tmp_path):
    """Versions 1-10: the trainer waits 2 + i % 2 s, updates 120 s, syncs 6 s (inside the step), 0.6 s unlogged,
    saves 200 s at versions 5 and 10; 1,024 responses of 1,500 tokens each; partial_ratio 0.047; the rollouter
    logs staleness_threshold 1."""
    got, doc, _ = written(tmp_path, "--steps", str(FULLY_ASYNC), "--training-gpus", "8", "--inference-gpus", "8")
    assert doc["regime"] == {"mode": "async", "staleness": "admission", "steps_ahead": 1.0, "in_flight_updates": True}
    evidence = " ".join(got["regime"]["evidence"])
    assert "fully_async/static/staleness_threshold: 1 (median of 10 records): k = 1" in evidence
    assert "fully_async/partial/partial_ratio above 0 in 10 of 10 records" in evidence
    # over the steps' time less the sync, the two save steps left out: 1,536,000 tokens per 123.5 s on 8 GPUs
    rate = got["step_log"]["generation_tokens_per_gpu_s"]
    assert rate["value"] == pytest.approx(1_536_000 / (123.5 * 8)) and rate["rows"] == 8
    assert "2 steps with a save or a validation left out" in rate["note"]
    assert got["step_log"]["weight_sync_s"]["value"] == 6  # timing_s/timing_s/param_sync
    assert got["update_time"]["reference_time_s"]["value"] == 120  # gen is the trainer's wait, not in the law


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("fully_async/static/staleness_threshold", 0.5, "k = 0.5 is below the k >= 1"),
        ("fully_async/partial/partial_ratio", 0.0, "no partial rollout seen"),
    ],
)
def test_a_fully_async_log_without_what_admission_needs_writes_no_regime(tmp_path, key, value, said):
    rows = [json.loads(line) for line in FULLY_ASYNC.read_text().splitlines()]
    for row in rows[1:]:
        row["data"][key] = value
    log = tmp_path / "async.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got, doc, _ = written(tmp_path, "--steps", str(log), "--training-gpus", "8")
    assert "regime" not in doc and said in got["regime"]["not_written"] and "--regime" in got["regime"]["not_written"]
    assert note(got, "regime: none written: the log shows async with staleness admission")


def test_a_regime_the_into_instance_cannot_hold(tmp_path):
    """two-pools.yaml serves inference from an A100 pool apart from its H100 training pool: colocated does not fit."""
    two_pools = ROOT / "instances/logs/two-pools.yaml"
    args = ["calibrate", "--steps", str(COLOCATED), "--into", str(two_pools), "-o", str(tmp_path / "c.yaml")]
    out = CliRunner().invoke(main, [*args, "--regime", "colocated"])
    assert out.exit_code == 2 and "Traceback" not in out.output, out.output
    assert "two-pools.yaml: inference.shapes[1].pool: --regime colocated: 'a100' is not the training pool" in out.output
    out = CliRunner().invoke(main, [*args, "--json"])  # read from the log: not written, and said
    assert out.exit_code == 0, out.output
    assert "regime" not in yaml.safe_load((tmp_path / "c.yaml").read_text())
    assert any(
        n.startswith("regime not written: two-pools.yaml does not admit") for n in json.loads(out.output)["notes"]
    )


def test_with_a_trajectory_log_a_colocated_run_writes_the_generation_phase_rate(tmp_path):
    trajectories = ROOT / "instances/logs/seed-small-trajectories.csv"
    got, _, out_file = written(
        tmp_path, "--trajectories", str(trajectories), "--steps", str(COLOCATED), "--inference-gpus", "8"
    )
    assert load_instance(out_file).inference.shapes[0].tokens_per_gpu_s == pytest.approx(614_400 / (8 * 61.5))
    assert "the run generated in batches (colocated)" in note(got, "tokens/s per GPU written from the step log")
    # a step log of no framework holds no generation phase: the window's figure is written, and said to understate
    steps = ROOT / "instances/logs/seed-small-steps.csv"
    got, doc, _ = written(tmp_path, "--trajectories", str(trajectories), "--steps", str(steps), "--regime", "colocated")
    assert doc["regime"] == {"mode": "colocated"} and got["regime"]["seen"] is None
    assert "understates their generation rate" in note(got, "tokens/s per GPU written from the trajectory log's window")


def test_config_values_read_the_printed_config_and_the_command_line(tmp_path):
    from trainground.calibrate.regime import config_values

    log = tmp_path / "run.log"
    log.write_text(
        "+ python3 -m verl.trainer.main_ppo actor_rollout_ref.hybrid_engine=False trainer.test_freq=5\n"
        "(TaskRunner pid=1)                        'hybrid_engine': True,\n"
        "(TaskRunner pid=1) {'async_training': {'partial_rollout': True, 'staleness_threshold': 0.5,\n"
        "(TaskRunner pid=1)                     'trigger_parameter_sync_step': 4}}\n"
    )
    assert config_values(log) == {
        "hybrid_engine": (False, 1),  # the first said
        "partial_rollout": (True, 3),
        "staleness_threshold": (0.5, 3),
        "trigger_parameter_sync_step": (4.0, 4),
    }
    assert config_values(FULLY_ASYNC) == {}  # JSONL holds no config


def test_a_logged_plan_is_written_for_the_seed_regime_only(tmp_path):
    from trainground.calibrate.replay import logged_plan

    _, _, out_file = written(tmp_path, "--steps", str(COLOCATED))
    plan, why = logged_plan(load_instance(out_file), None)  # refused before the calibration is read
    assert plan is None and "regime (colocated) has no logged plan yet" in why[0]
