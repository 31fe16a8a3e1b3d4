"""The live model's rows that span pairs (docs/model.md §7) read the blocks through batches: a refresh sums the
blocks added since the last one, so a walk that adds a few blocks per solve (a frontier) does not rebuild
rows over every block each time; the optimum is the one a model built at once gives."""

from __future__ import annotations

from pathlib import Path

from pyomo.core.expr.visitor import identify_variables

from trainground.models.load import load_instance
from trainground.models.result import Status
from trainground.solver.solve import Planner

INSTANCES = Path(__file__).resolve().parents[1] / "instances"


def _names(expr) -> set[str]:
    return {v.name for v in identify_variables(expr)}


def test_each_refresh_sums_only_the_blocks_added_since_the_last():
    inst = load_instance(INSTANCES / "seed-week-75.yaml")
    live = Planner(inst).live
    first, both = [0, 1, 2], [0, 1, 2, 3, 4]
    assert live.run("total_cost", first).status == Status.OPTIMAL
    outcome = live.run("total_cost", both)
    m = live.model
    blocks = list(m.blocks.values())
    assert len(blocks) == 5 and len(m.batches) == 2
    for batch, members in zip(m.batches, (blocks[:3], blocks[3:])):
        assert _names(batch.sum_z.body) == {batch.z.name} | {b.z.name for b in members}
    assert _names(m.one_cadence.body) == {batch.z.name for batch in m.batches}
    assert _names(m.objective_total_cost.expr) == {batch.total_cost.name for batch in m.batches}
    at_once = Planner(inst).live.run("total_cost", both)
    assert outcome.status == at_once.status == Status.OPTIMAL
    assert abs(outcome.objective_value - at_once.objective_value) <= 1e-9 * at_once.objective_value
