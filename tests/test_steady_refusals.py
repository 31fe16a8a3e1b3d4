"""Inputs that once reached the solver or a renderer and ended in an internal error are refused as input errors
(exit 2, one message naming what to blame), and a refusal inside a sweep is that point's ``invalid`` row."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from trainground.cli import main
from trainground.models.edits import load_edited

ROOT = Path(__file__).resolve().parents[1]
UNCERTAIN = ROOT / "instances" / "seed-week-75-uncertain.yaml"
STAGED = ROOT / "instances" / "seed-week-stages.yaml"


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["solve", str(UNCERTAIN), "--confidence", "nan"], "--confidence"),
        (["solve", str(UNCERTAIN), "--confidence", "NaN", "--no-levers"], "--confidence"),
        (["solve", str(UNCERTAIN), "--time-limit", "nan"], "--time-limit"),
        (["solve", str(UNCERTAIN), "--time-limit", "inf"], "--time-limit"),
        (["solve", str(UNCERTAIN), "--levers-time", "nan"], "--levers-time"),
        (["explain", str(UNCERTAIN), "--cadence", "nan"], "--cadence"),
        (["report", str(UNCERTAIN), "--time-limit", "nan"], "--time-limit"),
        (["batch", str(UNCERTAIN), "--time-limit", "nan"], "--time-limit"),
        (["calibrate", "--trajectories", "t.csv", "--max-bad-rows", "nan"], "--max-bad-rows"),
    ],
    ids=lambda v: "-".join(v) if isinstance(v, list) else v,
)
def test_a_number_option_of_nan_or_infinity_is_refused_naming_the_option(args, option):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "internal error" not in result.output
    assert f"Invalid value for '{option}'" in result.output and "is not a finite number" in result.output


def _staged_uncertain() -> dict:
    doc = yaml.safe_load(STAGED.read_text())
    doc["uncertainty"] = yaml.safe_load(UNCERTAIN.read_text())["uncertainty"]
    return doc


def test_the_price_of_certainty_of_a_staged_instance_is_refused_as_unsupported(tmp_path):
    from trainground.drivers.tradeoffs.certainty import curve
    from trainground.solver.confidence.table import Unsupported

    path = tmp_path / "staged-uncertain.yaml"
    path.write_text(yaml.safe_dump(_staged_uncertain()))
    inst = load_edited(path, [])
    with pytest.raises(Unsupported) as refused:
        curve(inst, [0.5, 0.9])
    assert refused.value.path == "stages" and "not available with stages" in refused.value.rule


def test_the_report_of_a_staged_instance_with_uncertainty_says_why_it_has_no_price_of_certainty(tmp_path):
    path = tmp_path / "staged-uncertain.yaml"
    doc = _staged_uncertain()
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "report.html"
    args = ["report", str(path), "--out", str(out), "--no-frontier", "--samples", "50", "--levers-time", "1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "no price of certainty: stages: " in out.read_text()


def test_a_sweep_point_whose_staged_model_is_over_the_pair_cap_is_an_invalid_row_naming_the_file(tmp_path, monkeypatch):
    from trainground.solver.stages import tables as stage_tables

    monkeypatch.setattr(stage_tables, "STAGED_PAIRS", 10)
    args = ["sweep", str(STAGED), "--set", "schedule.deadline=7d,8d", "--out", str(tmp_path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "internal error" not in result.output
    with open(tmp_path / "sweep.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["status"] for r in rows] == ["invalid", "invalid"]
    for row in rows:
        assert row["message"].startswith(f"{STAGED}: schedule.cadence.step: the staged model would choose among")
    assert f"{STAGED}: no point of the sweep is a valid instance" in result.output


def test_solve_blames_the_file_for_a_staged_model_over_the_pair_cap(monkeypatch):
    from trainground.solver.stages import tables as stage_tables

    monkeypatch.setattr(stage_tables, "STAGED_PAIRS", 10)
    result = CliRunner().invoke(main, ["solve", str(STAGED), "--no-levers"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"{STAGED}: schedule.cadence.step: the staged model would choose among")


@pytest.mark.parametrize("written", ["7.5e1", "75e0", "750E-1"])
def test_a_number_in_exponent_notation_in_a_yaml_file_is_that_number(tmp_path, written):
    """The schema takes no string where it wants a number, so exponent notation (a string to YAML 1.1) is read
    as the number it is."""
    from trainground.models.load import load_instance

    path = tmp_path / "exponent.yaml"
    text = (ROOT / "instances" / "seed-week-75.yaml").read_text()
    assert "tokens_per_gpu_s: 75" in text
    path.write_text(text.replace("tokens_per_gpu_s: 75", f"tokens_per_gpu_s: {written}", 1))
    assert load_instance(path).inference.shapes[0].tokens_per_gpu_s == 75.0


def test_a_misspelled_required_key_is_reported_as_the_typo_first_and_not_also_as_missing(tmp_path):
    doc = yaml.safe_load((ROOT / "instances" / "seed-week-75.yaml").read_text())
    doc["schedule"]["deadlin"] = doc["schedule"].pop("deadline")
    doc["workload"]["colour"] = 1
    doc["gpu_pools"][0]["gpu"] = doc["gpu_pools"][0].pop("gpus")
    path = tmp_path / "typos.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    result = CliRunner().invoke(main, ["solve", str(path)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert [line.split(": ")[1] for line in lines] == ["schedule.deadlin", "gpu_pools[0].gpu", "workload.colour"]
    assert "did you mean 'deadline'?" in lines[0] and "did you mean 'gpus'?" in lines[1]
    assert not any("required field is missing" in line for line in lines)


@pytest.mark.parametrize("command", ["frontier", "compare", "simulate", "report"])
def test_every_command_blames_the_file_for_a_staged_model_over_the_pair_cap(monkeypatch, tmp_path, command):
    from trainground.solver.stages import tables as stage_tables

    monkeypatch.setattr(stage_tables, "STAGED_PAIRS", 10)
    out = {"frontier": ["--out", str(tmp_path)], "report": ["--out", str(tmp_path / "r.html")]}
    args = [command, str(STAGED), *out.get(command, [])]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"{STAGED}: schedule.cadence.step: the staged model would choose among")
