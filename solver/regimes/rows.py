"""The colocated bill (MODEL.md §14), a model extension of :func:`solver.mip.model.build_model`.

A colocated run's replicas and training groups take turns on the training pool's GPUs, so neither takes GPUs
from the other: the pair's own pool row holds the replicas alone (its training term is 0, and each replica cap is
the whole pool), the row's groups fit the pool by the table's counts, and the pool bills the larger of the two,
the replicas' GPUs plus ``spare_gpus >= gpus_per_group·m·z - Σ_s g_s·x_s`` at the pool's price.
"""

from __future__ import annotations

import pyomo.core as pyo


class SharedPool:
    """The extension (see :func:`solver.mip.model.build_model`) of a colocated model."""

    def declare_globals(self, m) -> None:
        inst = m.inst
        self.pool_gpus = inst.pool(inst.training.pool).gpus
        self.replica_gpus = {s.name: s.gpus_per_replica for s in inst.inference.shapes}

    def adjust(self, values: dict, p: int) -> None:
        """The training takes no GPU from the replicas (their cap is the whole pool); spare_gpus bills it."""
        values["train_gpus"] = {None: 0}
        values["replica_cap"] = {name: self.pool_gpus // g for name, g in self.replica_gpus.items()}

    def declare(self, m, blk, p: int) -> None:
        blk.spare_gpus = pyo.Var(domain=pyo.NonNegativeReals)

    def add_rows(self, m, blk, p: int, host_rows) -> None:
        """spare_gpus covers the row's training GPUs beyond the replicas', billed at the pool's price."""
        inst = m.inst
        gpus = int(m.pairs.groups[p]) * inst.training.gpus_per_group
        inference = sum(s.gpus_per_replica * blk.x[s.name] for s in inst.inference.shapes)
        blk.shared_bill = pyo.Constraint(expr=blk.spare_gpus >= gpus * blk.z - inference)
        blk.spare_off = pyo.Constraint(expr=blk.spare_gpus <= gpus * blk.z)
        price = m.k["gpu_price"][inst.training.pool]
        blk.gpu_cost.set_value(blk.gpu_cost.expr + price * blk.spare_gpus)

    def refresh(self, m) -> tuple[list, list]:
        return [], []
