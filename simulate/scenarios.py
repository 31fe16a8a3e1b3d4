"""Replications that vary the inputs (``simulate --scenarios``): replication r replays the plan in one scenario
of the instance's ``uncertainty`` section (MODEL §9), drawn with seed ``seed + r``.

The plan keeps its capacity; the scenario sets every field its factors reach (lifetimes, tokens per attempt,
update times, reliability figures, ...), group launches run at the plan's attempt rate but at most what the
fleet's token supply sustains in the scenario (MODEL §10), and the trainer takes the scenario's update time.
"""

from __future__ import annotations

import dataclasses

from trainground.models.instance import Instance
from trainground.models.result import Metrics, Plan
from trainground.simulate.setup import Setup, setup_of
from trainground.solver import scenarios as sc


def scenario_setup(
    inst: Instance, plan: Plan, metrics: Metrics, seed: int, launch: str = "even", iterations: int | None = None
) -> Setup:
    """The replay of ``plan`` in the scenario drawn with ``seed`` (raises models.load.InstanceError when the
    scaled fields do not form a valid instance). MODEL §13's failures, preemptions and weight sync are injected
    at the scenario's figures (:mod:`simulate.failures`), so the launch cap reads the supply before them."""
    scen = sc.draw(inst, 1, seed)
    here = sc.instance_of(inst, scen, 0)
    values = sc.values_of(inst, scen)
    if inst.reliable:  # the injection takes availability a_s and weight sync out of the fleet itself
        whole = values.availability[:, None].repeat(values.shape_availability.shape[1], axis=1)
        values = dataclasses.replace(values, shape_availability=whole)
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
