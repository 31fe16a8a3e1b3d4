"""The seed article's §4 question as a report: spend inference slack on fewer cards, or a shorter schedule?

Columns, side by side:

- ``baseline``: the seed's arithmetic (:func:`solver.explain.explain`) at the deadline pace
  with the baseline's inference cards — what the article starts from; by default every
  inference GPU of every pool beside the deadline pace's training, each pool's cards rated and
  priced by its own shapes (:func:`_baseline`, :func:`drivers.tradeoffs.shape_mix.pools_mix`);
- ``fewer_cards``: the cheapest plan that meets the deadline (the MIP, total cost);
- ``shorter_same_cards``: the fastest plan with no more inference cards than the baseline;
- ``shorter_same_hourly``: the fastest plan whose hourly cost is no more than ``fewer_cards``';
- ``shorter_arithmetic``: the seed's arithmetic at the shorter schedule's cadence with the
  baseline's cards — the article's own "shorten the cycle to 500 s" figures (17.3 % time
  margin, 8.19 effective trajectories/s, 89.5 tokens/s/GPU on 3,000 cards). The cadence
  is the ``shorter_same_cards`` plan's when it has one, else the pinned cadence, else the
  fastest admissible one;
- on a staged instance (MODEL.md §12), ``fixed_fleet`` or ``replan_per_stage``: the cheapest plan
  under the other capacity, and what re-planning saves after its switch costs
  (:mod:`drivers.tradeoffs.compare_stages`). The arithmetic columns are then the instance's own figures
  (the one-stage run), the plan columns the staged plans (their metrics those of the stage that sizes the fleet).

The columns are built by :mod:`drivers.tradeoffs.compare_columns`: the arithmetic ones rate and price
their inference cards by a shape mix (:mod:`drivers.tradeoffs.shape_mix`) and carry a ``yardstick``
note when those cards cannot deliver, and every column reports the same figures
(:data:`~drivers.tradeoffs.compare_columns.ROWS`). :func:`deltas` phrases each against the baseline
the way the article does ("time margin 17.3 %, supply +21 %"); :func:`coinciding` says why
two columns hold the same figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trainground.drivers.hold import HoldingPlanner, planner_for
from trainground.drivers.tradeoffs.compare_columns import ROWS, Column, arithmetic_column, plan_column
from trainground.drivers.tradeoffs.compare_stages import CapacityChoice, capacity_choice
from trainground.drivers.tradeoffs.shape_mix import ShapeMix, capacity, capacity_text, mix_of, pools_mix
from trainground.models.errors import InstanceError, Problem
from trainground.models.instance import Instance
from trainground.models.regime_rules import refuse_unplanned
from trainground.models.result import Result
from trainground.solver.explain import explain
from trainground.solver.laws import calculus as calc
from trainground.solver.solve import Planner
from trainground.solver.tolerances import TIE_TOL


@dataclass
class Comparison:
    instance: str
    baseline_gpus: int | None
    baseline_source: str
    pinned_cadence: float | None
    columns: list[Column]
    mix: ShapeMix | None = None
    coincide: list[str] = field(default_factory=list)
    capacity: CapacityChoice | None = None  # a staged instance: fixed fleet against re-planning per stage

    def column(self, key: str) -> Column:
        return next(c for c in self.columns if c.key == key)

    def repeats(self) -> dict[str, str]:
        """Each plan column that repeats an earlier plan column (:func:`same_plan`), by key: the earlier's key."""
        out: dict[str, str] = {}
        for j, b in enumerate(self.columns):
            for a in self.columns[:j]:
                if a.key not in out and same_plan(a, b):
                    out[b.key] = a.key
                    break
        return out

    def changes(self) -> dict[str, str]:
        """Each column against the baseline in one line of relative changes (the table holds the figures)."""
        base = self.column("baseline")
        return {c.key: changes(base, c) for c in self.columns if c.key != "baseline" and c.ok}

    def deltas(self) -> dict[str, list[str]]:
        base = self.column("baseline")
        return {c.key: deltas(base, c) for c in self.columns if c.key != "baseline" and c.ok}

    def to_json(self) -> dict:
        return {
            "instance": self.instance,
            "baseline_gpus": self.baseline_gpus,
            "baseline_source": self.baseline_source,
            "pinned_cadence_s": self.pinned_cadence,
            "shape_mix": None
            if self.mix is None
            else {
                "weights": self.mix.weights,
                "source": self.mix.source,
                "tokens_per_gpu_s": self.mix.tokens_per_gpu_s,
                "gpu_hour_cost": self.mix.gpu_hour_cost,
            },
            "coincide": list(self.coincide),
            "capacity": None if self.capacity is None else self.capacity.to_json(),
            "rows": [{"key": k, "label": label, "format": f} for k, label, f in ROWS],
            "columns": [c.to_json() for c in self.columns],
            "deltas": self.deltas(),
        }


def compare(
    inst: Instance, baseline_gpus: int | None = None, *, cadence: float | None = None, switch_time: float | None = None
) -> Comparison:
    """The §4 comparison for ``inst``.

    ``cadence`` pins the plans to that one cadence (the grid becomes that single point, as
    ``--set schedule.cadence.min=...,max=...`` would make it), so an infeasible plan's
    diagnosis is about the pinned run; the baseline stays at the deadline pace. ``switch_time``: a
    staged instance's re-planning is charged this (s; default the instance's ``stages.switch_time``).
    """
    refuse_unplanned(inst)
    if inst.regime is not None and not inst.regime.is_default:  # its yardstick columns are the seed regime's
        raise InstanceError(
            inst.name or "instance",
            [
                Problem(
                    "regime.mode",
                    f"{inst.regime.label}: compare's arithmetic columns are the seed regime's (docs/model.md §2), not "
                    "this regime's; compare regimes with `trainground regimes`, and cost against time with `frontier`",
                )
            ],
        )
    if cadence is not None:
        inst = pinned(inst, cadence)
    planner = planner_for(inst)
    fewer = planner.solve("total_cost")
    training = int(calc.min_groups_for(inst, calc.deadline_pace(inst))[0]) * inst.training.gpus_per_group
    plan = fewer.plan if fewer.status == "optimal" else None
    mix = pools_mix(inst, plan, training) if baseline_gpus is None else mix_of(inst, plan, training)
    gpus, source = _baseline(inst, baseline_gpus, fewer, mix, training)
    columns = [
        arithmetic_column(
            inst,
            ("baseline", "baseline (seed arithmetic)", "baseline"),
            None,
            gpus,
            "deadline pace, " + f"{gpus:,} inference GPUs ({source})",
            mix,
        )
    ]
    columns.append(
        plan_column(inst, ("fewer_cards", "fewer cards: the cheapest plan meeting the deadline", "fewer cards"), fewer)
    )
    # Capped solves are not diagnosed: a diagnosis explains the instance, not the cap.
    same_cards = planner.solve("makespan", max_inference_gpus=gpus)
    columns.append(
        plan_column(
            inst,
            (
                "shorter_same_cards",
                f"shorter schedule: the fastest plan on ≤ {gpus:,} inference GPUs",
                "shorter, same cards",
            ),
            same_cards,
            f"no plan on ≤ {gpus:,} inference GPUs",
        )
    )
    key = (
        "shorter_same_hourly",
        "shorter schedule: the fastest plan at ≤ the fewer-cards plan's hourly cost",
        "shorter, same $/h",
    )
    if fewer.status == "optimal":
        hourly = fewer.plan.hourly_cost
        same_hourly = planner.solve("makespan", max_hourly_cost=hourly * (1 + TIE_TOL))
        columns.append(plan_column(inst, key, same_hourly, f"no plan at ≤ ${hourly:,.2f}/h"))
    else:
        columns.append(Column(*key, "plan", "skipped", note="no fewer-cards plan to take the hourly cost from"))
    if same_cards.status == "optimal":
        pace, why = same_cards.plan.cadence_s, "the shorter-schedule plan's cadence"
    elif cadence is not None:
        pace, why = float(cadence), "the pinned cadence"
    else:
        pace, why = _fastest_cadence(inst, planner)
    columns.append(
        arithmetic_column(
            inst,
            ("shorter_arithmetic", "shorter schedule (seed arithmetic)", "shorter (arithmetic)"),
            pace,
            gpus,
            f"{pace:g} s ({why}), {gpus:,} inference GPUs",
            mix,
        )
    )
    choice = None
    if inst.stages is not None:
        choice = capacity_choice(inst, fewer, switch_time)
        columns.append(_other_capacity(inst, choice))
    return Comparison(
        instance=inst.name or "",
        baseline_gpus=gpus,
        baseline_source=source,
        pinned_cadence=cadence,
        columns=columns,
        mix=mix,
        coincide=coinciding(columns),
        capacity=choice,
    )


def _other_capacity(inst: Instance, choice: CapacityChoice) -> Column:
    """The plan column of the capacity the staged instance does not plan on."""
    assert inst.stages is not None
    if inst.stages.capacity == "fixed":
        minutes = choice.switch_time_s / 60
        key = ("replan_per_stage", f"re-planned per stage: each stage its own capacity ({minutes:g} min a switch)")
        return plan_column(inst, (*key, "replan per stage"), choice.replan)
    key = ("fixed_fleet", "one fixed fleet: one capacity for every stage")
    return plan_column(inst, (*key, "one fixed fleet"), choice.fixed)


def _baseline(inst: Instance, given: int | None, fewer: Result, mix: ShapeMix, training: int) -> tuple[int, str]:
    """The baseline's inference GPUs and how they were chosen: given; else every GPU of every pool beside
    the deadline pace's training (the slack the §4 question spends; ``mix`` is then :func:`pools_mix`);
    else the fewer-cards plan's; else the seed's inference_gpus_needed."""
    if given is not None:
        return int(given), "given"
    most = capacity(inst, mix, training)
    if most > 0:
        return most, capacity_text(inst, mix, training)
    if fewer.status == "optimal" and fewer.plan.inference_gpus > 0:
        return fewer.plan.inference_gpus, "the fewer-cards plan's inference GPUs"
    needed = explain(inst).values()["inference_gpus_needed"]
    return int(calc.ceil_tol(needed)), "the seed's inference_gpus_needed at the deadline pace"


# Why two plan columns can hold the same plan, by their keys.
SAME_PLAN = {
    ("fewer_cards", "shorter_same_cards"): "the cheapest plan is already the fastest on the baseline's cards",
    ("fewer_cards", "shorter_same_hourly"): "no faster plan costs no more per hour than the cheapest plan",
    ("shorter_same_cards", "shorter_same_hourly"): "the fastest plan on the baseline's cards costs no more per "
    "hour than the cheapest plan",
    ("baseline", "shorter_arithmetic"): "the shorter schedule's cadence is the deadline pace",
}


def coinciding(columns: list[Column]) -> list[str]:
    """A sentence for each pair of columns with the same figures (plans: the same plan, :func:`same_plan`),
    saying why they coincide."""
    out = []
    for i, a in enumerate(columns):
        for j in range(i + 1, len(columns)):
            b = columns[j]
            if (a.ok and b.ok and a.kind == b.kind and a.figures == b.figures) or same_plan(a, b):
                why = SAME_PLAN.get((a.key, b.key), "the same figures")
                out.append(f"({i + 1}) and ({j + 1}) coincide: {why}")
    return out


PLAN_ONLY = ("time_margin",)  # a figure of how a plan was found (its allowance), not of the plan


def same_plan(a: Column, b: Column) -> bool:
    """Whether plan columns ``a`` and ``b`` hold one plan: every figure equal but those of PLAN_ONLY."""
    if not (a.kind == b.kind == "plan" and a.ok and b.ok):
        return False
    return {k: v for k, v in a.figures.items() if k not in PLAN_ONLY} == {
        k: v for k, v in b.figures.items() if k not in PLAN_ONLY
    }


CHANGES = (  # the figures the one-line comparison with the baseline names, in its order
    ("makespan_s", "makespan"),
    ("effective_trajectories_per_s", "supply"),
    ("attempts_per_s", "raw attempts"),
    ("inference_gpus", "inference cards"),
    ("training_gpus", "training cards"),
    ("inflight_mean", "in flight"),
    ("hourly_cost", "hourly cost"),
    ("total_cost", "total cost"),
)


def changes(base: Column, col: Column) -> str:
    """``col`` against ``base``: its time margin, then the relative change of each CHANGES figure both have."""
    b, c = base.figures, col.figures
    out = [f"time margin {c['time_margin'] * 100:.1f} % (baseline {b['time_margin'] * 100:.1f} %)"]
    for key, what in CHANGES:
        new, old = c.get(key), b.get(key)
        if new is None or old is None or not old or math.isnan(old):
            continue
        out.append(f"{what} {_change(new, old)}")
    return ", ".join(out)


def pinned(inst: Instance, cadence: float) -> Instance:
    """``inst`` with its cadence grid reduced to the single point ``cadence`` (seconds)."""
    grid = inst.schedule.cadence.model_copy(update={"min": float(cadence), "max": float(cadence)})
    return inst.model_copy(update={"schedule": inst.schedule.model_copy(update={"cadence": grid})})


def _fastest_cadence(inst: Instance, planner: Planner | HoldingPlanner) -> tuple[float, str]:
    if inst.stages is None and planner.pairs.size:
        return float(np.min(planner.pairs.cadence)), "the fastest admissible cadence"
    grid = calc.cadence_grid(inst)
    if grid.size:
        return float(grid[0]), "the fastest cadence on the grid"
    return calc.deadline_pace(inst), "the deadline pace"


def _change(new: float, old: float) -> str:
    """Relative change as the article writes it: +21 %, -3.4 %."""
    if not old:
        return "n/a"
    x = (new / old - 1) * 100
    return f"{x:+.0f} %" if abs(x) >= 10 else f"{x:+.1f} %"


def _total(value: Any) -> float | None:
    if isinstance(value, dict):
        return float(sum(value.values())) if value else None
    return None if value is None else float(value)


def deltas(base: Column, col: Column) -> list[str]:
    """``col`` against ``base``, in the article's phrasing (absolute margin, relative rates)."""
    b, c = base.figures, col.figures
    out = [f"time margin {c['time_margin'] * 100:.1f} % (baseline {b['time_margin'] * 100:.1f} %)"]
    out.append(
        f"supply {_change(c['effective_trajectories_per_s'], b['effective_trajectories_per_s'])} "
        f"({c['effective_trajectories_per_s']:.2f} vs {b['effective_trajectories_per_s']:.2f} "
        "effective trajectories/s)"
    )
    out.append(
        f"raw attempts {_change(c['attempts_per_s'], b['attempts_per_s'])} "
        f"({c['attempts_per_s']:.2f} vs {b['attempts_per_s']:.2f}/s)"
    )
    out.append(
        f"with group drops {c['attempts_with_drops_per_s']:.2f} vs {b['attempts_with_drops_per_s']:.2f}/s "
        f"(group drop {c['group_drop_rate']:.1%} vs {b['group_drop_rate']:.1%})"
    )
    if c["required_tokens_per_gpu_s"] and b["required_tokens_per_gpu_s"]:
        out.append(
            f"required {c['required_tokens_per_gpu_s']:.1f} tokens/s/GPU on {c['inference_gpus']:,} cards "
            f"(baseline {b['required_tokens_per_gpu_s']:.2f} on {b['inference_gpus']:,}; "
            f"{_change(c['required_tokens_per_gpu_s'], b['required_tokens_per_gpu_s'])})"
        )
    for key, what in (("inference_gpus", "inference cards"), ("training_gpus", "training cards")):
        if c[key] is not None and b[key]:
            out.append(f"{what} {c[key]:,} ({_change(c[key], b[key])})")
    pools_b, pools_c = b.get("inference_by_pool") or {}, c.get("inference_by_pool") or {}
    if len(pools_b) > 1 and pools_c:
        out.append(
            "inference cards by pool: "
            + ", ".join(f"{p} {pools_c.get(p, 0):,} (baseline {n:,})" for p, n in pools_b.items())
        )
    out.append(
        f"in flight {c['inflight_mean']:,.0f} ({_change(c['inflight_mean'], b['inflight_mean'])}); "
        f"at the median occupancy {c['inflight_at_median']:,.0f} (baseline {b['inflight_at_median']:,.0f})"
    )
    nodes_b, nodes_c = _total(b["nodes"]), _total(c["nodes"])
    if nodes_b is not None and nodes_c is not None:
        out.append(f"sandbox nodes {nodes_c:,.0f} (baseline {nodes_b:,.0f})")
    out.append(
        f"mean version gap {c['mean_version_gap']:.2f} (baseline {b['mean_version_gap']:.2f}), "
        f"exceedance {c['exceedance'] * 100:.1f} %, group drop {c['group_drop_rate'] * 100:.1f} %"
    )
    for key, what in (("hourly_cost", "hourly cost"), ("total_cost", "total cost")):
        if c[key] is not None and b[key] is not None and not math.isnan(b[key]):
            out.append(f"{what} ${c[key]:,.0f} ({_change(c[key], b[key])})")
    return out
