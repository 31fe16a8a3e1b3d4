"""The sandbox test of the allowance loop (drivers.hold, MODEL.md §11): a plan passes only if its replays' waits
are within ``planning.sandbox_wait`` as their makespans are within the deadline.

The rows size each backend's sandboxes for E^hold_b (§11 item 2), at which Halfin–Whitt's share of attempts that
wait is ``sandbox_wait``: the model's share is the mean over many runs, and the replay agrees with it (60 replays
of the seed's plan at exactly E^hold waited 0.96 % ± 0.08 % against the model's 1.03 %). A run's own share spreads
widely around that mean, because the waits come in bursts of a heavy-tailed in-flight count (0.1 % to 2.1 % over
20 replays of one plan whose mean is 0.9 %): a plan sized at the limit waits beyond it in about half of its
runs, and the mean of 20 fresh replays exceeds it often. So the replays test the waits with the order statistic
that tests the makespan: the k-th smallest of the R replays' wait shares must be within ``sandbox_wait``, so that
a fresh replay waits at most that share with probability >= on_time. A plan that fails is solved again with its
rows sized for a smaller share (:func:`next_sizing`), at the same allowance.
"""

from __future__ import annotations

import numpy as np

from trainground.drivers.replays import Replays
from trainground.models.instance import Instance
from trainground.models.result import Result
from trainground.simulation.report import model_wait_share
from trainground.simulation.setup import setup_of

SIZED_FLOOR = 1e-9  # the smallest share the rows are sized for (β ≈ 6): waits beyond the limit there are no
# fluctuation of the load the model sizes, and the loop ends with the plan unconverged rather than size further


def wait_bound(replays: Replays, k: int) -> float | None:
    """The k-th smallest of the replays' wait shares (None: fewer than k replays, or replays that queue no
    sandbox, MODEL §14's batch runs)."""
    shares = replays.wait_shares
    if shares.size < k or not np.isfinite(shares).all():
        return None
    return float(np.sort(shares)[k - 1])


def waits_pass(bound: float | None, limit: float) -> bool:
    return bound is None or bound <= limit


def model_share(inst: Instance, result: Result) -> float | None:
    """The model's mean share of attempts that wait at the plan's sandboxes, as `simulate` replays them (MODEL §11
    item 2 read the other way: :func:`simulation.report.model_wait_share`); None without a plan, or for a batch
    or admission run (MODEL §14), whose replay queues no sandbox (its rows hold the launch peak, not the seed's
    engine's mean load, so the seed's share does not describe them)."""
    if result.plan is None or result.metrics is None or (inst.regime is not None and inst.regime.own_replay):
        return None
    return model_wait_share(setup_of(inst, result.plan, result.metrics), result.plan)


def next_sizing(sized: float, model: float | None, bound: float, limit: float) -> float:
    """The share the next round sizes the rows for, after a plan sized for ``sized`` (its sandboxes' model share
    ``model``) waited ``bound`` in its k-th replay, above ``limit``: the model share scaled by (limit/bound)². A k-th
    replay's share falls more slowly than the mean as sandboxes are added (the bursts grow rarer, not smaller), so
    the mean is aimed below the limit by the square of the ratio; a plan still above it is sized again."""
    base = model if model is not None and 0 < model < sized else sized
    return max(SIZED_FLOOR, base * (limit / bound) ** 2)


def sized_instance(inst: Instance, share: float) -> Instance:
    """``inst`` with its sandbox rows sized for ``share`` (MODEL §11 item 2's β at that share)."""
    return inst.model_copy(update={"planning": inst.planning.model_copy(update={"sandbox_wait": share})})


def unheld_message(bound: float | None, limit: float, sized: float, k: int, replays: int) -> str:
    """Why the loop returned a plan whose replays wait beyond ``planning.sandbox_wait``."""
    return (
        f"the last plan that was solved (sandboxes sized for {sized:.3%} of attempts waiting) waits "
        f"{bound or 0.0:.2%} in the {k}th smallest of its {replays} replays, above planning.sandbox_wait "
        f"{limit:.2%}; no plan with sandboxes sized for a smaller share was found to hold (none exists, or the "
        "rounds ran out)"
    )
