"""A staged model too large to plan (solver/stages/tables.py check_size): refused before it is built, with one
message naming schedule.cadence.step, every stage's pairs and a step that brings them under the cap."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from trainground.cli import main
from trainground.models.load import InstanceError, validate
from trainground.solver.stages import tables as stage_tables
from trainground.solver.stages.solve import StagedPlanner

ROOT = Path(__file__).resolve().parents[1]


def _short_run(step: float = 1.0) -> dict:
    """The staged seed cut to 8 iterations in a day: each stage's grid runs to hours (its deadline pace)."""
    data = yaml.safe_load((ROOT / "instances" / "seed-week-stages.yaml").read_text())
    data["workload"]["iterations"] = 8
    data["schedule"]["deadline"] = "1d"
    data["schedule"]["cadence"] = {"min": "60s", "step": f"{step}s"}
    for stage, n in zip(data["stages"]["list"], (2, 4, 2)):
        stage["iterations"] = n
    return data


@pytest.mark.parametrize("cap", [20_000, 50_000])
def test_too_many_pairs_are_refused_with_a_step_that_fits(cap, monkeypatch):
    monkeypatch.setattr(stage_tables, "STAGED_PAIRS", cap)
    with pytest.raises(InstanceError) as refused:
        StagedPlanner(validate(_short_run(), "short.yaml"))
    [problem] = refused.value.problems
    assert problem.path == "schedule.cadence.step"
    sizes = [int(n.replace(",", "")) for n in re.findall(r"(?:early|mid|late) ([\d,]+)", problem.rule)]
    assert len(sizes) == 3 and sum(sizes) > cap and f"above the {cap:,}" in problem.rule
    step = float(re.search(r"a cadence step of ([\d.]+) s or more", problem.rule).group(1))
    planner = StagedPlanner(validate(_short_run(step), "short.yaml"))  # the step suggested fits
    assert sum(t.size for t in planner.found.tables) <= cap


def test_the_command_says_so_in_one_line_and_exits_2(tmp_path):
    path = tmp_path / "short.yaml"
    path.write_text(yaml.safe_dump(_short_run()))
    result = CliRunner().invoke(main, ["solve", str(path), "--basis", "steady_state"])
    assert result.exit_code == 2
    assert "schedule.cadence.step: the staged model would choose among" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_one_stage_too_large_is_refused_too(monkeypatch):
    """A stages block of one stage keeps the instance's own table: the cap holds there as well."""
    monkeypatch.setattr(stage_tables, "STAGED_PAIRS", 20_000)
    data = _short_run()
    data["workload"]["iterations"] = 2
    data["stages"]["list"] = [{"name": "only", "iterations": 2}]
    with pytest.raises(InstanceError) as refused:
        StagedPlanner(validate(data, "short.yaml"))
    [problem] = refused.value.problems
    assert problem.path == "schedule.cadence.step" and "(only " in problem.rule
