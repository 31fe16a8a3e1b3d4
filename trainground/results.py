"""What the API's functions return (trainground.api): each wraps the object its driver returns, and converts it to
a plain dict (``to_dict()``, the command's JSON document) and to flat rows (``rows()``, for ``pandas.DataFrame``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainground.drivers.answer import Answer
    from trainground.drivers.risk import Risk
    from trainground.drivers.tradeoffs.frontier import Frontiers
    from trainground.drivers.tradeoffs.sweep import SweepReport
    from trainground.models.instance import Instance
    from trainground.models.result import Metrics, Plan, Result
    from trainground.simulation.report import Report


def _plain(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` as the JSON a command prints reads back (string keys, lists for tuples)."""
    import json

    return json.loads(json.dumps(document))


def plan_row(result: Result) -> dict[str, Any]:
    """One flat row of a result: status, objective, the key decisions and metrics, GPUs by pool."""
    from trainground.models.result import key_columns

    row: dict[str, Any] = {
        "instance": result.instance,
        "status": str(result.status),
        "objective": result.objective,
        "objective_value": result.objective_value,
    }
    if result.plan is not None and result.metrics is not None:
        row.update(key_columns(result.plan, result.metrics))
        row["allowance_s"] = None if result.hold is None else result.hold.allowance_s
        row.update({f"gpus[{p.pool}]": p.gpus_used for p in result.plan.pools})
    return row


@dataclass
class Solution:
    """What :func:`solve` returns: the verified result and what `solve` computes beside it."""

    answer: Answer

    @property
    def instance(self) -> Instance:
        return self.answer.inst

    @property
    def result(self) -> Result:
        """The MODEL.md §6 result (a pydantic model: ``model_dump()`` works too)."""
        return self.answer.result

    @property
    def status(self) -> str:
        return str(self.result.status)

    @property
    def plan(self) -> Plan | None:
        return self.result.plan

    @property
    def metrics(self) -> Metrics | None:
        return self.result.metrics

    def to_dict(self) -> dict[str, Any]:
        """`solve --json`'s document: the §6 result with levers, simulation and the other optional keys."""
        return _plain(self.answer.to_json())

    def rows(self) -> list[dict[str, Any]]:
        """One flat row (:func:`plan_row`)."""
        return [plan_row(self.result)]


@dataclass
class Frontier:
    """What :func:`frontier` returns: every non-dominated (makespan, cost) plan, per cost criterion."""

    found: Frontiers

    def to_dict(self) -> dict[str, Any]:
        """`frontier --json`'s document (every point a §6 result)."""
        return _plain(self.found.to_json())

    def rows(self) -> list[dict[str, Any]]:
        """frontier.csv's rows: one per point of each frontier."""
        from trainground.drivers.tradeoffs.frontier import csv_rows

        return csv_rows(self.found)


@dataclass
class Sweep:
    """What :func:`sweep` returns: one row per point of the product of the axes."""

    report: SweepReport

    def to_dict(self) -> dict[str, Any]:
        """sweep.json's document (every point with its §6 result)."""
        return _plain(self.report.to_json())

    def rows(self) -> list[dict[str, Any]]:
        """sweep.csv's rows."""
        return self.report.csv_rows()


@dataclass
class Simulation:
    """What :func:`simulate` returns: the trajectory-level replay beside the model's figures (MODEL §10)."""

    report: Report

    def to_dict(self) -> dict[str, Any]:
        """`simulate --json`'s document."""
        return _plain(self.report.to_json())

    def rows(self) -> list[dict[str, Any]]:
        """One row per scalar figure: simulated and predicted."""
        sim, pred = self.report.simulated, self.report.predicted
        return [
            {"figure": k, "simulated": v, "predicted": pred.get(k)}
            for k, v in sim.items()
            if v is None or isinstance(v, (int, float))
        ]


@dataclass
class RiskReport:
    """What :func:`risk` returns: a plan over scenarios of the instance's uncertainty (MODEL §9)."""

    risk: Risk

    def to_dict(self) -> dict[str, Any]:
        """`risk --json`'s document."""
        return _plain(self.risk.to_json())

    def rows(self) -> list[dict[str, Any]]:
        """One row per uncertainty factor: its one-at-a-time sensitivity."""
        return self.to_dict()["factors"]
