"""Solve one instance: pair table → cost bounds → the search over a live model → a verified result.

:class:`Planner` is what the drivers hold: one instance's live model, re-solved under
per-call restrictions (a makespan cap, a pinned cadence, budgets, a card count) and, when
reusable, retargeted to another instance of the same structure (a sweep point). Each
solve has its own :class:`~solver.stopwatch.Stopwatch`, whose time limit covers building
the blocks as well as every HiGHS run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

import numpy as np

from trainground.models.errors import InstanceError, Problem
from trainground.models.instance import OBJECTIVES, Instance
from trainground.models.result import Result, Status
from trainground.solver.confidence import planning as confidence_of
from trainground.solver.confidence.search import PairModels
from trainground.solver.confidence.table import ScenarioTable
from trainground.solver.mip.assemble import assemble, timings_of
from trainground.solver.mip.formulation import Formulation, PairModel
from trainground.solver.mip.search import Search
from trainground.solver.regimes.table import extension_of, highs_options, own_table, pair_table
from trainground.solver.stopwatch import Stopwatch
from trainground.solver.table import pairs as pair_tables
from trainground.solver.table.bounds import SandboxLP, hourly_lower_bound
from trainground.solver.table.coefficients import global_values, index_of
from trainground.solver.table.rows import RowCover
from trainground.solver.tolerances import REL_TOL, SPAN_TOL
from trainground.solver.verify.laws import Memo

__all__ = ["Planner", "fewest_rows_suffice", "solve_instance"]


class Planner:
    """One instance's live model and cost bounds; ``solve`` restrictions hold for one call."""

    def __init__(
        self,
        inst: Instance,
        threads: int = 1,
        reusable: bool = False,
        cache: pair_tables.TableCache | None = None,
        clock: Stopwatch | None = None,
        confidence: float | None = None,
        table: ScenarioTable | None = None,
        fewest_groups: bool = False,
        covered: bool = True,
        walk: float = 0.0,
    ):
        """``clock``: a stopwatch already running for the first solve (its time limit then covers this
        construction too: the pair table, the cost bounds). ``confidence``: plan for this on-time
        probability (MODEL §9; default the instance's ``uncertainty.confidence``, None: deterministic); each
        solve's allowance Δ (MODEL §11) then holds in its scenarios too (on time iff T_s + Δ <= deadline).
        ``table``: the needs of the instance's scenario set, when the caller keeps them for several α (a
        price-of-certainty curve). ``fewest_groups``: a planner that only answers whether a plan exists
        (``solve(feasibility=True)``, without a makespan cap or an allowance): each pair keeps its fewest on-time
        training-group count alone (:func:`fewest_rows_suffice` says for which instances that is exact), so its
        table does not grow with the groups a pool holds. ``covered``: with start-up counted, list the group
        counts each solve needs (:mod:`solver.table.rows`); False: every row, for a caller whose solves need them all
        (a diagnosis's makespan and budgeted re-solves). ``walk``: a frontier's headroom (:mod:`solver.table.rows`)."""
        if fewest_groups and not fewest_rows_suffice(inst, confidence):
            raise ValueError("fewest_groups answers feasibility without budgets or confidence only")
        self.fewest_groups = fewest_groups
        alpha = confidence_of.alpha_of(inst, confidence)
        _refuse_other_planners(inst, alpha)
        self.cache = cache if cache is not None else pair_tables.TableCache(2)  # this planner's own tables
        self._first_clock = clock
        self.build_clock = clock or Stopwatch()
        self.listener = self.build_clock.listener
        # start-up counted: the table grows by the group counts each solve needs (solver.table.rows)
        counted = inst.counts_startup and not own_table(inst)  # a regime's own table lists its rows whole (MODEL §14)
        self.rows = RowCover(walk) if covered and counted and alpha is None and not fewest_groups else None
        reusable = reusable or self.rows is not None
        with self.build_clock.phase("build"):
            self.build_clock.note(f"{inst.name}: pair table")
            fewest = fewest_groups or self.rows is not None
            pairs = pair_table(inst, self.cache, fewest_groups=fewest, every_count=alpha is not None)
            self.build_clock.note(f"{inst.name}: cost bounds of {pairs.size:,} (cadence, K) pairs")
            self.confidence: confidence_of.Confidence | None = None
            self.live: Formulation
            if alpha is None:
                self.live = PairModel(
                    inst, pairs, reusable, threads, self.build_clock, extension_of(inst), highs_options(inst)
                )
                ix = self.live.model.ix
            else:
                ix = index_of(inst)
            shared = global_values(inst, ix)
            self.sandbox_lp = SandboxLP(inst, ix, shared)  # kept across retargets while its key holds
            self.hourly_lb = hourly_lower_bound(inst, pairs, shared, self.sandbox_lp)
            if alpha is not None:
                self.build_clock.note(f"{inst.name}: scenarios of the confidence solve")
                self.confidence = confidence_of.Confidence(inst, pairs, alpha, shared, self.sandbox_lp, table)
                self.live = PairModels(inst, pairs, self.confidence, threads, self.build_clock)
        self._highs_seen = 0.0  # HiGHS reports its run time cumulated over the handle's life
        self.verifier_memo = Memo()  # the verifier's integrals over this planner's solves (keys name the law)

    @property
    def inst(self) -> Instance:
        return self.live.inst

    @property
    def pairs(self) -> pair_tables.Pairs:
        return self.live.pairs

    def retarget(self, inst: Instance) -> bool:
        """Point a reusable planner at another instance of the same structure (False: build a new one)."""
        live = self.live
        if (
            not live.reusable
            or index_of(inst) != live.model.ix
            or confidence_of.alpha_of(inst) is not None
            or inst.planning.basis != self.inst.planning.basis
            or inst.regime != self.inst.regime
            or (self.fewest_groups and not fewest_rows_suffice(inst))
        ):
            return False
        with self.build_clock.phase("build"):
            pairs = pair_table(inst, self.cache, fewest_groups=self.fewest_groups or self.rows is not None)
            if not live.retarget(inst, pairs):
                return False
            if self.rows is not None:
                self.rows.reset()
            shared = global_values(inst, live.model.ix)
            lp = SandboxLP(inst, live.model.ix, shared)
            self.sandbox_lp = self.sandbox_lp if lp.key == self.sandbox_lp.key else lp
            self.hourly_lb = hourly_lower_bound(inst, pairs, shared, self.sandbox_lp)
        return True

    def every_row(self) -> pair_tables.Pairs:
        """The table with every row (with start-up counted, every group count worth having of each pair, which
        a table held for one solve may leave out: :mod:`solver.table.rows`), for a caller that reads the table itself."""
        if self.rows is not None:
            self.rows.cover_every(self)
        return self.pairs

    def use_pairs(self, pairs: pair_tables.Pairs) -> None:
        """Point the planner at another table of its own instance (more or fewer group counts per pair,
        :mod:`solver.table.rows`): a retarget of the live model, else a fresh one, and the table's cost bounds."""
        live = self.live
        if self.confidence is not None:
            raise ValueError("a confidence solve keeps its table")
        with self.build_clock.phase("build"):
            inst = self.inst
            if not live.retarget(inst, pairs):
                self.live = PairModel(
                    inst, pairs, True, live.threads, self.build_clock, extension_of(inst), highs_options(inst)
                )
                self._highs_seen = 0.0
            shared = global_values(inst, self.live.model.ix)
            self.hourly_lb = hourly_lower_bound(inst, pairs, shared, self.sandbox_lp)

    def candidates(
        self,
        max_makespan: float | None = None,
        cadence: float | None = None,
        max_hourly_cost: float | None = None,
        max_total_cost: float | None = None,
        allowance: float = 0.0,
    ) -> np.ndarray:
        """Pairs a plan under these restrictions may use; budgets close every pair whose cost bound
        already breaks them, and a pair whose bound is infinite (no fleet within the node and VM caps,
        or no pool mix, can hold it) holds no plan (exact: the bound is valid). A confidence solve's bounds
        are those of its scenarios with the allowance ``allowance`` (MODEL §11)."""
        pairs, limits = self.pairs, self.inst.limits
        hourly_lb = self._hourly_bound(allowance)
        keep = np.isfinite(hourly_lb)
        if max_makespan is not None:
            keep &= pairs.makespan <= max_makespan * (1 + SPAN_TOL)
        if cadence is not None:
            keep &= np.abs(pairs.cadence - cadence) <= REL_TOL * cadence
        if self.confidence is not None:  # pairs that cannot meet enough scenarios whatever their counts
            keep &= self.confidence.at(allowance).possible
        total_lb = hourly_lb * pairs.makespan / 3600.0
        for limit, bound in (
            (limits.max_hourly_cost, hourly_lb),
            (max_hourly_cost, hourly_lb),
            (limits.max_total_cost, total_lb),
            (max_total_cost, total_lb),
        ):
            if limit is not None:
                keep &= bound <= limit * (1 + REL_TOL)
        return keep

    def _hourly_bound(self, allowance: float) -> np.ndarray:
        """Each pair's lower bound on the hourly cost: the nominal one, raised in a confidence solve by its
        scenarios' with the allowance ``allowance``."""
        if self.confidence is None:
            return self.hourly_lb
        return np.maximum(self.hourly_lb, self.confidence.at(allowance).hourly)

    def lower_bounds(self, objective: str, allowance: float = 0.0) -> np.ndarray:
        """Each pair's lower bound on a cost criterion: the hourly bound (a confidence solve's with the allowance
        ``allowance``), times the pair's makespan in hours for total cost."""
        return self._hourly_bound(allowance) * (self.pairs.makespan / 3600.0 if objective == "total_cost" else 1.0)

    def solve(
        self,
        objective: str | None = None,
        *,
        time_limit: float | None = None,
        max_makespan: float | None = None,
        cadence: float | None = None,
        max_hourly_cost: float | None = None,
        max_total_cost: float | None = None,
        max_inference_gpus: int | None = None,
        allowance: float = 0.0,
        feasibility: bool = False,
        confidence_report: bool = True,
    ) -> Result:
        """The optimal plan under ``objective`` and this call's restrictions (an infeasible result carries
        no diagnosis: drivers.diagnosis.diagnose explains it on request). ``allowance``: the run-variance allowance Δ
        of MODEL §11 item 4, s: the deadline row becomes T + Δ <= deadline. ``feasibility``: the question is
        only whether a plan exists; the plan returned is verified but optimal only among the rows
        :meth:`fewest_groups_only` keeps. ``confidence_report``: a confidence solve checks its plan in its
        scenarios and in fresh ones (:meth:`report_confidence`; False for a caller that reports later or not)."""
        objective = objective or self.inst.objective
        if self.fewest_groups and not (
            feasibility
            and max_hourly_cost is None
            and max_total_cost is None
            and max_makespan is None
            and not allowance
        ):  # a cap on the makespan or budgets can ask for a pair's faster rows, with more groups
            raise ValueError("a fewest_groups planner answers feasibility without budgets or a makespan cap only")
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
        clock = self._clock_for(time_limit)
        if allowance > 0:
            held = self.inst.schedule.deadline - allowance
            max_makespan = held if max_makespan is None else min(max_makespan, held)
        with clock.phase("build"):
            self.live.use(allowance)
        caps = [("hourly", max_hourly_cost), ("total", max_total_cost), ("cards", max_inference_gpus)]
        restrict = dict(max_makespan=max_makespan, cadence=cadence, max_hourly_cost=max_hourly_cost)
        restrict["max_total_cost"] = max_total_cost
        budgets = max_hourly_cost is not None or max_total_cost is not None
        table = partial(self._search_table, objective, restrict, caps, allowance, feasibility and not budgets, clock)
        rows = self.rows
        search = rows.searched(self, objective, feasibility, budgets, restrict, caps, clock, table) if rows else table()
        highs_before = self._highs_seen
        self._highs_seen = max(self._highs_seen, search.highs_seconds if search else 0.0)
        if search is None or search.values is None:
            return self._no_plan(objective, search, clock, highs_before)
        result = self._assemble(objective, search, clock, highs_before, allowance)
        if confidence_report:
            self.report_confidence(result, allowance, clock)
        return result

    def _search_table(self, objective, restrict, caps, allowance, fewest, clock):
        """The search over the table held, under the solve's restrictions (``fewest``: each pair's fewest rows)."""
        candidates = self.candidates(**restrict, allowance=allowance)
        candidates = self.fewest_groups_only(candidates) if fewest else candidates
        lower, total = self.lower_bounds(objective, allowance), self.lower_bounds("total_cost", allowance)
        return self.search_pairs(objective, candidates, lower, total, caps, clock)

    def fewest_groups_only(self, candidates: np.ndarray, exact_only: bool = True) -> np.ndarray:
        """Of the candidate rows of each (cadence, K) pair, the one with the fewest training groups: a plan
        exists among the candidates iff one exists among these, when the instance has no budget and no
        confidence (``exact_only``: otherwise every candidate is kept). Rows of one pair differ in m alone
        (MODEL §8 lists each count worth having); every candidate already meets the deadline, each count keeps
        up (U(m) <= L), and fewer groups leave the pools at least as many GPUs for inference and ask nothing
        else more."""
        p = self.pairs
        if exact_only and (self.confidence is not None or not fewest_rows_suffice(self.inst)):
            return candidates
        rows = np.flatnonzero(candidates)
        rows = rows[np.lexsort((p.groups[rows], p.kept[rows], p.cadence[rows]))]
        first = np.ones(rows.size, dtype=bool)
        first[1:] = (p.cadence[rows[1:]] != p.cadence[rows[:-1]]) | (p.kept[rows[1:]] != p.kept[rows[:-1]])
        out = np.zeros_like(candidates)
        out[rows[first]] = True
        return out

    def _clock_for(self, time_limit: float | None) -> Stopwatch:
        """This solve's stopwatch: the one the planner was built with for its first solve, else a new one;
        the build work done since the last solve is counted as this solve's."""
        clock, self._first_clock = self._first_clock or Stopwatch(time_limit, self.listener), None
        if clock is not self.build_clock:
            clock.seconds["build"], self.build_clock.seconds = self.build_clock.seconds.get("build", 0.0), {}
        self.build_clock = self.live.clock = clock
        return clock

    def search_pairs(
        self,
        objective: str,
        candidates: np.ndarray,
        lower: np.ndarray,
        lower_total: np.ndarray,
        caps: list[tuple[str, float | None]],
        clock: Stopwatch,
    ) -> Search | None:
        """The search ``objective`` calls for over ``candidates`` (``lower``, ``lower_total``: their bounds on
        the objective's cost criterion and on total cost), under ``caps`` for its duration (None: no candidate
        pair, no HiGHS run)."""
        self.live.set_caps(caps)
        search = None
        try:
            with clock.phase("solve"):
                if candidates.any():
                    search = self.live.search(objective, candidates, lower, lower_total, clock)
        finally:
            self.live.end_solve()
        return search

    def _no_plan(self, objective: str, search: Search | None, clock: Stopwatch, highs_before: float) -> Result:
        """The result of a solve that found no plan, with its status and why."""
        status = Status.INFEASIBLE if search is None else search.status
        if status is None:  # the time limit ran out before HiGHS was started
            status = Status.TIME_LIMIT if clock.expired() else Status.INFEASIBLE
        messages: dict[str, str] = {
            Status.INFEASIBLE: "no plan meets every constraint",
            Status.TIME_LIMIT: "time limit reached before any plan was found",
            Status.ERROR: "HiGHS failed",
        }
        return Result(
            instance=self.inst.name,
            status=status,
            objective=objective,
            message=messages[status],
            timings=timings_of(clock, search, highs_before),
            basis=self.inst.planning.basis,
        )

    def _assemble(
        self, objective: str, search: Search, clock: Stopwatch, highs_before: float, allowance: float
    ) -> Result:
        """The verified result of the plan ``search`` found."""
        result = assemble(self.live, objective, search, clock, highs_before, allowance, self.verifier_memo)
        if self.confidence is not None and result.model_size is not None:
            result.model_size["scenario_groups"] = self.confidence.groups
        return result

    def report_confidence(self, result: Result, allowance: float, clock: Stopwatch | None = None) -> None:
        """A confidence solve's plan checked in its scenarios and in fresh ones, each on time iff T_s +
        ``allowance`` <= deadline (MODEL §9, §11): ``result.confidence``, its time counted as verification."""
        if self.confidence is None or result.plan is None:
            return
        start = time.perf_counter()
        result.confidence = confidence_of.report(self.inst, result.plan, self.confidence, allowance)
        result.timings.verify += time.perf_counter() - start


def _refuse_other_planners(inst: Instance, alpha: float | None) -> None:
    """InstanceError for what this planner does not plan: stages (MODEL §12 is solved by
    solver.stages.solve.StagedPlanner alone) and a confidence solve of any regime but the seed's (§14: its
    scenarios read the seed's regime)."""
    if inst.stages is not None:
        raise InstanceError(
            inst.name or "instance",
            [Problem("stages", "this command does not plan stages yet (solve does); remove stages to use it")],
        )
    if alpha is not None and inst.regime is not None and not inst.regime.is_default:
        raise InstanceError(
            inst.name or "instance",
            [Problem("regime.mode", f"{inst.regime.label} is planned, but not yet for a confidence solve")],
        )


def fewest_rows_suffice(inst: Instance, confidence: float | None = None) -> bool:
    """Whether each pair's fewest training-group row answers "is there a plan?" (``Planner.fewest_groups_only``):
    yes unless a budget or a confidence solve (``confidence``, else the instance's) can ask for more groups."""
    limits = inst.limits
    return (
        confidence_of.alpha_of(inst, confidence) is None
        and limits.max_hourly_cost is None
        and limits.max_total_cost is None
    )


def solve_instance(
    inst: Instance,
    objective: str | None = None,
    time_limit: float | None = None,
    threads: int = 1,
    on_progress: Callable[[str], None] | None = None,
    clock: Stopwatch | None = None,
    confidence: float | None = None,
    cache: pair_tables.TableCache | None = None,
) -> Result:
    """Solve one instance to proven optimality (or the time limit) and return its verified result;
    ``time_limit`` covers the whole solve, building included; ``on_progress`` hears what it is doing.
    ``clock``: a stopwatch started earlier (a command's), whose time limit then applies instead.
    ``confidence``: plan for this on-time probability (MODEL §9), over the instance's own. ``cache``: where
    the pair quantities are kept for the caller's later re-solves of edited copies (the levers)."""
    clock = clock or Stopwatch(time_limit, on_progress)
    return Planner(inst, threads, cache=cache, clock=clock, confidence=confidence).solve(objective)
