"""One pair block of the model (:func:`solver.mip.model.add_pair`) read as arrays: its columns, its rows and its
named cost terms as linear forms, in the order HiGHS takes them.

A confidence solve (:mod:`solver.confidence.model`) solves one pair per HiGHS run: the pair's block, built by
the same code as every solve's, read here once, plus the scenario rows, which are arrays from the start. The
block's numbers are plain floats (a model that is not reusable), so each linear form is read with its values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.core as pyo
from pyomo.repn.standard_repn import generate_standard_repn

COST_TERMS = ("gpu_cost", "node_cost", "vm_cost", "hourly_cost", "total_cost", "makespan")


@dataclass(frozen=True)
class BlockArrays:
    """A block's columns (``variables``, each with its bounds and integrality) and rows (row-wise sparse:
    ``starts``, ``index``, ``value``, with their bounds), and each named cost term as (coefficients per column,
    constant)."""

    variables: list
    col_lower: np.ndarray
    col_upper: np.ndarray
    integer: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray
    starts: np.ndarray
    index: np.ndarray
    value: np.ndarray
    costs: dict[str, tuple[np.ndarray, float]]

    @property
    def columns(self) -> dict[int, int]:
        """id of each pyomo variable -> its column."""
        return {id(v): j for j, v in enumerate(self.variables)}

    def column(self, var) -> int:
        return self.columns[id(var)]


def block_arrays(blk) -> BlockArrays:
    """The arrays of ``blk`` (every active row of it and of its sub-blocks; every variable they hold)."""
    variables = list(blk.component_data_objects(pyo.Var, descend_into=True))
    col = {id(v): j for j, v in enumerate(variables)}
    inf = np.inf
    lower = np.array([-inf if v.lb is None else float(v.lb) for v in variables])
    upper = np.array([inf if v.ub is None else float(v.ub) for v in variables])
    integer = np.array([v.is_integer() for v in variables], dtype=bool)
    starts, index, value, row_lower, row_upper = [0], [], [], [], []
    for con in blk.component_data_objects(pyo.Constraint, active=True, descend_into=True):
        coefs, constant = _linear(con.body, col)
        for j, a in coefs.items():
            if a != 0:
                index.append(j)
                value.append(a)
        starts.append(len(index))
        row_lower.append(-inf if not con.has_lb() else float(pyo.value(con.lower)) - constant)
        row_upper.append(inf if not con.has_ub() else float(pyo.value(con.upper)) - constant)
    costs = {}
    for name in COST_TERMS:
        coefs, constant = _linear(getattr(blk, name).expr, col)
        dense = np.zeros(len(variables))
        for j, a in coefs.items():
            dense[j] += a
        costs[name] = (dense, constant)
    return BlockArrays(
        variables=variables,
        col_lower=lower,
        col_upper=upper,
        integer=integer,
        row_lower=np.array(row_lower),
        row_upper=np.array(row_upper),
        starts=np.array(starts, dtype=np.int64),
        index=np.array(index, dtype=np.int64),
        value=np.array(value, dtype=float),
        costs=costs,
    )


def _linear(expr, col: dict[int, int]) -> tuple[dict[int, float], float]:
    """(column -> coefficient, constant) of a linear expression over the block's variables."""
    repn = generate_standard_repn(expr, compute_values=True, quadratic=False)
    if repn.nonlinear_expr is not None:
        raise ValueError("a pair block's rows and costs are linear")
    coefs: dict[int, float] = {}
    for var, a in zip(repn.linear_vars, repn.linear_coefs):
        j = col[id(var)]
        coefs[j] = coefs.get(j, 0.0) + float(a)
    return coefs, float(pyo.value(repn.constant))
