"""The training-group choice of a pipelined ``k = 0`` pair block (MODEL.md §14), a model extension of
:func:`solver.mip.model.build_model`.

At cadence ``L`` a batch has ``L - t_s - U(m)`` to generate in, so the supply it needs, ``d(m) = N/(L - t_s -
U(m))`` attempts/s, falls as the groups ``m`` grow. The block of the pair (L, 1, m0) gets ``extra_groups``
(``e = m - m0``, integer, 0 unless the pair is selected; the pool row and the bill count its GPUs) and its
supply row reads the demand at ``m0 + e`` in place of the pair's constant one:

- where ``d`` is convex over the counts (an inverse or Amdahl law: ``L - t_s - U`` is then concave and
  increasing), by the lines through consecutive counts, ``S >= d_j·z + (d_{j+1} - d_j)·(e - j·z)``: at every
  integer ``e`` their largest is ``d(m0 + e)`` exactly;
- otherwise by a binary per count, ``Σ_j w_j = z``, ``e = Σ_j j·w_j``, ``S >= Σ_j d_j·w_j``.

Counts past the first whose budget is not finite (a table law outside its measured range) are left out.
"""

from __future__ import annotations

import numpy as np
import pyomo.core as pyo

from trainground.solver.regimes.batch import Batch, demand, group_counts
from trainground.solver.tolerances import CONVEX_TOL, REL_TOL


class GroupChoice:
    """The extension (see :func:`solver.mip.model.build_model`) of a pipelined ``k = 0`` or a colocated model.

    Colocated (``shares_training_pool``): the replicas and the training groups take turns on the training pool's
    GPUs, so neither takes GPUs from the other. The pair's own pool row holds the replicas alone (its training
    term is 0, and so is the model's for the extra groups); the groups fit the pool by their counts; the bill is
    the larger of the two, the replicas' GPUs plus ``spare_gpus >= gpus_per_group·(m0·z + e) - Σ_s g_s·x_s``.
    """

    def __init__(self, batch: Batch):
        self.batch = batch
        self.shares_training_pool = batch.shared

    def demands(self, m, p: int) -> np.ndarray:
        """d at each count from the pair's fewest up, while finite (attempts/s)."""
        inst, pairs = m.inst, m.pairs
        counts = group_counts(inst, int(pairs.groups[p]))
        need = demand(inst, self.batch, float(pairs.cadence[p]), counts)
        finite = np.isfinite(need)
        stop = int(np.argmin(finite)) if not finite.all() else need.size
        return need[:stop]

    def adjust(self, values: dict, p: int) -> None:
        """The pair's own supply row asks nothing: :meth:`add_rows` writes the one that depends on e. Colocated:
        the training takes no GPU from the replicas (their cap is the whole pool) and is billed by spare_gpus."""
        values["attempts"] = {None: 0.0}
        if self.shares_training_pool:
            values["train_gpus"] = {None: 0}
            values["replica_cap"] = {name: self.pool_gpus // g for name, g in self.replica_gpus.items()}

    def declare(self, m, blk, p: int) -> None:
        room = max(0, self.demands(m, p).size - 1)
        blk.extra_groups = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, room))
        blk.extra_off = pyo.Constraint(expr=blk.extra_groups <= room * blk.z)
        if self.shares_training_pool:
            blk.spare_gpus = pyo.Var(domain=pyo.NonNegativeReals)

    def declare_globals(self, m) -> None:
        inst = m.inst
        self.pool_gpus = inst.pool(inst.training.pool).gpus
        self.replica_gpus = {s.name: s.gpus_per_replica for s in inst.inference.shapes}

    def add_rows(self, m, blk, p: int, host_rows) -> None:
        d = self.demands(m, p) * (1.0 - REL_TOL)  # the tolerance of every demand row (MODEL §4)
        supply = sum(blk.k["supply"][s] * blk.x[s] for s in m.ix.shapes)
        e, z = blk.extra_groups, blk.z
        if self.shares_training_pool:
            _shared_bill(m, blk, p)
        if d.size == 1:
            blk.batch_supply = pyo.Constraint(expr=supply >= float(d[0]) * z)
            return
        steps = np.diff(d)
        if convex(d):
            lines = range(steps.size)
            blk.batch_supply = pyo.Constraint(
                lines, rule=lambda b, j: supply >= float(d[j]) * z + float(steps[j]) * (e - j * z)
            )
            return
        counts = range(d.size)
        blk.batch_on = pyo.Var(counts, domain=pyo.Binary)
        blk.batch_one = pyo.Constraint(expr=sum(blk.batch_on[j] for j in counts) == z)
        blk.batch_count = pyo.Constraint(expr=e == sum(j * blk.batch_on[j] for j in counts))
        blk.batch_supply = pyo.Constraint(expr=supply >= sum(float(d[j]) * blk.batch_on[j] for j in counts))

    def refresh(self, m) -> tuple[list, list]:
        return [], []


def _shared_bill(m, blk, p: int) -> None:
    """Colocated: spare_gpus covers the training groups' GPUs beyond the replicas', billed at the pool's price."""
    inst = m.inst
    gpg = inst.training.gpus_per_group
    inference = sum(s.gpus_per_replica * blk.x[s.name] for s in inst.inference.shapes)
    groups = int(m.pairs.groups[p]) * blk.z + blk.extra_groups
    blk.shared_bill = pyo.Constraint(expr=blk.spare_gpus >= gpg * groups - inference)
    blk.spare_off = pyo.Constraint(expr=blk.spare_gpus <= inst.pool(inst.training.pool).gpus * blk.z)
    price = m.k["gpu_price"][inst.training.pool]
    blk.gpu_cost.set_value(blk.gpu_cost.expr + price * blk.spare_gpus)


def convex(values: np.ndarray) -> bool:
    """No step of ``values`` is smaller than the one before by more than CONVEX_TOL of the values."""
    steps = np.diff(values)
    scale = float(np.max(np.abs(values))) if values.size else 0.0
    return bool(np.all(np.diff(steps) >= -CONVEX_TOL * scale))
