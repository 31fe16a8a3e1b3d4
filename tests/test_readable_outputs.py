"""Plots and tables people read: names instead of paths, GPUs per pool, no empty panels, labels that
say what bounded a frontier, at most 12 corner rows unless --all."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from cli import main
from drivers.frontier import frontiers
from drivers.sweep import parse_axis, run_sweep
from models.edits import edited
from models.load import load_instance
from render.labels import field_label
from render.plots import FAST_END, sweep_panels
from render.tradeoffs import CORNER_ROWS, render_sweep, shown_corners

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"
TWO_POOLS = ROOT / "tests" / "data" / "compare" / "two-pools.yaml"


def test_field_labels_name_the_item_not_its_index():
    names = {"inference.shapes[1]": "h200-tp8", "gpu_pools[0]": "h100", "environment.node_types[0]": "standard"}
    assert field_label("inference.shapes[1].tokens_per_gpu_s", names) == "tokens/s/GPU (shape h200-tp8)"
    assert field_label("gpu_pools[0].gpus", names) == "GPUs (pool h100)"
    assert field_label("environment.node_types[0].density.container", names) == \
        "density of container (node type standard)"
    assert field_label("schedule.deadline") == "deadline"
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
    """Per frontier table, its data rows (lines starting with a point number)."""
    tables, rows = [], None
    for line in output.splitlines():
        if line.lstrip().startswith("#  makespan"):
            rows = []
            tables.append(rows)
        elif rows is not None and line.strip()[:1].isdigit() and " d " in line:
            rows.append(line)
        else:
            rows = None if not line.startswith(" ") else rows
    return tables


def test_frontier_prints_at_most_twelve_corners_unless_all(tmp_path):
    short = CliRunner().invoke(main, ["frontier", str(SEED), "--out", str(tmp_path / "a")])
    assert short.exit_code == 0, short.output
    full = CliRunner().invoke(main, ["frontier", str(SEED), "--out", str(tmp_path / "b"), "--all"])
    counts_short = [len(t) for t in _table_rows(short.output)]
    counts_full = [len(t) for t in _table_rows(full.output)]
    assert counts_full == [13, 15]  # the seed baseline's corners (README)
    assert counts_short == [12, 12]
    assert "12 of 13 corners shown" in short.output and "--all prints every one" in short.output
    with open(tmp_path / "a" / "frontier.csv", newline="") as handle:
        assert "gpus[main]" in next(csv.reader(handle))


def test_a_budget_truncated_frontier_says_so():
    inst = load_instance(SEED)
    capped = frontiers(edited(inst, {"limits.max_hourly_cost": 19000}))
    for front in capped.frontiers.values():
        assert front.bounded_by == "budget"
        assert FAST_END[front.bounded_by] == "fastest within budget"
        assert max(r.plan.hourly_cost for r in front.points) <= 19000 * (1 + 1e-9)
    free = frontiers(inst)
    for front in free.frontiers.values():
        assert front.bounded_by == "constraints"  # no budget: faster cadences break pools and throughput
        assert "budget" not in FAST_END[front.bounded_by]


def test_batch_summary_splits_gpus_by_pool(tmp_path):
    run = CliRunner().invoke(main, ["batch", str(TWO_POOLS), "--out", str(tmp_path), "--workers", "1", "--quiet"])
    assert run.exit_code == 0, run.output
    with open(tmp_path / "summary.csv", newline="") as handle:
        row = next(csv.DictReader(handle))
    assert row["gpus_by_pool"] == "h100=1424; h200=1424"
