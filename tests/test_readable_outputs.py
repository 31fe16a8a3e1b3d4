"""Plots and tables people read: names instead of paths, GPUs per pool, no empty panels, labels that
say what bounded a frontier, at most 12 corner rows unless --all."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from rich.console import Console

from trainground.cli import main
from trainground.drivers.batch.run import SUMMARY_COLUMNS, summary_row
from trainground.drivers.tradeoffs.frontier import csv_columns, frontiers
from trainground.drivers.tradeoffs.sweep import parse_axis, run_sweep
from trainground.models.edits import edited, load_edited
from trainground.models.load import load_instance
from trainground.render.labels import field_label
from trainground.render.plots import FAST_END, _pool_line
from trainground.render.sweep_plots import sweep_panels
from trainground.render.tradeoffs import CORNER_ROWS, render_frontier, render_sweep, shown_corners
from trainground.solver.solve import solve_instance

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"
TWO_POOLS = ROOT / "tests" / "data" / "compare" / "two-pools.yaml"


def test_field_labels_name_the_item_not_its_index():
    names = {"inference.shapes[1]": "h200-tp8", "gpu_pools[0]": "h100", "environment.node_types[0]": "standard"}
    assert field_label("inference.shapes[1].tokens_per_gpu_s", names) == "tokens/s/GPU (shape h200-tp8)"
    assert field_label("gpu_pools[0].gpus", names) == "GPUs (pool h100)"
    assert (
        field_label("environment.node_types[0].density.container", names) == "density of container (node type standard)"
    )
    assert field_label("schedule.deadline") == "deadline"
    assert (
        field_label("stages.list[2].tokens_per_attempt", {"stages.list[2]": "late"})
        == "tokens per attempt (stage late)"
    )
    assert field_label("stages.list[*].occupancy.median") == "occupancy median (every stage)"
    assert field_label("inference.shapes[3].version_slowdown", names) == "slowdown per version (shape #3)"


@pytest.fixture(scope="module")
def two_pool_sweep():
    axes = [parse_axis("inference.shapes[1].tokens_per_gpu_s=100,180"), parse_axis("gpu_pools[1].gpus=1024,2048")]
    return run_sweep(TWO_POOLS, axes)


def test_sweep_headers_and_csv_name_fields_and_split_gpus_by_pool(two_pool_sweep):
    report = two_pool_sweep
    assert report.names == {"inference.shapes[1]": "h200-tp8", "gpu_pools[1]": "h200"}
    console = Console(width=400, record=True)
    render_sweep(console, report, [])
    text = console.export_text()
    header = text.splitlines()[0]
    assert "tokens/s/GPU (shape h200-tp8)" in header and "GPUs (pool h200)" in header
    assert "GPUs in h100" in header and "GPUs in h200" in header
    assert "inference.shapes[1]" not in header
    assert report.pools == ["h100", "h200"]
    assert {"gpus[h100]", "gpus[h200]"} <= set(report.csv_columns())
    for row in report.csv_rows():
        assert row["gpus[h100]"] + row["gpus[h200]"] == row["inference_gpus"] + row["training_gpus"]


def test_empty_panels_are_left_out_and_pools_get_their_own(two_pool_sweep):
    keys = [key for key, _ in sweep_panels(two_pool_sweep)]
    assert "vms" not in keys  # the instance has no VM types: an all-zero panel
    assert {"pool:h100", "pool:h200", "objective_value", "inference_gpus"} <= set(keys)
    one_pool = run_sweep(SEED, [parse_axis("inference.shapes[0].tokens_per_gpu_s=80,90")])
    keys = [key for key, _ in sweep_panels(one_pool)]
    assert not any(k.startswith("pool:") for k in keys) and "vms" not in keys  # seed plans use no VM


def test_shown_corners_keep_both_ends_and_at_most_twelve():
    corners = list(range(0, 80, 3))
    shown = shown_corners(corners)
    assert len(shown) == CORNER_ROWS and shown[0] == corners[0] and shown[-1] == corners[-1]
    assert shown == sorted(shown) and set(shown) <= set(corners)
    assert shown_corners(corners, show_all=True) == corners
    assert shown_corners(corners[:5]) == corners[:5]


def _table_rows(output: str) -> list[list[str]]:
    """Per frontier table, its data rows (the lines after a header that start with a point number)."""
    tables: list[list[str]] = []
    for line in output.splitlines():
        if line.lstrip().startswith("#  makespan"):
            tables.append([])
        elif tables and line.strip()[:1].isdigit() and " d " in line:
            tables[-1].append(line)
    return tables


@pytest.fixture(scope="module")
def seed_front():
    return frontiers(load_instance(SEED))


def _rendered(found, show_all: bool) -> str:
    console = Console(width=300, record=True)
    render_frontier(console, found, Path("out"), show_all)
    return console.export_text()


def test_frontier_prints_at_most_twelve_corners_unless_all(seed_front):
    short, full = _rendered(seed_front, False), _rendered(seed_front, True)
    assert [len(t) for t in _table_rows(full)] == [13, 15]  # the seed baseline's corners (README)
    assert [len(t) for t in _table_rows(short)] == [12, 12]
    assert "12 of 13 corners shown" in short and "--all prints every one" in short
    assert "corners shown" not in full
    assert "--all" in CliRunner().invoke(main, ["frontier", "--help"]).output
    assert "gpus[main]" in csv_columns(seed_front)


def test_frontier_tables_and_labels_split_gpus_by_pool():
    found = frontiers(load_edited(TWO_POOLS, ["schedule.cadence.min=420s"]))
    header = next(line for line in _rendered(found, False).splitlines() if line.lstrip().startswith("#  makespan"))
    assert "GPUs in h100" in header and "GPUs in h200" in header
    plan = found.frontiers["total_cost"].fastest.plan
    line = _pool_line(plan)
    assert line.startswith("\nGPUs: h100 ") and ", h200 " in line
    used = {p.pool: p.gpus_used for p in plan.pools}
    assert used["h100"] + used["h200"] == plan.inference_gpus + plan.training_gpus


def test_a_budget_truncated_frontier_says_so(seed_front):
    capped = frontiers(edited(load_instance(SEED), {"limits.max_hourly_cost": 19000}))
    for front in capped.frontiers.values():
        assert front.bounded_by == "budget"
        assert FAST_END[front.bounded_by] == "fastest within budget"
        assert max(r.plan.hourly_cost for r in front.points) <= 19000 * (1 + 1e-9)
    for front in seed_front.frontiers.values():
        assert front.bounded_by == "constraints"  # no budget: faster cadences break pools and throughput
        assert "budget" not in FAST_END[front.bounded_by]


def test_batch_summary_splits_gpus_by_pool():
    payload = solve_instance(load_instance(TWO_POOLS)).to_json()
    row = summary_row(SimpleNamespace(file=str(TWO_POOLS), result="two-pools.json"), payload)
    assert "gpus_by_pool" in SUMMARY_COLUMNS
    assert row["gpus_by_pool"] == "h100=1424; h200=1424"


def test_solve_leaves_out_the_rows_of_what_a_plan_does_not_use_and_names_them_once():
    run = CliRunner().invoke(main, ["solve", str(ROOT / "instances" / "large-three-pools.yaml"), "--no-levers"])
    assert run.exit_code == 0, run.output
    decisions = run.output.split("Costs")[0]
    for line in decisions.splitlines():
        cells = [c.strip() for c in line.split("│")]
        if len(cells) == 3 and cells[0].split(" ")[0] in ("replicas", "nodes", "VMs"):
            assert cells[1] != "0", line  # no zero row
    result = solve_instance(load_instance(ROOT / "instances" / "large-three-pools.yaml"))
    idle = [i.shape for i in result.plan.inference if not i.replicas]
    assert idle and all(name in " ".join(decisions.split()) for name in idle)  # said once, in the "not used" row
    assert "not used" in decisions
