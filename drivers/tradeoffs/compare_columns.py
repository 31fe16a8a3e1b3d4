"""The columns of ``compare``: one way of running the job each, all reporting the same figures (:data:`ROWS`).

- :func:`arithmetic_column`: the seed's formulas (:func:`solver.explain.explain`) at a cadence
  with a number of inference cards of a shape mix (:mod:`drivers.tradeoffs.shape_mix`), priced as a
  yardstick and flagged (``yardstick``) when those cards cannot deliver;
- :func:`plan_column`: a MIP plan's figures, or, without a plan, why there is none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from trainground.drivers.tradeoffs.shape_mix import ShapeMix, by_pool, capacity
from trainground.drivers.tradeoffs.sweep import diagnosis_summary
from trainground.models.instance import Instance
from trainground.models.result import Result
from trainground.solver.explain import explain
from trainground.solver.laws import calculus as calc
from trainground.solver.tolerances import TIE_TOL

# (key, label, format): format tells a renderer how to print the value. Required tokens/s/GPU is
# B·tokens/(L·inference GPUs) (lossless); "in flight (mean)" is Little's law with W_use, as the
# model counts; "(median W)" is R_raw·median(W), the article's 7,100 → 8,550. "raw attempts/s" is
# R_eff/p in the arithmetic (the seed's, no drops) and the plan's R_raw (drops counted); "with drops"
# is R_eff/(p·(1 - drop)) in both. "with losses and drops" is the token demand over a·G; "shapes
# deliver" is the GPU-weighted r_s·(1 - slowdown_s·(K-1)) of the column's shapes.
ROWS: tuple[tuple[str, str, str], ...] = (
    ("inference_gpus", "inference GPUs", "count"),
    ("inference_by_pool", "  by pool", "map"),
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
        "inference_by_pool": by_pool(inst, mix, gpus),
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
    hosting = dict.fromkeys(s.pool for s in inst.inference.shapes)
    figures = {
        "inference_gpus": plan.inference_gpus,
        "inference_by_pool": {p: sum(i.gpus for i in plan.inference if i.pool == p) for p in hosting},
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
