"""Replications that vary the inputs (``simulate --scenarios``): replication r replays the plan in one scenario
of the instance's ``uncertainty`` section (MODEL §9), drawn with seed ``seed + r``.

The plan keeps its capacity; the scenario sets every field its factors reach (lifetimes, tokens per attempt,
update times, ...), group launches run at the plan's attempt rate but at most what the fleet's token supply
sustains in the scenario (MODEL §10), and the trainer takes the scenario's update time.
"""

from __future__ import annotations

import dataclasses

from trainground.models.errors import InstanceError, Problem
from trainground.models.instance import Instance
from trainground.models.result import Metrics, Plan
from trainground.simulate.setup import Setup, setup_of
from trainground.solver import scenarios as sc

REPLAYS_WITHOUT_GOODPUT = (
    "scenario replays (simulate --scenarios) do not inject failures, checkpoints, weight sync or preemptions "
    "(docs/model.md §13) yet: replay without --scenarios, or use `trainground risk`, which counts them"
)


def scenario_setup(
    inst: Instance, plan: Plan, metrics: Metrics, seed: int, launch: str = "even", iterations: int | None = None
) -> Setup:
    """The replay of ``plan`` in the scenario drawn with ``seed`` (raises models.load.InstanceError when the
    scaled fields do not form a valid instance, or when the instance has MODEL §13's terms)."""
    if inst.reliable:
        raise InstanceError(inst.name or "", [Problem("reliability", REPLAYS_WITHOUT_GOODPUT)])
    scen = sc.draw(inst, 1, seed)
    here = sc.instance_of(inst, scen, 0)
    values = sc.values_of(inst, scen)
    supply = float(sc.token_supply(inst, plan, values, plan.versions_kept)[0])
    update = float(sc.update_time(inst, scen, plan.training_gpus)[0])
    setup = setup_of(here, plan, metrics, launch=launch, iterations=iterations)
    rate = min(metrics.attempts_per_s, supply / float(values.tokens[0]))
    return dataclasses.replace(setup, attempts_per_s=rate, update_s=update)


def scenario_setups(
    inst: Instance,
    plan: Plan,
    metrics: Metrics,
    replications: int,
    seed: int,
    launch: str = "even",
    iterations: int | None = None,
) -> list[Setup]:
    """One scenario setup per replication r (seed + r)."""
    return [scenario_setup(inst, plan, metrics, seed + r, launch, iterations) for r in range(replications)]
