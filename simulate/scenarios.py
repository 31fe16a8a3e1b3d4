"""Replications that vary the inputs (``simulate --scenarios``): replication r replays the plan in one scenario
of the instance's ``uncertainty`` section (MODEL §9), drawn with seed ``seed + r``.

The plan keeps its capacity; the scenario sets every field its factors reach (lifetimes, tokens per attempt,
update times, reliability figures, ...), and the trainer takes the scenario's update time. Group launches run
at the plan's attempt rate in the scenario (MODEL §10): §2's R_raw at the plan's realised cadence L_s and K with
the scenario's values (MODEL §9), which the fleet's token supply sustains by §3's row 2 at L_s; where no cadence
works in the scenario, at the planned rate, at most what the supply sustains. The replay's batches then come
at L_s on average, so its lateness against T_s is the run's variance, not the input's (MODEL §11).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from trainground.models.errors import InstanceError, Problem
from trainground.models.instance import Instance
from trainground.models.result import Metrics, Plan
from trainground.simulation.setup import Setup, setup_of
from trainground.solver.uncertainty import scenarios as sc


def scenario_setup(
    inst: Instance, plan: Plan, metrics: Metrics, seed: int, launch: str = "even", iterations: int | None = None
) -> Setup:
    """The replay of ``plan`` in the scenario drawn with ``seed`` (raises models.load.InstanceError when the
    scaled fields do not form a valid instance)."""
    return setup_in(inst, plan, metrics, sc.draw(inst, 1, seed), 0, launch=launch, iterations=iterations)


def setup_in(
    inst: Instance,
    plan: Plan,
    metrics: Metrics,
    scen: sc.Scenarios,
    s: int,
    outcome: sc.Outcome | None = None,
    launch: str = "even",
    iterations: int | None = None,
) -> Setup:
    """The replay of ``plan`` in scenario ``s`` of ``scen`` (``outcome``: the plan evaluated over ``scen``,
    when the caller has it). MODEL §13's failures, preemptions and weight sync are injected at the scenario's
    figures (:mod:`simulate.failures`), so the launch cap reads the supply before them."""
    here = sc.instance_of(inst, scen, s)
    values = sc.values_of(inst, scen)
    if inst.reliable:  # the injection takes availability a_s and weight sync out of the fleet itself
        whole = values.availability[:, None].repeat(values.shape_availability.shape[1], axis=1)
        values = dataclasses.replace(values, shape_availability=whole)
    supply = float(sc.token_supply(inst, plan, values, plan.versions_kept)[s]) / float(values.tokens[s])
    update = float(sc.update_time(inst, scen, plan.training_gpus)[s])
    setup = setup_of(here, plan, metrics, launch=launch, iterations=iterations)
    realised = float((outcome or sc.evaluate(inst, plan, scen)).attempts[s])
    rate = min(realised if math.isfinite(realised) else metrics.attempts_per_s, supply)
    return dataclasses.replace(setup, attempts_per_s=rate, update_s=update)


def scenario_setups(
    inst: Instance,
    plan: Plan,
    metrics: Metrics,
    replications: int,
    seed: int,
    launch: str = "even",
    iterations: int | None = None,
    drawn: tuple[sc.Scenarios, sc.Outcome] | None = None,
) -> list[Setup]:
    """One scenario setup per replication r (seed + r); refused for a staged instance (MODEL §12). ``drawn``:
    those scenarios (:func:`drawn_one_by_one`) and the plan evaluated in them, when the caller has them."""
    if inst.stages is not None:
        raise InstanceError(
            inst.name or "instance",
            [
                Problem(
                    "stages",
                    "replays in scenarios (simulate --scenarios, risk --simulate) are not available with stages "
                    "yet; `simulate` replays the staged plan at its nominal values",
                )
            ],
        )
    if replications <= 0:
        return []
    if drawn is None:  # evaluated together: the plan's outcome in each scenario is its own
        scen = drawn_one_by_one(inst, replications, seed)
        drawn = scen, sc.evaluate(inst, plan, scen)
    scen, outcome = drawn
    return [setup_in(inst, plan, metrics, scen, r, outcome, launch, iterations) for r in range(replications)]


def drawn_one_by_one(inst: Instance, replications: int, seed: int) -> sc.Scenarios:
    """The scenarios of replications 0..replications-1, scenario r drawn on its own with seed + r."""
    return sc.from_draws(inst, np.vstack([sc.draw(inst, 1, seed + r).draws for r in range(replications)]))
