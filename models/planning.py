"""The ``planning`` section of MODEL.md §11: the basis a plan is sized on, and how its replays judge it.

``basis: hold`` (the default) sizes a plan that finishes when it is replayed: start-up counted,
sandboxes sized for the fluctuation of the in-flight count, freshness of what batches consume,
and a run-variance allowance found by replaying the plan (the allowance loop lives in
:mod:`drivers.hold`). ``basis: steady_state`` is MODEL.md §2–§8 exactly as the seed computes them.

The environment variable ``TRAINGROUND_BASIS`` (``hold`` or ``steady_state``) sets the basis of
instances whose file does not choose one (:func:`default_basis`).
"""

from __future__ import annotations

import math
import os
from typing import Annotated, Literal

from pydantic import Field, model_validator

from trainground.models.base import WHOLE, Count, FieldError, Strict, about

Basis = Literal["hold", "steady_state"]
BASES: tuple[str, ...] = ("hold", "steady_state")
BASIS_VARIABLE = "TRAINGROUND_BASIS"


def default_basis() -> str | None:
    """The basis ``TRAINGROUND_BASIS`` names (None when it is unset or empty)."""
    return os.environ.get(BASIS_VARIABLE) or None


def with_default_basis(data):
    """An instance document whose planning section does not choose a basis, given the one TRAINGROUND_BASIS
    names, when it is set (any other document unchanged)."""
    chosen = default_basis()
    if chosen is None or not isinstance(data, dict):
        return data
    planning = data.get("planning")
    if planning is None:
        return {**data, "planning": {"basis": chosen}}
    if isinstance(planning, dict) and "basis" not in planning:
        return {**data, "planning": {**planning, "basis": chosen}}
    return data


OpenFraction = Annotated[float, Field(gt=0, lt=1)]


class Planning(Strict):
    basis: Basis = Field(
        "hold",
        description=about(
            "What the plan is sized on: hold (start-up counted, sandboxes sized for the fluctuation, freshness of "
            "what is consumed, and a run-variance allowance from replays, so that the plan finishes when it is "
            "replayed) or steady_state (the seed's arithmetic, docs/model.md §2–§8)",
            seed="hold",
        ),
    )
    on_time: OpenFraction = Field(
        0.9,
        description=about(
            "Share of replays (simulate) that must end by the deadline; the allowance is the order statistic "
            "k = ceil(on_time·(replays + 1)) of the replays' lateness",
            typical="0.8-0.95",
            seed="0.9",
        ),
    )
    sandbox_wait: OpenFraction = Field(
        0.01,
        description=about(
            "Largest share of attempts that may wait for a sandbox in a run: sets β of E + β·sqrt(V) "
            "(Halfin–Whitt), and the replays' k-th smallest wait share must be within it",
            typical="0.001-0.05",
            seed="0.01",
        ),
    )
    replays: Annotated[int, Field(ge=1), WHOLE] = Field(
        16,
        description=about(
            "Replays (simulate replications) of each candidate plan that set the allowance; at least "
            "ceil(on_time/(1 - on_time))",
            typical="10-50",
            seed="16",
        ),
    )
    seed: Count = Field(0, description=about("Replay i draws from seed + i", seed="0"))

    @model_validator(mode="after")
    def _enough_replays(self) -> Planning:
        need = fewest_replays(self.on_time)
        if self.replays < need:
            raise FieldError(
                "replays",
                f"planning.replays ({self.replays}) must be at least ceil(on_time/(1 - on_time)) = {need} for "
                f"planning.on_time {self.on_time:g}: the allowance is the ceil(on_time·(replays + 1))-th smallest "
                "replay lateness",
            )
        return self

    @property
    def order(self) -> int:
        """k = ceil(on_time·(R + 1)): the replay lateness (1-based, smallest first) that sets the allowance."""
        return replay_order(self.on_time, self.replays)


def fewest_replays(on_time: float) -> int:
    """ceil(on_time/(1 - on_time)): the fewest replays whose order statistic k = ceil(on_time·(R + 1)) exists."""
    return math.ceil(on_time / (1.0 - on_time) - 1e-9)


def replay_order(on_time: float, replays: int) -> int:
    """k = ceil(on_time·(R + 1)) (MODEL §11 item 4), read so that a product a hair above an integer does not
    add one."""
    return math.ceil(on_time * (replays + 1) - 1e-9)
