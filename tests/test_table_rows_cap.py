"""A table's (cadence, K, training groups) rows are counted before any is allocated and held to a cap
(models.row_budget: the memory budget at the bytes a row costs; $TRAINGROUND_MAX_TABLE_ROWS sets another): the
user's own file over it is refused with exit 2, naming the file, the field that makes the rows many and how many
there would be; a lever's edited copy over it is not solved and its line says why, the rest of the plan printed;
a diagnosis input whose re-solves are over it is reported unsettled, never as one that cannot help.

The cap is lowered through its variable so that the seed's small tables cross it: no large table is built here.
Start-up is counted on the hold basis, which the suite's default (steady_state, tests/conftest.py) is not: every
instance here is loaded on hold."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from trainground import api
from trainground.cli import main
from trainground.drivers.diagnosis.diagnose import diagnose
from trainground.drivers.diagnosis.feasibility import Feasibility
from trainground.drivers.tradeoffs.levers import levers
from trainground.models.load import InstanceError
from trainground.models.row_budget import TABLE_ROW_VARIABLE, TABLE_ROWS, table_rows_cap
from trainground.render.levers import lever_line
from trainground.solver.solve import solve_instance
from trainground.solver.table import pairs as pair_tables
from trainground.solver.table.row_cap import TableTooLarge

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"  # start-up counted, U(m) falls: rows by one search a pair
SPOT = ROOT / "instances" / "seed-week-spot.yaml"  # with reliability: each pair's rows listed


HOLD = ["--basis", "hold"]


def _load(path: Path):
    return api.load(path, basis="hold")


@pytest.fixture(scope="module")
def seed_rows() -> int:
    """The rows of the seed's table of every row, under the default cap."""
    return int(pair_tables.build(_load(SEED)).size)


def test_the_cap_is_the_budget_unless_the_variable_sets_another(monkeypatch):
    monkeypatch.delenv(TABLE_ROW_VARIABLE, raising=False)
    assert table_rows_cap() == TABLE_ROWS
    monkeypatch.setenv(TABLE_ROW_VARIABLE, "1234")
    assert table_rows_cap() == 1234
    for bad in ("0", "-5", "lots", "1e3"):
        monkeypatch.setenv(TABLE_ROW_VARIABLE, bad)
        with pytest.raises(ValueError, match="positive whole number"):
            table_rows_cap()


@pytest.mark.parametrize("path", [SEED, SPOT], ids=["searched", "listed"])
def test_a_table_one_row_over_the_cap_is_refused_and_one_at_it_is_built_unchanged(path, monkeypatch):
    inst = _load(path)
    monkeypatch.delenv(TABLE_ROW_VARIABLE, raising=False)
    whole = pair_tables.build(inst)
    assert whole.size > 1000  # every count worth having of each pair: many rows a pair
    monkeypatch.setenv(TABLE_ROW_VARIABLE, str(whole.size))
    again = pair_tables.build(inst)
    for name in ("cadence", "kept", "groups", "makespan", "startup"):
        assert np.array_equal(getattr(again, name), getattr(whole, name)), name
    monkeypatch.setenv(TABLE_ROW_VARIABLE, str(whole.size - 1))
    with pytest.raises(TableTooLarge) as refused:
        pair_tables.build(inst)
    assert refused.value.rows >= whole.size  # the listing stops once past the cap: at least the cap plus one
    if path == SEED:
        assert refused.value.rows == whole.size  # counted before the listing: exactly
    [problem] = refused.value.problems
    assert problem.path == "gpu_pools[0].gpus"
    assert f"{whole.size - 1:,} rows" in problem.rule and "training.max_groups" in problem.rule


def test_the_fewest_rows_table_is_not_held_to_the_cap_of_every_row(monkeypatch, seed_rows):
    """A feasibility question's table (each pair's fewest groups, one row a pair) stays within the cap."""
    inst = _load(SEED)
    monkeypatch.setenv(TABLE_ROW_VARIABLE, str(seed_rows - 1))
    fewest = pair_tables.build(inst, fewest_groups=True)
    assert 0 < fewest.size < seed_rows


def test_the_users_file_over_the_cap_is_refused_with_exit_2_naming_the_file_field_and_rows(monkeypatch, seed_rows):
    monkeypatch.setenv(TABLE_ROW_VARIABLE, str(seed_rows - 1))
    result = CliRunner().invoke(main, ["solve", str(SEED), *HOLD, "--objective", "makespan", "--no-levers"])
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"{SEED}: gpu_pools[0].gpus: the table would hold {seed_rows:,} (cadence, K, training ")
    assert f"above the {seed_rows - 1:,} rows" in line and "GB" in line
    assert "Traceback" not in result.output
    with pytest.raises(InstanceError, match="the table would hold"):
        api.solve(SEED, objective="makespan", basis="hold", levers=False)


def test_a_bad_value_of_the_variable_is_refused_by_name(monkeypatch):
    monkeypatch.setenv(TABLE_ROW_VARIABLE, "many")
    result = CliRunner().invoke(main, ["solve", str(SEED), *HOLD, "--objective", "makespan", "--no-levers"])
    assert result.exit_code == 2, result.output
    assert f"the variable {TABLE_ROW_VARIABLE} must be a positive whole number" in result.stderr


def test_a_lever_whose_copy_is_over_the_cap_is_not_solved_and_says_why(monkeypatch, seed_rows):
    """The seed's own table of every row is at the cap; the lever copies with larger tables are skipped, the
    others re-solved."""
    inst = _load(SEED)
    monkeypatch.setenv(TABLE_ROW_VARIABLE, str(seed_rows))
    capped = levers(inst, solve_instance(inst)).items
    refused = [lv for lv in capped if lv.status == "too_large"]
    solved = [lv for lv in capped if lv.status != "too_large"]
    assert refused and any(lv.status == "optimal" and lv.saving is not None for lv in solved)
    for lv in refused:
        assert lv.rows > seed_rows and lv.saving is None
        assert "not solved, too large to tabulate" in lever_line(lv, "total_cost")
        assert lv.to_json()["rows"] == lv.rows
    assert all(lv.rows is None for lv in solved)


def test_a_refused_re_solve_answers_none_and_keeps_why(monkeypatch, seed_rows):
    monkeypatch.setenv(TABLE_ROW_VARIABLE, str(seed_rows))
    checker = Feasibility(_load(SEED))
    assert checker.solve({"freshness.max_versions_kept": 15}, "total_cost") is None
    assert checker.refused is not None and checker.refused.rows > seed_rows and checker.refusals == 1
    assert checker.solve({}, "total_cost") is not None and checker.refused is None


def test_a_diagnosis_input_whose_re_solves_are_over_the_cap_is_not_settled_rather_than_cannot_help(monkeypatch):
    """Under a budget every row is listed (bounded by the budget), so the probes that loosen the instance list
    more than its own table: with the cap at the instance's own rows, those inputs are reported unsettled."""
    inst = api.load(SEED, ["limits.max_hourly_cost=5000"], basis="hold")  # no plan: the seed costs more an hour
    monkeypatch.delenv(TABLE_ROW_VARIABLE, raising=False)
    free = diagnose(inst, pair_tables.build(inst), "total_cost", "conflict")
    assert "max_hourly_cost" in free["relaxations"]
    monkeypatch.setenv(TABLE_ROW_VARIABLE, str(pair_tables.build(inst).size))
    capped = diagnose(inst, pair_tables.build(inst), "total_cost", "conflict")
    [note] = [n for n in capped["notes"] if n.startswith("not settled (a re-solve's table too large to tabulate")]
    unsettled = note.split(": ", 1)[1].split(", ")
    assert "max_hourly_cost" in unsettled and "max_hourly_cost" not in capped["relaxations"]
    assert not set(unsettled) & set(capped["cannot_help"])
    assert "not searched (their tables too large to tabulate)" in capped["conflict"]
