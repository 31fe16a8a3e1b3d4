"""One flattening of a plan into a row (models.result.plan_columns): the batch summary, the certainty curve,
frontier, sweep and the API take the same figures from it, whether they hold the result or its JSON file."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainground.drivers.batch.inputs import Task
from trainground.drivers.batch.summary import summary_row
from trainground.drivers.tradeoffs.certainty import CSV_COLUMNS, CertaintyCurve
from trainground.models.load import load_instance
from trainground.models.result import key_columns, plan_columns
from trainground.solver.solve import Planner

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def solved():
    """A plan with nodes and cloud VMs in it, so the counted columns are not all zero."""
    return Planner(load_instance(ROOT / "instances" / "two-backends-cloud.yaml")).solve()


def test_the_json_form_flattens_to_the_results_own_columns(solved):
    payload = solved.to_json()
    cols = key_columns(solved.plan, solved.metrics)
    assert plan_columns(payload["plan"], payload["metrics"]) == cols
    assert cols["nodes"] == solved.plan.node_count and cols["vms"] == solved.plan.vm_count
    assert cols["nodes"] > 0 and cols["time_margin"] == solved.metrics.time_margin


def test_a_batch_summary_row_and_a_certainty_row_show_the_plans_columns(solved):
    cols = key_columns(solved.plan, solved.metrics)
    row = summary_row(Task("a.yaml", "a.yaml", "a.json", "h"), solved.to_json())
    shared = set(row) & set(cols)
    assert {"cadence_s", "nodes", "vms", "total_cost", "makespan_s"} <= shared
    assert {k: row[k] for k in shared} == {k: cols[k] for k in shared}
    (curve,) = CertaintyCurve("a", "total_cost", solved, []).rows()
    shared = set(CSV_COLUMNS) & set(cols)
    assert {"training_gpus", "nodes", "hourly_cost"} <= shared
    assert {k: curve[k] for k in shared} == {k: cols[k] for k in shared}


def test_a_batch_row_without_a_plan_has_empty_plan_columns():
    row = summary_row(Task("a.yaml", "a.yaml", "a.json", "h"), {"status": "infeasible", "message": "no plan"})
    assert row["status"] == "infeasible" and row["nodes"] is None and row["total_cost"] is None
