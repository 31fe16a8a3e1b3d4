"""`simulate` and `solve --simulate` on the command line: MODEL.md §10 keys, --plan, bad plans (exit 2),
traces with the calibration's exact columns, plots, and the start-up figures of `explain`."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainground.cli import main
from trainground.simulation.trace import ITERATION_COLUMNS, TRAJECTORY_COLUMNS

DATA = Path(__file__).parent / "data" / "simulate"
CONSTANT = str(DATA / "constant.yaml")
DROP = str(DATA / "drop.yaml")
KEYS = {
    "makespan_s",
    "startup_s",
    "iteration_mean_s",
    "iteration_p99_s",
    "inflight_mean",
    "inflight_p99",
    "inflight_max",
    "mean_version_gap",
    "p99_version_gap",
    "exceedance",
    "group_drop_rate",
    "sandbox_wait_share",
    "on_time",
}


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """`solve --json` results of two instances, as files."""
    folder = tmp_path_factory.mktemp("plans")
    out = {}
    for name, path in (("constant", CONSTANT), ("drop", DROP)):
        run = invoke("solve", path, "--json")
        assert run.exit_code == 0, run.output
        out[name] = folder / f"{name}.json"
        out[name].write_text(run.output)
    return out


def test_json_report_has_the_model_keys(solved):
    run = invoke("simulate", CONSTANT, "--json", "--replications", "2", "--seed", "4")
    assert run.exit_code == 0, run.output
    report = json.loads(run.output)
    assert {"instance", "plan", "seed", "replications", "iterations", "simulated", "predicted"} <= set(report)
    assert KEYS <= set(report["simulated"]) and KEYS <= set(report["predicted"])
    assert "on_time_share" in report["simulated"]
    assert report["seed"] == 4 and report["replications"] == 2 and report["iterations"] == 50
    assert report["plan"] == json.loads(solved["constant"].read_text())["plan"]
    assert report["simulated"]["startup_s"] == pytest.approx(278.125, rel=1e-12)  # 250 + 15 · 1.875 s


def test_plan_file_replays_that_plan(solved):
    default = json.loads(invoke("simulate", DROP, "--json", "--iterations", "30").output)
    given = invoke("simulate", DROP, "--plan", solved["drop"], "--json", "--iterations", "30")
    assert given.exit_code == 0, given.output
    assert json.loads(given.output) == default
    assert default["deadline_s"] == pytest.approx(30 + (20000 - 30) * 30 / 300)  # pro rata


def test_plan_that_does_not_fit_is_exit_2(solved, tmp_path):
    run = invoke("simulate", CONSTANT, "--plan", solved["drop"])
    assert run.exit_code == 2
    assert str(solved["drop"]) in run.output and "does not fit" in run.output and "Traceback" not in run.output
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    run = invoke("simulate", CONSTANT, "--plan", bad)
    assert run.exit_code == 2 and "bad.json" in run.output and "not a JSON result" in run.output
    bad.write_text(json.dumps({"instance": "x", "status": "infeasible", "plan": None}))
    run = invoke("simulate", CONSTANT, "--plan", bad)
    assert run.exit_code == 2 and "no plan" in run.output
    broken = json.loads(solved["constant"].read_text())
    broken["plan"]["cadence_s"] = "fast"
    bad.write_text(json.dumps(broken))
    run = invoke("simulate", CONSTANT, "--plan", bad)
    assert run.exit_code == 2 and "plan.cadence_s" in run.output
    run = invoke("simulate", CONSTANT, "--plan", tmp_path / "missing.json")
    assert run.exit_code == 2 and "cannot read" in run.output


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_trace_has_the_calibration_columns(tmp_path, fmt):
    run = invoke("simulate", DROP, "--iterations", "20", "--trace", tmp_path, "--trace-format", fmt, "--json")
    assert run.exit_code == 0, run.output
    report = json.loads(run.output)
    runs = report["runs"][0]
    if fmt == "csv":
        with (tmp_path / "trajectories.csv").open() as handle:
            rows = list(csv.reader(handle))
        header, body = rows[0], rows[1:]
        with (tmp_path / "iterations.csv").open() as handle:
            iterations = list(csv.DictReader(handle))
        assert list(iterations[0]) == list(ITERATION_COLUMNS)
    else:
        import pyarrow.parquet as pq

        table = pq.read_table(tmp_path / "trajectories.parquet")
        header, body = table.column_names, table.to_pylist()
        iterations = pq.read_table(tmp_path / "iterations.parquet").to_pylist()
        assert list(iterations[0]) == list(ITERATION_COLUMNS)
    assert list(header) == list(TRAJECTORY_COLUMNS)
    assert len(body) == runs["attempts_launched"]
    assert len(iterations) == 20
    assert sum(int(r["groups_consumed"]) for r in iterations) * 8 == runs["attempts_consumed"]
    assert sum(int(r["groups_dropped"]) for r in iterations) * 8 == runs["attempts_dropped"]
    assert float(iterations[0]["boundary"]) == pytest.approx(runs["startup_s"])


def test_csv_without_pyarrow_writes_the_same_cells(tmp_path):
    from trainground.models.load import load_instance
    from trainground.simulation import trace
    from trainground.simulation.engine import replicate
    from trainground.simulation.runner import checked_metrics, read_plan
    from trainground.simulation.setup import setup_of

    inst = load_instance(DATA / "drop.yaml")
    plan = read_plan(_solve_to(tmp_path, DROP))
    setup = setup_of(inst, plan, checked_metrics(inst, plan, "x"), iterations=12)
    run = replicate(setup, [0, 0])
    cols = trace.trajectory_columns(setup, run)
    trace._write_arrow(tmp_path / "a.csv", cols, trace.TRAJECTORY_COLUMNS, "csv")
    trace._write_csv(tmp_path / "b.csv", cols, trace.TRAJECTORY_COLUMNS)
    with (tmp_path / "a.csv").open() as a, (tmp_path / "b.csv").open() as b:
        for left, right in zip(csv.reader(a), csv.reader(b), strict=True):
            assert [_cell(x) for x in left] == [_cell(x) for x in right]


def _cell(text: str):
    try:
        return float(text)
    except ValueError:
        return text


def _solve_to(folder: Path, instance: str) -> Path:
    path = folder / "plan.json"
    path.write_text(invoke("solve", instance, "--json").output)
    return path


def test_human_output_and_plots(tmp_path):
    run = invoke("simulate", CONSTANT, "--out", tmp_path)
    assert run.exit_code == 0, run.output
    for text in ("makespan", "start-up (first batch)", "simulated: on time", "model:", "difference"):
        assert text in run.output
    for name in ("simulate-inflight.png", "simulate-iterations.png", "simulate-version-gaps.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((tmp_path / "simulate.json").read_text())["instance"] == "sim-constant"


def test_workers_and_scheduler_exclude_each_other():
    run = invoke("simulate", CONSTANT, "--workers", "2", "--scheduler", "tcp://127.0.0.1:1")
    assert run.exit_code == 2 and "not both" in run.output


def test_solve_prints_startup_and_the_simulated_verdict():
    run = invoke("solve", CONSTANT, "--simulate")
    assert run.exit_code == 0, run.output
    assert "start-up: not counted" in run.output and "first batch needs" in run.output
    assert "simulated (1 replication(s)): on time" in run.output
    plain = invoke("solve", CONSTANT, "--set", "schedule.count_startup=true")
    assert "start-up: counted" in plain.output and "simulated" not in plain.output
    as_json = json.loads(invoke("solve", CONSTANT, "--json", "--simulate", "1").output)
    assert as_json["simulation"]["replications"] == 1 and as_json["simulation"]["on_time"] is True
    assert as_json["simulation"]["makespan_s"] == pytest.approx(250 + (50 * 16 - 1) * 1.875 + 10 + 5, rel=1e-12)


def test_explain_shows_the_startup_figures():
    out = json.loads(invoke("explain", "instances/seed-week-75.yaml", "--cadence", "604", "--json").output)
    assert out["startup_fill_s"] == pytest.approx(3769.5, abs=0.1)
    assert out["makespan_with_startup_s"] == pytest.approx(
        out["startup_fill_s"] + 999 * 604 + 300 * 7000 / 3480, rel=1e-12
    )


def test_trace_versions_and_times_agree_with_the_boundaries(tmp_path):
    """What a calibration reads off the trace holds together: the version at launch is the number of
    boundaries at or before the launch, a consumed group is within the version cap and complete by its
    boundary, a dropped one is past the cap and not consumed, every sandbox starts after launch."""
    import numpy as np

    run = invoke("simulate", DROP, "--iterations", "25", "--trace", tmp_path, "--json")
    assert run.exit_code == 0, run.output
    K = json.loads(run.output)["plan"]["versions_kept"]
    with (tmp_path / "iterations.csv").open() as handle:
        boundary = np.array([float(r["boundary"]) for r in csv.DictReader(handle)])
    with (tmp_path / "trajectories.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    launch = np.array([float(r["launch"]) for r in rows])
    start = np.array([float(r["start"] or "nan") for r in rows])
    end = np.array([float(r["end"] or "nan") for r in rows])
    version = np.array([int(r["version_start"]) for r in rows])
    consumed = np.array([int(r["version_consumed"]) if r["version_consumed"] else -1 for r in rows])
    dropped = np.array([r["dropped"] == "true" for r in rows])
    assert np.array_equal(version, np.searchsorted(boundary, launch, side="right"))
    taken = consumed >= 0
    assert taken.any() and dropped.any() and not np.any(taken & dropped)
    assert np.all(consumed[taken] - version[taken] <= K) and np.all(end[taken] <= boundary[consumed[taken]])
    assert np.all(consumed[taken] >= version[taken])
    ran = ~np.isnan(start)
    assert np.all(start[ran] >= launch[ran]) and np.all(end[~np.isnan(end)] > start[~np.isnan(end)])
    group = np.array([int(r["group"]) for r in rows])
    for g in np.unique(group[dropped])[:50]:  # dropped groups: past the cap at some boundary, never consumed
        mine = group == g
        assert np.all(consumed[mine] == -1) and boundary.size - 1 - version[mine][0] > K
