"""The drivers on staged instances (MODEL.md §12): frontier, compare (one fixed fleet vs re-planning per stage),
sweep over a stage's field, batch, risk (a staged plan in scenarios) and the stage levers; every plan a staged
solve returns has passed the staged verifier."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from trainground.cli import main
from trainground.drivers.risk import assess
from trainground.drivers.tradeoffs.compare import compare
from trainground.drivers.tradeoffs.frontier import frontiers
from trainground.drivers.tradeoffs.stage_levers import stage_levers
from trainground.drivers.tradeoffs.sweep import parse_axis, run_sweep
from trainground.models.edits import edited
from trainground.models.load import validate
from trainground.models.stage_rules import stage_instance
from trainground.solver.stages.solve import StagedPlanner
from trainground.solver.uncertainty import scenarios as sc
from trainground.solver.uncertainty.stages import evaluate_staged

ROOT = Path(__file__).resolve().parents[1]
STAGED = ROOT / "instances" / "seed-week-stages.yaml"


def small_document(step: str = "10s") -> dict:
    """The bundled staged seed on a coarse grid (quick solves, the same structure)."""
    data = yaml.safe_load(STAGED.read_text())
    data["name"] = "small-stages"
    data["schedule"]["cadence"] = {"min": "400s", "max": "900s", "step": step}
    return data


@pytest.fixture(scope="module")
def small():
    inst = validate(small_document(), "small.yaml")
    return inst, StagedPlanner(inst).solve()


def test_frontier_walks_staged_plans_from_the_cheapest_to_the_fastest(small):
    inst, cheapest = small
    found = frontiers(inst, ("total_cost",), diagnose=False)
    front = found.frontiers["total_cost"]
    spans, costs = front.makespans, front.costs
    assert len(front.points) >= 2
    assert np.all(np.diff(spans) > 0) and np.all(np.diff(costs) < 0)  # non-dominated, fastest first
    assert front.cheapest.plan.total_cost == pytest.approx(cheapest.plan.total_cost, rel=1e-9)
    fastest = StagedPlanner(inst).solve("makespan")
    assert front.fastest.plan.makespan_s == pytest.approx(fastest.plan.makespan_s, rel=1e-9)
    assert all(r.plan.stages and len(r.plan.stages) == 3 for r in front.points)


def test_a_replanned_frontier_is_non_dominated_and_a_resolution_keeps_its_ends():
    data = small_document("40s")
    data["stages"]["capacity"], data["stages"]["switch_time"] = "replan", "30m"
    inst = validate(data, "small.yaml")
    calls: list[tuple[int, int]] = []
    walked = frontiers(inst, ("total_cost",), diagnose=False, resolution=0, on_progress=lambda *a: calls.append(a))
    every = walked.frontiers["total_cost"]
    done = [d for d, _ in calls]
    assert done == sorted(done) and calls[-1][0] == calls[-1][1]  # the bar moves with each point, full at the end
    assert sum(d < calls[-1][1] for d in done) >= len(every.points) - 1
    spaced = frontiers(inst, ("total_cost",), diagnose=False, resolution=0.25).frontiers["total_cost"]
    for front in (every, spaced):
        assert np.all(np.diff(front.makespans) > 0) and np.all(np.diff(front.costs) < 0)
    assert spaced.resolution_s > 0 and 2 <= len(spaced.points) < len(every.points)
    assert np.all(np.diff(spaced.makespans[1:]) >= spaced.resolution_s * (1 - 1e-9))
    for a, b in ((spaced.fastest, every.fastest), (spaced.cheapest, every.cheapest)):
        assert a.plan.makespan_s == pytest.approx(b.plan.makespan_s, rel=1e-9)
        assert a.plan.total_cost == pytest.approx(b.plan.total_cost, rel=1e-9)


def test_a_replanned_walk_finds_the_points_of_a_walk_over_the_whole_model(monkeypatch):
    """The replan searches (pairs opened by their floors, each step started from the last optimum) walk to the same
    points as HiGHS runs over every pair at every step, on both criteria; with a probe of a millionth above a start, a step's first
    run opens too few pairs as often as not, and the search must open more."""
    data = small_document("40s")
    data["stages"]["capacity"], data["stages"]["switch_time"] = "replan", "30m"
    inst = validate(data, "small.yaml")
    monkeypatch.setattr("trainground.solver.stages.replan_search.PROBE", 1e-6)
    searched = frontiers(inst, diagnose=False, resolution=0)
    monkeypatch.setattr("trainground.solver.stages.solve.SEARCHES", {})  # every criterion by whole-model runs
    whole = frontiers(inst, diagnose=False, resolution=0)
    assert len(searched.frontiers["total_cost"].points) >= 4  # a walk of several steps, each started from the last
    ordered = {"total_cost": ("total_cost", "makespan_s", "hourly_cost"), "hourly_cost": ("hourly_cost", "makespan_s")}
    for criterion, keys in ordered.items():  # MODEL §4's order: an hourly-cost plan's total cost is no tie-break
        fast, plain = searched.frontiers[criterion], whole.frontiers[criterion]
        assert len(fast.points) >= 2 and len(fast.points) == len(plain.points), criterion
        for a, b in zip(fast.points, plain.points):
            for key in keys:
                got, want = getattr(a.plan, key), getattr(b.plan, key)
                assert got == pytest.approx(want, rel=1e-9), (criterion, key)


def test_compare_says_what_replanning_saves_after_its_switches(small):
    inst, cheapest = small
    found = compare(inst, switch_time=1800.0)
    choice = found.capacity
    assert choice is not None and choice.ok
    assert choice.fixed.plan.total_cost == pytest.approx(cheapest.plan.total_cost, rel=1e-9)
    assert choice.saving() == pytest.approx(choice.fixed.plan.total_cost - choice.replan.plan.total_cost)
    count, paid = choice.switches()
    rows = choice.replan.plan.stages
    assert count == sum(
        (a.inference, a.training_groups, a.local_nodes) != (b.inference, b.training_groups, b.local_nodes)
        for a, b in zip(rows, rows[1:])
    )
    assert paid == pytest.approx(
        sum(
            b.hourly_cost * 0.5
            for a, b in zip(rows, rows[1:])
            if a.inference != b.inference or a.training_groups != b.training_groups or a.local_nodes != b.local_nodes
        )
    )
    assert "replan_per_stage" in [c.key for c in found.columns]
    assert "re-planning per stage" in choice.sentence()
    # Switches too dear to pay: re-planning keeps one capacity, and saves nothing.
    dear = compare(inst, switch_time=30 * 86400.0).capacity
    assert dear.switches()[0] == 0
    assert dear.saving() == pytest.approx(0.0, abs=1e-6 * cheapest.plan.total_cost)


def test_compare_json_on_a_staged_instance(tmp_path):
    path = tmp_path / "staged.yaml"
    path.write_text(yaml.safe_dump(small_document()))
    out = CliRunner().invoke(main, ["compare", str(path), "--switch-time", "30m", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["capacity"]["switch_time_s"] == 1800.0
    assert doc["capacity"]["replan_saving"] == pytest.approx(
        doc["capacity"]["fixed_total_cost"] - doc["capacity"]["replan_total_cost"]
    )
    bad = CliRunner().invoke(main, ["compare", str(path), "--switch-time", "soon"])
    assert bad.exit_code == 2 and "--switch-time" in bad.output and "Traceback" not in bad.output


def test_sweep_edits_a_stage_field_and_each_point_is_its_own_staged_solve(tmp_path):
    path = tmp_path / "staged.yaml"
    path.write_text(yaml.safe_dump(small_document()))
    report = run_sweep(path, [parse_axis("stages.list[2].tokens_per_attempt=40000,49152")])
    rows = report.rows
    assert [r["status"] for r in rows] == ["optimal", "optimal"]
    assert rows[0]["objective_value"] < rows[1]["objective_value"]  # shorter late responses cost less
    for row, tokens in zip(rows, (40000, 49152)):
        inst = edited(validate(small_document(), "s.yaml"), {"stages.list[2].tokens_per_attempt": tokens})
        fresh = StagedPlanner(inst).solve()
        assert row["objective_value"] == pytest.approx(fresh.objective_value, rel=1e-9)


def test_batch_solves_a_staged_file(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "staged.yaml").write_text(yaml.safe_dump(small_document()))
    out = CliRunner().invoke(main, ["batch", str(folder), "--out", str(tmp_path / "out")])
    assert out.exit_code == 0, out.output
    with open(tmp_path / "out" / "summary.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["status"] for r in rows] == ["optimal"]


def _uncertain(factors: list[dict]) -> dict:
    data = small_document()
    data["uncertainty"] = {"samples": 100, "seed": 3, "factors": factors}
    return data


def test_risk_of_a_staged_plan_reproduces_it_with_degenerate_factors(small):
    _, plan_result = small
    inst = validate(
        _uncertain(
            [
                {
                    "name": "none",
                    "paths": ["inference.shapes[*].tokens_per_gpu_s"],
                    "dist": "normal",
                    "mean": 1.0,
                    "sd": 0.0,
                }
            ]
        ),
        "u.yaml",
    )
    report = assess(inst, plan_result.plan, samples=20)
    assert np.allclose(report.outcome.makespan, plan_result.plan.makespan_s, rtol=1e-9)
    assert np.allclose(report.outcome.total_cost, plan_result.plan.total_cost, rtol=1e-9)
    assert report.on_time_probability == 1.0


def test_a_factor_on_one_stage_moves_that_stage_alone(small):
    _, result = small
    inst = validate(
        _uncertain(
            [
                {
                    "name": "late",
                    "paths": ["stages.list[2].tokens_per_attempt"],
                    "dist": "uniform",
                    "low": 1.1,
                    "high": 1.1,
                }
            ]
        ),
        "u.yaml",
    )
    scen = sc.draw(inst, 1)
    out = evaluate_staged(inst, result.plan, scen)
    rows = result.plan.stages
    late = stage_instance(inst, inst.stages.list[2])
    scaled = edited(late, {"workload.tokens_per_attempt": late.workload.tokens_per_attempt * 1.1})
    nominal = sc.Scenarios((), np.ones((1, 0)), {}, None)
    alone = float(sc.evaluate(scaled, rows[2].plan, nominal).cadence[0])
    assert alone > rows[2].cadence_s  # more tokens on the same fleet: a slower late stage
    expected = rows[0].duration_s + rows[1].duration_s + 300 * alone
    assert out.makespan[0] == pytest.approx(expected, rel=1e-9)


def test_stage_levers_agree_with_a_resolve_of_the_stage_at_the_grown_fleet():
    inst = validate(small_document(step="1s"), "fine.yaml")
    result = StagedPlanner(inst).solve()
    levers = stage_levers(inst, result)
    assert levers and all(lv.stage in {"early", "mid", "late"} for lv in levers)
    bought = [lv for lv in levers if lv.buys_s]
    assert bought, levers
    for lv in bought:
        stage = next(s for s in inst.stages.list if s.name == lv.stage)
        part = next(r.plan for r in result.plan.stages if r.name == lv.stage)
        # The stage alone, its fleet pinned to the plan's and grown by the lever's unit: the MIP's fastest cadence.
        si = stage_instance(inst, stage)
        extra_gpus = 8 if "replica" in lv.change or "group" in lv.change else 0
        nodes = part.local_nodes[0].count + ("node" in lv.change)
        groups = part.training_groups + ("group" in lv.change)
        pinned = edited(
            si,
            {
                "gpu_pools[0].gpus": part.inference_gpus + part.training_gpus + extra_gpus,
                "training.min_groups": groups,
                "training.max_groups": groups,
                "environment.node_types[0].max_nodes": nodes,
                "environment.cloud.vm_types[0].max_vms": 0,
                "schedule.deadline": 30 * 86400,
                "schedule.cadence.max": 900,
                "freshness.max_versions_kept": part.versions_kept,
            },
        )
        from trainground.solver.solve import solve_instance

        fastest = solve_instance(pinned, "makespan")
        assert fastest.plan.cadence_s == pytest.approx(lv.faster_cadence_s), lv
        assert lv.buys_s == pytest.approx(stage.iterations * (lv.cadence_s - lv.faster_cadence_s))


@pytest.mark.parametrize(
    "options",
    [["solve", "--confidence", "0.9"], ["frontier", "--confidence-curve", "0.5,0.9", "--out", "curve"]],
    ids=["solve", "frontier"],
)
def test_a_confidence_option_on_a_staged_instance_is_refused_by_name(options, tmp_path, monkeypatch):
    """The options set what ``uncertainty.confidence`` sets, which a staged instance refuses (exit 2)."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "staged-uncertain.yaml"
    path.write_text(
        yaml.safe_dump(
            _uncertain(
                [
                    {
                        "name": "lifetimes",
                        "paths": ["environment.occupancy.median"],
                        "dist": "lognormal",
                        "median": 1.0,
                        "sigma": 0.1,
                    }
                ]
            )
        )
    )
    result = CliRunner().invoke(main, [options[0], str(path), *options[1:]])
    assert result.exit_code == 2, result.output
    assert f"{path}: stages: {options[1]} is not available with stages yet" in result.output


@pytest.mark.parametrize(
    ("paths", "missed"),
    [
        (["environment.occupancy.median"], "stages early and late set for themselves"),
        (["environment.occupancy.median", "stages.list[0].occupancy.median"], "stage late sets for itself"),
        (["environment.occupancy.median", "stages.list[*].occupancy.median"], None),
        (["workload.tokens_per_attempt"], "stages early and late set for themselves"),
    ],
)
def test_a_factor_whose_draws_miss_stages_that_set_the_field_is_warned_of(paths, missed):
    from trainground.models.stage_rules import factor_warnings

    data = yaml.safe_load(STAGED.read_text())
    data["uncertainty"] = {"factors": [{"name": "f", "paths": paths, "dist": "lognormal", "median": 1.0, "sigma": 0.1}]}
    said = factor_warnings(validate(data, "staged.yaml"))
    if missed is None:
        assert said == []
    else:
        assert len(said) == 1 and missed in said[0] and f"scales {paths[0]}" in said[0]


def test_compare_says_its_arithmetic_columns_read_a_staged_run_as_one_stage():
    result = CliRunner().invoke(main, ["compare", str(STAGED)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "a staged instance: the arithmetic columns read the run as one stage" in said
    plain = CliRunner().invoke(main, ["compare", str(ROOT / "instances" / "seed-week-75.yaml")])
    assert "a staged instance" not in plain.output
