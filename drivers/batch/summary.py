"""The summaries of a batch: one row per finished file (summary.csv and summary.jsonl, rewritten whole
and atomically), and reading back the result files of an earlier batch for ``--resume``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from trainground.drivers.batch.inputs import Task
from trainground.models.result import plan_columns
from trainground.simulation.output import write_atomic, write_csv

SUMMARY_CSV = "summary.csv"
SUMMARY_JSONL = "summary.jsonl"
SUMMARY_COLUMNS = (
    "file",
    "name",
    "status",
    "objective",
    "objective_value",
    "cadence_s",
    "versions_kept",
    "inference_gpus",
    "training_gpus",
    "gpus_by_pool",
    "nodes",
    "vms",
    "hourly_cost",
    "total_cost",
    "makespan_s",
    "solve_seconds",
    "message",
    "result",
)


def read_result(path: Path) -> dict | None:
    """A result file written by an earlier batch, or None if it is absent or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def summary_row(task: Task, payload: dict) -> dict:
    """One summary line: the key decisions, costs and timing of one result, in input vocabulary."""
    plan = payload.get("plan") or {}
    timings = payload.get("timings") or {}
    message = "; ".join(filter(None, [payload.get("message"), *top_fix(payload.get("diagnosis"))])) or None
    cols = plan_columns(plan, payload.get("metrics")) if plan else {}
    return {
        "file": task.file,
        "name": payload.get("instance"),
        "status": payload.get("status"),
        "objective": payload.get("objective"),
        "objective_value": payload.get("objective_value"),
        **{k: cols.get(k) for k in ("cadence_s", "versions_kept", "inference_gpus", "training_gpus")},
        "gpus_by_pool": "; ".join(f"{p['pool']}={p['gpus_used']}" for p in plan.get("pools") or []) or None,
        **{k: cols.get(k) for k in ("nodes", "vms", "hourly_cost", "total_cost", "makespan_s")},
        "solve_seconds": sum(timings.get(k, 0.0) for k in ("load", "build", "solve", "extract", "verify")),
        "message": "; ".join(message.splitlines()) if message else None,
        "result": task.result,
    }


def top_fix(diagnosis: dict | None) -> list[str]:
    """What a summary row says of an infeasible result: the first single change the diagnosis found that
    restores a plan, and the loader's notes on implausible units."""
    if not diagnosis:
        return []
    fixes = [c["change"] for c in diagnosis.get("changes", []) if c.get("value") is not None]
    return ([f"feasible with {fixes[0]}"] if fixes else []) + list(diagnosis.get("unit_notes", []))


def write_summaries(out: Path, tasks: Sequence[Task], rows_by_task: dict[Task, dict]) -> list[dict]:
    """Rewrite summary.csv and summary.jsonl (atomically): one row per finished task, in input order."""
    rows = [rows_by_task[task] for task in tasks if task in rows_by_task]
    write_csv(out / SUMMARY_CSV, SUMMARY_COLUMNS, rows)
    write_atomic(out / SUMMARY_JSONL, "".join(json.dumps(row) + "\n" for row in rows))
    return rows
