"""The caps on what a solve tabulates bound its memory and refuse before the tables exist: a cadence grid whose
(cadence, K) tables would take more than the memory budget (models.plausible) is refused as the file is read,
naming the step and the memory; a staged model estimated above its pair cap from a sample of its stages' grids
(solver/stages/tables.py) is refused naming the stage or the step, by every command and the API, having built
no table larger than the sample."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from trainground.cli import main
from trainground.models import plausible
from trainground.models.load import InstanceError, load_instance, validate
from trainground.solver.laws import calculus as calc
from trainground.solver.stages import tables as stage_tables
from trainground.solver.table import pairs as pair_tables

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"
STAGED = ROOT / "instances" / "seed-week-stages.yaml"


def _write(tmp_path: Path, name: str, doc: dict) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _no_table_built(monkeypatch, most: int = 0) -> list[int]:
    """Record the (cadence, K) entries of every pair table built from now on; fail on one above ``most``."""
    built: list[int] = []
    real = pair_tables.build

    def build(inst, *args, **kwargs):
        entries = calc.grid_points(inst) * inst.freshness.max_versions_kept
        built.append(entries)
        assert entries <= most, f"a table of {entries:,} entries was built"
        return real(inst, *args, **kwargs)

    monkeypatch.setattr(pair_tables, "build", build)
    return built


def test_a_grid_whose_tables_exceed_the_memory_budget_is_refused_as_the_file_is_read(tmp_path, monkeypatch):
    """10,000,000 entries (1 us to 1 s in 1 us steps, K = 10): about 3.3 GB of tables, over the 2 GB budget."""
    doc = yaml.safe_load(SEED.read_text())
    doc["schedule"]["cadence"] = {"min": 1e-6, "max": 1.0, "step": 1e-6}
    path = _write(tmp_path, "grid.yaml", doc)
    _no_table_built(monkeypatch)
    result = CliRunner().invoke(main, ["solve", str(path)])
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"{path}: schedule.cadence.step: ")
    assert "10,000,000 (cadence, K) entries" in line
    gb = float(re.search(r"about ([\d.]+) GB of tables", line).group(1))
    assert gb == pytest.approx(1e7 * plausible.TABLE_ENTRY_BYTES / 1e9, rel=1e-2)
    assert f"above the {plausible.TABLE_BUDGET_BYTES / 1e9:g} GB a solve may take" in line


def test_the_memory_budget_takes_the_seed_at_a_thousandth_of_a_second():
    """The seed's grid at a 0.001 s step (5.45 million entries) is within the budget: it loads."""
    doc = yaml.safe_load(SEED.read_text())
    doc["schedule"]["cadence"] = {"min": "60s", "step": "0.001s"}
    inst = validate(doc, "fine.yaml")
    assert calc.grid_points(inst) * inst.freshness.max_versions_kept <= plausible.TABLE_ENTRIES


def _short_first_stage(basis: str = "steady_state") -> dict:
    """The staged seed with stages of 1 and 999 iterations: the first stage's grid runs to 604,800 s."""
    doc = yaml.safe_load(STAGED.read_text())
    doc["stages"]["list"] = [{"name": "a", "iterations": 1}, {"name": "b", "iterations": 999}]
    doc["planning"] = {"basis": basis}
    return doc


@pytest.mark.parametrize("command", ["solve", "frontier", "simulate"])
def test_a_staged_model_far_above_the_pair_cap_is_refused_from_a_sample_of_its_grids(tmp_path, monkeypatch, command):
    path = _write(tmp_path, "short-first.yaml", _short_first_stage())
    built = _no_table_built(monkeypatch, most=stage_tables.SAMPLE_ENTRIES)
    result = CliRunner().invoke(main, [command, str(path)])
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"{path}: stages.list[0].iterations: the staged model would choose among about ")
    estimate = int(re.search(r"among about ([\d,]+) \(cadence, K\) pairs", line).group(1).replace(",", ""))
    assert estimate > stage_tables.STAGED_PAIRS and f"above the {stage_tables.STAGED_PAIRS:,}" in line
    assert "stage 'a' alone has 1 iteration(s)" in line and "604,800 s" in line
    assert built and max(built) <= stage_tables.SAMPLE_ENTRIES  # the sample alone was tabulated


def test_the_api_refuses_it_too_under_hold(tmp_path, monkeypatch):
    from trainground import api

    path = _write(tmp_path, "short-first-hold.yaml", _short_first_stage("hold"))
    _no_table_built(monkeypatch, most=stage_tables.SAMPLE_ENTRIES)
    with pytest.raises(InstanceError) as refused:
        api.solve(path, levers=False)
    [problem] = refused.value.problems
    assert problem.path == "stages.list[0].iterations" and "the staged model would choose among about" in problem.rule


def test_the_estimate_from_a_sample_is_within_a_few_percent_of_the_pairs_counted():
    """The staged seed cut to 8 iterations in a day, at a 4 s step: each stage's grid is sampled."""
    doc = yaml.safe_load(STAGED.read_text())
    doc["workload"]["iterations"] = 8
    doc["schedule"]["deadline"] = "1d"
    doc["schedule"]["cadence"] = {"min": "60s", "step": "4s"}
    for stage, n in zip(doc["stages"]["list"], (2, 4, 2)):
        stage["iterations"] = n
    inst = validate(doc, "short.yaml")
    strides = stage_tables.sample_strides(inst)
    assert all(r > 1 for r in strides)
    sample = stage_tables.tables_of(inst, strides)
    counted = stage_tables.tables_of(inst, [1] * len(strides))
    for t, r, whole in zip(sample.tables, strides, counted.tables):
        assert t.size * r == pytest.approx(whole.size, rel=0.03)


def test_small_grids_are_counted_whole_and_not_sampled():
    inst = load_instance(STAGED)
    assert stage_tables.sample_strides(inst) == [1, 1, 1]
