"""Stages (MODEL.md §12): validation, one stage equal to the instance, the staged verifier, the command."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.strategies import cases
from trainground.cli import main
from trainground.models.load import InstanceError, load_instance, validate
from trainground.solver.solve import Planner
from trainground.solver.stages.solve import StagedPlanner
from trainground.solver.verify.stages import verify_staged

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"


def seed_document() -> dict:
    data = yaml.safe_load(SEED.read_text())
    data["planning"] = {"basis": "steady_state"}
    return data


def staged(capacity: str = "fixed", **changes) -> dict:
    data = seed_document()
    data["stages"] = {
        "capacity": capacity,
        "list": [
            {"name": "early", "iterations": 300, "tokens_per_attempt": 16384},
            {"name": "mid", "iterations": 400},
            {"name": "late", "iterations": 300, "tokens_per_attempt": 49152, "update_time_scale": 1.5},
        ],
        **changes,
    }
    return data


@pytest.mark.parametrize(
    "edit, where, rule",
    [
        (lambda d: d["stages"]["list"][1].update(iterations=300), "stages.list", "sum to 900"),
        (lambda d: d["stages"]["list"][0].update(colour=1), "stages.list[0].colour", "unknown key"),
        (lambda d: d["stages"]["list"][2].update(name="early"), "stages.list[2].name", "duplicate name"),
        (lambda d: d.update(reliability={"gpu_mtbf": "50000h"}), "reliability", "not available"),
        (
            lambda d: d["stages"]["list"][0].update(occupancy={"distribution": "lognormal", "median": 10}),
            "stages.list[0].occupancy",
            "exactly two",
        ),
    ],
)
def test_a_broken_stages_section_names_the_field_and_the_rule(edit, where, rule):
    data = staged()
    edit(data)
    with pytest.raises(InstanceError) as err:
        validate(data, "staged.yaml")
    assert any(p.path == where and rule in p.rule for p in err.value.problems), err.value.message


def test_a_switch_time_under_fixed_capacity_is_a_warning_and_changes_nothing(tmp_path):
    from trainground.models.edits import load_edited_checked

    path = tmp_path / "staged.yaml"
    path.write_text(yaml.safe_dump(staged()))
    plain, _ = load_edited_checked(path, [])
    switched, warnings = load_edited_checked(path, ["stages.switch_time=30m"])
    assert [w for w in warnings if w.startswith("stages.switch_time: 1800 s applies to capacity: replan only")]
    assert not [
        w
        for w in load_edited_checked(path, ["stages.capacity=replan", "stages.switch_time=30m"])[1]
        if w.startswith("stages.switch_time")
    ]
    assert StagedPlanner(switched).solve("total_cost").plan == StagedPlanner(plain).solve("total_cost").plan


@pytest.mark.parametrize(
    "name", cases(["seed-week-75.yaml", "two-backends-cloud.yaml", "seed-intake-80.yaml"], 2)
)  # the CI profile runs the first two (tests/strategies.py)
@pytest.mark.parametrize("capacity", ["fixed", "replan"])
def test_one_stage_equal_to_the_instance_is_the_plan_without_stages(name, capacity):
    data = yaml.safe_load((ROOT / "instances" / name).read_text())
    data.pop("uncertainty", None)
    data["planning"] = {"basis": "steady_state"}
    plain = validate(copy.deepcopy(data), name)
    data["stages"] = {"capacity": capacity, "list": [{"name": "all", "iterations": plain.workload.iterations}]}
    planner, unstaged = StagedPlanner(validate(data, name)), Planner(plain)
    for objective in ("total_cost", "hourly_cost", "makespan"):
        want, got = unstaged.solve(objective).plan, planner.solve(objective).plan
        assert (got.cadence_s, got.versions_kept, got.training_groups) == (
            want.cadence_s,
            want.versions_kept,
            want.training_groups,
        )
        assert [r.replicas for r in got.inference] == [r.replicas for r in want.inference]
        assert got.total_cost == pytest.approx(want.total_cost, rel=1e-9)
        assert got.makespan_s == pytest.approx(want.makespan_s, rel=1e-12)


@pytest.fixture(scope="module")
def seed_stages():
    inst = load_instance(ROOT / "instances" / "seed-week-stages.yaml")
    small = validate(
        {**yaml.safe_load((ROOT / "instances" / "seed-week-stages.yaml").read_text()), "name": "small"}
        | {"schedule": {"deadline": "7d", "cadence": {"min": "500s", "max": "900s", "step": "10s"}}},
        "small.yaml",
    )
    return inst, small, StagedPlanner(small).solve()


def test_the_staged_plan_names_its_stages_and_their_binding_rows(seed_stages):
    _, small, result = seed_stages
    assert result.status == "optimal"
    plan = result.plan
    assert [s.name for s in plan.stages] == ["early", "mid", "late"]
    assert plan.makespan_s == pytest.approx(sum(s.iterations * s.cadence_s for s in plan.stages))
    assert plan.total_cost == pytest.approx(plan.hourly_cost * plan.makespan_s / 3600)
    late = plan.stages[2]
    assert late.token_demand_per_s <= late.token_supply_per_s * (1 + 1e-9)
    assert plan.stages[0].cadence_s < late.cadence_s  # shorter responses: a faster pace early
    assert any(b.endswith("[late]") for b in result.binding)


@pytest.mark.parametrize("objective", ["total_cost", "makespan"])
def test_the_stages_that_size_the_fleet_are_those_whose_throughput_binds(objective):
    """A stage is marked where its throughput binds (a full pool binds in every stage alike and marks none);
    the run's metrics are the first marked stage's, and the text says whose."""
    from trainground.render.stages import metrics_sentence, sizing_sentence

    result = StagedPlanner(load_instance(ROOT / "instances" / "seed-week-stages.yaml")).solve(objective)
    plan = result.plan
    for s in plan.stages:
        assert s.sizes_fleet == (f"throughput[{s.name}]" in result.binding), (s.name, result.binding)
    marked = [s for s in plan.stages if s.sizes_fleet]
    assert marked and [s.name for s in plan.stages if s.run_metrics] == [marked[0].name]
    assert result.metrics.token_supply_per_s == pytest.approx(marked[0].token_supply_per_s)
    assert f"metrics below: those of stage '{marked[0].name}'" in metrics_sentence(plan)
    assert ("stages " if len(marked) > 1 else "stage ") + f"'{marked[0].name}'" in sizing_sentence(plan)


def test_with_no_stage_sizing_the_fleet_the_metrics_are_the_tightest_stages():
    from types import SimpleNamespace

    from trainground.solver.verify.stages import StagedCheck, _stage_rows

    inst = load_instance(ROOT / "instances" / "seed-week-stages.yaml")
    metrics = StagedPlanner(inst).solve().metrics
    margins = (1.5, 1.2, 1.3)  # supply over demand per stage: the second is the tightest
    checks = [
        SimpleNamespace(
            binding=["pool_capacity[main]", "update_time"],
            metrics=metrics.model_copy(update={"token_demand_per_s": 100.0, "token_supply_per_s": 100.0 * m}),
        )
        for m in margins
    ]
    out = StagedCheck()
    _stage_rows(inst, checks, inst.schedule.deadline / 2, out)
    assert [row["sizes_fleet"] for row in out.stages] == [False] * 3
    assert [row["run_metrics"] for row in out.stages] == [False, True, False]
    assert out.metrics.token_supply_per_s == pytest.approx(120.0)


@pytest.mark.parametrize(
    "break_it, row",
    [
        (lambda p: p.stages[1].plan.__dict__.update(cadence_s=p.stages[1].plan.cadence_s - 10), "stage mid"),
        (lambda p: p.__dict__.update(total_cost=p.total_cost * 0.99), "total_cost"),
        (lambda p: p.__dict__.update(makespan_s=p.makespan_s - 100), "makespan_s"),
        (lambda p: p.stages[2].plan.__dict__.update(versions_kept=1), "stage late"),
        (lambda p: p.stages[2].plan.inference[0].__dict__.update(replicas=1), "stage late"),
    ],
)
def test_the_staged_verifier_rejects_a_broken_plan_on_that_row(seed_stages, break_it, row):
    _, small, result = seed_stages
    plan = result.plan.model_copy(deep=True)
    for stage, original in zip(plan.stages, result.plan.stages):
        stage.plan = original.plan.model_copy(deep=True)
    assert verify_staged(small, plan).ok
    break_it(plan)
    check = verify_staged(small, plan)
    assert not check.ok and any(v.startswith(row) for v in check.violations), check.violations


def test_solve_json_carries_the_stages_simulate_plays_them_and_a_plan_file_is_refused(tmp_path):
    data = yaml.safe_load((ROOT / "instances" / "seed-week-stages.yaml").read_text())
    data["schedule"]["cadence"] = {"min": "400s", "max": "900s", "step": "10s"}
    path = tmp_path / "staged.yaml"
    path.write_text(yaml.safe_dump(data))
    out = CliRunner().invoke(main, ["solve", "--json", str(path)])
    assert out.exit_code == 0, out.output
    plan = json.loads(out.output)["plan"]
    assert [s["name"] for s in plan["stages"]] == ["early", "mid", "late"]
    assert {"cadence_s", "duration_s", "token_demand_per_s", "binding"} <= set(plan["stages"][0])
    assert "plan" not in plan["stages"][0]
    human = CliRunner().invoke(main, ["solve", str(path)])
    assert human.exit_code == 0 and "Stages" in human.output and "the fleet" in human.output
    simulated = CliRunner().invoke(main, ["simulate", str(path), "--json"])
    assert simulated.exit_code == 0, simulated.output
    assert set(json.loads(simulated.output)["simulated"]["stages"]) == {"early", "mid", "late"}
    saved = tmp_path / "plan.json"
    saved.write_text(out.output)
    for command in (["simulate", str(path), "--plan", str(saved)],):
        refused = CliRunner().invoke(main, command)
        assert refused.exit_code == 2, (command, refused.output)
        assert "stages" in refused.output and "Traceback" not in refused.output


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ("stages.list[2].tokens_per_attempt=900000", "stage late: no cadence on its grid meets its rows with any K"),
        ("stages.list[2].tokens_per_attempt=60000", "each stage fits on its own (at their shortest the stages take"),
    ],
    ids=["a-stage-with-no-pair", "stages-that-fit-alone"],
)
def test_an_infeasible_staged_instance_names_what_conflicts(edit, said):
    from trainground.drivers.diagnosis.stages import staged_diagnosis
    from trainground.models.edits import load_edited

    inst = load_edited(ROOT / "instances" / "seed-week-stages.yaml", [edit])
    result = StagedPlanner(inst).solve()
    assert result.status == "infeasible"
    found = staged_diagnosis(inst, result)
    assert found["conflict"].startswith(said), found["conflict"]
    if found["shortest_makespan_s"] is not None:
        assert found["shortest_makespan_s"] <= inst.schedule.deadline  # so the stages fit one at a time
        assert "no one capacity serves every stage" in found["conflict"]


def test_a_replan_plan_shows_each_stages_capacity_whole_and_says_whose_the_decisions_are():
    result = CliRunner().invoke(
        main, ["solve", str(ROOT / "instances" / "seed-week-stages.yaml"), "--set", "stages.capacity=replan"]
    )
    assert result.exit_code == 0, result.output
    names = [s.name for s in load_instance(ROOT / "instances" / "seed-week-stages.yaml").stages.list]
    text = result.output
    assert "Capacity per stage" in text and "…" not in text  # no cell cut at the default width
    table = text[text.index("Capacity per stage") :]
    rows = table.splitlines()[3:6]
    assert [r.split()[0] for r in rows] == names
    hourly = [float(r.split("$")[-1].replace(",", "")) for r in rows]
    top = names[hourly.index(max(hourly))]
    assert f"the decisions above are those of stage '{top}' (the largest hourly cost)" in " ".join(text.split())
