"""Why an instance has no plan, and what restores one: every limit of the instance is a candidate change.

Limits that cut (cadence, K) pairs directly — the freshness limits, the cadence grid's bounds, K,
the deadline, max_groups, and the pool-capacity bound's inputs (pool sizes, tokens/s, availability,
intake) — get closed-form thresholds from the per-pair screen (:mod:`drivers.diagnosis.screen`,
:mod:`drivers.diagnosis.candidates`), each confirmed by one solve; a re-solve search (:mod:`drivers.diagnosis.thresholds`)
runs only when that solve finds no plan. Node and VM caps and budgets, which act on whole plans, are
searched by re-solves (a budget exactly, by solving for the least cost). An input
that cannot restore a pair given the families that cut is said to in one line, never searched.
When no single change restores a plan, the cheapest pair of changes among the top families follows.
"""

from __future__ import annotations

from collections.abc import Sequence

from trainground.drivers.diagnosis import screen as sc
from trainground.drivers.diagnosis.feasibility import Feasibility
from trainground.drivers.diagnosis.findings import change_entry, findings_of, fmt
from trainground.drivers.diagnosis.goodput import goodput_conflict
from trainground.drivers.diagnosis.regime import admission_diagnosis, drop_diagnosis, regime_diagnosis
from trainground.drivers.diagnosis.spill import spill_note
from trainground.drivers.diagnosis.thresholds import settle
from trainground.drivers.diagnosis.two_changes import cheapest_pairs
from trainground.models.instance import Instance
from trainground.models.result import Result
from trainground.solver.regimes.admission import admission_of
from trainground.solver.regimes.batch import batch_of
from trainground.solver.regimes.drop import drop_of
from trainground.solver.solve import Planner
from trainground.solver.stopwatch import Stopwatch
from trainground.solver.table.pairs import TableCache
from trainground.solver.table.pairs import build as build_pairs

MAX_SOLVES = 60  # re-solves one diagnosis may spend (deterministic, unlike a time budget)
FAMILY_TEXT = {
    "deadline": "deadline",
    "update_time": "update time (no admissible group count keeps up)",
    "max_mean_gap": "max_mean_gap",
    "max_exceedance": "max_exceedance",
    "max_group_drop": "max_group_drop",
    "effective_intake": "effective intake (every group dropped)",
    "pool_capacity": "pool capacity (the pools cannot supply the token demand)",
    "goodput": "training goodput (failures leave no progress, docs/model.md §13)",
    "weight_sync": "weight sync (the cadence is within weight_sync_time)",
}


def diagnosed(
    inst: Instance, result: Result, depth: str = "full", clock: Stopwatch | None = None, notes: Sequence[str] = ()
) -> Result:
    """``result`` with its diagnosis attached when it is infeasible (unchanged otherwise); ``notes`` (the
    loader's warnings about units, say) lead the diagnosis's own notes."""
    if result.status != "infeasible":
        return result
    stuck = goodput_conflict(inst)
    if inst.stages is not None:  # MODEL §12: each stage's admissible pairs and the run's shortest
        from trainground.drivers.diagnosis.stages import staged_diagnosis

        diagnosis = staged_diagnosis(inst, result)
        diagnosis["notes"] = list(notes) + list(diagnosis.get("notes", []))
        return result.model_copy(update={"diagnosis": diagnosis})
    batch, admitted, dropped = batch_of(inst), admission_of(inst), drop_of(inst)
    if batch is not None:  # a batch run's own rows (MODEL §14)
        diagnosis = regime_diagnosis(inst, batch)
    elif admitted is not None:  # an admission run's own rows
        diagnosis = admission_diagnosis(inst, admitted)
    elif dropped is not None:  # an async drop run with regime fields set: its own rows
        diagnosis = drop_diagnosis(inst, dropped)
    elif stuck is not None:
        diagnosis = stuck
    elif inst.uncertainty is not None and inst.uncertainty.confidence is not None:
        diagnosis = confidence_diagnosis(inst, result.objective, depth, clock)
    else:
        diagnosis = diagnose(inst, build_pairs(inst, fewest_groups=True), result.objective, depth, clock)
    held = hold_note(inst, result.objective) if inst.holds else None
    diagnosis["notes"] = list(notes) + ([held] if held else []) + list(diagnosis.get("notes", []))
    if notes:
        diagnosis["unit_notes"] = list(notes)
    return result.model_copy(update={"diagnosis": diagnosis})


def hold_note(inst: Instance, objective: str) -> str | None:
    """When only the hold basis has no plan (MODEL §11): one line on what holding costs in time, beside the
    steady_state plan that exists (None when steady_state has no plan either)."""
    from trainground.solver.laws import startup

    steady_inst = inst.model_copy(update={"planning": inst.planning.model_copy(update={"basis": "steady_state"})})
    steady = Planner(steady_inst).solve(objective)
    if steady.plan is None or steady.metrics is None:
        return None
    plan = steady.plan
    fill = float(startup.run_fill(inst, steady.metrics.attempts_per_s))
    startup = fill - plan.cadence_s + steady.metrics.update_time_s
    return (
        f"no plan holds (planning.basis hold), but the steady_state basis has one (${plan.total_cost:,.0f}, "
        f"makespan {plan.makespan_s:,.0f} s): counting its start-up alone adds {startup:,.0f} s (the first batch "
        f"after {fill:,.0f} s, the last update after the last batch), before sandboxes sized for the in-flight "
        f"fluctuation and the replays' allowance; a change below gives a plan on the hold rows (its replays then "
        f"set its allowance), or --basis steady_state plans on the seed's arithmetic"
    )


def confidence_diagnosis(inst: Instance, objective: str, depth: str, clock: Stopwatch | None = None) -> dict:
    """An infeasible confidence solve (MODEL §9): the deterministic problem's diagnosis when it has no plan
    either, else that its plans are on time too rarely."""
    plain = inst.model_copy(update={"uncertainty": inst.uncertainty.model_copy(update={"confidence": None})})
    if Planner(plain).solve(objective).status == "infeasible":
        return diagnose(plain, build_pairs(plain, fewest_groups=True), objective, depth, clock)
    unc = inst.uncertainty
    return {
        "conflict": f"plans meet every constraint at the nominal values, but none is on time in at least "
        f"{unc.confidence:.1%} of the {unc.samples:,} scenarios (uncertainty.confidence); "
        f"lower the confidence or the uncertainty",
        "confidence": unc.confidence,
    }


def diagnose(inst: Instance, pairs, objective: str, depth: str = "full", clock: Stopwatch | None = None) -> dict:
    """{"conflict", "rejected_pairs", "cut_alone", "relaxations", "changes", "cannot_help", "pairs_of_changes",
    "notes", "solves"} (MODEL §6 names "diagnosis"; the keys past it are this project's).

    ``depth``: "brief" (the per-pair counts, no solve), "conflict" (+ which single inputs restore a plan,
    without searching their thresholds), "full" (+ each input's threshold and, when no single change
    restores a plan, the cheapest pair of changes).
    """
    cache = TableCache(32)  # the screens, probes and pairs of changes share the run's tables
    base = sc.screen(inst, cache)
    cut = base.cut_alone()
    out: dict = {"rejected_pairs": dict(pairs.rejected), "cut_alone": cut}
    out["conflict"] = _conflict(inst, pairs, base, cut)
    if depth == "brief":
        return out
    checker = Feasibility(inst, cache, clock, MAX_SOLVES)
    findings = [settle(checker, f, search=depth == "full") for f in findings_of(inst, cache, base, cut)]
    restoring = sorted((f for f in findings if f.value is not None), key=lambda f: f.rank)
    out["relaxations"] = [f.input for f in restoring]
    cut_short = any(f.skipped for f in findings)
    too_large = [f.input for f in findings if f.too_large]
    out["conflict"] += (
        "; any one of these alone restores a plan: " + ", ".join(out["relaxations"])
        if restoring
        else "; the solve budget or time limit ran out before a change was found"
        if cut_short
        else "; some changes were not searched (their tables too large to tabulate)"
        if too_large
        else "; no single change restores a plan"
    )
    cut_short = cut_short or bool(too_large)
    if depth == "full":
        out["changes"] = [change_entry(f) for f in restoring]
    helpless = [f for f in findings if f.value is None and f.bracket is None and not f.skipped and not f.too_large]
    out["cannot_help"] = [f.input for f in sorted(helpless, key=lambda f: f.rank)]
    notes = []
    if helpless:
        top = ", ".join(f for f, _ in sorted(cut.items(), key=lambda kv: -kv[1]))
        why = (
            " (pairs pass; whole plans are what the limits cut)"
            if base.passing().any()
            else f" (given what cuts the pairs: {top})"
            if top
            else ""
        )
        notes.append(f"cannot restore a plan alone: {', '.join(out['cannot_help'])}{why}")
    node_caps = any(f.input.startswith("max_nodes[") for f in findings)
    spill = spill_note(inst, out["cannot_help"], node_caps and bool(base.passing().any()))
    if spill:
        notes.append(spill)
    skipped = [f.input for f in findings if f.skipped]
    if skipped:
        notes.append(f"not searched (solve budget or time limit spent): {', '.join(skipped)}")
    if too_large:
        notes.append(
            f"not settled (a re-solve's table too large to tabulate, over the cap on a table's rows): "
            f"{', '.join(too_large)}"
        )
    for f in findings:
        if f.bracket is not None:
            notes.append(
                f"{f.input}: search stopped (solve budget) between {fmt(f, f.bracket[0])} (no plan) and "
                f"{fmt(f, f.bracket[1])} (a plan)"
            )
    # a family's own limit that lets its pairs through but restores no plan alone: what else must move with it
    partial = [
        f for f in findings if f.direct and f.value is None and not (f.skipped or f.too_large) and f.cand.values.size
    ]
    if depth == "full" and not cut_short and (not restoring or partial):
        out["pairs_of_changes"] = cheapest_pairs(inst, partial if restoring else findings, checker)
    out["notes"] = notes
    out["solves"] = checker.solves
    return out


def _conflict(inst: Instance, pairs, base: sc.Screen, cut: dict[str, int]) -> str:
    if pairs.size:
        return (
            f"{pairs.size:,} (cadence, K) pairs pass the per-pair checks, but none fits its pools, "
            f"sandbox nodes and budgets together"
        )
    if not base.entries:
        return "the cadence grid is empty (cadence.min is above the grid's top)"
    families = ", ".join(f"{FAMILY_TEXT.get(f, f)} {n:,}" for f, n in sorted(cut.items(), key=lambda kv: -kv[1]))
    return (
        f"no (cadence, K) pair of {base.entries:,} passes the per-pair checks; pairs each family cuts "
        f"on its own: {families or 'none (dominated or cut together)'}"
    )
