"""The diagnosis of an infeasible instance (drivers/diagnosis/diagnose.py) on the instances of tests/data/infeasible.

Each instance is infeasible through one limit (or, in two-limits.yaml, through two obstacles no single
input clears). The diagnosis must name that limit first with its exact threshold: the threshold
restores a plan, a slightly tighter value does not (both checked here by solving the edited instance,
not by reading the diagnosis's own solves); the inputs it says cannot help are checked by a solve at
their loosest; and a pair of changes it offers restores a plan together while neither does alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainground.cli import main
from trainground.drivers.diagnosis.diagnose import diagnosed
from trainground.models.edits import edited
from trainground.models.load import load_instance
from trainground.solver.solve import solve_instance

DATA = Path(__file__).resolve().parent / "data" / "infeasible"
SEED_3000 = Path(__file__).resolve().parents[1] / "instances" / "seed-3000-cards.yaml"
CACHE: dict = {}


def diagnosis_of(path: Path) -> tuple:
    if path not in CACHE:
        inst = load_instance(path)
        result = solve_instance(inst)
        assert result.status == "infeasible"
        CACHE[path] = inst, diagnosed(inst, result).diagnosis
    return CACHE[path]


def feasible(inst, changes: dict) -> bool:
    return solve_instance(edited(inst, changes), "makespan").plan is not None


@pytest.mark.parametrize(
    "name, limit, path",
    [
        ("mean-gap-only", "max_mean_gap", "freshness.max_mean_gap"),
        ("exceedance-only", "max_exceedance", "freshness.max_exceedance"),
        ("group-drop-only", "max_group_drop", "freshness.max_group_drop"),
        ("startup-gap", "max_mean_gap", "freshness.max_mean_gap"),  # start-up counted: the solves decide
    ],
)
def test_a_freshness_limit_is_named_first_with_its_exact_threshold(name, limit, path):
    inst, diagnosis = diagnosis_of(DATA / f"{name}.yaml")
    assert diagnosis["cut_alone"][limit] == max(diagnosis["cut_alone"].values())  # it cuts every pair on its own
    assert feasible(inst, {path: None})  # infeasible only through this limit
    first = diagnosis["changes"][0]
    assert first["input"] == limit and first["exact"] and first["change"].startswith(f"{limit} ≥ ")
    value = first["value"]
    assert value > getattr(inst.freshness, limit)
    assert feasible(inst, {path: value})
    assert not feasible(inst, {path: value * (1 - 1e-6)})


def test_max_nodes_is_named_first_with_its_exact_threshold():
    inst, diagnosis = diagnosis_of(DATA / "max-nodes-only.yaml")
    assert "pass the per-pair checks" in diagnosis["conflict"]  # pairs pass: the node cap cuts whole plans
    path = "environment.node_types[0].max_nodes"
    assert feasible(inst, {path: None})
    first = diagnosis["changes"][0]
    assert first["input"] == "max_nodes[standard]" and first["exact"]
    assert feasible(inst, {path: int(first["value"])})
    assert not feasible(inst, {path: int(first["value"]) - 1})


def test_a_budget_is_named_first_with_its_exact_threshold():
    inst, diagnosis = diagnosis_of(DATA / "total-budget.yaml")
    assert "pass the per-pair checks" in diagnosis["conflict"]  # pairs pass: the budget cuts whole plans
    path = "limits.max_total_cost"
    assert feasible(inst, {path: None})
    first = diagnosis["changes"][0]
    assert first["input"] == "max_total_cost" and first["exact"]
    assert first["value"] > inst.limits.max_total_cost
    assert feasible(inst, {path: first["value"]})
    assert not feasible(inst, {path: first["value"] * (1 - 1e-6)})


def test_every_threshold_offered_restores_a_plan_and_the_exact_ones_are_tight():
    # every single change of every test instance restores a plan; an exact one fails a hair tighter
    for path in sorted(DATA.glob("*.yaml")):
        inst, diagnosis = diagnosis_of(path)
        for change in diagnosis.get("changes", []):
            edits = _edits(inst, change["input"], change["value"])
            assert feasible(inst, edits), (path.name, change)


def test_pool_capacity_thresholds_of_the_bundled_infeasible_instance():
    inst, diagnosis = diagnosis_of(SEED_3000)
    by_input = {c["input"]: c for c in diagnosis["changes"]}
    gpus = by_input["gpus[inference]"]["value"]
    assert feasible(inst, {"gpu_pools[0].gpus": int(gpus)}) and not feasible(inst, {"gpu_pools[0].gpus": int(gpus) - 1})
    rate = by_input["tokens_per_gpu_s[tp8]"]["value"]
    path = "inference.shapes[0].tokens_per_gpu_s"
    assert feasible(inst, {path: rate}) and not feasible(inst, {path: rate * (1 - 1e-6)})
    span = by_input["deadline"]["value"]
    assert feasible(inst, {"schedule.deadline": span}) and not feasible(inst, {"schedule.deadline": span - 1000})
    # the pool-capacity family cuts every pair, so its own limits come first
    assert [c["family"] for c in diagnosis["changes"][:2]] == ["pool_capacity", "pool_capacity"]


def test_inputs_that_cannot_help_are_said_so_in_one_line():
    inst, diagnosis = diagnosis_of(DATA / "mean-gap-only.yaml")
    lines = [n for n in diagnosis["notes"] if n.startswith("cannot restore a plan alone")]
    assert len(lines) == 1
    for name in ("tokens_per_gpu_s[tp8]", "gpus[main]", "max_vms[burst]"):
        assert name in diagnosis["cannot_help"] and name in lines[0]
        assert name not in {c["input"] for c in diagnosis["changes"]}
    # the claim holds: 16x the tokens/s or the GPUs does not restore a plan (the mean gap still cuts every pair)
    assert not feasible(inst, {"inference.shapes[0].tokens_per_gpu_s": 75 * 16})
    assert not feasible(inst, {"gpu_pools[0].gpus": 10000 * 16})
    assert "not feasible even at" not in json.dumps(diagnosis)


def test_two_limits_offer_the_cheapest_pair_of_changes():
    inst, diagnosis = diagnosis_of(DATA / "two-limits.yaml")
    assert diagnosis["relaxations"] == [] and diagnosis["changes"] == []
    assert "no single change restores a plan" in diagnosis["conflict"]
    pairs = diagnosis["pairs_of_changes"]
    assert pairs and pairs == sorted(pairs, key=lambda p: p["relative_change"])
    for pair in pairs:
        (a, b), (x, y) = pair["inputs"], pair["values"]
        both = _edits(inst, a, x) | _edits(inst, b, y)
        assert feasible(inst, both), pair
        assert not feasible(inst, _edits(inst, a, x)) and not feasible(inst, _edits(inst, b, y))
    assert {"max_mean_gap", "tokens_per_gpu_s[tp8]"} in [set(p["inputs"]) for p in pairs]


def test_cli_prints_the_diagnosis_and_its_json_keeps_the_model_keys():
    runner = CliRunner()
    out = runner.invoke(main, ["solve", str(DATA / "mean-gap-only.yaml"), "--json"])
    assert out.exit_code == 3
    diagnosis = json.loads(out.output)["diagnosis"]
    assert {"conflict", "changes", "relaxations", "rejected_pairs"} <= set(diagnosis)
    assert {"input", "change", "value"} <= set(diagnosis["changes"][0])
    text = runner.invoke(main, ["solve", str(DATA / "two-limits.yaml")])
    assert text.exit_code == 3
    assert "feasible with two changes: " in text.output and "cannot restore a plan alone" in text.output


def _edits(inst, name: str, value: float) -> dict:
    """The instance edits a diagnosis input name stands for (independent of the diagnosis's own code)."""
    if name == "occupancy_scale":
        occ = inst.environment.occupancy
        return {
            f"environment.occupancy.{k}": getattr(occ, k) * value
            for k in ("median", "p99", "mean")
            if getattr(occ, k) is not None
        }
    if name in ("max_mean_gap", "max_exceedance", "max_group_drop", "max_versions_kept"):
        return {f"freshness.{name}": int(value) if name == "max_versions_kept" else value}
    if name == "deadline":
        return {"schedule.deadline": value}
    if name in ("max_hourly_cost", "max_total_cost"):
        return {f"limits.{name}": value}
    kind, _, inner = name.partition("[")
    inner = inner.rstrip("]")
    if kind == "gpus":
        i = [p.name for p in inst.gpu_pools].index(inner)
        return {f"gpu_pools[{i}].gpus": int(value)}
    if kind == "tokens_per_gpu_s":
        j = [s.name for s in inst.inference.shapes].index(inner)
        return {f"inference.shapes[{j}].tokens_per_gpu_s": value}
    if kind == "max_nodes":
        i = [k.name for k in inst.environment.node_types].index(inner)
        return {f"environment.node_types[{i}].max_nodes": int(value)}
    raise AssertionError(f"no edit for {name}")


def test_a_limit_that_exposes_another_is_offered_with_it_beside_the_single_changes():
    # a longer deadline restores a plan alone, the gap limit does not (the node cap binds
    # once it is lifted); the pair that leaves the deadline alone is offered too
    inst, diagnosis = diagnosis_of(DATA / "gap-and-nodes.yaml")
    assert diagnosis["changes"][0]["input"] == "deadline"
    assert "max_mean_gap" in diagnosis["cannot_help"]
    assert not feasible(inst, {"freshness.max_mean_gap": None})
    pair = next(p for p in diagnosis["pairs_of_changes"] if set(p["inputs"]) == {"max_mean_gap", "max_nodes[standard]"})
    gap, nodes = (pair["values"][pair["inputs"].index(k)] for k in ("max_mean_gap", "max_nodes[standard]"))
    path_gap, path_nodes = "freshness.max_mean_gap", "environment.node_types[0].max_nodes"
    assert feasible(inst, {path_gap: gap, path_nodes: int(nodes)})
    assert not feasible(inst, {path_gap: gap * (1 - 1e-6), path_nodes: int(nodes)})
    assert not feasible(inst, {path_gap: gap, path_nodes: int(nodes) - 1})


class _Threshold:
    """A stand-in for Feasibility over one input x: a plan exists exactly when x >= ``at``; it counts solves."""

    def __init__(self, at: float, max_solves: int | None = None):
        self.at, self.max_solves, self.solves, self.tried = at, max_solves, 0, []

    def spent(self) -> bool:
        return self.max_solves is not None and self.solves >= self.max_solves

    def feasible(self, changes: dict) -> bool:
        self.solves += 1
        self.tried.append(changes["x"])
        return changes["x"] >= self.at


def _finding():
    import numpy as np

    from trainground.drivers.diagnosis.candidates import Candidates
    from trainground.drivers.diagnosis.findings import Finding

    return Finding("x", ("family",), True, lambda: Candidates("x", "x", 1.0, np.zeros(0), steps=False, top=1.01))


@pytest.mark.parametrize("early", [0, 2])
def test_a_stepped_search_never_reports_an_unsolved_loosest_value(early):
    """Stepping from a closed form towards the loosest value (here 1.01, within the second step of 1.6 %):
    the loosest is solved before a step passes it, so an input that cannot restore a plan there is never
    reported with the loosest as its threshold, and a found one is exact to the bracket."""
    from trainground.drivers.diagnosis.thresholds import REL, _expand

    hopeless = _Threshold(at=2.0)
    f = _expand(hopeless, _finding(), 1.01, lambda x: {"x": x}, early=early)
    assert f.value is None and f.bracket is None and 1.01 in hopeless.tried
    found = _Threshold(at=1.007)
    f = _expand(found, _finding(), 1.01, lambda x: {"x": x}, early=early)
    assert f.value is not None and 1.007 <= f.value <= 1.007 * (1 + REL) and 1.01 in found.tried
    cut = _Threshold(at=1.007, max_solves=1)
    f = _expand(cut, _finding(), 1.01, lambda x: {"x": x}, early=early)
    assert f.value is None and (f.bracket is None or 1.01 in cut.tried)
