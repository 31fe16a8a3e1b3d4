"""A plan's sandbox splits as a solution gives them (solver/mip/assemble.py ``placement``, for one-stage and staged
plans): HiGHS meets a row ``split <= capacity·0`` of a host type the plan has none of only to its feasibility
tolerance, so the split it reports there is read as none; a split on hosts the plan has is kept as solved."""

from __future__ import annotations

from pathlib import Path

from trainground.models.load import load_instance
from trainground.solver.mip.assemble import placement
from trainground.solver.table.coefficients import index_of
from trainground.solver.verify.check import ROW_TOL

TWO_POOLS = Path(__file__).resolve().parents[1] / "instances" / "seed-two-pools.yaml"


def test_a_split_on_a_host_type_the_plan_has_none_of_is_none_and_others_are_as_solved():
    inst = load_instance(TWO_POOLS)
    ix = index_of(inst)
    noise = 4 * ROW_TOL  # past the verifier's slack on a row whose capacity is 0
    solved = {"y": 1200.5, "y_peak": 1300.25, "c": noise}
    value = lambda name, host, b: solved[name]  # noqa: E731
    (node,), (vm,) = ix.nodes, ix.vms
    none = placement(inst, ix, value, {node: 3}, {vm: 0})
    assert all(envs == 0.0 for load in none.cloud.values() for envs in load.values())
    assert {envs for load in none.peak.values() for envs in load.values()} == {1300.25}
    some = placement(inst, ix, value, {node: 0}, {vm: 2})
    assert {envs for load in some.cloud.values() for envs in load.values()} == {noise}
    assert all(envs == 0.0 for load in some.peak.values() for envs in load.values())
