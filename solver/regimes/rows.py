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
    """The extension (see :func:`solver.mip.model.build_model`) of a pipelined ``k = 0`` model."""

    def __init__(self, batch: Batch):
        self.batch = batch

    def demands(self, m, p: int) -> np.ndarray:
        """d at each count from the pair's fewest up, while finite (attempts/s)."""
        inst, pairs = m.inst, m.pairs
        counts = group_counts(inst, int(pairs.groups[p]))
        need = demand(inst, self.batch, float(pairs.cadence[p]), counts)
        finite = np.isfinite(need)
        stop = int(np.argmin(finite)) if not finite.all() else need.size
        return need[:stop]

    def declare_globals(self, m) -> None:
        return None

    def adjust(self, values: dict, p: int) -> None:
        """The pair's own supply row asks nothing: :meth:`add_rows` writes the one that depends on e."""
        values["attempts"] = {None: 0.0}

    def declare(self, m, blk, p: int) -> None:
        room = max(0, self.demands(m, p).size - 1)
        blk.extra_groups = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, room))
        blk.extra_off = pyo.Constraint(expr=blk.extra_groups <= room * blk.z)

    def add_rows(self, m, blk, p: int, host_rows) -> None:
        d = self.demands(m, p) * (1.0 - REL_TOL)  # the tolerance of every demand row (MODEL §4)
        supply = sum(blk.k["supply"][s] * blk.x[s] for s in m.ix.shapes)
        e, z = blk.extra_groups, blk.z
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


def convex(values: np.ndarray) -> bool:
    """No step of ``values`` is smaller than the one before by more than CONVEX_TOL of the values."""
    steps = np.diff(values)
    scale = float(np.max(np.abs(values))) if values.size else 0.0
    return bool(np.all(np.diff(steps) >= -CONVEX_TOL * scale))
