"""The regime comparison (MODEL.md §14, "Choosing a regime"): each row is its regime's own verified optimum, the
best is the least under the objective, rows without a plan say why, bad specs are one clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import trainground
from trainground.cli import main
from trainground.drivers.tradeoffs.regimes import compare_regimes, parse_regime
from trainground.models.edits import edited
from trainground.models.load import load_instance
from trainground.solver.solve import Planner, solve_instance

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"
PIPELINED = ROOT / "instances" / "regimes" / "seed-week-pipelined-1.yaml"
LONG = ("--set", "schedule.deadline=60d", "--set", "schedule.cadence.step=10s")  # room for hour-long batches


def long_run():
    inst = load_instance(PIPELINED)
    return edited(
        inst, {"schedule.deadline": 60 * 86400.0, "schedule.cadence.step": 10.0, "planning.basis": "steady_state"}
    )


def test_each_row_is_the_plain_solve_of_its_regime_and_the_best_is_the_cheapest():
    inst = long_run()
    found = compare_regimes(inst, [parse_regime("pipelined-0"), parse_regime("pipelined-1")])
    costs = []
    for row in found.rows:
        alone = solve_instance(edited(inst, {"regime": {**row.regime, "rollout_timeout": 3600.0}}), "total_cost")
        assert row.ok and alone.plan is not None
        assert row.result.plan.total_cost == pytest.approx(alone.plan.total_cost, rel=1e-9)
        costs.append(row.result.plan.total_cost)
    assert found.best == costs.index(min(costs))
    # generating the next batch while the trainer works (k = 1) is cheaper here than waiting for it (k = 0)
    assert costs[1] < costs[0]
    assert found.rows[1].result.metrics.consumed_mean_gap == 1 and found.rows[0].result.metrics.consumed_mean_gap == 0


def test_the_seed_week_has_a_plan_in_its_async_regimes_only_and_the_batch_rows_name_the_long_tail():
    inst = edited(load_instance(SEED), {"planning.basis": "steady_state"})
    found = compare_regimes(inst)
    labels = [row.label for row in found.rows]
    assert labels[:4] == ["colocated", "pipelined k=0", "pipelined k=1", "async drop"]
    assert found.rows[3].ok
    assert found.rows[3].result.plan.total_cost == pytest.approx(solve_instance(inst).plan.total_cost, rel=1e-9)
    for row in found.rows[:3]:
        assert not row.ok and "63,370 s" in row.reason and "rollout_timeout" in row.reason
    # in-flight updates under drop: the seed has no version slowdown, so one resident version buys nothing and the
    # plan is async drop's, its K now an age limit alone
    flight, dropping = found.rows[4].result.plan, found.rows[3].result.plan
    assert found.rows[4].ok and flight.total_cost == pytest.approx(dropping.total_cost, rel=1e-9)
    assert (flight.versions_kept, flight.age_limit) == (1, dropping.versions_kept)
    assert found.rows[4].consumed == pytest.approx(found.rows[3].consumed, rel=1e-9)
    # admission: a group waits 6,558 s for its slowest member, so 4 and 8 steps ahead allow no cadence of the
    # week; 16 do, and keeping every long attempt beats dropping them at K = 10
    for row in found.rows[5:7]:
        assert not row.ok and "6,558 s" in row.reason
    assert found.rows[7].ok and found.best == 7
    assert found.rows[7].result.plan.total_cost < found.rows[3].result.plan.total_cost


def test_the_command_prints_the_table_writes_its_plot_and_exits_by_whether_a_regime_has_a_plan(tmp_path):
    out = tmp_path / "cmp"
    args = [
        "regimes",
        str(PIPELINED),
        *LONG,
        "--regime",
        "pipelined-0",
        "--regime",
        "{mode: pipelined, steps_ahead: 1}",
    ]
    result = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "pipelined k=1 ★" in result.output and "the best under total cost: pipelined k=1" in result.output
    assert (out / "regimes.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = json.loads((out / "regimes.json").read_text())["rows"]
    assert [r["best"] for r in rows] == [False, True] and rows[1]["result"]["regime"]["steps_ahead"] == 1
    none = CliRunner().invoke(main, ["regimes", str(PIPELINED), "--regime", "pipelined-1"])
    assert none.exit_code == 3 and "no regime of the list has a plan" in none.output


@pytest.mark.parametrize("spec", ["admission-0", "sideways", "{mode: sideways}"])
def test_a_bad_regime_is_one_clear_error(spec):
    result = CliRunner().invoke(main, ["regimes", str(SEED), "--regime", spec])
    if spec.startswith("{"):  # a mapping that breaks a rule: its row says which, the others still solve
        assert result.exit_code == 3 and "regime.mode" in result.output
    else:
        assert result.exit_code == 2 and "--regime" in result.stderr
    assert "Traceback" not in result.output


def test_the_python_api_compares_regimes_as_the_command_does():
    found = trainground.regimes(str(PIPELINED), ["pipelined-1"], edits=LONG[1::2])
    assert found.rows[0].ok and found.best == 0
    assert found.to_json()["rows"][0]["status"] == "optimal"


def test_a_batch_runs_levers_are_its_own_and_each_is_a_re_solve():
    """A batch run keeps one version whatever K allows, so its levers are the regime's: one step off for a run that
    generates then trains, a shorter rollout timeout; each saving is the re-solve of the edited instance's."""
    from trainground.drivers.tradeoffs.levers import levers

    inst = edited(long_run(), {"regime.steps_ahead": 0, "schedule.cadence.step": 60.0})
    result = solve_instance(inst)
    found = levers(inst, result, time_limit=None)
    paths = {lever.path for lever in found.items}
    assert "freshness.max_versions_kept" not in paths
    assert {"regime.steps_ahead", "regime.rollout_timeout"} <= paths
    one_off = next(lv for lv in found.items if lv.path == "regime.steps_ahead")
    again = solve_instance(edited(inst, {"regime.steps_ahead": 1}))
    assert one_off.objective_value == pytest.approx(again.objective_value, rel=1e-9) and one_off.saving > 0


def test_compare_refuses_a_batch_run_and_points_to_the_regime_comparison():
    result = CliRunner().invoke(main, ["compare", str(PIPELINED), *LONG])
    assert result.exit_code == 2 and "trainground regimes" in result.stderr and "Traceback" not in result.output


def test_at_seed_scale_the_makespan_optimum_breaks_its_tie_by_the_cheapest_plan_of_that_makespan():
    """Thousands of GPUs, a 4,096-attempt launch: each shortest plan's tie is broken by total cost (MODEL §4), the
    cheapest of that makespan; the colocated frontier is a list of verified plans."""
    inst = edited(long_run(), {"regime.steps_ahead": 0})
    planner = Planner(inst)
    fastest = planner.solve("makespan")
    cheapest_then = planner.solve("total_cost", max_makespan=fastest.plan.makespan_s)
    assert fastest.plan.makespan_s == pytest.approx(cheapest_then.plan.makespan_s, rel=1e-12)
    assert fastest.plan.total_cost == pytest.approx(cheapest_then.plan.total_cost, rel=1e-9)
    colocated = ["frontier", str(ROOT / "instances" / "regimes" / "seed-week-colocated.yaml"), *LONG]
    result = CliRunner().invoke(main, [*colocated, "--basis", "steady_state", "--json"])
    assert result.exit_code == 0, result.output
