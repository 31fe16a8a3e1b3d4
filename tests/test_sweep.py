"""`sweep`: the product of edits, every point a row (invalid, infeasible or solved), one model reused."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.test_frontier import png_size
from trainground.cli import main
from trainground.drivers.tradeoffs.sweep import Axis, SweepError, chunks, parse_axis, run_sweep, split_values
from trainground.models.edits import load_edited
from trainground.models.load import InstanceError
from trainground.render.sweep_plots import HEATMAP_PX, SWEEP_PX
from trainground.solver.solve import solve_instance

SEED = Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml"
NARROW = "schedule.cadence.min=590s"  # the seed's last 15 grid points: the same answers, quicker
TIMING = {"seconds", "highs_seconds"}


def _axes(*options: str) -> list[Axis]:
    return [parse_axis(o) for o in options]


def _same_as_fresh_solve(row: dict, objective: str | None = None) -> None:
    """A sweep row agrees with solving its edited instance from scratch."""
    edits = [f"{path}={text}" for path, text in row["edits"].items()]
    if row["status"] == "invalid":
        with pytest.raises(InstanceError):
            load_edited(SEED, edits)
        return
    fresh = solve_instance(load_edited(SEED, edits), objective)
    assert row["status"] == fresh.status, (row["edits"], row["status"], fresh.status)
    if fresh.status == "optimal":
        assert row["objective_value"] == pytest.approx(fresh.objective_value, rel=1e-9), row["edits"]
        assert row["makespan_s"] == fresh.plan.makespan_s
        assert row["nodes"] == sum(c.count for c in fresh.plan.local_nodes)
        assert row["vms"] == sum(c.count for c in fresh.plan.cloud_vms)


def test_values_split_on_top_level_commas_only():
    assert split_values("60,75,200") == ["60", "75", "200"]
    assert split_values("7d, 14d") == ["7d", "14d"]
    assert split_values("{a: 1, b: 2},{a: 3}") == ["{a: 1, b: 2}", "{a: 3}"]
    assert split_values("[1,2],[3, 4],5") == ["[1,2]", "[3, 4]", "5"]
    assert split_values("'a,b',c") == ["'a,b'", "c"]
    axis = parse_axis("environment.node_types[0].density={container: 1048},{container: 3200}")
    assert axis.path == "environment.node_types[0].density"
    assert axis.texts == ("{container: 1048}", "{container: 3200}")
    assert not axis.numeric and parse_axis("a.b=1,2.5").numeric


@pytest.mark.parametrize("option", ["no-equals-sign", "a..b=1", "a.b=", "a.b=1,,2"])
def test_bad_axes_are_refused(option):
    with pytest.raises(SweepError):
        parse_axis(option)


def test_chunks_are_contiguous_and_cover_everything():
    items = list(range(11))
    parts = chunks(items, 3)
    assert parts == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]
    assert chunks(items[:2], 4) == [[0], [1]]


@pytest.fixture(scope="module")
def big_sweep():
    """110 points: 5 invalid (a negative throughput), 5 infeasible (10 tokens/s/GPU), 100 solved."""
    tiers = ",".join(["-1", "10"] + [str(60 + 4 * i) for i in range(20)])
    axes = _axes(
        NARROW,
        f"inference.shapes[0].tokens_per_gpu_s={tiers}",
        "environment.node_types[0].density.container=800,1048,2000,3200,6400",
    )
    progress = []
    report = run_sweep(SEED, axes, on_progress=lambda done, total: progress.append((done, total)))
    return report, progress


def test_sweep_over_a_hundred_points(big_sweep):
    report, progress = big_sweep
    rows = report.rows
    assert len(rows) == 110 and [r["index"] for r in rows] == list(range(110))
    assert progress[-1] == (110, 110) and len(progress) == 110
    counts = report.counts
    assert counts == {"optimal": 100, "infeasible": 5, "invalid": 5}
    for row in rows:
        tier = row["edits"]["inference.shapes[0].tokens_per_gpu_s"]
        if tier == "-1":
            assert row["status"] == "invalid"
            assert "inference.shapes[0].tokens_per_gpu_s" in row["message"] and "must be > 0" in row["message"]
            assert row["result"] is None
        elif tier == "10":
            assert row["status"] == "infeasible"
            assert row["message"] and row["result"]["diagnosis"]
            assert row["objective_value"] is None
        else:
            assert row["status"] == "optimal" and row["result"]["plan"]["cadence_s"] == row["cadence_s"]
    assert report.builds < 10, "one model re-solved across points, not one per point"
    for row in rows[2::9]:
        _same_as_fresh_solve(row)


def test_a_sweep_over_bounds_changes_the_answer():
    """Variable bounds (node and VM caps) and a pool size, changed between re-solves of one model."""
    axes = _axes(
        NARROW,
        "environment.peak_to_mean=1.3",
        "gpu_pools[0].gpus=10000,8000",
        "environment.cloud.vm_types[0].max_vms=200,50,0",
        "environment.node_types[0].max_nodes=null,25",
    )
    report = run_sweep(SEED, axes)
    for row in report.rows:
        _same_as_fresh_solve(row)
    solved = [r for r in report.rows if r["status"] == "optimal"]
    assert len({round(r["objective_value"], 2) for r in solved}) >= 3
    for r in solved:
        assert r["vms"] <= int(r["edits"]["environment.cloud.vm_types[0].max_vms"])
    assert len({r["vms"] for r in solved}) >= 3  # the VM cap moves the spill-over, run after run
    assert any(r["status"] == "infeasible" for r in report.rows)
    by_edits = {tuple(r["edits"].values())[2:]: r for r in report.rows}
    assert by_edits[("10000", "200", "null")]["status"] == "optimal"
    assert (
        by_edits[("8000", "200", "null")]["status"] == "infeasible"
    )  # the seed's steady_state plan uses 8,048 (docs/api/cell-2.txt: 'gpus[main]': 8048)


def test_workers_give_the_same_rows():
    axes = _axes(
        NARROW,
        "inference.shapes[0].tokens_per_gpu_s=-1,10,75,90,120,200",
        "environment.node_types[0].density.container=1048,3200",
    )
    one = run_sweep(SEED, axes)
    two = run_sweep(SEED, axes, workers=2)
    assert two.workers == 2
    strip = [{k: v for k, v in row.items() if k not in TIMING | {"result"}} for row in one.rows]
    assert strip == [{k: v for k, v in row.items() if k not in TIMING | {"result"}} for row in two.rows]


def test_cli_writes_table_files_and_plots(tmp_path):
    out = tmp_path / "sweep"
    args = [
        "sweep",
        str(SEED),
        "--set",
        NARROW,
        "--set",
        "inference.shapes[0].tokens_per_gpu_s=0,75,200",
        "--set",
        "environment.node_types[0].density={container: 1048},{container: 3200}",
        "--out",
        str(out),
    ]
    run = CliRunner().invoke(main, args + ["--json"])
    assert run.exit_code == 0, run.output
    printed = json.loads(run.output)  # no progress bar or table mixed into --json
    assert printed["counts"]["optimal"] == 4 and printed["counts"]["invalid"] == 2
    saved = json.loads((out / "sweep.json").read_text())
    assert [p["status"] for p in saved["points"]] == [p["status"] for p in printed["points"]]
    assert saved["points"][2]["result"]["status"] == "optimal"
    with (out / "sweep.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 6 and rows[3]["environment.node_types[0].density"] == "{container: 3200}"
    assert png_size((out / "sweep-inference-shapes-0-tokens-per-gpu-s.png").read_bytes()) == SWEEP_PX
    assert png_size((out / "sweep-environment-node-types-0-density.png").read_bytes()) == SWEEP_PX
    assert png_size((out / "sweep-heatmap.png").read_bytes()) == HEATMAP_PX
    human = CliRunner().invoke(main, args)
    assert human.exit_code == 0, human.output
    assert "6 points: 4 optimal, 2 invalid" in human.output


def test_cli_refuses_a_malformed_axis(tmp_path):
    run = CliRunner().invoke(main, ["sweep", str(SEED), "--set", "a..b=1,2", "--out", str(tmp_path)])
    assert run.exit_code == 2 and "a..b" in run.output


def test_the_a2_scan():
    """Appendix A2: 3,000 cards at 1,000 / 2,000 tokens/s/GPU -> ~96,000 / ~191,000 in flight (median
    occupancy); ~91/182 nodes at 1,048 environments per node, ~30/60 at 3,200."""
    axes = _axes(
        "inference.shapes[0].tokens_per_gpu_s=1000,2000", "environment.node_types[0].density.container=1048,3200"
    )
    rows = run_sweep(SEED.parent / "a2-scan.yaml", axes).rows
    assert [r["status"] for r in rows] == ["optimal"] * 4
    inflight = [r["result"]["metrics"]["inflight_mean"] for r in rows]
    assert inflight[0] == pytest.approx(96_000, rel=0.01) and inflight[2] == pytest.approx(191_000, rel=0.01)
    nodes = [r["nodes"] for r in rows]
    assert nodes[1] == 30 and nodes[3] == 60  # 3,200 per node
    assert abs(nodes[0] - 91) <= 1 and abs(nodes[2] - 182) <= 1  # 1,048 per node: the in-flight mean / 1,048
    assert {r["inference_gpus"] for r in rows} == {3000}


def test_two_weeks_admit_the_60_tier_on_3000_cards():
    axes = _axes("schedule.deadline=7d,14d", "inference.shapes[0].tokens_per_gpu_s=60,200")
    rows = run_sweep(SEED.parent / "seed-3000-cards.yaml", axes).rows
    status = {tuple(r["edits"].values()): r["status"] for r in rows}
    assert status == {
        ("7d", "60"): "infeasible",
        ("7d", "200"): "optimal",
        ("14d", "60"): "optimal",
        ("14d", "200"): "optimal",
    }


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("inference.shapes[3].tokens_per_gpu_s=50,60", "inference.shapes[3]: no such list item"),
        ("workload.iterations=0,-5", "workload.iterations"),
    ],
    ids=["no-such-item", "bad-values"],
)
def test_a_sweep_with_no_valid_point_exits_2_naming_the_file(option, said, tmp_path):
    result = CliRunner().invoke(main, ["sweep", str(SEED), "--set", option, "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert f"{SEED}: no point of the sweep is a valid instance; the first: " in result.output
    assert said in result.output.splitlines()[-1]


def test_a_sweep_with_one_valid_point_exits_0(tmp_path):
    result = CliRunner().invoke(
        main, ["sweep", str(SEED), "--set", "workload.iterations=0,1000", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output


class _Ticks:
    """time as the sweep reads it, its wall clock moving 1,000 s each time it is read (a solve's real time is
    then never what ends it)."""

    perf_counter = staticmethod(__import__("time").perf_counter)

    def __init__(self) -> None:
        self.now = 0.0

    def time(self) -> float:
        self.now += 1000.0
        return self.now


def test_the_time_limit_bounds_the_whole_sweep(monkeypatch):
    """2,500 s on a clock read once at the start and once per point: the first two points are solved, each
    given what is left, and the third is a time_limit row, not solved."""
    import trainground.drivers.tradeoffs.sweep as driver
    from trainground.solver.solve import Planner

    given = []
    original = Planner.solve

    def spy(self, objective=None, **options):
        given.append(options.get("time_limit"))
        return original(self, objective, **options)

    monkeypatch.setattr(Planner, "solve", spy)
    monkeypatch.setattr(driver, "time", _Ticks())
    axes = _axes(NARROW, "planning.basis=steady_state", "schedule.deadline=7d,8d,9d")
    rows = run_sweep(SEED, axes, time_limit=2500.0).rows
    assert [r["status"] for r in rows] == ["optimal", "optimal", "time_limit"]
    assert given[:2] == [1500.0, 500.0]
    assert rows[2]["result"] is None and "--time-limit ran out" in rows[2]["message"]


def test_a_sweep_cut_by_its_time_limit_exits_4_with_its_rows_written(monkeypatch, tmp_path):
    import trainground.drivers.tradeoffs.sweep as driver

    monkeypatch.setattr(driver, "time", _Ticks())
    args = ["sweep", str(SEED), "--set", NARROW, "--set", "schedule.deadline=7d,8d", "--basis", "steady_state"]
    result = CliRunner().invoke(main, [*args, "--time-limit", "1500", "--out", str(tmp_path)])
    assert result.exit_code == 4, result.output
    rows = json.loads((tmp_path / "sweep.json").read_text())["points"]
    assert [r["status"] for r in rows] == ["optimal", "time_limit"]
