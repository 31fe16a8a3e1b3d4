"""The verifier's own reading of MODEL.md §13: training goodput, replica availability, weight sync.

Used by :mod:`solver.verify.plan` and :mod:`solver.verify.laws` only, written from MODEL §13 apart from the
model's :mod:`solver.laws.goodput` (STYLE.md: a checker must not share the reading it checks), in plain
Python floats. Nothing here imports from solver/.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainground.models.instance import Instance
from trainground.models.result import Plan

SECONDS_PER_HOUR = 3600.0
DEFAULT_REPLICA_RESTART = 300.0  # s: MODEL §13's replica_restart_time when only a pool is preemptible


@dataclass(frozen=True)
class Trainer:
    """§13's training figures at the plan's G_t (goodput 1 and no failures without a reliability section)."""

    mtbf: float  # M_train, s (inf without the section)
    interval: float | None  # τ, s (None without the section)
    goodput: float  # γ


def trainer_at(inst: Instance, training_gpus: int) -> Trainer:
    """M_train = gpu_mtbf/G_t; τ given or Young's sqrt(2·checkpoint_time·M_train);
    γ = 1 - checkpoint_time/τ - (restart_time + τ/2)/M_train."""
    rel = inst.reliability
    if rel is None or training_gpus <= 0:
        return Trainer(math.inf, None, 1.0)
    mtbf = rel.gpu_mtbf / training_gpus
    if rel.checkpoint_interval == "auto":
        tau = math.sqrt(2.0 * rel.checkpoint_time * mtbf)
    else:
        tau = float(rel.checkpoint_interval)
    gamma = 1.0 - rel.checkpoint_time / tau - (rel.restart_time + 0.5 * tau) / mtbf
    return Trainer(mtbf, tau, gamma)


def preemptible(inst: Instance) -> bool:
    return any(p.preemptions_per_hour is not None for p in inst.gpu_pools)


def replica_rates(inst: Instance) -> dict[str, float]:
    """Per shape, failures and preemptions per replica-second: g_s/gpu_mtbf + preemptions_per_hour/3600."""
    rel = inst.reliability
    pools = {p.name: p for p in inst.gpu_pools}
    out = {}
    for s in inst.inference.shapes:
        failures = 0.0 if rel is None else s.gpus_per_replica / rel.gpu_mtbf
        out[s.name] = failures + (pools[s.pool].preemptions_per_hour or 0.0) / SECONDS_PER_HOUR
    return out


def availability(inst: Instance, mean_lifetime: float) -> dict[str, float]:
    """Per shape: a·max(0, 1 - rate_s·(replica_restart_time + mean(W)/2)), or ``a`` without §13."""
    a = inst.inference.availability
    if inst.reliability is None and not preemptible(inst):
        return {s.name: a for s in inst.inference.shapes}
    restart = DEFAULT_REPLICA_RESTART if inst.reliability is None else inst.reliability.replica_restart_time
    return {
        name: a * max(0.0, 1.0 - rate * (restart + mean_lifetime / 2.0)) for name, rate in replica_rates(inst).items()
    }


def sync_share(inst: Instance, cadence: float) -> float:
    """weight_sync_time/L: the share of each cadence generation pauses for (0 without §13)."""
    rel = inst.reliability
    return 0.0 if rel is None else rel.weight_sync_time / cadence


def check_goodput(inst: Instance, training_gpus: int, violations: list[str]) -> Trainer:
    """MODEL §13: training makes progress, γ > 0 at the plan's G_t (the makespan divides by γ)."""
    trainer = trainer_at(inst, training_gpus)
    if not trainer.goodput > 0:
        violations.append(f"goodput: training goodput {trainer.goodput:.6g} <= 0 at {training_gpus} GPUs: no progress")
    return trainer


def metrics(inst: Instance, plan: Plan, span: float, mean_lifetime: float, trainer: Trainer) -> dict:
    """MODEL §13's output metrics at makespan ``span`` (none without a reliability section or a
    preemptible pool): γ, τ, M_train, expected events (training T/M_train; per shape T·rate_s·x_s),
    a_s per shape and the weight-sync share."""
    if inst.reliability is None and not preemptible(inst):
        return {}
    replicas = {r.shape: r.replicas for r in plan.inference}
    failures = {"training": span / trainer.mtbf if math.isfinite(trainer.mtbf) else 0.0}
    failures |= {name: span * rate * replicas[name] for name, rate in replica_rates(inst).items()}
    return {
        "training_goodput": trainer.goodput,
        "checkpoint_interval_s": trainer.interval,
        "mtbf_training_s": trainer.mtbf if math.isfinite(trainer.mtbf) else None,
        "failures_expected": failures,
        "availability": availability(inst, mean_lifetime),
        "weight_sync_share": sync_share(inst, plan.cadence_s),
    }
