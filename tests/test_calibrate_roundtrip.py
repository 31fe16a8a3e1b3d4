"""The round trip of a framework step log: `calibrate --holdout --into RUN -o HALF --plan PLAN` calibrates the first
half of the steps alone, writes that half's instance (the logged run: a batch's slowest attempt is the generation
phase itself, the logged batch and response length) and the logged configuration as a plan, replays the plan with
simulate's batch replay (docs/model.md §14) and sets its mean iteration beside the second half's logged mean step
time and the naive prediction (the first half's mean). The fixtures are ours, in the shapes verl and slime write
(tests/data/frameworks/README.md); every expected figure is worked out by hand from the values written in them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from trainground.cli import main
from trainground.models.regime import Regime

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests/data/frameworks"
RUN = DATA / "run-8gpus.yaml"
V05 = DATA / "verl-v05-file-logger.jsonl"
SLIME = DATA / "slime-console.log"
SLIME_ASYNC = DATA / "slime-async.jsonl"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def round_trip(tmp_path: Path, log: Path, *extra: str) -> tuple[dict, dict, dict]:
    """The calibration printed, the written instance's document and the written plan's."""
    half, plan = tmp_path / "half.yaml", tmp_path / "plan.json"
    out = invoke(
        "calibrate", "--steps", str(log), "--holdout", "--into", str(RUN), "-o", str(half), "--plan", str(plan),
        *extra, "--json",
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    return json.loads(out.output), yaml.safe_load(half.read_text()), json.loads(plan.read_text())


def test_a_verl_log_is_calibrated_on_its_first_half_and_its_plan_replayed(tmp_path):
    """Steps 1-8 on 8 GPUs (perf/throughput's divisor): gen 41..48 s, the trainer's passes 6 + 5 + 4 + 10 + 21/22/20
    (46, 47, 45, 46 s in steps 1-4), reward 0.3 + adv 0.2 + 0.5 s no timer holds, a 30 s validation and a 60 s save
    inside the step at steps 4 and 8; 307,200 tokens a step, responses of 500 tokens after prompts of 100."""
    got, doc, plan = round_trip(tmp_path, V05)
    occupancy = doc["environment"]["occupancy"]
    # the generation phase of steps 1-4, (41 + 42 + 43 + 44) / 4, as every attempt's lifetime
    assert occupancy == {"distribution": "empirical", "samples": [42.5, 42.5]}
    # 307,200 / (500 + 100) = 512 responses of 500 tokens
    assert doc["workload"]["batch_trajectories"] == 512 and doc["workload"]["tokens_per_attempt"] == 500.0
    # 4 x 512 x 500 response tokens over (41 + 42 + 43 + 44) s x 8 GPUs
    assert doc["inference"]["shapes"][0]["tokens_per_gpu_s"] == pytest.approx(1_024_000 / 1_360, rel=1e-5)
    assert doc["training"]["update_time"]["reference_time"] == 46.0  # median of 46, 47, 45, 46
    assert doc["regime"]["mode"] == "colocated" and doc["regime"]["switch_time"] == 1.0
    assert (plan["plan"]["inference_gpus"], plan["plan"]["training_gpus"], plan["plan"]["versions_kept"]) == (8, 8, 1)
    rt = got["holdout"]["round_trip"]
    # D = max(M_N 42.5, 512 x 500 tokens at 8 x 752.94 tokens/s = 42.5) + U 46 + switch 1
    assert rt["generation_phase_s"] == pytest.approx(42.5, rel=1e-6)
    assert rt["predicted_s"] == pytest.approx(89.5, rel=1e-6)
    assert rt["predicted_s"] <= plan["plan"]["cadence_s"] < rt["predicted_s"] + 0.5  # the grid steps by 0.5 s
    # the second half without its save/validation step 8: (93 + 92 + 94) / 3; naive: (88 + 90 + 89 + 181) / 4
    assert (rt["logged_s"], rt["naive_s"]) == (93.0, 112.0)
    assert rt["predicted_error"] == pytest.approx(89.5 / 93 - 1, abs=1e-6)  # tokens/s is written to 6 digits
    assert rt["naive_error"] == pytest.approx(112 / 93 - 1)
    sentence = next(n for n in got["notes"] if n.startswith("round trip:"))
    assert "mean iteration 89.5 s (-3.8%)" in sentence and "naive, the first half's mean: 112 s (+20.4%)" in sentence


def test_nothing_of_the_second_half_enters_the_instance_the_plan_or_the_prediction(tmp_path):
    """The same log with steps 5-8 twice as slow in every phase: the written instance and plan are the same to the
    byte, the prediction too; only the logged mean it is compared with moves."""
    first = tmp_path / "first"
    first.mkdir()
    got, _, _ = round_trip(first, V05)
    slower = tmp_path / "slower"
    slower.mkdir()
    lines = []
    for line in V05.read_text().splitlines():
        record = json.loads(line)
        if record["step"] >= 5:
            record["data"] = {
                k: v * 2 if k.startswith(("timing_s/", "perf/time_per_step")) else v for k, v in record["data"].items()
            }
        lines.append(json.dumps(record))
    log = slower / V05.name
    log.write_text("\n".join(lines) + "\n")
    moved, _, _ = round_trip(slower, log)
    for name in ("half.yaml", "plan.json"):
        assert (first / name).read_text() == (slower / name).read_text()
    a, b = got["holdout"]["round_trip"], moved["holdout"]["round_trip"]
    assert a["predicted_s"] == b["predicted_s"] and a["naive_s"] == b["naive_s"]
    assert b["logged_s"] == 2 * a["logged_s"]


def test_simulate_replays_the_written_plan_to_the_same_iteration(tmp_path):
    """The two-command form: `simulate HALF --plan PLAN` gives the iteration the round trip compared."""
    got, _, _ = round_trip(tmp_path, V05)
    out = invoke("simulate", str(tmp_path / "half.yaml"), "--plan", str(tmp_path / "plan.json"), "--json")
    assert out.exit_code == 0, out.output
    simulated = json.loads(out.output)["figures"]["iteration_mean_s"]["simulated"]
    assert simulated == pytest.approx(got["holdout"]["round_trip"]["predicted_s"], rel=1e-9)


def test_a_slime_log_said_colocated_keeps_the_batch_it_cannot_count(tmp_path):
    """slime's steps 0-9 with --regime colocated on 8 GPUs: rollout 100 + 2i s, train 17/18 s (median 17 in steps
    0-4), update_weights 0.5 s, sleep 4 + wake_up 2 + 1 s no timer holds; slime logs no response count, so the
    batch and the tokens per attempt stay the --into instance's (256 of 100 tokens)."""
    got, doc, _ = round_trip(tmp_path, SLIME, "--regime", "colocated", "--training-gpus", "8")
    assert doc["environment"]["occupancy"]["samples"] == [104.0, 104.0]  # (100 + 102 + 104 + 106 + 108) / 5
    assert (doc["workload"]["batch_trajectories"], doc["workload"]["tokens_per_attempt"]) == (256, 100)
    assert doc["regime"]["weight_sync_time"] == 0.5 and doc["regime"]["switch_time"] == 7.0
    rt = got["holdout"]["round_trip"]
    # D = max(104, 256 x 100 tokens at 8 GPUs x ~1,020 tokens/s = 3.1 s) + 17 + 0.5 + 7
    assert rt["generation_phase_s"] == 104.0 and rt["predicted_s"] == pytest.approx(128.5)
    note = next(n for n in got["notes"] if n.startswith("logged run:"))
    assert "tokens_per_attempt" not in note and "batch_trajectories" not in note


def test_a_run_with_no_batch_regime_writes_no_batch_plan_and_says_why(tmp_path):
    """slime's log without --regime: slime's keys say nothing of the regime, so no regime is written, the logged
    plan (read as the seed's regime) is not written for want of a launch rate, and no round trip is made."""
    half, plan = tmp_path / "half.yaml", tmp_path / "plan.json"
    out = invoke(
        "calibrate", "--steps", str(SLIME), "--holdout", "--into", str(RUN), "-o", str(half), "--plan", str(plan),
        "--training-gpus", "8", "--json",
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    notes = json.loads(out.output)["notes"]
    assert any(n.startswith("no logged plan written:") for n in notes), notes
    assert not any(n.startswith("round trip:") for n in notes) and not plan.exists()


def test_the_round_trip_takes_a_step_log_alone(tmp_path):
    out = invoke(
        "calibrate", "--trajectories", str(ROOT / "instances/logs/seed-small-trajectories.csv"), "--steps", str(V05),
        "--holdout", "--into", str(RUN), "-o", str(tmp_path / "x.yaml"),
    )  # fmt: skip
    assert out.exit_code == 2 and "--holdout with -o writes the first half of a framework step log alone" in out.output


def test_a_run_said_pipelined_replays_generation_then_training_on_separate_gpus(tmp_path):
    """The verl fixture said to be pipelined k = 0 on 8 generating GPUs beside its 8 training GPUs: the plan uses
    both sets (16 of the pool's 16), and an iteration is D 42.5 + U 46 s; the reward and adv time has no term
    of its own in that regime (§14), so the replay leaves it out."""
    got, doc, plan = round_trip(tmp_path, V05, "--regime", "pipelined-0", "--inference-gpus", "8")
    assert doc["regime"] == {"mode": "pipelined", "steps_ahead": 0}
    assert (plan["plan"]["inference_gpus"], plan["plan"]["training_gpus"], plan["plan"]["billed_gpus"]) == (8, 8, 16)
    assert got["holdout"]["round_trip"]["predicted_s"] == pytest.approx(42.5 + 46.0, rel=1e-6)


def test_a_slime_log_said_one_step_off_replays_the_longer_of_generation_and_training(tmp_path):
    """slime's perf/* keys, one flat record per rollout step, said pipelined k = 1 on 8 generating and 8 training GPUs:
    rollout 100-103 s in steps 0-3 (mean 101.5), train = log_probs 10 + actor_train 50/52/48/50 s (median 60),
    update_weights 0.5 s after each training, inside the next step's train_wait. Batch i+1 is generated while batch i
    trains, so an iteration is max(D, U) + t_s (docs/model.md §14); the same log said k = 0 replays D + U + t_s."""
    got, doc, plan = round_trip(
        tmp_path, SLIME_ASYNC, "--regime", "pipelined-1", "--training-gpus", "8", "--inference-gpus", "8"
    )
    assert doc["regime"] == {"mode": "pipelined", "steps_ahead": 1, "weight_sync_time": 0.5}
    assert doc["environment"]["occupancy"]["samples"] == [101.5, 101.5]  # (100 + 101 + 102 + 103) / 4
    assert doc["training"]["update_time"]["reference_time"] == 60.0  # median of 60, 62, 58, 60
    assert (plan["plan"]["inference_gpus"], plan["plan"]["training_gpus"]) == (8, 8)
    rt = got["holdout"]["round_trip"]
    assert rt["predicted_s"] == pytest.approx(max(101.5, 60.0) + 0.5, rel=1e-6)
    # steps 4-7 take 110.5, 111.5, 112.5, 113.5 s; naive, steps 0-3: (160 + 103.5 + 98.5 + 105.5) / 4
    assert (rt["logged_s"], rt["naive_s"]) == (112.0, 116.875)
    # the hold-out's terms overlap generation and training too: the rest of a step is what steps 0-3 hold beyond
    # max(generation, update) + sync, (59.5 + 2 - 4 + 2) / 4, not a negative remainder of their sum
    check = got["holdout"]
    assert check["overlapped"] and check["terms"]["other"] == pytest.approx(14.875, rel=1e-9)
    assert check["predicted_s"] == pytest.approx(max(101.5, check["terms"]["trainer"]) + 0.5 + 14.875, rel=1e-9)
    serial, _, _ = round_trip(
        tmp_path, SLIME_ASYNC, "--regime", "pipelined-0", "--training-gpus", "8", "--inference-gpus", "8"
    )
    assert serial["holdout"]["round_trip"]["predicted_s"] == pytest.approx(101.5 + 60.0 + 0.5, rel=1e-6)
    assert not serial["holdout"]["overlapped"]


def test_a_logged_run_from_fewer_than_three_steps_is_reported_and_no_plan_is_written(tmp_path):
    """Two steps of the verl fixture: the logged run's generation phase, response length and batch are figures of
    2 rows, reported and not written (the --into instance keeps its own), and no plan is made from them."""
    log = tmp_path / "two.jsonl"
    log.write_text("".join(V05.read_text().splitlines(keepends=True)[:3]))
    run = yaml.safe_load(RUN.read_text())
    half, plan = tmp_path / "x.yaml", tmp_path / "plan.json"
    out = invoke(
        "calibrate", "--steps", str(log), "--into", str(RUN), "-o", str(half), "--plan", str(plan), "--json"
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    notes = json.loads(out.output)["notes"]
    doc = yaml.safe_load(half.read_text())
    assert doc["workload"]["batch_trajectories"] == run["workload"]["batch_trajectories"] != 512
    assert doc["workload"]["tokens_per_attempt"] == run["workload"]["tokens_per_attempt"] != 500.0
    assert doc["environment"]["occupancy"] == run["environment"]["occupancy"]
    for field in ("workload.batch_trajectories", "workload.tokens_per_attempt", "environment.occupancy"):
        assert any(n.startswith(f"not written: {field}") and "from 2 rows" in n for n in notes), (field, notes)
    refused = [n for n in notes if n.startswith("no logged plan written:") and "too few rows" in n]
    assert not plan.exists() and refused, notes


def test_a_hold_out_not_made_writes_neither_the_instance_nor_the_plan_and_exits_2(tmp_path):
    """Four steps, two a half (a half needs 3): the hold-out is not made, and neither is its first half's instance;
    the calibration is shown and the command exits 2, naming the log and why."""
    log = tmp_path / "four.jsonl"
    log.write_text("".join(V05.read_text().splitlines(keepends=True)[:5]))
    half, plan = tmp_path / "half.yaml", tmp_path / "plan.json"
    out = invoke(
        "calibrate", "--steps", str(log), "--holdout", "--into", str(RUN), "-o", str(half), "--plan", str(plan)
    )  # fmt: skip
    assert out.exit_code == 2, out.output  # -o asked for a file that is not written: not a success
    assert "the hold-out was not made" in out.stdout  # the calibration itself is still shown
    assert out.stderr.strip() == (
        f"{log}: --holdout: hold-out not made: each half needs 3 steps without a save or a validation and with "
        f"every phase logged (first half 2, second half 1 of 4 steps); -o {half} was not written"
    )
    assert not half.exists() and not plan.exists()


def test_an_areal_log_said_colocated_is_calibrated_on_its_first_half_and_its_plan_replayed(tmp_path):
    """areal-console.log on 8 GPUs, said colocated: rollout 60-63 s in steps 1-4; the trainer's passes ref_logp 6 +
    recompute_logp 7 + compute_advantage 0.5 + train_step 30/31 s (median 44); update_weights 3 s; clear_batches
    0.1 s. The replay's iteration is 61.5 + 44 + 3 + 0.1; steps 6-8 (step 5 saves and validates) logged
    112.6, 112.6 and 114.6 s; the naive prediction is steps 1-4's mean, (106.6 + 108.6 + 108.6 + 110.6) / 4."""
    got, doc, plan = round_trip(tmp_path, DATA / "areal-console.log", "--training-gpus", "8", "--regime", "colocated")
    assert doc["regime"]["mode"] == "colocated"
    assert doc["environment"]["occupancy"]["samples"] == [61.5, 61.5]
    assert doc["training"]["update_time"]["reference_time"] == 44.0
    rt = got["holdout"]["round_trip"]
    assert rt["predicted_s"] == pytest.approx(61.5 + 44.0 + 3.0 + 0.1, rel=1e-6)
    assert rt["logged_s"] == pytest.approx((112.6 + 112.6 + 114.6) / 3, rel=1e-9)
    assert rt["naive_s"] == pytest.approx(108.6, rel=1e-9)
    assert rt["predicted_error"] == pytest.approx(108.6 / (339.8 / 3) - 1, rel=1e-6)  # -4.1 %


def test_an_overlapped_hold_out_reproduces_its_first_half():
    """One-step-off steps of 12 s whose generation and update alternate which is longer (10 and 2 s, then 2 and
    10 s): each step is its longer phase plus a 2 s rest, so on a second half like the first the prediction is
    that half's 12 s, not max of the means + rest, max(6, 6) + 2 = 8 s."""
    from trainground.calibrate.holdout import holdout
    from trainground.calibrate.logs import Steps
    from trainground.calibrate.stepreader import FrameworkSteps

    gen = np.array([10.0, 2.0] * 4)
    update = np.array([2.0, 10.0] * 4)
    steps = Steps("alternate.jsonl", np.arange(8.0), update, np.full(8, 8.0), generation_s=gen)
    extra = FrameworkSteps("verl", logged_step=np.full(8, 12.0))
    check, sentence = holdout(steps, extra, regime=Regime(mode="pipelined", steps_ahead=1.0))
    assert check is not None, sentence
    assert check["overlapped"] and check["terms"]["other"] == pytest.approx(2.0)
    assert check["predicted_s"] == pytest.approx(12.0, rel=1e-6) and check["logged_s"] == 12.0
