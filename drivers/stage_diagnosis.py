"""Why a staged instance (MODEL.md §12) has no plan: what each stage's rows admit, and what the run then asks.

A staged plan needs every stage to have an admissible (cadence, K) pair, one K shared by all, and the
stages' parts to fit the deadline together (with the allowance under hold). The diagnosis reports each
stage's admissible pairs and what cut the others (:mod:`solver.stage_tables`), and the shortest run the
stages' admissible pairs allow against the deadline; the one-stage diagnosis's searches of thresholds
are not run on staged instances.
"""

from __future__ import annotations

from trainground.models.instance import Instance
from trainground.models.result import Result
from trainground.solver.stage_tables import StagedUnsupported, stage_tables


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
    conflict = result.message or "no plan meets every constraint"
    notes = [
        f"each stage has admissible pairs; at their shortest the stages take {shortest:,.0f} s against the "
        f"deadline {inst.schedule.deadline:,.0f} s (one K shared, one capacity under fixed, budgets and "
        "switches counted by the staged model)"
    ]
    return {"conflict": conflict, "stages": rows, "shortest_makespan_s": shortest, "notes": notes}
