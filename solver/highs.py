"""The HiGHS adapter: the one place that creates HiGHS, sets its options, tells it about model
changes and maps its outcomes to the project's statuses.

It rides on pyomo's persistent HiGHS interface (``pyomo.contrib.solver.solvers.highs.Highs``),
which translates pyomo components into HiGHS columns and rows. Three of that interface's
costs are dropped here, measured as most of a re-solve of the seed baseline: ``update()``
walks every constraint of the model before each solve even with all auto-updates off; each
run copies the whole solver configuration and captures the C-level output through a
thread; and ``update_parameters`` re-evaluates every mutable coefficient although a sweep
point changes a few. The price is that this module reads private attributes of that
interface (the HiGHS object, its variable/constraint maps, its mutable-coefficient helpers),
and that nothing updates HiGHS unless told: every change goes through a method of
:class:`HighsModel`. ``tests/test_highs_adapter.py`` checks both — after every kind of
change the code makes, the problem HiGHS holds equals a freshly loaded one — and pins the
pyomo versions it passes on (pyproject.toml).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import highspy
import numpy as np
from pyomo.contrib.solver.solvers.highs import Highs
from pyomo.core.expr.visitor import identify_mutable_parameters

from trainground.models.result import Status
from trainground.solver.tolerances import FEASIBILITY_TOL, SOLUTION_COST_TOL

# Tuned on the bundled seed instances (bench/solve.py): these models are small and their LP
# relaxation is the convex hull of the cadence choice, so HiGHS's primal heuristics and extra
# threads cost more time than they save; the optimum is unchanged.
PRESOLVE_PROBING, PRESOLVE_ENUMERATION = 1 << 15, 1 << 16  # HiGHS presolve rule bits (presolve_rule_off)
OPTIONS = {
    "presolve": "on",
    "mip_rel_gap": 0.0,
    "mip_abs_gap": 0.0,
    "mip_feasibility_tolerance": FEASIBILITY_TOL,
    "primal_feasibility_tolerance": FEASIBILITY_TOL,
    "mip_heuristic_run_feasibility_jump": False,
    "mip_heuristic_effort": 0.0,
    # Presolve without probing and enumeration (exact reductions, so optimal values are unchanged): on
    # these models they find nothing to fix while taking a quarter of a small solve's time.
    "presolve_rule_off": PRESOLVE_PROBING | PRESOLVE_ENUMERATION,
    "output_flag": False,
    "solve_relaxation": False,  # True for a run whose LP relaxation is all it asks (a bound)
}
# Per criterion: the shortest feasible cadence is a feasibility search that presolve (probing every
# selection binary) slows, while the cost criteria gain from it (bench/solve.py).
STAGE_OPTIONS = {"makespan": {"presolve": "off"}, "total_cost": {"presolve": "on"}, "hourly_cost": {"presolve": "on"}}
# The staged model of MODEL §12 (solver/stages/model.py) links the stages' pair blocks, so its LP relaxation is
# no longer a convex hull: HiGHS then spends most of a solve in root heuristics and restarts that find
# nothing reduced-cost fixing does not (measured on instances/seed-week-stages.yaml: 14 s -> 5.6 s).
STAGED_OPTIONS = {
    "presolve": "on",
    "mip_allow_restart": False,
    "mip_heuristic_run_root_reduced_cost": False,
    "mip_heuristic_run_zi_round": False,
    "mip_heuristic_run_shifting": False,
}
# The compact staged model (solver/stages/compact.py) gains from HiGHS's restart after the root once the start-up
# is counted (its first-stage rows keep K from 4 to 10 on the staged seed: 1,697 pairs, 3.3 -> 2.1 s) or its
# pairs pass RESTART_PAIRS (6 and 8 stages of bench/stages.py: 14.2 -> 9.5 s, 29.2 -> 18.7 s); below that,
# on steady_state, the restart doubles a solve (3 stages 0.5 -> 0.9 s, 4 stages 3.9 -> 4.9 s).
RESTART_PAIRS = 4000
NO_BOUND = float("inf")  # objective_bound when no cut-off applies
_UNSET = object()  # an option HiGHS was not given yet


@dataclass
class Outcome:
    """One HiGHS run, in the project's vocabulary (MODEL.md §6 statuses)."""

    status: Status  # optimal | infeasible | time_limit | error
    objective_value: float | None
    bound: float | None
    highs_seconds: float  # HiGHS's run time, cumulated over the handle's life
    values: Solution | None = None
    runs: int = 1  # HiGHS runs it took (a failed presolve is retried without it, a failed start from none)


class Solution:
    """Variable values of one HiGHS run, looked up by pyomo variable (``values.get(var)``)."""

    def __init__(self, columns: dict[int, int], col_value):
        self._columns = dict(columns)
        self._col_value = col_value

    def get(self, var, default=None):
        col = self._columns.get(id(var))
        return default if col is None else self._col_value[col]


_TIME_LIMITS = {
    highspy.HighsModelStatus.kTimeLimit,
    highspy.HighsModelStatus.kIterationLimit,
    getattr(highspy.HighsModelStatus, "kSolutionLimit", highspy.HighsModelStatus.kTimeLimit),
}
_NO_PLAN = {
    highspy.HighsModelStatus.kInfeasible,
    highspy.HighsModelStatus.kUnboundedOrInfeasible,
    highspy.HighsModelStatus.kObjectiveBound,
}  # the last: nothing within a tie run's cut-off


def outcome_of(highs: highspy.Highs, columns: dict[int, int]) -> Outcome:
    """The single map from a HiGHS model status to the project's statuses; values only with a solution
    whose cost is the objective HiGHS reports (:func:`_solution_has_objective`). A run that returns a
    solution without that cost is a solve error, which the caller repeats without presolve, unless it ran
    out of time: it then keeps its time-limit status and loses the incumbent (a repeat would have no time)."""
    status = highs.getModelStatus()
    info = highs.getInfo()
    col_value = highs.getSolution().col_value if info.primal_solution_status == 2 else None
    has_solution = col_value is not None and _solution_has_objective(highs, info.objective_function_value, col_value)
    if col_value is not None and not has_solution and status not in _TIME_LIMITS:
        mapped = Status.ERROR
    elif status == highspy.HighsModelStatus.kOptimal and has_solution:
        mapped = Status.OPTIMAL
    elif status in _NO_PLAN:
        mapped = Status.INFEASIBLE
    elif status in _TIME_LIMITS:
        mapped = Status.TIME_LIMIT
    else:
        mapped = Status.ERROR
    return Outcome(
        status=mapped,
        objective_value=info.objective_function_value if has_solution else None,
        bound=info.mip_dual_bound if info.mip_node_count >= 0 else None,
        highs_seconds=float(highs.getRunTime()),
        values=Solution(columns, col_value) if has_solution else None,
    )


def _solution_has_objective(highs: highspy.Highs, objective: float, col_value) -> bool:
    """Whether the solution HiGHS returns has the objective value it reports. HiGHS 1.16 can, after a
    presolve of a model changed in place, report an optimum the solution does not reach while returning the
    previous run's solution (seen on a least hourly cost after a makespan or a total-cost search on the model);
    :func:`outcome_of` says what such a run becomes."""
    n = highs.getNumCol()
    if n == 0:
        return True
    costs = highs.getCols(n, np.arange(n, dtype=np.int32))[2]
    value = float(np.dot(costs, np.asarray(col_value))) + highs.getObjectiveOffset()[1]
    return abs(value - objective) <= SOLUTION_COST_TOL * max(1.0, abs(objective))


def new_highs() -> highspy.Highs:
    """A silent HiGHS object for a plain LP (cost bounds). The first HiGHS object of a process prints a
    banner on standard output, below any option: it is created with that stream pointed at /dev/null."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            highs = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("threads", 1)
    return highs


def _run(highs: highspy.Highs, given: dict, options: dict, threads: int, time_limit: float | None) -> None:
    """Run ``highs`` with :data:`OPTIONS`, ``options`` over them, ``threads`` and ``time_limit``; ``given``: the
    options it was last given (HiGHS keeps them), updated."""
    limit = float("inf") if time_limit is None else time_limit
    for key, value in {**OPTIONS, **options, "threads": threads, "time_limit": limit}.items():
        if given.get(key, _UNSET) != value:
            highs.setOptionValue(key, value)
            given[key] = value
    highs.HandleKeyboardInterrupt = True
    highs.run()


class _Persistent(Highs):
    """pyomo's persistent HiGHS interface with its automatic, whole-model update turned off."""

    def update(self, timer=None) -> None:
        return None


class HighsModel:
    """A pyomo model mirrored in one HiGHS object; every change to the model is announced here.

    ``load`` takes the model as it stands. Afterwards: :meth:`add_block` / :meth:`add_rows` /
    :meth:`remove_rows` for components added or deleted, :meth:`bounds_changed` for variable
    bounds, :meth:`params_changed` for mutable coefficients, :meth:`use_objective` to switch the
    objective; :meth:`run` solves what HiGHS holds.
    """

    def __init__(self, threads: int = 1):
        self._pyomo = _Persistent()
        self._pyomo.config.load_solutions = False
        self._pyomo.config.raise_exception_on_nonoptimal_result = False
        self._threads = threads
        self._model = None
        self._options_set: dict = {}  # options given to the HiGHS object, as last set (HiGHS keeps them)
        self._param_index: tuple | None = None

    def load(self, model) -> None:
        self._pyomo.set_instance(model)
        self._highs.setOptionValue("output_flag", False)  # later row additions log otherwise
        self._model = model
        self._options_set = {}
        self._param_index = None

    @property
    def _highs(self) -> highspy.Highs:
        return self._pyomo._solver_model

    def add_block(self, block) -> None:
        self._pyomo.add_block(block)

    def add_rows(self, rows: list) -> None:
        if rows:
            self._pyomo.add_constraints(rows)

    def remove_rows(self, rows: list) -> None:
        if rows:
            self._pyomo.remove_constraints(rows)
            self._param_index = None  # rows added after these may bring the count back to the index's key

    def bounds_changed(self, variables: list) -> None:
        if variables:
            self._pyomo.update_variables(variables)

    def use_objective(self, objective) -> None:
        self._pyomo.set_objective(objective)
        self._param_index = None  # a new objective object may reuse a freed one's id

    def params_changed(self, changed: set[int]) -> None:
        """Push to HiGHS only the coefficients and bounds whose expressions hold a changed Param
        (``changed``: ids of ParamData)."""
        readers = self._readers()
        helpers = {id(h): h for param in changed for h in readers.get(param, ())}
        for helper in helpers.values():
            helper.update()

    def run(
        self, options: dict | None = None, time_limit: float | None = None, start: Solution | None = None
    ) -> Outcome:
        """One HiGHS run of the problem as it stands, with per-run options over the defaults, from ``start`` (a
        solution of these columns, HiGHS's first incumbent if feasible) when given. HiGHS 1.16 can rate a start
        in presolve's reduced space below its cost, then return it as the optimum it reports (a solve error,
        :func:`outcome_of`): that run is repeated from no solution."""
        highs = self._highs
        if start is not None:
            first = highspy.HighsSolution()
            first.col_value, first.value_valid = list(start._col_value), True
            highs.setSolution(first)
        began = time.perf_counter()
        _run(highs, self._options_set, options or {}, self._threads, time_limit)
        outcome = outcome_of(highs, self._pyomo._pyomo_var_to_solver_var_map)
        if start is None or outcome.status != Status.ERROR:
            return outcome
        highs.clearSolver()  # else HiGHS starts from the solution it holds: the start
        left = None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - began))
        repeat = self.run(options, left)
        repeat.runs = 2
        return repeat

    def size(self) -> tuple[int, int]:
        """(columns, rows) HiGHS holds."""
        return self._highs.getNumCol(), self._highs.getNumRow()

    def problem(self) -> dict:
        """The problem HiGHS holds, keyed by pyomo names so two loads of one model compare equal:
        {"columns": {var: (lower, upper, cost, integer)}, "rows": {row: (lower, upper, {var: coef})},
        "offset": objective constant, "sense": 1 minimise / -1 maximise}."""
        lp = self._highs.getLp()
        names = {
            col: var.name
            for var_id, col in self._pyomo._pyomo_var_to_solver_var_map.items()
            for var in [self._pyomo._vars[var_id][0]]
        }
        integrality = (
            list(lp.integrality_) if len(lp.integrality_) else [highspy.HighsVarType.kContinuous] * lp.num_col_
        )
        columns = {
            names[j]: (
                lp.col_lower_[j],
                lp.col_upper_[j],
                lp.col_cost_[j],
                integrality[j] == highspy.HighsVarType.kInteger,
            )
            for j in range(lp.num_col_)
        }
        row_names = {row: con.name for con, row in self._pyomo._pyomo_con_to_solver_con_map.items()}
        matrix = lp.a_matrix_
        rows: dict = {row_names[i]: (lp.row_lower_[i], lp.row_upper_[i], {}) for i in range(lp.num_row_)}
        starts, index, value = list(matrix.start_), list(matrix.index_), list(matrix.value_)
        by_row = matrix.format_ == highspy.MatrixFormat.kRowwise
        for outer in range(len(starts) - 1):
            for k in range(starts[outer], starts[outer + 1]):
                row, col = (outer, index[k]) if by_row else (index[k], outer)
                if value[k] != 0:
                    rows[row_names[row]][2][names[col]] = value[k]
        return {
            "columns": columns,
            "rows": rows,
            "offset": lp.offset_,
            "sense": int(lp.sense_ == highspy.ObjSense.kMaximize) * -2 + 1,
        }

    def _readers(self) -> dict[int, list]:
        """id of each mutable Param -> the helpers (coefficients, bounds, objective terms) that read it;
        rebuilt when rows were added (its key counts them), removed or the objective changed since it was made."""
        p = self._pyomo
        objective = p._mutable_objective
        key = (len(p._mutable_helpers), len(p._mutable_bounds), id(objective))
        if self._param_index is not None and self._param_index[0] == key:
            return self._param_index[1]
        readers: dict[int, list] = {}

        def read(helper, *exprs) -> None:
            for param in {id(x) for e in exprs if e is not None for x in identify_mutable_parameters(e)}:
                readers.setdefault(param, []).append(helper)

        for helpers in p._mutable_helpers.values():
            for helper in helpers:
                read(helper, *(getattr(helper, n) for n in ("expr", "lower_expr", "upper_expr") if hasattr(helper, n)))
        for _, helper in p._mutable_bounds.values():
            read(helper, helper.lower_expr, helper.upper_expr)
        if objective is not None:
            for helper in [objective.constant, *objective.linear_coefs]:
                read(helper, helper.expr)
        self._param_index = (key, readers)
        return readers


@dataclass(frozen=True)
class ArrayModel:
    """A MIP given to HiGHS whole: minimise ``cost·x + offset`` subject to ``row_lower <= A x <= row_upper``
    (``A`` row-wise sparse: ``starts``, ``index``, ``value``), column bounds and integrality."""

    cost: np.ndarray
    offset: float
    col_lower: np.ndarray
    col_upper: np.ndarray
    integer: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray
    starts: np.ndarray
    index: np.ndarray
    value: np.ndarray


class ArrayRunner:
    """One HiGHS object that solves a sequence of :class:`ArrayModel` (a confidence solve's per-pair MIPs,
    solver/confidence/model.py), each passed whole, with the options of :data:`OPTIONS` and the run's own."""

    def __init__(self, threads: int = 1):
        self._threads = threads
        self._highs: highspy.Highs | None = None
        self._options_set: dict = {}
        self.size = (0, 0)  # (columns, rows) of the last model

    def run(self, model: ArrayModel, columns: dict[int, int], options: dict, time_limit: float | None) -> Outcome:
        """One HiGHS run of ``model``; ``columns``: id of each pyomo variable the solution is read by -> column."""
        if self._highs is None:
            self._highs = new_highs()
        highs = self._highs
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = model.cost.size, model.row_lower.size
        lp.col_cost_, lp.offset_ = model.cost, model.offset
        lp.col_lower_, lp.col_upper_ = model.col_lower, model.col_upper
        lp.row_lower_, lp.row_upper_ = model.row_lower, model.row_upper
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = model.starts.astype(np.int32)
        lp.a_matrix_.index_ = model.index.astype(np.int32)
        lp.a_matrix_.value_ = model.value
        kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
        lp.integrality_ = [kinds[int(flag)] for flag in model.integer]
        highs.passModel(lp)
        self.size = (lp.num_col_, lp.num_row_)
        _run(highs, self._options_set, options, self._threads, time_limit)
        return outcome_of(highs, columns)


def pass_lp(highs: highspy.Highs, cost: np.ndarray, A: np.ndarray, upper: np.ndarray, bounds) -> None:
    """Give ``highs`` the dense LP min cost·x subject to A x <= upper, ``bounds`` per column ((lower, upper or None))."""
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = A.shape[1], A.shape[0]
    lp.col_cost_ = cost
    lp.col_lower_ = np.array([lo for lo, _ in bounds], dtype=float)
    lp.col_upper_ = np.array([highspy.kHighsInf if hi is None else hi for _, hi in bounds], dtype=float)
    lp.row_lower_ = np.full(A.shape[0], -highspy.kHighsInf)
    lp.row_upper_ = upper
    rows, cols = np.nonzero(A.T)  # column-wise: for each column, its rows
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=A.shape[1])))).astype(np.int32)
    lp.a_matrix_.index_ = cols.astype(np.int32)
    lp.a_matrix_.value_ = A.T[rows, cols]
    highs.passModel(lp)
