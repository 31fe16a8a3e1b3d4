"""The seed article's §4 question as a report: spend inference slack on fewer cards, or a shorter schedule?

Columns, side by side:

- ``baseline``: the seed's arithmetic (:func:`solver.explain.explain`) at the deadline pace
  with the baseline's inference cards — what the article starts from; by default every
  inference GPU the shape mix can have beside the deadline pace's training (:func:`_baseline`);
- ``fewer_cards``: the cheapest plan that meets the deadline (the MIP, total cost);
- ``shorter_same_cards``: the fastest plan with no more inference cards than the baseline;
- ``shorter_same_hourly``: the fastest plan whose hourly cost is no more than ``fewer_cards``';
- ``shorter_arithmetic``: the seed's arithmetic at the shorter schedule's cadence with the
  baseline's cards — the article's own "shorten the cycle to 500 s" figures (17.3 % time
  margin, 8.19 effective trajectories/s, 89.5 tokens/s/GPU on 3,000 cards). The cadence
  is the ``shorter_same_cards`` plan's when it has one, else the pinned cadence, else the
  fastest admissible one.

The arithmetic columns rate and price their inference cards by a shape mix
(:mod:`drivers.shape_mix`) and carry a ``yardstick`` note when those cards cannot deliver.
Every column reports the same figures (:data:`ROWS`); :func:`deltas` phrases each
against the baseline the way the article does ("time margin 17.3 %, supply +21 %");
:func:`coinciding` says why two columns hold the same figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from drivers.shape_mix import ShapeMix, capacity, capacity_text, mix_of
from drivers.sweep import diagnosis_summary
from models.instance import Instance
from models.result import Result
from solver import calculus as calc
from solver.explain import explain
from solver.solve import Planner
from solver.tolerances import TIE_TOL

# (key, label, format): format tells a renderer how to print the value. Required tokens/s/GPU is
# B·tokens/(L·inference GPUs) (lossless); "in flight (mean)" is Little's law with W_use, as the
# model counts; "(median W)" is R_raw·median(W), the article's 7,100 → 8,550. "raw attempts/s" is
# R_eff/p in the arithmetic (the seed's, no drops) and the plan's R_raw (drops counted); "with drops"
# is R_eff/(p·(1 - drop)) in both. "with losses and drops" is the token demand over a·G; "shapes
# deliver" is the GPU-weighted r_s·(1 - slowdown_s·(K-1)) of the column's shapes.
ROWS: tuple[tuple[str, str, str], ...] = (
    ("inference_gpus", "inference GPUs", "count"),
    ("training_gpus", "training GPUs", "count"),
    ("gpus", "GPUs in all", "count"),
    ("cadence_s", "cadence (s)", "seconds"),
    ("makespan_s", "makespan", "days"),
    ("time_margin", "time margin", "share"),
    ("effective_trajectories_per_s", "effective trajectories/s", "rate"),
    ("attempts_per_s", "raw attempts/s", "rate"),
    ("attempts_with_drops_per_s", "raw attempts/s with drops", "rate"),
    ("required_tokens_per_gpu_s", "required tokens/s/GPU", "rate"),
    ("loss_adjusted_tokens_per_gpu_s", "  with losses and drops", "rate"),
    ("deliverable_tokens_per_gpu_s", "shapes deliver tokens/s/GPU", "rate"),
    ("inflight_mean", "in flight (mean)", "count"),
    ("inflight_peak", "in flight (peak)", "count"),
    ("inflight_at_median", "in flight (median W)", "count"),
    ("nodes", "sandbox nodes", "map"),
    ("vms", "cloud VMs", "map"),
    ("mean_version_gap", "mean version gap", "ratio"),
    ("p99_version_gap", "p99 version gap", "ratio"),
    ("exceedance", "exceedance", "share"),
    ("group_drop_rate", "group drop", "share"),
    ("hourly_cost", "hourly cost", "money"),
    ("total_cost", "total cost", "money"),
)


@dataclass
class Column:
    """One way of running the job: ``kind`` is ``arithmetic`` (the seed's formulas) or ``plan`` (the MIP)."""

    key: str
    title: str
    heading: str  # the title, short enough for a table column
    kind: str
    status: str  # "arithmetic" for the formulas; a MODEL.md §6 status for plans
    figures: dict[str, Any] = field(default_factory=dict)
    result: Result | None = None
    note: str = ""
    yardstick: str = ""  # arithmetic only: why these figures cannot be delivered ("" when they can)
    simulation: dict | None = None  # the simulated verdict of the plan (`compare --simulate`), when asked

    @property
    def ok(self) -> bool:
        return self.status in ("arithmetic", "optimal")

    def to_json(self) -> dict:
        out = {
            "key": self.key,
            "title": self.title,
            "heading": self.heading,
            "kind": self.kind,
            "status": self.status,
            "figures": dict(self.figures),
            "note": self.note,
            "infeasible_as_yardstick": bool(self.yardstick),
            "yardstick_note": self.yardstick or None,
            "result": self.result.to_json() if self.result is not None else None,
        }
        if self.simulation is not None:
            out["simulation"] = dict(self.simulation)
        return out


@dataclass
class Comparison:
    instance: str
    baseline_gpus: int | None
    baseline_source: str
    pinned_cadence: float | None
    columns: list[Column]
    mix: ShapeMix | None = None
    coincide: list[str] = field(default_factory=list)

    def column(self, key: str) -> Column:
        return next(c for c in self.columns if c.key == key)

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
            "rows": [{"key": k, "label": label, "format": f} for k, label, f in ROWS],
            "columns": [c.to_json() for c in self.columns],
            "deltas": self.deltas(),
        }


def compare(inst: Instance, baseline_gpus: int | None = None, *, cadence: float | None = None) -> Comparison:
    """The §4 comparison for ``inst``.

    ``cadence`` pins the plans to that one cadence (the grid becomes that single point, as
    ``--set schedule.cadence.min=...,max=...`` would make it), so an infeasible plan's
    diagnosis is about the pinned run; the baseline stays at the deadline pace.
    """
    if cadence is not None:
        inst = pinned(inst, cadence)
    planner = Planner(inst)
    fewer = planner.solve("total_cost")
    training = int(calc.min_groups_for(inst, calc.deadline_pace(inst))[0]) * inst.training.gpus_per_group
    mix = mix_of(inst, fewer.plan if fewer.status == "optimal" else None, training)
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
    return Comparison(
        instance=inst.name or "",
        baseline_gpus=gpus,
        baseline_source=source,
        pinned_cadence=cadence,
        columns=columns,
        mix=mix,
        coincide=coinciding(columns),
    )


def _baseline(inst: Instance, given: int | None, fewer: Result, mix: ShapeMix, training: int) -> tuple[int, str]:
    """The baseline's inference GPUs and how they were chosen: given; else every GPU the shape mix can
    have beside the deadline pace's training (the slack the §4 question spends); else the fewer-cards
    plan's; else the seed's inference_gpus_needed."""
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
    """A sentence for each pair of columns with the same figures, saying why they coincide."""
    out = []
    for i, a in enumerate(columns):
        for j in range(i + 1, len(columns)):
            b = columns[j]
            if a.ok and b.ok and a.kind == b.kind and a.figures == b.figures:
                why = SAME_PLAN.get((a.key, b.key), "the same figures")
                out.append(f"({i + 1}) and ({j + 1}) coincide: {why}")
    return out


def pinned(inst: Instance, cadence: float) -> Instance:
    """``inst`` with its cadence grid reduced to the single point ``cadence`` (seconds)."""
    grid = inst.schedule.cadence.model_copy(update={"min": float(cadence), "max": float(cadence)})
    return inst.model_copy(update={"schedule": inst.schedule.model_copy(update={"cadence": grid})})


def _fastest_cadence(inst: Instance, planner: Planner) -> tuple[float, str]:
    if planner.pairs.size:
        return float(np.min(planner.pairs.cadence)), "the fastest admissible cadence"
    grid = calc.cadence_grid(inst)
    if grid.size:
        return float(grid[0]), "the fastest cadence on the grid"
    return calc.deadline_pace(inst), "the deadline pace"


def arithmetic_column(
    inst: Instance, names: tuple[str, str, str], cadence: float | None, gpus: int | None, note: str, mix: ShapeMix
) -> Column:
    """The seed's formulas at ``cadence`` (None: the deadline pace) with ``gpus`` inference cards of ``mix``.

    Lossless intake (``p`` alone), training GPUs the fewest that keep ``U <= L``, nodes the
    seed's ``nodes_needed``, no VMs; costs price those counts (inference GPUs at the mix's
    price, the cheapest node type that runs every backend) and are a yardstick, not a plan.
    The yardstick is flagged infeasible when its cards cannot deliver the tokens once
    availability, intake and group drops count, or do not fit the pools beside its training.
    """
    ex = explain(inst, cadence, gpus).values()
    env, fr, w = inst.environment, inst.freshness, inst.workload
    L = float(ex["cadence_s"])
    occ = calc.occupancy_of(env.occupancy)
    w_use = calc.occupancy_used(occ, env.littles_law_uses)
    attempts = float(ex["attempts_per_s"])
    groups = int(calc.min_groups_for(inst, L)[0])
    training = groups * inst.training.gpus_per_group if groups else None
    q = float(ex["exceedance"])
    nodes = {k: v for k, v in ex["nodes_needed"].items() if v is not None}
    gpu_cost = (gpus or 0) * mix.gpu_hour_cost
    gpu_cost += (training or 0) * inst.pool(inst.training.pool).gpu_hour_cost
    drop = float(calc.group_drop(q, w.group_size, fr.overrun_policy, fr.group_correlation))
    with_drops = attempts / (1 - drop) if drop < 1 else math.inf
    lossy = with_drops * w.tokens_per_attempt / (inst.inference.availability * gpus) if gpus else None
    node_cost = min((k.hour_cost * nodes[k.name] for k in env.node_types if k.name in nodes), default=0.0)
    hourly = gpu_cost + node_cost
    span = float(ex["makespan_s"])
    figures = {
        "inference_gpus": gpus,
        "training_gpus": training,
        "gpus": (gpus or 0) + (training or 0) if gpus else None,
        "cadence_s": L,
        "makespan_s": span,
        "time_margin": float(ex["time_margin"]),
        "effective_trajectories_per_s": float(ex["effective_trajectories_per_s"]),
        "attempts_per_s": attempts,
        "attempts_with_drops_per_s": with_drops,
        "required_tokens_per_gpu_s": ex["lossless_threshold_tokens_per_gpu_s"],
        "loss_adjusted_tokens_per_gpu_s": lossy,
        "deliverable_tokens_per_gpu_s": mix.tokens_per_gpu_s,
        "inflight_mean": attempts * w_use,
        "inflight_peak": attempts * w_use * env.peak_to_mean,
        "inflight_at_median": float(ex["inflight_median"]),
        "nodes": nodes,
        "vms": None,
        "mean_version_gap": float(ex["mean_version_gap"]),
        "p99_version_gap": float(ex["p99_version_gap"]),
        "exceedance": q,
        "group_drop_rate": drop,
        "hourly_cost": hourly if gpus else None,
        "total_cost": hourly * span / 3600.0 if gpus else None,
    }
    why = _undeliverable(inst, mix, gpus, training, lossy, drop)
    return Column(*names, "arithmetic", "arithmetic", figures, note=note, yardstick=why)


def _undeliverable(
    inst: Instance, mix: ShapeMix, gpus: int | None, training: int | None, lossy: float | None, drop: float
) -> str:
    """Why the arithmetic's cards cannot run the job ("" when they can)."""
    reasons = []
    if training is None:
        reasons.append("no training group count keeps up with this cadence")
    if lossy is not None and lossy > mix.tokens_per_gpu_s * (1 + TIE_TOL):
        reasons.append(
            f"its {gpus:,} cards need {lossy:,.4g} tokens/s/GPU once availability, intake and group "
            f"drops ({drop:.0%}) count; {mix.describe()} delivers {mix.tokens_per_gpu_s:,.4g}"
        )
    most = capacity(inst, mix, training or 0)
    if gpus and gpus > most:
        reasons.append(
            f"{gpus:,} inference GPUs of this mix do not fit the pools beside {training or 0:,} "
            f"training GPUs (at most {most:,})"
        )
    return "; ".join(reasons)


def plan_column(inst: Instance, names: tuple[str, str, str], result: Result, why_none: str = "") -> Column:
    """A MIP plan's figures (``names``: key, title, heading). Without a plan, the note is the
    diagnosis, or ``why_none`` for a capped solve (whose diagnosis would be the instance's)."""
    if result.status != "optimal" or result.plan is None:
        note = (
            why_none
            if result.status == "infeasible" and why_none
            else diagnosis_summary(result.diagnosis, result.message)
        )
        return Column(*names, "plan", result.status, result=result, note=note)
    plan, met, w = result.plan, result.metrics, inst.workload
    occ = calc.occupancy_of(inst.environment.occupancy)
    figures = {
        "inference_gpus": plan.inference_gpus,
        "training_gpus": plan.training_gpus,
        "gpus": plan.inference_gpus + plan.training_gpus,
        "cadence_s": plan.cadence_s,
        "makespan_s": plan.makespan_s,
        "time_margin": met.time_margin,
        "effective_trajectories_per_s": met.effective_trajectories_per_s,
        "attempts_per_s": met.attempts_per_s,
        "attempts_with_drops_per_s": met.attempts_per_s,
        "required_tokens_per_gpu_s": (
            w.batch_trajectories * w.tokens_per_attempt / (plan.cadence_s * plan.inference_gpus)
        )
        if plan.inference_gpus
        else None,
        "loss_adjusted_tokens_per_gpu_s": (
            met.token_demand_per_s / (inst.inference.availability * plan.inference_gpus)
            if plan.inference_gpus
            else None
        ),
        "deliverable_tokens_per_gpu_s": _delivered(inst, plan),
        "inflight_mean": met.inflight_mean,
        "inflight_peak": met.inflight_peak,
        "inflight_at_median": met.attempts_per_s * occ.median,
        "nodes": {c.type: c.count for c in plan.local_nodes},
        "vms": {c.type: c.count for c in plan.cloud_vms},
        "mean_version_gap": met.mean_version_gap,
        "p99_version_gap": met.p99_version_gap,
        "exceedance": met.exceedance,
        "group_drop_rate": met.group_drop_rate,
        "hourly_cost": plan.hourly_cost,
        "total_cost": plan.total_cost,
    }
    note = f"K = {plan.versions_kept} versions kept; binding: {', '.join(result.binding) or 'none'}"
    return Column(*names, "plan", result.status, figures, result=result, note=note)


def _delivered(inst: Instance, plan) -> float | None:
    """Tokens/s one of the plan's inference GPUs delivers, GPU-weighted over its shapes at its K."""
    if not plan.inference_gpus:
        return None
    rates = {
        s.name: s.tokens_per_gpu_s * float(calc.supply_multiplier(s.version_slowdown, plan.versions_kept))
        for s in inst.inference.shapes
    }
    return sum(item.gpus * rates[item.shape] for item in plan.inference) / plan.inference_gpus


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
