"""calibrate on the logs real harnesses write: hostile files refused with the file, row and column named
(exit 2), bad rows skipped and counted, column mapping with units, string (UUID) group ids, timeouts fitted
as right-censoring, restarts and missing iterations in the step log."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from tests.calibrate_logs import TwoPools, mess, two_pool_columns, write_table
from trainground.calibrate.fit import calibrate
from trainground.calibrate.logs import TIMEOUT_SLACK, Trajectories
from trainground.cli import main

TRUTH = TwoPools(log_end=8000.0)  # ~8,300 attempts: a few seconds per fit


def run(*args: str):
    return CliRunner().invoke(main, ["calibrate", *args])


def fitted(*args: str) -> dict:
    out = run(*args, "--json")
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


def rel(a: float, b: float) -> float:
    return abs(a / b - 1)


def in_memory(cols: dict, keep: np.ndarray | None = None, cut: bool = True) -> Trajectories:
    """The log as the reader should return it: ``keep`` rows, groups as a dense index."""
    keep = np.ones(cols["start"].size, bool) if keep is None else keep
    start, end = cols["start"][keep], cols["end"][keep]
    log_end = float(np.nanmax(np.concatenate([end, start])))
    return Trajectories(
        "memory",
        start,
        end,
        cols["output_tokens"][keep],
        log_end,
        group=np.unique(cols["group"][keep], return_inverse=True)[1],
        cut=cols["censored_at"][keep] - start if cut else None,
    )


# ---------------------------------------------------------------- hostile files

TRAJECTORY_HEAD = "start,end,output_tokens\n"
GOOD_ROWS = "".join(f"{i},{i + 100 + 7 * i},50\n" for i in range(40))

HOSTILE = {
    "deeply nested JSONL": (
        "t.jsonl",
        '{"start": 0, "end": 10, "output_tokens": 5}\n{"start": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
        "line 2",
        "nests objects or arrays more than 32 deep",
    ),
    "nested cell": (
        "t.jsonl",
        "".join(f'{{"start": [{i}, 1], "end": {i + 50}, "output_tokens": 5}}\n' for i in range(20)),
        "row 1 (line 1), column 'start'",
        "holds nested values",
    ),
    "non-UTF-8 byte": (
        "t.csv",
        TRAJECTORY_HEAD + GOOD_ROWS + "41,150,\xff5\n",
        "row 41 (line 42), column 'output_tokens'",
        "is not UTF-8 text (byte 0xff)",
    ),
    "duplicated header": (
        "t.csv",
        "start,end,output_tokens,end\n" + "".join(f"{i},{i + 9},5,{i + 9}\n" for i in range(20)),
        "column 'end'",
        "appears twice in the header (columns 2 and 4)",
    ),
    "every end equals its start": (
        "t.csv",
        TRAJECTORY_HEAD + "".join(f"{i},{i},5\n" for i in range(30)),
        "column 'end'",
        "ends at its start",
    ),
    "times in milliseconds": (
        "t.csv",
        TRAJECTORY_HEAD + "".join(f"{1.7e12 + i * 1e3},{1.7e12 + i * 1e3 + 9e5},5\n" for i in range(30)),
        "column 'start'",
        "milliseconds?",
    ),
    "too many bad rows": (
        "t.csv",
        TRAJECTORY_HEAD + GOOD_ROWS + "".join(f"{i},{i - 5},5\n" for i in range(50, 53)),
        "row 41 (line 42), column 'end'",
        "3 of 43 rows have a bad cell, more than the 1%",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_trajectory_logs_exit_2_naming_file_row_and_column(tmp_path, case):
    name, text, where, rule = HOSTILE[case]
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8").replace("\xff".encode(), b"\xff"))
    out = run("--trajectories", str(path), "--inference-gpus", "8")
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output and "internal error" not in out.output
    assert f"{path}: {where}" in out.output and rule in out.output, out.output


def _trajectories(tmp_path, seed: int = 3):
    cols = two_pool_columns(TRUTH, seed)
    write_table(tmp_path / "t.csv", cols)
    return cols, tmp_path / "t.csv"


def test_update_times_in_milliseconds_are_refused_and_declared_units_read(tmp_path):
    _, traj = _trajectories(tmp_path)
    rows = "".join(f"{i},{(300 + i) * 1000},64\n" for i in range(20))
    (tmp_path / "s.csv").write_text("iteration,update_ms,training_gpus\n" + rows)
    out = run("--trajectories", str(traj), "--steps", str(tmp_path / "s.csv"), "--columns", "update_s=update_ms")
    assert out.exit_code == 2 and "column 'update_ms' (read as update_s)" in out.output, out.output
    assert "longer than a day: milliseconds?" in out.output
    got = fitted("--trajectories", str(traj), "--steps", str(tmp_path / "s.csv"), "--columns", "update_s=update_ms:ms")
    assert got["update_time"]["reference_time_s"]["value"] == pytest.approx(np.median(300 + np.arange(20)))


def test_an_unknown_mapping_name_is_a_usage_error(tmp_path):
    _, traj = _trajectories(tmp_path)
    out = run("--trajectories", str(traj), "--columns", "begin=ts")
    assert out.exit_code == 2 and "'begin' is not a column calibrate reads" in out.output, out.output


# ---------------------------------------------------------------- bad rows skipped and counted


def test_nan_rows_and_clock_skew_are_skipped_and_counted(tmp_path):
    cols = two_pool_columns(TRUTH, 4)
    messy, picked = mess(cols, seed=5)
    write_table(tmp_path / "m.csv", messy, nan_as="NaN")
    got = fitted("--trajectories", str(tmp_path / "m.csv"), "--inference-gpus", "128")
    note = next(n for n in got["notes"] if "skipped" in n)
    assert "8 of" in note and "3 at column 'end'" in note and "5 at column 'output_tokens'" in note, note
    keep = np.ones(cols["start"].size, bool)
    keep[picked] = False
    reference = calibrate(in_memory(cols, keep), None, None, 128).to_json()
    for key in ("median", "p99"):
        assert got["occupancy"][key]["value"] == pytest.approx(reference["occupancy"][key]["value"], rel=1e-6)


# ---------------------------------------------------------------- column mapping, UUID groups


def test_a_harness_log_reads_through_a_column_mapping_with_uuid_groups(tmp_path):
    cols = two_pool_columns(TRUTH, 6)
    assert len(cols["group"][0]) == 32  # UUID-like hex ids
    renamed = {"ts_begin": cols["start"], "ts_end": cols["end"], "n_tokens": cols["output_tokens"]}
    renamed |= {"rollout_id": cols["group"], "cut_at": cols["censored_at"], "worker": np.arange(cols["start"].size)}
    write_table(tmp_path / "h.jsonl", renamed)
    mapping = "start=ts_begin,end=ts_end,output_tokens=n_tokens,group=rollout_id,censored_at=cut_at"
    got = fitted("--trajectories", str(tmp_path / "h.jsonl"), "--columns", mapping, "--inference-gpus", "128")
    (tmp_path / "map.yaml").write_text("\n".join(f"{k}: {v}" for k, v in (p.split("=") for p in mapping.split(","))))
    by_file = fitted("--trajectories", str(tmp_path / "h.jsonl"), "--columns", str(tmp_path / "map.yaml"))
    reference = calibrate(in_memory(cols), None, None, 128).to_json()
    for key in ("median", "p99"):
        assert got["occupancy"][key] == reference["occupancy"][key] | {"source": got["occupancy"][key]["source"]}
        assert by_file["occupancy"][key]["value"] == got["occupancy"][key]["value"]
    assert got["group_correlation"]["value"] == pytest.approx(reference["group_correlation"]["value"])
    assert "missing" not in run("--trajectories", str(tmp_path / "h.jsonl"), "--columns", mapping).output
    unmapped = run("--trajectories", str(tmp_path / "h.jsonl"))
    assert unmapped.exit_code == 2 and "missing columns 'start', 'end', 'output_tokens'" in unmapped.output


# ---------------------------------------------------------------- timeouts as right-censoring


@pytest.mark.parametrize("how", ["censored_at", "--timeout"])
def test_a_timeout_is_fitted_as_right_censoring(tmp_path, how):
    cols = two_pool_columns(TRUTH, 7, censored_at=how == "censored_at")
    write_table(tmp_path / "t.csv", cols)
    extra = ["--timeout", f"{TRUTH.timeout:.1f}"] if how == "--timeout" else []
    got = fitted("--trajectories", str(tmp_path / "t.csv"), *extra)
    occ = got["occupancy"]
    assert occ["law"] == "lognormal"
    assert rel(occ["p99"]["value"], TRUTH.p99) < 0.10
    assert rel(occ["median"]["value"], TRUTH.median) < 0.05
    life = cols["end"] - cols["start"]
    if how == "censored_at":
        reached = ~np.isnan(cols["censored_at"])
    else:  # the documented rule: a lifetime of at least T (1 - TIMEOUT_SLACK) ran into the timeout
        reached = ~np.isnan(life) & (life >= round(TRUTH.timeout, 1) * (1 - TIMEOUT_SLACK))
    assert occ["timeout_cut_rows"] == reached.sum() > 100
    naive = occ["if_timeout_ignored"]
    assert rel(naive["kaplan_meier_p99"], TRUTH.timeout) < 0.01  # the naive tail stops at the timeout
    assert naive["p99"] < occ["p99"]["value"] * 0.95


def test_censored_intervals_cover_the_truth_in_most_repetitions():
    truth = TwoPools(log_end=12000.0, pools=(TwoPools().pools[0],))  # ~8,500 attempts, ~220 cut by the timeout
    reps, covered = 30, {"median": 0, "p99": 0}
    for seed in range(reps):
        cal = calibrate(in_memory(two_pool_columns(truth, 100 + seed)), None, None, 64, seed=seed)
        for key, true in (("median", truth.median), ("p99", truth.p99)):
            fig = cal.occupancy.figures[key]
            covered[key] += fig.low <= true <= fig.high
    # a 90 % interval covers in fewer than 22 of 30 repetitions with probability 0.8 % (binomial)
    assert min(covered.values()) >= 22, covered


# ---------------------------------------------------------------- step logs: restarts, missing iterations


def test_restarts_keep_the_last_row_and_missing_iterations_count_in_the_cadence(tmp_path):
    _, traj = _trajectories(tmp_path)
    first = [(i, 600.0 * i, 100.0) for i in range(10)]
    rerun = [(i, 600.0 * (i + 4), 300.0) for i in range(6, 12)]  # a restart from the checkpoint of iteration 6
    later = [(i, 600.0 * (i + 4), 300.0) for i in range(13, 20)]  # iteration 12 is missing from the log
    rows = first + rerun + later
    (tmp_path / "s.csv").write_text(
        "iteration,boundary,update_s,training_gpus\n" + "".join(f"{i},{b},{u},64\n" for i, b, u in rows)
    )
    got = fitted("--trajectories", str(traj), "--steps", str(tmp_path / "s.csv"))
    assert any("4 rows repeat an earlier iteration number" in n for n in got["notes"]), got["notes"]
    kept_updates = [100.0] * 6 + [300.0] * 13
    assert got["update_time"]["reference_time_s"]["value"] == pytest.approx(np.median(kept_updates))
    boundaries = [600.0 * i for i in range(6)] + [600.0 * (i + 4) for i in list(range(6, 12)) + list(range(13, 20))]
    span = 19.0
    assert got["cadence"]["achieved_s"]["value"] == pytest.approx((boundaries[-1] - boundaries[0]) / span)
    assert "1 iterations missing" in got["cadence"]["achieved_s"]["note"]


def test_rows_copied_exactly_are_said_apart_from_a_restarts_repeats(tmp_path):
    """Iteration 0 three times in identical rows is no restart (a re-run takes its own time): the note says so,
    and counts the restart's repeats (iterations 6-7 again, at other times) apart."""
    _, traj = _trajectories(tmp_path)
    rows = [(0, 0.0, 100.0)] * 3 + [(i, 600.0 * i, 100.0) for i in range(1, 8)]
    rows += [(i, 600.0 * (i + 2), 300.0) for i in range(6, 12)]
    (tmp_path / "s.csv").write_text(
        "iteration,boundary,update_s,training_gpus\n" + "".join(f"{i},{b},{u},64\n" for i, b, u in rows)
    )
    notes = fitted("--trajectories", str(traj), "--steps", str(tmp_path / "s.csv"))["notes"]
    assert any("2 rows are exact copies of another row of their iteration" in n for n in notes), notes
    assert any("2 rows repeat an earlier iteration number (a restart" in n for n in notes), notes


def test_a_relative_step_log_beside_an_epoch_trajectory_log_is_aligned(tmp_path):
    cols = two_pool_columns(TRUTH, 8)
    first = np.nanmin(cols["start"])
    for key in ("start", "end", "censored_at"):
        cols[key] = cols[key] - first  # the relative log counts from its earliest start, as the aligned one does
    epoch = 1.764e9
    write_table(tmp_path / "epoch.csv", cols | {k: cols[k] + epoch for k in ("start", "end", "censored_at")})
    write_table(tmp_path / "rel.csv", cols)
    first = 30
    rows = "".join(f"{i},{first + 600 * i},100,64,128\n" for i in range(1, 12))
    (tmp_path / "s.csv").write_text("iteration,boundary,update_s,training_gpus,inference_gpus\n" + rows)
    a = fitted("--trajectories", str(tmp_path / "epoch.csv"), "--steps", str(tmp_path / "s.csv"))
    b = fitted("--trajectories", str(tmp_path / "rel.csv"), "--steps", str(tmp_path / "s.csv"))
    assert any("read as counted from the trajectory log's earliest start" in n for n in a["notes"])
    assert a["occupancy"]["median"]["value"] == pytest.approx(b["occupancy"]["median"]["value"], rel=1e-9)
    assert a["tokens_per_gpu_s"]["value"] == pytest.approx(b["tokens_per_gpu_s"]["value"], rel=1e-6)


def test_tokens_per_gpu_s_leave_out_the_time_no_attempt_runs(tmp_path):
    """One attempt a second, each 5 s and 100 tokens, for 1,000 s; nothing for 2,341 s; then 1,000 s more, on 8
    GPUs: 12.5 tokens/s per GPU while running. The window is the span of starts, 0-4,344 s, less 10 % at each end
    (434.4-3,909.6 s); the 1,004-3,345 s with no attempt running is left out of it, so the 1,130 attempts started
    in the window give 113,000 tokens over 8 x (3,475.2 - 2,341) GPU-s."""
    starts = [float(t) for t in range(1000)] + [3345.0 + t for t in range(1000)]
    log = tmp_path / "gap.csv"
    log.write_text("start,end,output_tokens\n" + "".join(f"{t},{t + 5},100\n" for t in starts))
    out = CliRunner().invoke(main, ["calibrate", "--trajectories", str(log), "--inference-gpus", "8", "--json"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.output)
    assert got["window"]["idle_s"] == pytest.approx(3345 - 1004)
    assert got["tokens_per_gpu_s"]["value"] == pytest.approx(113_000 / (8 * (3909.6 - 434.4 - 2341)), rel=1e-9)
