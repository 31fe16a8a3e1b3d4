"""The instance schema of MODEL.md §5, validated by pydantic, in SI units (seconds, tokens/s).

Field names are the contract of MODEL.md; defaults are those of MODEL.md §2; every field carries a
description (meaning, unit, typical values, the seed baseline's value) that `trainground schema`,
docs/fields.md and `trainground init` show. The environment section lives in models/environment.py, the training section in models/training.py.
Cross-references (pools, backends, node densities) are checked by
:func:`models.load.reference_errors` after the field-level validation here.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import ConfigDict, Field, model_validator

from trainground.models.base import (
    DURATION,
    WHOLE,
    FieldError,
    Name,
    NonNegative,
    NonNegativeDuration,
    Positive,
    PositiveDuration,
    PositiveFraction,
    PositiveInt,
    Strict,
    about,
    with_defaults,
)
from trainground.models.environment import (
    Z_99,
    Backend,
    Cloud,
    Empirical,
    Environment,
    Lognormal,
    NodeType,
    Occupancy,
    VmType,
    read_samples_csv,
)
from trainground.models.freshness import Freshness
from trainground.models.planning import Planning, with_default_basis
from trainground.models.regime import Regime
from trainground.models.reliability import Reliability
from trainground.models.stages import Stages
from trainground.models.training import AmdahlLaw, InverseLaw, TableLaw, TablePoint, Training, UpdateTime
from trainground.models.uncertainty import Uncertainty

__all__ = [
    "AmdahlLaw",
    "InverseLaw",
    "TableLaw",
    "TablePoint",
    "Training",
    "UpdateTime",
    "Z_99",
    "Backend",
    "Cloud",
    "Empirical",
    "Environment",
    "Lognormal",
    "NodeType",
    "Occupancy",
    "VmType",
    "read_samples_csv",
]


class Workload(Strict):
    iterations: PositiveInt = Field(
        description=about(
            "Outer iterations n of the run: one batch, one update and one published weight version each",
            unit="iterations",
            typical="500-5,000",
            seed="1000",
        )
    )
    batch_trajectories: PositiveInt = Field(
        description=about(
            "Effective trajectories B per iteration (those that enter a batch)",
            unit="trajectories",
            typical="1,024-8,192",
            seed="4096",
        )
    )
    group_size: PositiveInt = Field(
        description=about(
            "GRPO group size g: attempts launched together on one prompt; under overrun_policy drop, the whole "
            "group is dropped if any member is too stale",
            unit="attempts",
            typical="4-16",
            seed="8",
        )
    )
    tokens_per_attempt: Positive = Field(
        description=about(
            "Output tokens generated per trajectory attempt, averaged over all attempts",
            unit="tokens",
            typical="8,192-65,536",
            seed="32768",
        )
    )
    intake_rate: PositiveFraction = Field(
        1.0,
        description=about(
            "Effective intake p: share of attempts usable for training (failed or filtered attempts are lost)",
            unit="share in (0, 1]",
            typical="0.8-1.0",
            seed="1.0",
        ),
    )


class Cadence(Strict):
    min: PositiveDuration = Field(
        1.0,
        description=about(
            "Shortest cadence L (seconds per outer iteration) the plan may choose",
            unit=DURATION,
            typical="60s-10m",
            seed="60s",
        ),
    )
    max: PositiveDuration | None = Field(
        None,
        description=about(
            "Longest cadence on the grid; null: the deadline pace (deadline - extra_time)/iterations",
            unit=DURATION,
            seed="null (604.8 s)",
        ),
    )
    step: PositiveDuration = Field(
        1.0,
        description=about(
            "Spacing of the cadence grid min, min+step, ...; a coarser step solves faster",
            unit=DURATION,
            typical="1s-10s",
            seed="1s",
        ),
    )

    @model_validator(mode="after")
    def _ordered(self) -> Cadence:
        if self.max is not None and self.max < self.min:
            raise FieldError("max", f"cadence.max ({self.max:g} s) must be >= cadence.min ({self.min:g} s)")
        return self


class Schedule(Strict):
    deadline: PositiveDuration = Field(
        description=about(
            "Wall-clock time the whole run must finish in (makespan T <= deadline). A bare number is seconds",
            unit=DURATION,
            typical="3d-30d",
            seed="7d",
        )
    )
    extra_time: NonNegativeDuration = Field(
        0.0,
        description=about(
            "Time outside the iterations (evaluation, checkpoints, set-up) added to the makespan: T = n·L + extra_time",
            unit=DURATION,
            typical="0-1d",
            seed="0s",
        ),
    )
    cadence: Cadence = Field(
        Cadence(), description=about("The grid of cadences L (seconds per outer iteration) the plan chooses from")
    )
    count_startup: bool = Field(
        False,
        description=about(
            "Count the pipeline fill before the first batch (until enough whole groups have finished) and the last "
            "update after the last batch: "
            "T = fill + (n-1)·L + U(m) + extra_time instead of n·L + extra_time",
            seed="false",
        ),
    )

    @model_validator(mode="after")
    def _room(self) -> Schedule:
        if self.extra_time >= self.deadline:
            raise FieldError(
                "extra_time", f"extra_time ({self.extra_time:g} s) must be below the deadline ({self.deadline:g} s)"
            )
        return self


class GpuPool(Strict):
    name: Name = Field(
        description=about(
            "Name of a GPU pool (a cluster or a GPU generation); shapes and training refer to it", seed="main"
        )
    )
    gpus: PositiveInt = Field(
        description=about(
            "GPUs in the pool: inference replicas and training groups placed on it share them",
            unit="GPUs",
            typical="1,000-20,000",
            seed="10000",
        )
    )
    gpu_hour_cost: NonNegative = Field(
        description=about("Price of one GPU for one hour", unit="$ per GPU-hour", typical="1.5-4", seed="2.0")
    )
    billing: Literal["used", "reserved"] = Field(
        "used",
        description=about(
            "used: pay for the GPUs the plan uses; reserved: pay for every GPU of the pool whatever the plan uses "
            "(an owned or reserved cluster)",
            seed="used",
        ),
    )
    preemptions_per_hour: NonNegative | None = Field(
        None,
        description=about(
            "A preemptible (spot) pool: preemptions per inference replica per hour; each costs the replica "
            "reliability.replica_restart_time and half a mean lifetime of its running attempts (MODEL §13). "
            "Training may not be placed here; null: not preemptible",
            unit="per replica-hour",
            typical="0.01-0.2",
            seed="null",
        ),
    )


class Shape(Strict):
    name: Name = Field(description=about("Name of an inference replica shape, echoed in the plan", seed="tp8"))
    pool: Name = Field(description=about("The gpu_pools name its replicas run on", seed="main"))
    gpus_per_replica: PositiveInt = Field(
        description=about(
            "GPUs one inference replica uses (its tensor/pipeline parallel size)", unit="GPUs", typical="1-16", seed="8"
        )
    )
    tokens_per_gpu_s: Positive = Field(
        description=about(
            "Output tokens per second per GPU, measured under the target agent load (not a chat benchmark)",
            unit="tokens/s per GPU",
            typical="50-2,000",
            seed="75",
        )
    )
    version_slowdown: NonNegative = Field(
        0.0,
        description=about(
            "Throughput lost per extra resident weight version: supply × (1 - version_slowdown·(K-1))",
            unit="share per version",
            typical="0-0.02",
            seed="0.0",
        ),
    )


class Inference(Strict):
    availability: PositiveFraction = Field(
        1.0,
        description=about(
            "Share of time the generation service runs (restarts, weight loads and failures lost)",
            unit="share in (0, 1]",
            typical="0.9-1.0",
            seed="1.0",
        ),
    )
    shapes: list[Shape] = Field(
        min_length=1,
        description=about(
            "Inference replica shapes the plan chooses counts of, one or more per pool", seed="one shape, tp8"
        ),
    )


class Limits(Strict):
    max_hourly_cost: Positive | None = Field(
        None,
        description=about(
            "Budget on the plan's hourly cost (GPUs + nodes + VMs); null: none", unit="$ per hour", seed="null"
        ),
    )
    max_total_cost: Positive | None = Field(
        None,
        description=about("Budget on the whole run's cost (hourly cost × makespan); null: none", unit="$", seed="null"),
    )


Objective = Literal["total_cost", "hourly_cost", "makespan"]
OBJECTIVES: tuple[str, ...] = get_args(Objective)


def _instance_schema(schema: dict, cls: type | None = None) -> None:
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    with_defaults(schema, cls)


class Instance(Strict):
    model_config = ConfigDict(json_schema_extra=_instance_schema)

    schema_version: Annotated[Literal[1], WHOLE] = Field(
        1, description=about("Version of this file format; 1 is the only one")
    )
    name: Name | None = Field(
        None,
        description=about(
            "Name of the instance shown in every output; null: the file's name without extension", seed="seed-week-75"
        ),
    )
    workload: Workload = Field(description=about("The run: iterations, batch, groups, tokens per attempt"))
    schedule: Schedule = Field(description=about("Deadline, time outside iterations, the cadence grid"))
    gpu_pools: list[GpuPool] = Field(
        min_length=1,
        description=about(
            "GPU pools (clusters, generations) with their sizes and prices", seed="one pool, main, 10000 GPUs"
        ),
    )
    inference: Inference = Field(description=about("Inference replica shapes and the service's availability"))
    training: Training = Field(description=about("Training groups and how fast they update"))
    environment: Environment = Field(
        description=about("Sandboxes: lifetimes, backends, local node types, cloud spillover")
    )
    freshness: Freshness = Field(
        Freshness(),
        description=about("Weight versions kept, how staleness is counted and handled, optional freshness limits"),
    )
    objective: Objective = Field(
        "total_cost",
        description=about(
            "What the plan minimises: total_cost (cost of the whole run), hourly_cost or makespan; ties break "
            "total_cost → makespan → hourly_cost, hourly_cost → makespan, makespan → total_cost",
            seed="total_cost",
        ),
    )
    limits: Limits = Field(Limits(), description=about("Optional budgets"))
    uncertainty: Uncertainty | None = Field(
        None,
        description=about(
            "Optional run-level uncertainty factors for risk and solve --confidence; null: none", seed="null"
        ),
    )
    planning: Planning = Field(
        Planning(),
        description=about(
            "The basis plans are sized on (hold: plans that finish when replayed; steady_state: the seed's "
            "arithmetic) and how replays judge them (docs/model.md §11)"
        ),
    )

    reliability: Reliability | None = Field(
        None,
        description=about(
            "Optional failures, checkpoints, replica restarts and weight sync (docs/model.md §13): the training "
            "goodput divides the trainer-paced time, each shape's availability and the weight sync scale the "
            "token supply; null: every GPU works the whole run",
            seed="null",
        ),
    )

    stages: Stages | None = Field(
        None,
        description=about(
            "Optional stages of a run whose responses lengthen (docs/model.md §12): each stage its iterations, "
            "tokens per attempt, intake, lifetimes and update-time factor, planned with one cadence each; "
            "null: one stage, the instance itself",
            seed="null",
        ),
    )

    regime: Regime | None = Field(
        None,
        description=about(
            "Optional run regime (docs/model.md §14): async (the seed's), pipelined or colocated, admission "
            "control, in-flight updates, a rollout timeout, a concurrency cap; null: async with drop, the seed's. "
            "explain gives any regime's arithmetic; solve, simulate and the other planning commands take the "
            "seed's regime and the batch modes (pipelined, colocated) so far",
            seed="null",
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _default_basis(cls, data):
        return with_default_basis(data)

    @property
    def holds(self) -> bool:
        """Plans are sized to hold when replayed (MODEL §11, planning.basis: hold)."""
        return self.planning.basis == "hold"

    @property
    def counts_startup(self) -> bool:
        """The makespan counts the pipeline fill and the last update (MODEL §8): asked for, or under hold (§11)."""
        return self.schedule.count_startup or self.holds

    @property
    def reliable(self) -> bool:
        """MODEL §13 terms apply: a reliability section or a preemptible pool."""
        return self.reliability is not None or any(p.preemptions_per_hour is not None for p in self.gpu_pools)

    def pool(self, name: str) -> GpuPool:
        return next(p for p in self.gpu_pools if p.name == name)
