"""Which regime is cheapest (MODEL.md §14, "Choosing a regime"): the optimum of each regime of a list, side by side.

Each regime is the instance with its ``regime:`` section replaced: the compared regime's own fields, and the
fields that apply to every mode (``rollout_timeout``, ``truncated``, ``max_concurrent_attempts``,
``weight_sync_time``) carried over from the instance. Each row is the exact optimum of its own MIP (its freshness
rows inside it), solved by :func:`solver.solve.solve_instance` and verified; a regime the planner does not plan
yet, or cannot plan on the instance's basis, is a row that says so. The best is the lexicographic optimum of
MODEL §4 over the rows with a plan. Every row is measured by the same lifetime law and throughput figures: a
comparison reads one measurement for all (MODEL §14).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from trainground.models.edits import edited
from trainground.models.errors import InstanceError
from trainground.models.instance import Instance
from trainground.models.regime import Regime
from trainground.models.result import Result

ANY_MODE = ("rollout_timeout", "truncated", "max_concurrent_attempts", "weight_sync_time")
"""Regime fields that apply to every mode: a compared regime takes the instance's."""

SPEC_HELP = (
    "colocated, pipelined-0, pipelined-1, drop, drop-inflight, admission-K (K a real >= 1), or a YAML mapping of "
    "regime fields such as '{mode: pipelined, steps_ahead: 1, rollout_timeout: 1h}'"
)


def default_regimes(inst: Instance) -> list[dict[str, Any]]:
    """MODEL §14's default list: colocated, pipelined k = 0 and 1, async drop at the instance's K with and
    without in-flight updates, async admission at k = 4, 8, 16."""
    return [
        {"mode": "colocated"},
        {"mode": "pipelined", "steps_ahead": 0},
        {"mode": "pipelined", "steps_ahead": 1},
        {"mode": "async"},
        {"mode": "async", "in_flight_updates": True},
        *({"mode": "async", "staleness": "admission", "steps_ahead": k, "in_flight_updates": True} for k in (4, 8, 16)),
    ]


def parse_regime(text: str) -> dict[str, Any]:
    """A regime spec as the command line gives it (SPEC_HELP); ValueError naming what is wrong."""
    word = text.strip().lower()
    named = {
        "colocated": {"mode": "colocated"},
        "pipelined-0": {"mode": "pipelined", "steps_ahead": 0},
        "pipelined-1": {"mode": "pipelined", "steps_ahead": 1},
        "drop": {"mode": "async"},
        "drop-inflight": {"mode": "async", "in_flight_updates": True},
    }
    if word in named:
        return dict(named[word])
    if word.startswith("admission-"):
        try:
            k = float(word.removeprefix("admission-"))
        except ValueError:
            k = math.nan
        if not k >= 1 or not math.isfinite(k):
            raise ValueError(f"{text!r}: admission-K takes a real K >= 1, as in admission-8")
        return {"mode": "async", "staleness": "admission", "steps_ahead": k, "in_flight_updates": True}
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        value = None
    if isinstance(value, dict):
        return value
    raise ValueError(f"{text!r} is not a regime: give {SPEC_HELP}")


@dataclass
class RegimeRow:
    """One compared regime: its label, its instance's result (None when the regime is refused) or why not."""

    regime: dict[str, Any]
    label: str
    result: Result | None = None
    refused: str | None = None  # why this regime is not planned on this instance
    consumed: tuple[float, float] | None = None  # (mean, p99) gap of the trajectories the plan's batches consume

    @property
    def ok(self) -> bool:
        return self.result is not None and self.result.plan is not None

    @property
    def reason(self) -> str | None:
        """One line: why there is no plan (refused, or the diagnosis's conflict)."""
        if self.refused is not None:
            return self.refused
        if self.result is None or self.ok:
            return None
        diagnosis = self.result.diagnosis or {}
        return diagnosis.get("conflict") or self.result.message or str(self.result.status)


@dataclass
class RegimeComparison:
    inst: Instance
    objective: str
    rows: list[RegimeRow] = field(default_factory=list)
    best: int | None = None  # index of the best row under the objective

    def to_json(self) -> dict:
        out = []
        for row in self.rows:
            entry: dict[str, Any] = {"regime": row.regime, "label": row.label, "best": False}
            if row.result is not None:
                entry["result"] = row.result.to_json()
            entry["status"] = row.result.status if row.result is not None else "not_planned"
            entry["consumed_gap"] = None if row.consumed is None else {"mean": row.consumed[0], "p99": row.consumed[1]}
            entry["reason"] = row.reason
            out.append(entry)
        if self.best is not None:
            out[self.best]["best"] = True
        return {"instance": self.inst.name, "objective": self.objective, "basis": self.inst.planning.basis, "rows": out}


def regime_instance(inst: Instance, regime: dict[str, Any], label: str = "--regime") -> Instance:
    """``inst`` with ``regime`` as its regime section, the instance's every-mode fields carried over."""
    block = dict(regime)
    if inst.regime is not None:
        for name in ANY_MODE:
            if name not in block and getattr(inst.regime, name) != getattr(Regime(), name):
                block[name] = getattr(inst.regime, name)
    try:
        return edited(inst, {"regime": block})
    except InstanceError as exc:
        raise InstanceError(label, exc.problems) from None


def compare_regimes(
    inst: Instance,
    regimes: Sequence[dict[str, Any]] | None = None,
    objective: str | None = None,
    on_row: Callable[[int, int, str], None] | None = None,
) -> RegimeComparison:
    """The optimum of each regime of ``regimes`` (default :func:`default_regimes`) under ``objective`` (default the
    instance's); ``on_row(done, total, label)`` hears each row start."""
    from trainground.drivers.diagnosis.diagnose import diagnosed
    from trainground.drivers.hold import solve_planned
    from trainground.models.regime_rules import unplanned_reason

    wanted = objective or inst.objective
    specs = list(regimes) if regimes is not None else default_regimes(inst)
    out = RegimeComparison(inst, wanted)
    for i, spec in enumerate(specs):
        label = Regime.model_construct(**{**Regime().model_dump(), **spec}).label
        if on_row is not None:
            on_row(i, len(specs), label)
        try:
            variant = regime_instance(inst, spec)
            why = unplanned_reason(variant)
            if why is not None:
                out.rows.append(RegimeRow(spec, label, refused=why))
                continue
            result = diagnosed(variant, solve_planned(variant, wanted), depth="brief")
        except InstanceError as exc:  # the regime does not fit the instance (a rule of MODEL §14), or is refused
            out.rows.append(
                RegimeRow(
                    spec, label, refused="; ".join(f"{p.path}: {p.rule}" if p.path else p.rule for p in exc.problems)
                )
            )
            continue
        out.rows.append(RegimeRow(spec, label, result=result, consumed=consumed_gaps(variant, result)))
    out.best = _best(out.rows, wanted)
    return out


def consumed_gaps(inst: Instance, result: Result) -> tuple[float, float] | None:
    """(mean, p99) consumed gap of a plan (MODEL §11 item 3, §14): the regime's own where its metrics carry them,
    else (the seed's regime on steady_state, whose metrics give the per-trajectory gap) §11's law at its (L, K),
    so that every row of a comparison reads the same measure."""
    from trainground.solver.laws import calculus as calc
    from trainground.solver.laws.holding import consumed_gaps as law

    if result.plan is None or result.metrics is None:
        return None
    m = result.metrics
    if m.consumed_mean_gap is not None and m.consumed_p99_gap is not None:
        return m.consumed_mean_gap, m.consumed_p99_gap
    if inst.holds:  # §11's metrics are the consumed gap already
        return m.mean_version_gap, m.p99_version_gap
    occ = calc.occupancy_of(inst.environment.occupancy)
    return law(inst, occ, result.plan.cadence_s, result.plan.versions_kept)


def _best(rows: list[RegimeRow], objective: str) -> int | None:
    """MODEL §4's lexicographic order over the rows with a plan (relative ties at 1e-9 go to the next criterion)."""
    order = {
        "total_cost": ("total_cost", "makespan_s", "hourly_cost"),
        "hourly_cost": ("hourly_cost", "makespan_s"),
        "makespan": ("makespan_s", "total_cost"),
    }[objective]
    best = None
    for i, row in enumerate(rows):
        if not row.ok:
            continue
        if best is None or _before(row, rows[best], order):
            best = i
    return best


def _before(a: RegimeRow, b: RegimeRow, order: tuple[str, ...]) -> bool:
    assert a.result is not None and b.result is not None and a.result.plan is not None and b.result.plan is not None
    for key in order:
        x, y = getattr(a.result.plan, key), getattr(b.result.plan, key)
        if abs(x - y) > 1e-9 * max(1.0, abs(x), abs(y)):
            return x < y
    return False
