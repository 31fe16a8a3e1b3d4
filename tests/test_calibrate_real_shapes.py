"""calibrate --steps on logs in the shapes the frameworks write (issue 37): console logs with ANSI colours, Ray
prefixes, np.float64(...) values, progress bars and wrapped lines, verl's older timing/* keys, a validation record
first, slime's perf N dicts, AReaL's stats tables, a wandb CSV export. The fixtures are ours
(tests/data/frameworks/README.md says whose shapes they copy); every expected figure below is worked out by
hand from the values written in them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from trainground.cli import main
from trainground.models.load import load_instance

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests/data/frameworks"
SEED = ROOT / "instances/seed-week-75.yaml"


def run(*args: str, code: int = 0) -> dict | str:
    out = CliRunner().invoke(main, ["calibrate", *args] + (["--json"] if code == 0 else []))
    assert out.exit_code == code, out.output
    return json.loads(out.output) if code == 0 else out.output


def note(got: dict, start: str) -> str:
    found = [n for n in got["notes"] if start in n]
    assert found, (start, got["notes"])
    return found[0]


def split_of(got: dict) -> dict[str, float]:
    return {t["keys"]: t["seconds"] for t in got["step_split"]["terms"]}


@pytest.mark.parametrize(
    ("file", "said"),
    [
        ("verl-console.log", "read as verl's console log: 8 of its 9 step:N lines hold timing_s/* or timing/* keys"),
        ("verl-v05-file-logger.jsonl", "read as verl's JSONL: 8 of 9 records hold timing_s/* or timing/* keys"),
        ("verl-old-keys.log", "read as verl's console log: 4 of its 4 step:N lines"),
        ("slime-console.log", "read as slime's console log: 10 of its 10 perf N records hold perf/<phase>_time keys"),
        ("areal-console.log", "read as AReaL's console log: 8 of its 8 Train step tables hold timeperf/* keys"),
        ("verl-wandb-export.csv", "read as verl's export: its columns hold timing_s/* or timing/* keys"),
    ],
)
def test_auto_reads_every_record_and_says_what_it_decided(file, said):
    got = run("--steps", str(DATA / file))
    assert said in note(got, "--format auto:"), got["notes"]


def test_a_wrong_format_names_what_the_log_holds(tmp_path):
    out = run("--steps", str(DATA / "verl-console.log"), "--format", "areal", code=2)
    assert "--format areal: no record holds timeperf/*; 8 hold verl's timing_s/* or timing/*: use --format verl" in out
    out = run("--steps", str(DATA / "areal-console.log"), "--format", "slime", code=2)
    assert "8 hold AReaL's timeperf/*: use --format areal" in out
    own = tmp_path / "own.csv"
    own.write_text("iteration,update_s,training_gpus\n0,300,64\n")
    out = run("--steps", str(own), "--format", "verl", code=2)
    assert "it is trainground's step log (iteration, update_s, training_gpus): use --format steps" in out
    junk = tmp_path / "junk.log"
    junk.write_text("Loading checkpoint shards: 100%\nnothing here\n")
    out = run("--steps", str(junk), code=2)
    assert "no step record found: a console log needs verl's `step:N - key:value` lines" in out


def test_verl_console_log_of_a_ppo_run_with_a_critic(tmp_path):
    """verl >= 0.6: step:N lines behind ANSI-coloured Ray prefixes, np.float64(...) values, progress bars with
    carriage returns, a validation record first, one NaN cell; saves and validations outside timing_s/step."""
    out_file = tmp_path / "c.yaml"
    args = ["--steps", str(DATA / "verl-console.log"), "--inference-gpus", "8", "--into", str(SEED), "-o"]
    got = run(*args, str(out_file))
    law = got["update_time"]["reference_time_s"]
    # busy time = old_log_prob 6 + ref 5 + values 4 + update_critic 10 + update_actor (20 + step % 3): 45, 46 or 47;
    # step 6's update_critic is NaN: 7 rows, sorted 45 46 46 46 47 47 47, median 46
    assert law["value"] == 46 and law["rows"] == 7 and got["update_time"]["reference_gpus"] == 8
    for key in ("timing_s/old_log_prob", "timing_s/ref", "timing_s/values", "timing_s/update_critic", "update_actor"):
        assert key in law["source"], law["source"]
    assert "1 cell is NaN, negative or not a number (timing_s/update_critic 1 (first: row 7 (line 20)))" in note(
        got, "cell is NaN"
    )
    # step times 90 92 91 93 95 94 96 98 (sum 749), less the 2 s weight sync inside each: 749 / 8 - 2
    assert got["cadence"]["achieved_s"]["value"] == pytest.approx(749 / 8 - 2)
    assert "timing_s/update_weights (8 rows): inside the logged step time" in note(got, "update_weights (8")
    assert "timing_s/save_checkpoint (2 rows): outside the logged step time" in note(got, "save_checkpoint (2")
    assert "timing_s/testing (2 rows): outside" in note(got, "timing_s/testing (2")
    figures = got["step_log"]
    assert figures["weight_sync_s"]["value"] == 2 and figures["weight_sync_s"]["rows"] == 8
    assert figures["checkpoint_s"]["value"] == 60 and figures["checkpoint_s"]["rows"] == 2
    assert figures["validation_s"]["value"] == 30 and "every 4 steps" in figures["validation_s"]["note"]
    # 512 responses (307,200 tokens / (100 + 500)) x 500 response tokens, generation 41..48 s on 8 GPUs
    rate = figures["generation_tokens_per_gpu_s"]
    assert rate["value"] == pytest.approx(8 * 256_000 / (356 * 8)) and rate["rows"] == 8
    split = got["step_split"]
    # rows with every pass: all but step 6; wall = step + 90 s on steps 4 and 8 (testing, save outside)
    assert split["rows"] == 7 and split["wall_s"] == pytest.approx((90 + 92 + 91 + 183 + 95 + 96 + 188) / 7)
    parts = split_of(got)
    assert parts["timing_s/save_checkpoint"] == pytest.approx(120 / 7) and parts["timing_s/adv"] == pytest.approx(0.2)
    assert sum(t["share"] for t in split["terms"]) == pytest.approx(1.0)
    text = out_file.read_text()
    assert "reference_time: 46.0  # calibrated: inverse law by least squares; the trainer's busy time" in text
    assert "timing_s/old_log_prob + timing_s/ref + timing_s/values + timing_s/update_critic" in text
    inst = load_instance(out_file)
    assert inst.inference.shapes[0].tokens_per_gpu_s == pytest.approx(719.101, rel=1e-5)
    assert inst.environment.occupancy.median == 1044  # kept from --into: no per-trajectory times
    assert "#   weight_sync_time: 2.0" in text and "checkpoint_time" not in text.split("reliability")[-1]
    assert "not written: reliability.checkpoint_time (60 s from 2 rows of verl-console.log)" in note(
        got, "checkpoint_time"
    )
    assert note(got, "environment.occupancy kept from --into")


def test_a_verl_file_log_with_its_validation_record_first_and_saves_inside_the_step(tmp_path):
    """verl <= 0.5 timed testing and save_checkpoint inside timing_s/step: read from the rows, they are taken
    out of the cadence; the first record (step 0's val-core/*) holds no timing and is not a step."""
    got = run("--steps", str(DATA / "verl-v05-file-logger.jsonl"), "--holdout")
    assert "1 record holds no timed phase" in note(got, "no timed phase")
    assert "timing_s/save_checkpoint (2 rows): inside the logged step time" in note(got, "save_checkpoint (2")
    assert "timing_s/testing (2 rows): inside" in note(got, "timing_s/testing (2")
    assert got["cadence"]["achieved_s"]["value"] == pytest.approx(749 / 8 - 2)  # 90 s stalls and no sync taken out
    assert got["update_time"]["reference_time_s"]["value"] == 46
    hold = got["holdout"]
    # first half: steps 1-3 usable (4 saved): generation 42, trainer 46 (median of 46 47 45 46), other 1;
    # second half 5-7 (8 saved): 93 92 94; naive: the first half's logged steps 88 90 89 181
    assert hold["predicted_s"] == pytest.approx(42 + 46 + 1) and hold["logged_s"] == pytest.approx(93)
    assert hold["naive_s"] == pytest.approx(448 / 4) and hold["left_out"] == ["8"]


def test_older_verl_keys_without_a_step_time_sum_every_logged_phase():
    got = run("--steps", str(DATA / "verl-old-keys.log"), "--training-gpus", "1")
    # steps 0-3: gen 21+i, ref 4, values 6, adv 0.1, update_critic 15, update_actor 20+i/2: 66.1 + 1.5 i
    assert got["cadence"]["achieved_s"]["value"] == pytest.approx(66.1 + 1.5 * 1.5)
    source = got["cadence"]["achieved_s"]["source"]
    for key in (
        "timing/gen",
        "timing/ref",
        "timing/values",
        "timing/update_critic",
        "timing/update_actor",
        "timing/adv",
    ):
        assert key in source, source
    assert "the sum of" in source
    assert got["update_time"]["reference_time_s"]["value"] == pytest.approx(45.75)  # 4+6+15+20+i/2: 45..46.5


def test_slime_console_log_merges_the_rollout_managers_and_the_trainers_perf_lines(tmp_path):
    """Rollout ids 0-9: rollout 100 + 2n s at 1,000 + 10n tok/s/GPU; train_wait = rollout + sleep 4 + wake 2 +
    sync 0.5 + 1 unlogged (+ the 30 s validation of eval 0, which slime does not time, in step 0); train =
    log_probs 3 + ref 3.5 + actor 10 + n % 2 + 0.5; save_model 45 s in step 3; perf/step_time = train_wait + train
    (+ save)."""
    got = run("--steps", str(DATA / "slime-console.log"), "--training-gpus", "16", "--holdout")
    # the step less sync, the save and the estimated validation: rollout + 24 + n % 2, rollouts averaging 109
    assert got["cadence"]["achieved_s"]["value"] == pytest.approx(109 + 24 + 0.5)
    law = got["update_time"]["reference_time_s"]
    assert law["value"] == pytest.approx(17.5) and "perf/train_time" in law["source"]
    rate = got["step_log"]["generation_tokens_per_gpu_s"]
    assert rate["value"] == pytest.approx(1_140_700 / 1090)  # sum(rate x rollout time) / sum(rollout time)
    assert got["step_log"]["trainer_wait_share"]["value"] == pytest.approx(1195 / 1415)
    assert got["step_log"]["checkpoint_s"]["value"] == 45
    # eval 0 is found in step 0 and estimated from its unlogged time: 31 s against 1 s in the other steps
    validation = got["step_log"]["validation_s"]
    assert validation["value"] == pytest.approx(30) and "eval N lines (estimated" in validation["source"]
    parts = split_of(got)
    assert parts["perf/wake_up_time"] == pytest.approx(2.0)  # rollout 2's dict was wrapped mid-key: joined
    assert parts["perf/actor_train_time"] == pytest.approx(10.5)
    assert parts["perf/train_time (rest)"] == pytest.approx(0.5)
    hold = got["holdout"]
    # first half 0-4 without 0 (validation) and 3 (save): generation (102 + 104 + 108) / 3, trainer 17 (median of
    # 17 18 17 18 17), sync 0.5, other 7; second half 5-9: 135.5 136.5 139.5 140.5 143.5; naive: 719.5 / 5
    assert hold["predicted_s"] == pytest.approx(314 / 3 + 17 + 0.5 + 7) and hold["logged_s"] == pytest.approx(139.1)
    assert hold["naive_s"] == pytest.approx(143.9)


def test_areal_stats_tables_sum_every_phase_and_say_tokens_are_not_measured():
    got = run("--steps", str(DATA / "areal-console.log"), "--training-gpus", "8")
    # sum: rollout 60+g + 7 + 6 + 0.5 + 30+g%2 + sync 3 + 0.1 (+ save 40, eval 25 at g=4), less sync and stalls
    assert got["cadence"]["achieved_s"]["value"] == pytest.approx(103.6 + 3.5 + 0.5)
    law = got["update_time"]["reference_time_s"]
    assert law["value"] == pytest.approx(44.0) and "timeperf/recompute_logp" in law["source"]
    assert "timeperf/compute_advantage" in law["source"]
    assert "AReaL: tokens/s per GPU not measured: timeperf/rollout is the trainer's wait" in note(got, "AReaL:")
    assert got["step_log"]["validation_s"]["value"] == 25


def test_a_wandb_export_reads_nan_text_as_a_missing_cell():
    got = run("--steps", str(DATA / "verl-wandb-export.csv"), "--training-gpus", "8")
    assert got["update_time"]["reference_time_s"]["rows"] == 5  # step 3's NaN left out of the law only
    assert got["cadence"]["achieved_s"]["rows"] == 6 and got["cadence"]["achieved_s"]["value"] == pytest.approx(170)
    assert "(timing_s/update_actor 1 (first: row 3 (line 4)))" in note(got, "cell is NaN")


def test_a_figure_from_fewer_than_three_rows_is_reported_not_written(tmp_path):
    two = tmp_path / "two.log"
    two.write_text("".join((DATA / "verl-old-keys.log").read_text().splitlines(keepends=True)[:2]))
    out_file = tmp_path / "c.yaml"
    got = run("--steps", str(two), "--training-gpus", "8", "--into", str(SEED), "-o", str(out_file))
    assert got["update_time"]["reference_time_s"]["rows"] == 2
    assert "not written: training.update_time (45.25 s from 2 rows of two.log)" in note(got, "not written")
    assert yaml.safe_load(out_file.read_text())["training"]["update_time"]["reference_time"] == "300s"
    one = tmp_path / "one.log"
    one.write_text((DATA / "verl-old-keys.log").read_text().splitlines()[0] + "\n")
    got = run("--steps", str(one), "--training-gpus", "8")
    assert got["update_time"]["reference_time_s"]["interval"] == [None, None]  # no zero-width interval from a row


def test_an_areal_v02_log_is_read_for_its_whole_step_time():
    """areal-v02-console.log, in the shape of AReaL v0.2's master worker: six `(global step G) finishes. …
    #End to end# execution time: *T*s.` lines, each after an `RPC name actor_train returns {...}` line. The step
    time is read (no phase of it is logged, so all of it is the unlogged rest); its mean is
    (100.5 + 102 + 98.5 + 101 + 99 + 103) / 6."""
    got = run("--steps", str(DATA / "areal-v02-console.log"))
    assert "read as AReaL v0.2's console log: 6 of its 6 steps" in note(got, "--format auto")
    s = got["step_split"]
    assert s["rows"] == 6 and s["wall_s"] == pytest.approx(604.0 / 6)
    assert split_of(got) == {"not logged (the rest of the step)": pytest.approx(604.0 / 6)}


def drawn_bars(got: dict) -> list[tuple[float, float, float]]:
    """(row, left, width) of every bar the split plot draws for the split ``got`` printed."""
    from types import SimpleNamespace

    from trainground.calibrate.phases import Split
    from trainground.render.calibrate import split_figure

    s = got["step_split"]
    terms = [(t["term"], t["keys"], t["seconds"], t["share"]) for t in s["terms"]]
    cal = SimpleNamespace(split=Split(s["rows"], s["wall_s"], terms, s["overlap"] or "", s["unlogged"] or ""))
    (ax,) = split_figure(cal).axes
    return [(round(p.get_y() + p.get_height() / 2), p.get_x(), p.get_width()) for p in ax.patches]


def test_the_step_split_plot_is_drawn(tmp_path):
    got = CliRunner().invoke(
        main, ["calibrate", "--steps", str(DATA / "slime-console.log"), "--out", str(tmp_path / "out")]
    )
    assert got.exit_code == 0, got.output
    assert (tmp_path / "out/calibrate-step-split.png").stat().st_size > 10_000
    assert "a step's time: mean of 10 steps" in got.output and "perf/sleep_time" in got.output
    split = run("--steps", str(DATA / "slime-console.log"))
    bars = drawn_bars(split)
    # one stacked bar, a part per row of the table, end to end up to the step's mean wall time
    assert [w for _, _, w in bars] == pytest.approx([t["seconds"] for t in split["step_split"]["terms"]])
    assert {y for y, _, _ in bars} == {0} and bars[-1][1] + bars[-1][2] == pytest.approx(split["step_split"]["wall_s"])


def test_an_overlapped_split_draws_generation_apart_and_no_negative_rest():
    """slime-async.jsonl: rollout 100-113 s beside a 58-62 s training and a 0.5 s weight update in steps of
    98.5-160 s. Generation and the trainer overlap (166.5 s of them against a 114.4 s step), so the rest is each
    step less max(rollout, train) less 0.5: (59.5 + 2 - 4 + 2 + 0 + 0 + 0 + 0) / 8; nothing negative is shown."""
    got = run("--steps", str(DATA / "slime-async.jsonl"))
    s = got["step_split"]
    assert s["overlapped"] and "overlap" in s["overlap"]
    parts = split_of(got)
    assert parts["not logged (the rest of the step)"] == pytest.approx(59.5 / 8)
    assert all(t["seconds"] >= 0 for t in s["terms"])
    bars = drawn_bars(got)
    # the generation, (100 + 101 + 102 + 103 + 110 + 111 + 112 + 113) / 8, then the sync and the rest after it
    assert [v for y, x, w in bars if y == 1 for v in (x, w)] == pytest.approx([0, 106.5, 106.5, 0.5, 107, 59.5 / 8])
    # the trainer's passes from 0 beside it: log_probs 10, actor_train 50, train_time's rest 0
    assert [v for y, x, w in bars if y == 0 for v in (x, w)] == pytest.approx([0, 10, 10, 50, 60, 0])


def test_a_slime_log_with_train_time_alone_shows_the_trainer(tmp_path):
    """A slime run logging perf/train_time and no passes (the shape of a public 8-GPU sync run's table): the
    trainer's 100 s is a row of the split, and the rest is 305 - 200 - 100 s."""
    log = tmp_path / "sync.jsonl"
    log.write_text(
        "".join(
            json.dumps({"rollout/step": i, "perf/rollout_time": 200.0, "perf/train_wait_time": 205.0,
                        "perf/train_time": 100.0, "perf/step_time": 305.0}) + "\n"
            for i in range(4)
        )
    )  # fmt: skip
    parts = split_of(run("--steps", str(log)))
    assert parts == {
        "perf/rollout_time": 200.0,
        "perf/train_time": 100.0,
        "not logged (the rest of the step)": pytest.approx(5.0),
    }


def test_slime_trainer_lines_alone_count_the_sync_and_the_engines_once(tmp_path):
    """slime-console.log without the rollout manager's lines: train_wait (137.5, 109.5, ... s) holds the weight
    update (0.5 s), the engines' sleep (4 s) and wake-up (2 s); they are shown once, taken out of the wait, and the
    step (train_wait + train + the save) leaves nothing unlogged."""
    log = tmp_path / "trainer.log"
    log.write_text(
        "".join(ln for ln in (DATA / "slime-console.log").read_text().splitlines(True) if "rollout.py" not in ln)
    )
    got = run("--steps", str(log))
    parts = split_of(got)
    wait = next(k for k in parts if k.startswith("perf/train_wait_time less"))
    assert parts[wait] == pytest.approx(119.5 - 0.5 - 4.0 - 2.0)
    assert parts["not logged (the rest of the step)"] == pytest.approx(0.0, abs=1e-9)
    assert sum(parts.values()) == pytest.approx(got["step_split"]["wall_s"])


def test_numbers_as_python_prints_them():
    from trainground.calibrate.metricslog import number

    assert number("np.float64(1.5e-05)") == 1.5e-05 and number("tensor(0.25, device='cuda:0')") == 0.25
    assert math.isnan(number("nan")) and number("[1, 2]") is None and number("np.int64(7)") == 7
