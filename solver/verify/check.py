"""What a check of a plan collects (its violations, its binding rows, the metrics it read) and the verifier's
tolerances, its own (the model's are in solver/tolerances.py, none shared)."""

from __future__ import annotations

from dataclasses import dataclass, field

from trainground.models.result import Metrics

ROW_TOL = 1e-8  # relative (and absolute, in environments or hosts) slack for rows HiGHS solves to 1e-9
COST_TOL = 1e-7  # relative: a reported cost against its recomputation
REL_TOL = 1e-9  # MODEL §4's relative tolerance, for limits compared with quantities of the instance alone
GRID_TOL = 1e-6  # a cadence is on the grid when (L - min)/step is this close to a whole number
MAKESPAN_TOL = 1e-9  # relative: a reported makespan against n·L + extra_time (exact sums of the inputs)
BINDING_TOL = 1e-6  # relative: this close to its limit (a budget, the cloud share), a quantity is binding
COUNT_TOL = 1e-9  # in hosts: a node type binds when its fullest row needs more than count - 1 + this
FILL_TOL = 1e-6  # relative: a reported start-up fill (a root of a numerical integral) against this one's


REGIME_ROW_TOL = 1e-6
"""The rows' slack of a run regime's plan (MODEL §14), whose model HiGHS solves to 1e-7 (its blocks are ones HiGHS
misreports at 1e-9): a placement split a hundred-thousandth of an environment over a host's row is HiGHS's
tolerance, not a plan that does not fit."""


@dataclass
class Check:
    violations: list[str] = field(default_factory=list)
    binding: list[str] = field(default_factory=list)
    metrics: Metrics | None = None
    row_tol: float = ROW_TOL  # the slack of every row checked (REGIME_ROW_TOL for a regime's plan)

    def leq(self, lhs: float, rhs: float) -> bool:
        return lhs <= rhs + self.row_tol * max(1.0, abs(rhs))

    def geq(self, lhs: float, rhs: float) -> bool:
        return lhs >= rhs * (1 - self.row_tol) - self.row_tol

    @property
    def ok(self) -> bool:
        return not self.violations


def leq(lhs: float, rhs: float) -> bool:
    return lhs <= rhs + ROW_TOL * max(1.0, abs(rhs))


def geq(lhs: float, rhs: float) -> bool:
    return lhs >= rhs * (1 - ROW_TOL) - ROW_TOL
