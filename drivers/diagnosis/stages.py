"""Why a staged instance (MODEL.md §12) has no plan: what each stage's rows admit, and what the run then asks.

A staged plan needs every stage to have an admissible (cadence, K) pair, one K shared by all, and the
stages' parts to fit the deadline together (with the allowance under hold). The diagnosis reports each
stage's admissible pairs and what cut the others (:mod:`solver.stages.tables`), and the shortest run the
stages' admissible pairs allow against the deadline, which the tables' prune leaves within it: the stages then
fit one at a time but not together (under fixed, one capacity for all). An infeasible result is one without a
plan even at Δ = 0 (drivers/hold.py), so no allowance enters. The one-stage diagnosis's searches of
thresholds are not run on staged instances.
"""

from __future__ import annotations

from trainground.models.instance import Instance
from trainground.models.result import Result
from trainground.solver.stages.tables import StagedUnsupported, stage_tables


def staged_diagnosis(inst: Instance, result: Result) -> dict:
    """{"conflict", "stages": [{"name", "pairs", "cut"}], "shortest_makespan_s", "notes"} for an infeasible
    staged ``result``."""
    assert inst.stages is not None
    try:
        found = stage_tables(inst)
    except StagedUnsupported as exc:
        return {"conflict": f"{exc.where}: {exc.rule}", "stages": [], "notes": []}
    rows = [
        {"name": stage.name, "pairs": int(table.size), "cut": dict(sorted(table.rejected.items()))}
        for stage, table in zip(inst.stages.list, found.tables)
    ]
    empty = [r["name"] for r in rows if r["pairs"] == 0]
    if empty:
        conflict = (
            f"stage {', '.join(empty)}: no cadence on its grid meets its rows with any K "
            "(see each stage's cut: the constraints that removed its pairs)"
        )
        return {"conflict": conflict, "stages": rows, "shortest_makespan_s": None, "notes": []}
    shortest = sum(float(part.min()) for part in found.parts) + inst.schedule.extra_time
    if found.final is not None and found.final[1].size:
        shortest += float(found.final[1].min())
    fits = (
        f"each stage fits on its own (at their shortest the stages take {shortest:,.0f} s against the deadline "
        f"{inst.schedule.deadline:,.0f} s), but "
    )
    if inst.stages.capacity == "fixed":
        conflict = fits + (
            "no one capacity serves every stage at cadences that fit the deadline together within the pools, caps "
            "and budgets (capacity: replan gives each stage its own)"
        )
    else:
        conflict = fits + "not together with the switches between stages, one K and the budgets"
    return {"conflict": conflict, "stages": rows, "shortest_makespan_s": shortest, "notes": []}
