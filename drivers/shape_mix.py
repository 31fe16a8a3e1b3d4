"""The shape mix the seed's arithmetic runs on when an instance has several shapes and pools.

The seed article has one shape; an instance may have several, over several pools. The
arithmetic columns of ``compare`` price and rate their inference cards by a mix of shapes:
the fewer-cards plan's (each shape weighted by the GPUs the plan gives it) when that plan
has inference GPUs, else the pools' capacity (each pool's GPUs left beside training,
shared equally among the shapes it hosts). Throughput is at ``K = max_versions_kept``
(``1 - slowdown·(K-1)``), as the arithmetic's exceedance is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from models.instance import Instance
from models.result import Plan
from solver import calculus as calc


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
    shapes = inst.inference.shapes
    if plan is not None and plan.inference_gpus > 0:
        gpus = {item.shape: float(item.gpus) for item in plan.inference}
        source = "the fewer-cards plan's shape mix"
    else:
        free = free_for_inference(inst, training_gpus)
        hosted = {p: sum(1 for s in shapes if s.pool == p) for p in free}
        gpus = {s.name: free[s.pool] / hosted[s.pool] for s in shapes}
        source = "the pools' capacity"
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


def capacity(inst: Instance, mix: ShapeMix, training_gpus: int) -> int:
    """The most inference GPUs the mix can have beside ``training_gpus``: the first pool to run out decides."""
    free = free_for_inference(inst, training_gpus)
    share: dict[str, float] = {}
    for s in inst.inference.shapes:
        share[s.pool] = share.get(s.pool, 0.0) + mix.weights[s.name]
    limits = [free[pool] / w for pool, w in share.items() if w > 0]
    return int(math.floor(min(limits) * (1 + 1e-12))) if limits else 0


def capacity_text(inst: Instance, mix: ShapeMix, training_gpus: int) -> str:
    """Which pools hold the mix's capacity, for the output's "how the baseline was chosen"."""
    free = free_for_inference(inst, training_gpus)
    pools = [p for p in free if any(mix.weights[s.name] > 0 and s.pool == p for s in inst.inference.shapes)]
    parts = ", ".join(f"{p} {free[p]:,}" for p in pools)
    beside = f" beside {training_gpus:,} training GPUs in {inst.training.pool}" if inst.training.pool in pools else ""
    return f"the most inference GPUs {mix.describe()} can have: {parts} free{beside}"
