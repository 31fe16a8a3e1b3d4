"""Levers under a plan: each limit moved one step and re-solved; the savings equal separate solves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainground.cli import main
from trainground.drivers.tradeoffs.levers import levers, steps
from trainground.models.edits import edited
from trainground.models.load import load_instance
from trainground.render.levers import drop_sentence, lever_line
from trainground.solver.solve import solve_instance

SEED = Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml"


@pytest.fixture(scope="module")
def seed():
    inst = load_instance(SEED)
    result = solve_instance(inst)
    return inst, result, levers(inst, result)


def test_the_versions_lever_saves_what_a_separate_solve_at_the_relaxed_value_saves(seed):
    inst, result, found = seed
    lever = found.lever("freshness.max_versions_kept")
    assert lever is not None and lever.before == 10 and lever.after == 15
    separate = solve_instance(edited(inst, {"freshness.max_versions_kept": 15}))
    assert separate.status == "optimal"
    assert lever.saving == pytest.approx(result.objective_value - separate.objective_value, rel=1e-9)
    assert lever.saving > 0  # on the seed baseline, 35 % of groups are dropped at K = 10
    assert lever.saving_share == pytest.approx(lever.saving / result.objective_value, rel=1e-12)


def test_every_lever_matches_its_own_fresh_solve(seed):
    inst, result, found = seed
    for lever in found.items:
        fresh = solve_instance(edited(inst, {lever.path: lever.after}), result.objective)
        assert lever.status == fresh.status
        if fresh.objective_value is None:
            assert lever.saving is None
        else:
            assert lever.objective_value == pytest.approx(fresh.objective_value, rel=1e-9)


def test_levers_are_sorted_by_saving_with_the_planless_last(seed):
    _, _, found = seed
    savings = [lv.saving for lv in found.items]
    known = [s for s in savings if s is not None]
    assert known == sorted(known, reverse=True)
    assert savings[: len(known)] == known  # every lever without a plan comes after those with one
    assert found.items[0].path == "freshness.max_versions_kept"
    tighter = found.lever("schedule.deadline", 6 * 86400.0)
    assert tighter is not None and tighter.saving is None  # a day less leaves no plan on the seed baseline
    looser = found.lever("schedule.deadline", 8 * 86400.0)
    assert looser.saving > 0


def test_the_listed_levers_follow_the_limits_that_are_set():
    inst = edited(
        load_instance(SEED),
        {"limits.max_hourly_cost": 17000, "freshness.max_exceedance": 0.06, "environment.node_types[0].max_nodes": 20},
    )
    paths = [path for _, path, *_ in steps(inst)]
    for path in (
        "limits.max_hourly_cost",
        "freshness.max_exceedance",
        "environment.node_types[0].max_nodes",
        "gpu_pools[0].gpus",
        "environment.cloud.vm_types[0].max_vms",
    ):
        assert path in paths
    assert "limits.max_total_cost" not in paths and "freshness.max_mean_gap" not in paths
    nodes = next(s for s in steps(inst) if s[1] == "environment.node_types[0].max_nodes")
    assert nodes[3:] == (20, 22)


def test_the_phrases_name_the_move_and_the_saving(seed):
    _, result, found = seed
    line = lever_line(found.lever("freshness.max_versions_kept"), result.objective)
    assert line.startswith("max_versions_kept 10 → 15: −11.9 % ($")
    assert drop_sentence(found) == "35 % of groups are dropped for staleness at K = 10"


def test_solve_prints_the_levers_and_puts_them_in_json():
    run = CliRunner().invoke(main, ["solve", str(SEED), "--json"])
    assert run.exit_code == 0, run.output
    payload = json.loads(run.output)
    items = payload["levers"]["items"]
    assert items[0]["path"] == "freshness.max_versions_kept" and items[0]["saving"] > 0
    assert payload["levers"]["versions_kept"] == 10
    text = CliRunner().invoke(main, ["solve", str(SEED)])
    assert "max_versions_kept 10 → 15: −11.9 %" in text.output
    assert "35 % of groups are dropped for staleness at K = 10" in text.output
    quiet = CliRunner().invoke(main, ["solve", str(SEED), "--json", "--no-levers"])
    assert "levers" not in json.loads(quiet.output)


def test_an_infeasible_instance_has_no_levers():
    run = CliRunner().invoke(main, ["solve", str(SEED), "--json", "--set", "schedule.deadline=5d"])
    assert run.exit_code == 3
    assert "levers" not in json.loads(run.output)


def test_a_spent_time_budget_skips_the_rest_without_inventing_savings(seed):
    inst, result, _ = seed
    found = levers(inst, result, time_limit=1e-9)
    assert found.items and all(lv.status in ("skipped", "time_limit") for lv in found.items)
    assert all(lv.saving is None for lv in found.items)
    assert "not computed (the time for the levers ran out)" in lever_line(found.items[-1], result.objective)


def test_the_levers_share_what_the_commands_time_limit_leaves(monkeypatch):
    """--time-limit bounds the whole command: the levers get what the solve left, never more, nor more
    than --levers-time."""
    import trainground.drivers.tradeoffs.levers

    budgets = []
    real = trainground.drivers.tradeoffs.levers.levers
    monkeypatch.setattr(
        trainground.drivers.tradeoffs.levers,
        "levers",
        lambda inst, result, budget, cache, **kw: budgets.append(budget) or real(inst, result, budget, cache, **kw),
    )
    assert CliRunner().invoke(main, ["solve", str(SEED), "--json", "--time-limit", "5"]).exit_code == 0
    assert (
        CliRunner().invoke(main, ["solve", str(SEED), "--json", "--time-limit", "60", "--levers-time", "2"]).exit_code
        == 0
    )
    assert CliRunner().invoke(main, ["solve", str(SEED), "--json"]).exit_code == 0
    assert 0 < budgets[0] < 5 and budgets[1:] == [2.0, 10.0], budgets


def test_levers_without_a_figure_say_why_and_how_to_get_them(seed):
    from trainground.render.levers import unfinished_note

    inst, result, done = seed
    assert unfinished_note(done) is None  # every lever computed: nothing to explain
    found = levers(inst, result, time_limit=1e-9)
    note = unfinished_note(found)
    first = next(lv for lv in found.items if lv.status in ("skipped", "time_limit"))
    assert note and "--levers-time" in note and f"--set {first.path}={first.after:g}" in note
