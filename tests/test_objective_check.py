"""Every solve compares HiGHS's objective with the cost (or makespan) the plan reports:
the check runs under each objective, and a plan whose reported figure drifts from HiGHS's is a bug, exit 1."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import trainground.solver.mip.assemble as assemble
from trainground import cli
from trainground.models.load import load_instance
from trainground.solver.solve import Planner

SEED = "instances/seed-week-75.yaml"


@pytest.mark.parametrize("objective", ["total_cost", "hourly_cost", "makespan"])
def test_highs_objective_is_compared_with_the_plan(monkeypatch, objective):
    seen = []
    original = assemble.objective_of

    def spy(plan, name):
        seen.append(name)
        return original(plan, name)

    monkeypatch.setattr(assemble, "objective_of", spy)
    result = Planner(load_instance(SEED)).solve(objective)
    assert result.status == "optimal" and seen == [objective]

    # the same solve, with the plan's figure off by one part in a million: the check must refuse it
    monkeypatch.setattr(assemble, "objective_of", lambda plan, name: original(plan, name) * (1 + 1e-6))
    with pytest.raises(assemble.ObjectiveMismatch, match=objective):
        Planner(load_instance(SEED)).solve(objective)


def test_a_mismatch_exits_1_with_one_line(monkeypatch):
    original = assemble.objective_of
    monkeypatch.setattr(assemble, "objective_of", lambda plan, name: original(plan, name) * 1.001)
    monkeypatch.delenv("TRAINGROUND_DEBUG", raising=False)
    run = CliRunner().invoke(cli.main, ["solve", SEED])
    assert run.exit_code == 1
    assert "ObjectiveMismatch" in run.output and "Traceback" not in run.output
