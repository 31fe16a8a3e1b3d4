"""`[*]` in every path the product takes (--set, sweep axes, compare's edits) and `sweep --zip`: fields varied together."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainground.cli import main
from trainground.drivers.tradeoffs.sweep import SweepError, parse_axes, run_sweep
from trainground.drivers.tradeoffs.sweep_axes import dimensions, grid_points
from trainground.models.edits import apply_edit, load_edited
from trainground.models.load import InstanceError, read_document
from trainground.render.labels import field_label
from trainground.solver.solve import solve_instance

ROOT = Path(__file__).resolve().parents[1]
TWO_POOLS = ROOT / "tests" / "data" / "compare" / "two-pools.yaml"
EVERY_RATE = "inference.shapes[*].tokens_per_gpu_s"


def test_a_wildcard_edit_sets_the_field_in_every_item_and_copies_only_the_path():
    doc = read_document(TWO_POOLS)
    out = apply_edit(doc, EVERY_RATE, 70)
    assert [s["tokens_per_gpu_s"] for s in out["inference"]["shapes"]] == [70, 70]
    assert [s["tokens_per_gpu_s"] for s in doc["inference"]["shapes"]] == [60, 140]  # the input is untouched
    assert out["gpu_pools"] is doc["gpu_pools"]  # off the path: shared
    nested = apply_edit(doc, "gpu_pools[*].gpus", 512)
    assert [p["gpus"] for p in nested["gpu_pools"]] == [512, 512]


@pytest.mark.parametrize(
    "path, rule",
    [("name[*]", "name[*]: not a list"), ("environment.cloud.vm_types[*].max_vms", "matches no list item")],
)
def test_a_wildcard_that_reaches_no_item_is_refused(path, rule):
    with pytest.raises(ValueError, match=re.escape(rule)):
        apply_edit(read_document(TWO_POOLS), path, 1)


def test_set_with_a_wildcard_loads_and_blames_the_option_for_each_item():
    inst = load_edited(TWO_POOLS, [f"{EVERY_RATE}=70"])
    assert [s.tokens_per_gpu_s for s in inst.inference.shapes] == [70, 70]
    with pytest.raises(InstanceError) as caught:
        load_edited(TWO_POOLS, [f"{EVERY_RATE}=-1"])
    message = caught.value.message
    for i in (0, 1):
        assert f"--set {EVERY_RATE}=-1: inference.shapes[{i}].tokens_per_gpu_s: must be > 0" in message


def test_solve_and_compare_take_a_wildcard_set():
    for command in ("solve", "compare"):
        run = CliRunner().invoke(main, [command, str(TWO_POOLS), "--set", f"{EVERY_RATE}=70", "--json"])
        assert run.exit_code == 0, run.output
    report = json.loads(run.output)
    assert report["shape_mix"]["tokens_per_gpu_s"] == pytest.approx(70)  # every shape at 70: any mix is 70


def test_zipped_axes_vary_together_as_one_factor_of_the_product():
    axes = parse_axes(["workload.group_size=4,8"], ["gpu_pools[1].gpu_hour_cost=3,4", "inference.shapes[1].x=1,2"])
    assert dimensions(axes) == [0, 1, 1]
    assert grid_points(axes) == [("4", "3", "1"), ("4", "4", "2"), ("8", "3", "1"), ("8", "4", "2")]
    with pytest.raises(SweepError, match="same number of values"):
        parse_axes([], ["a.b=1,2", "c.d=1,2,3"])
    with pytest.raises(SweepError, match="swept twice"):
        parse_axes(["a.b=1,2"], ["a.b=3,4"])


def test_a_zipped_sweep_solves_each_pair_once():
    axes = parse_axes([], ["gpu_pools[1].gpu_hour_cost=3,5", "inference.shapes[1].tokens_per_gpu_s=120,200"])
    report = run_sweep(TWO_POOLS, axes)
    assert [row["edits"] for row in report.rows] == [
        {"gpu_pools[1].gpu_hour_cost": "3", "inference.shapes[1].tokens_per_gpu_s": "120"},
        {"gpu_pools[1].gpu_hour_cost": "5", "inference.shapes[1].tokens_per_gpu_s": "200"},
    ]
    for row in report.rows:
        edits = [f"{path}={text}" for path, text in row["edits"].items()]
        fresh = solve_instance(load_edited(TWO_POOLS, edits))
        assert row["objective_value"] == pytest.approx(fresh.objective_value, rel=1e-9)
    assert [a["zipped"] for a in report.to_json()["axes"]] == [True, True]


def test_sweep_cli_zip_with_a_wildcard_axis(tmp_path):
    out = tmp_path / "out"
    args = ["sweep", str(TWO_POOLS), "--set", f"{EVERY_RATE}=60,90", "--zip", "gpu_pools[1].gpu_hour_cost=3,4"]
    args += ["--zip", "inference.shapes[1].version_slowdown=0,0.01", "--out", str(out)]
    run = CliRunner().invoke(main, args)
    assert run.exit_code == 0, run.output
    assert "4 points: 4 optimal" in run.output
    assert "tokens/s/GPU (every shape)" in run.output
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert "sweep-heatmap.png" in pngs  # two factors: the wildcard axis and the zipped pair
    bad = CliRunner().invoke(main, ["sweep", str(TWO_POOLS), "--zip", "a.b=1,2", "--zip", "c.d=1", "--out", str(out)])
    assert bad.exit_code == 2 and "same number of values" in bad.output
    none = CliRunner().invoke(main, ["sweep", str(TWO_POOLS), "--out", str(out)])
    assert none.exit_code == 2 and "--zip" in none.output


def test_field_labels_say_every_item():
    assert field_label(EVERY_RATE) == "tokens/s/GPU (every shape)"
    assert field_label("gpu_pools[1].gpu_hour_cost", {"gpu_pools[1]": "h200"}) == "$/GPU-hour (pool h200)"


def test_batch_takes_wildcard_edits_and_resumes_only_with_the_same_edits(tmp_path):
    from trainground.drivers.batch import run as driver

    out = tmp_path / "out"
    args = ["batch", str(TWO_POOLS), "--out", str(out), "--workers", "1", "--json"]
    run = CliRunner().invoke(main, [*args, "--set", f"{EVERY_RATE}=200"])
    assert run.exit_code == 0, run.output
    result = json.loads((out / "two-pools.json").read_text())
    fresh = solve_instance(load_edited(TWO_POOLS, [f"{EVERY_RATE}=200"]))
    assert result["objective_value"] == pytest.approx(fresh.objective_value, rel=1e-9)
    again = CliRunner().invoke(main, [*args, "--set", f"{EVERY_RATE}=200", "--resume"])
    assert json.loads(again.output)["reused"] == 1  # the same edits: the result stands
    plain = CliRunner().invoke(main, [*args, "--resume"])
    assert json.loads(plain.output)["reused"] == 0  # without them it is another question
    assert driver.input_hash(b"x", None, None) == driver.input_hash(b"x", None, None, ())  # old results keep theirs
    bad = CliRunner().invoke(main, [*args, "--set", "a..b=1"])
    assert bad.exit_code == 2 and "--set" in bad.output
    invalid = CliRunner().invoke(main, [*args, "--set", f"{EVERY_RATE}=-1"])
    assert invalid.exit_code == 2
    message = json.loads((out / "two-pools.json").read_text())["message"]
    assert f"--set {EVERY_RATE}=-1: inference.shapes[1].tokens_per_gpu_s" in message
