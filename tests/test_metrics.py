"""The metrics a plan reports are the model's (solver.mip.metrics), and the verifier checks each one (MODEL §6).

On bundled instances under both bases (and one with MODEL §13's terms), the solved result's metrics pass
the verifier's recomputation; the same metrics with any one figure moved by 0.1 % (or a §13 entry
dropped) fail it on exactly that metric.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from trainground.models.edits import load_edited
from trainground.solver.mip.metrics import plan_metrics
from trainground.solver.solve import solve_instance
from trainground.solver.verify.plan import verify_plan

INSTANCES = Path(__file__).resolve().parents[1] / "instances"
CASES = {
    "seed steady_state": ("seed-week-75.yaml", ["planning.basis=steady_state"]),
    "two pools steady_state": ("seed-two-pools.yaml", ["planning.basis=steady_state"]),
    "spot steady_state": ("seed-week-spot.yaml", ["planning.basis=steady_state"]),
    "seed hold rows": ("seed-week-75.yaml", []),
    "two pools hold rows": ("seed-two-pools.yaml", []),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def solved(request):
    name, edits = CASES[request.param]
    inst = load_edited(INSTANCES / name, edits)
    result = solve_instance(inst)
    assert result.plan is not None and result.metrics is not None
    return inst, result


def failing(inst, plan, metrics) -> set[str]:
    return {v.split(":")[0] for v in verify_plan(inst, plan, 0.0, metrics).violations}


def test_the_result_reports_the_model_metrics_and_the_verifier_agrees(solved):
    inst, result = solved
    assert result.metrics == plan_metrics(inst, result.plan)
    assert failing(inst, result.plan, result.metrics) == set()


def test_a_moved_metric_fails_on_that_metric_alone(solved):
    inst, result = solved
    moved = 0
    for name, value in result.metrics.model_dump().items():
        if not isinstance(value, float) or value == 0.0:
            continue
        bad = result.metrics.model_copy(update={name: value * 1.001 + 1e-3})
        assert failing(inst, result.plan, bad) == {f"metrics.{name}"}, name
        moved += 1
    assert moved >= 14


def test_a_dropped_reliability_entry_fails():
    inst = load_edited(INSTANCES / "seed-week-spot.yaml", ["planning.basis=steady_state"])
    result = solve_instance(inst)
    assert result.metrics.availability
    shape = sorted(result.metrics.availability)[0]
    fewer = {k: v for k, v in result.metrics.availability.items() if k != shape}
    bad = result.metrics.model_copy(update={"availability": fewer})
    assert failing(inst, result.plan, bad) == {"metrics.availability"}
