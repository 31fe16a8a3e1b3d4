"""The shape mix the seed's arithmetic runs on when an instance has several shapes and pools.

The seed article has one shape; an instance may have several, over several pools. The
arithmetic columns of ``compare`` price and rate their inference cards by a mix of shapes.
The default baseline holds every pool's free GPUs (:func:`pools_mix`): each pool weighs by
the GPUs it has left beside training, and inside a pool its shapes share those GPUs as the
fewer-cards plan shares its own there (equally where the plan runs nothing in that pool), so
a pool the cheapest plan leaves idle still counts in the baseline, with its own shapes. A
baseline given as a number of cards takes the fewer-cards plan's mix (:func:`mix_of`: each
shape weighted by the GPUs the plan gives it) when that plan has inference GPUs, else the
pools' capacity. Throughput is at ``K = max_versions_kept`` (``1 - slowdown·(K-1)``), as the
arithmetic's exceedance is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainground.models.instance import Instance
from trainground.models.result import Plan
from trainground.solver.laws import calculus as calc
from trainground.solver.tolerances import INTEGER_TOL


@dataclass(frozen=True)
class ShapeMix:
    """Shares of the inference GPUs by shape (summing to 1), and what one GPU of the mix delivers and costs."""

    weights: dict[str, float]
    source: str
    tokens_per_gpu_s: float  # capacity-weighted, with the slowdown of K = max_versions_kept resident versions
    gpu_hour_cost: float  # capacity-weighted

    def describe(self) -> str:
        shares = ", ".join(f"{name} {w:.0%}" for name, w in self.weights.items() if w > 0)
        return f"{shares} ({self.source})"


def free_for_inference(inst: Instance, training_gpus: int) -> dict[str, int]:
    """Each pool's GPUs left for inference beside ``training_gpus`` in the training pool."""
    return {p.name: max(0, p.gpus - (training_gpus if p.name == inst.training.pool else 0)) for p in inst.gpu_pools}


def mix_of(inst: Instance, plan: Plan | None, training_gpus: int) -> ShapeMix:
    """The plan's shape mix when it has inference GPUs, else the pools' capacity beside ``training_gpus``."""
    if plan is not None and plan.inference_gpus > 0:
        return _weighted(
            inst, {item.shape: float(item.gpus) for item in plan.inference}, "the fewer-cards plan's shape mix"
        )
    return pools_mix(inst, None, training_gpus)


def pools_mix(inst: Instance, plan: Plan | None, training_gpus: int) -> ShapeMix:
    """Every pool's free GPUs beside ``training_gpus``, each pool's shapes sharing them as ``plan`` shares
    its own GPUs in that pool (equally where the plan runs none there)."""
    free = free_for_inference(inst, training_gpus)
    used = {item.shape: float(item.gpus) for item in plan.inference} if plan is not None else {}
    gpus: dict[str, float] = {}
    for pool, room in free.items():
        hosted = [s for s in inst.inference.shapes if s.pool == pool]
        busy = sum(used.get(s.name, 0.0) for s in hosted)
        for s in hosted:
            gpus[s.name] = room * (used.get(s.name, 0.0) / busy if busy > 0 else 1.0 / len(hosted))
    crowded = any(sum(1 for s in inst.inference.shapes if s.pool == pool) > 1 for pool in free)
    shared = ", each pool's shapes as the fewer-cards plan shares it" if crowded and any(used.values()) else ""
    return _weighted(inst, gpus, "the pools' capacity" + shared)


def _weighted(inst: Instance, gpus: dict[str, float], source: str) -> ShapeMix:
    """The mix of shapes holding ``gpus`` (by shape name), its throughput at K = max_versions_kept and its price."""
    shapes = inst.inference.shapes
    total = sum(gpus.values())
    if total <= 0:  # no GPU anywhere for inference: weigh the shapes alike, so the figures stay defined
        gpus, total = {s.name: 1.0 for s in shapes}, float(len(shapes))
    weights = {s.name: gpus.get(s.name, 0.0) / total for s in shapes}
    kept = inst.freshness.max_versions_kept
    rate = sum(
        weights[s.name] * s.tokens_per_gpu_s * float(calc.supply_multiplier(s.version_slowdown, kept)) for s in shapes
    )
    price = sum(weights[s.name] * inst.pool(s.pool).gpu_hour_cost for s in shapes)
    return ShapeMix(weights=weights, source=source, tokens_per_gpu_s=rate, gpu_hour_cost=price)


def by_pool(inst: Instance, mix: ShapeMix, gpus: int | None) -> dict[str, int] | None:
    """``gpus`` cards of ``mix`` counted in each pool that hosts a shape (rounded to whole GPUs)."""
    if gpus is None:
        return None
    out: dict[str, float] = {}
    for s in inst.inference.shapes:
        out[s.pool] = out.get(s.pool, 0.0) + mix.weights[s.name] * gpus
    return {pool: int(round(n)) for pool, n in out.items()}


def capacity(inst: Instance, mix: ShapeMix, training_gpus: int) -> int:
    """The most inference GPUs the mix can have beside ``training_gpus``: the first pool to run out decides."""
    free = free_for_inference(inst, training_gpus)
    share: dict[str, float] = {}
    for s in inst.inference.shapes:
        share[s.pool] = share.get(s.pool, 0.0) + mix.weights[s.name]
    limits = [free[pool] / w for pool, w in share.items() if w > 0]
    return int(math.floor(min(limits) * (1 + INTEGER_TOL))) if limits else 0


def capacity_text(inst: Instance, mix: ShapeMix, training_gpus: int) -> str:
    """Which pools hold the mix's capacity, for the output's "how the baseline was chosen"."""
    free = free_for_inference(inst, training_gpus)
    pools = [p for p in free if any(mix.weights[s.name] > 0 and s.pool == p for s in inst.inference.shapes)]
    parts = ", ".join(f"{p} {free[p]:,}" for p in pools)
    beside = f" beside {training_gpus:,} training GPUs in {inst.training.pool}" if inst.training.pool in pools else ""
    return f"the most inference GPUs {mix.describe()} can have: {parts} free{beside}"
