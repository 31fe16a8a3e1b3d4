"""The ``stages`` section of MODEL.md §12: a run whose responses lengthen, split into stages played in order.

Each stage has its number of iterations and may set its own tokens per attempt, intake rate,
occupancy (the whole ``environment.occupancy`` object, same schema) and a factor on the update
time; everything it leaves out is the instance's. The rules that need the whole instance, and the
instance one stage runs as, are in :mod:`models.stage_rules`.
"""

from __future__ import annotations

import builtins
from typing import Literal

from pydantic import Field

from trainground.models.base import (
    DURATION,
    Name,
    NonNegativeDuration,
    Positive,
    PositiveFraction,
    PositiveInt,
    Strict,
    about,
)
from trainground.models.environment import Occupancy


class Stage(Strict):
    name: Name = Field(description=about("Name of the stage, echoed in the plan and in binding rows", seed="early"))
    iterations: PositiveInt = Field(
        description=about(
            "Outer iterations n_p of this stage; the stages' iterations sum to workload.iterations",
            unit="iterations",
            typical="100-2,000",
        )
    )
    tokens_per_attempt: Positive | None = Field(
        None,
        description=about(
            "Output tokens per attempt in this stage; null: workload.tokens_per_attempt",
            unit="tokens",
            typical="4,096-65,536",
        ),
    )
    intake_rate: PositiveFraction | None = Field(
        None,
        description=about(
            "Effective intake p in this stage; null: workload.intake_rate", unit="share in (0, 1]", typical="0.8-1.0"
        ),
    )
    occupancy: Occupancy | None = Field(
        None,
        description=about(
            "Sandbox lifetimes in this stage (the environment.occupancy object, same schema); null: the instance's"
        ),
    )
    update_time_scale: Positive = Field(
        1.0,
        description=about(
            "Factor on the update time U(m) in this stage (longer responses take longer to train on)",
            unit="dimensionless",
            typical="1-2",
        ),
    )


class Stages(Strict):
    capacity: Literal["fixed", "replan"] = Field(
        "fixed",
        description=about(
            "fixed: one capacity (replicas, training groups, nodes, VMs) serves every stage; replan: each stage "
            "has its own, paying switch_time at each change",
            seed="fixed",
        ),
    )
    switch_time: NonNegativeDuration = Field(
        0.0,
        description=about(
            "replan only: time added to the makespan at each change of capacity between consecutive stages, "
            "billed at the hourly cost of the stage after it",
            unit=DURATION,
            typical="10m-2h",
        ),
    )
    list: builtins.list[Stage] = Field(
        min_length=1,
        description=about(
            "The stages in the order they run; each inherits every figure it does not set from the instance"
        ),
    )
