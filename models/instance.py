"""The instance schema of MODEL.md §5, validated by pydantic, in SI units (seconds, tokens/s).

Field names are the contract of MODEL.md; defaults are those of MODEL.md §2.
Cross-references (pools, backends, node densities) are checked by
:func:`models.load.reference_errors` after the field-level validation here.
"""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist
from typing import Annotated, Literal, Union, get_args

from pydantic import BeforeValidator, ConfigDict, Field, ValidationInfo, WithJsonSchema, model_validator

from models.base import (NUMBER, WHOLE, AtLeastOne, Count, FieldError, Fraction, Name, NonNegative, Positive,
                         PositiveFraction, PositiveInt, Strict)
from models.uncertainty import Uncertainty
from models.units import _DURATION, parse_duration

Z_99 = NormalDist().inv_cdf(0.99)  # standard normal quantile at 0.99


def _duration_schema(**number: float) -> WithJsonSchema:
    """Validation-mode JSON schema of a duration: seconds as a number, or a string with a unit."""
    string = {"type": "string", "pattern": _DURATION.pattern, "examples": ["600s", "10m", "168h", "7d", "2w"]}
    return WithJsonSchema({"anyOf": [{"type": "number", **number}, string]}, mode="validation")


# Constraints come before the BeforeValidator so pydantic puts them on the float itself
# (standard JSON-schema keywords, messages "must be > 0"), and the parser or bool check runs first.
PositiveDuration = Annotated[float, Field(gt=0), BeforeValidator(parse_duration), _duration_schema(exclusiveMinimum=0)]
NonNegativeDuration = Annotated[float, Field(ge=0), BeforeValidator(parse_duration), _duration_schema(minimum=0)]


class Workload(Strict):
    iterations: PositiveInt = Field(description="outer iterations n")
    batch_trajectories: PositiveInt = Field(description="effective trajectories per iteration B")
    group_size: PositiveInt = Field(description="GRPO group size g")
    tokens_per_attempt: Positive = Field(description="output tokens per trajectory attempt")
    intake_rate: PositiveFraction = Field(1.0, description="effective intake rate p, in (0, 1]")


class Cadence(Strict):
    min: PositiveDuration = Field(1.0, description="shortest cadence on the grid (s)")
    max: PositiveDuration | None = Field(None, description="longest cadence; default (deadline - extra_time)/n")
    step: PositiveDuration = Field(1.0, description="grid step (s)")

    @model_validator(mode="after")
    def _ordered(self) -> "Cadence":
        if self.max is not None and self.max < self.min:
            raise FieldError("max", f"cadence.max ({self.max:g} s) must be >= cadence.min ({self.min:g} s)")
        return self


class Schedule(Strict):
    deadline: PositiveDuration
    extra_time: NonNegativeDuration = 0.0
    cadence: Cadence = Cadence()
    count_startup: bool = Field(
        False,
        description="count the pipeline fill before the first batch and the last update (MODEL.md §8): "
        "T = fill + (n-1)·L + U(m) + extra_time instead of n·L + extra_time",
    )

    @model_validator(mode="after")
    def _room(self) -> "Schedule":
        if self.extra_time >= self.deadline:
            raise FieldError(
                "extra_time", f"extra_time ({self.extra_time:g} s) must be below the deadline ({self.deadline:g} s)"
            )
        return self


class GpuPool(Strict):
    name: Name
    gpus: PositiveInt
    gpu_hour_cost: NonNegative
    billing: Literal["used", "reserved"] = Field(
        "used", description="used: pay for the GPUs the plan uses; reserved: pay for every GPU of the pool"
    )


class Shape(Strict):
    name: Name
    pool: Name
    gpus_per_replica: PositiveInt
    tokens_per_gpu_s: Positive = Field(description="output tokens/s per GPU under the target agent load")
    version_slowdown: NonNegative = Field(0.0, description="throughput lost per extra resident version")


class Inference(Strict):
    availability: PositiveFraction = Field(1.0, description="availability a, in (0, 1]")
    shapes: list[Shape] = Field(min_length=1)


class InverseLaw(Strict):
    law: Literal["inverse"]
    reference_gpus: Positive
    reference_time: PositiveDuration


class AmdahlLaw(Strict):
    law: Literal["amdahl"]
    reference_gpus: Positive
    reference_time: PositiveDuration
    serial_fraction: Fraction = Field(description="f: the share of the update that does not scale")


class TablePoint(Strict):
    gpus: Positive
    seconds: PositiveDuration


class TableLaw(Strict):
    law: Literal["table"]
    points: list[TablePoint] = Field(min_length=2, description="measured (gpus, seconds) points")

    @model_validator(mode="after")
    def _increasing(self) -> "TableLaw":
        for i in range(1, len(self.points)):
            before, here = self.points[i - 1].gpus, self.points[i].gpus
            if here <= before:
                raise FieldError(
                    ("points", i, "gpus"),
                    f"points must be listed by strictly increasing gpus: {here:g} follows {before:g}",
                )
        return self


UpdateTime = Annotated[Union[InverseLaw, AmdahlLaw, TableLaw], Field(discriminator="law")]


class Training(Strict):
    pool: Name
    gpus_per_group: PositiveInt
    min_groups: PositiveInt = 1
    max_groups: PositiveInt | None = None
    update_time: UpdateTime

    @model_validator(mode="after")
    def _range(self) -> "Training":
        if self.max_groups is not None and self.max_groups < self.min_groups:
            raise FieldError("max_groups", f"max_groups ({self.max_groups}) must be >= min_groups ({self.min_groups})")
        return self


class Lognormal(Strict):
    distribution: Literal["lognormal"]
    median: PositiveDuration | None = None
    p99: PositiveDuration | None = None
    mean: PositiveDuration | None = None
    sigma: Positive | None = None

    @model_validator(mode="after")
    def _two_parameters(self) -> "Lognormal":
        given = [k for k in ("median", "p99", "mean", "sigma") if getattr(self, k) is not None]
        if len(given) != 2:
            raise ValueError(
                f"a lognormal occupancy takes exactly two of median, p99, mean, sigma (got {len(given)}: "
                f"{', '.join(given) or 'none'})"
            )
        m, p, mean = self.median, self.p99, self.mean
        if m is not None and p is not None and p <= m:
            raise FieldError("p99", f"p99 ({p:g} s) must be above the median ({m:g} s)")
        if m is not None and mean is not None and mean <= m:
            raise FieldError("mean", f"a lognormal mean ({mean:g} s) must be above its median ({m:g} s)")
        if p is not None and mean is not None:
            gap = math.log(p / mean)
            if Z_99 * Z_99 < 2 * gap:
                raise FieldError("p99", f"no lognormal has mean {mean:g} s and p99 {p:g} s (p99/mean too large)")
            if Z_99 - math.sqrt(Z_99 * Z_99 - 2 * gap) <= 0:
                raise FieldError("p99", f"p99 ({p:g} s) must be above the mean ({mean:g} s)")
        return self


class Empirical(Strict):
    distribution: Literal["empirical"]
    samples: list[PositiveDuration] | None = Field(None, description="occupancy samples (s)")
    csv: str | None = Field(None, description="CSV of samples in seconds, path relative to the instance file")

    @model_validator(mode="after")
    def _one_source(self, info: ValidationInfo) -> "Empirical":
        if (self.samples is None) == (self.csv is None):
            raise ValueError("an empirical occupancy takes exactly one of samples, csv")
        source = "samples"
        if self.csv is not None:
            source = "csv"
            base = Path((info.context or {}).get("base_dir", "."))
            try:
                object.__setattr__(self, "samples", read_samples_csv(base / self.csv))
            except ValueError as exc:
                raise FieldError("csv", str(exc)) from None
        if len(self.samples) < 2:
            raise FieldError(source, f"needs at least 2 samples, got {len(self.samples)}")
        return self


def read_samples_csv(path: Path) -> list[float]:
    """Occupancy samples in seconds: the first column of a CSV, one header line allowed."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ValueError(f"cannot read samples CSV '{path}': {exc.strerror or exc}") from None
    samples: list[float] = []
    for number, line in enumerate(lines, start=1):
        cell = line.split(",")[0].strip()
        if not cell:
            continue
        try:
            value = float(cell)
        except ValueError:
            if number == 1 and not samples:
                continue
            raise ValueError(f"{path.name} line {number}: {cell!r} is not a number of seconds") from None
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"{path.name} line {number}: samples must be finite and > 0, got {cell}")
        samples.append(value)
    return samples


Occupancy = Annotated[Union[Lognormal, Empirical], Field(discriminator="distribution")]


class Backend(Strict):
    name: Name
    share: Fraction
    cores: Positive | None = None
    memory_gb: Positive | None = None


class NodeType(Strict):
    name: Name
    cores: Positive | None = None
    memory_gb: Positive | None = None
    density: dict[str, Positive] = Field(description="environments of each backend one node holds")
    hour_cost: NonNegative
    max_nodes: Count | None = None


class VmType(Strict):
    name: Name
    density: dict[str, Positive]
    cores: Positive | None = None
    memory_gb: Positive | None = None
    hour_cost: NonNegative
    billed_fraction: Fraction = 1.0
    max_vms: Count | None = None


class Cloud(Strict):
    eligible_share: dict[str, Fraction] = Field(default_factory=dict)
    vm_types: list[VmType] = Field(default_factory=list)


class Environment(Strict):
    occupancy: Occupancy
    littles_law_uses: Literal["mean", "median"] = "mean"
    backends: list[Backend] = Field(min_length=1)
    node_types: list[NodeType] = Field(min_length=1)
    utilisation_cap: PositiveFraction = 1.0
    peak_to_mean: AtLeastOne = 1.0
    cloud: Cloud = Cloud()


class Freshness(Strict):
    max_versions_kept: PositiveInt = 10
    gap_convention: Literal["consumer", "post_publish"] = "consumer"
    overrun_policy: Literal["drop", "downweight"] = "drop"
    group_correlation: Literal["independent", "comonotone"] = "independent"
    max_mean_gap: Positive | None = None
    max_exceedance: Fraction | None = None
    max_group_drop: Fraction | None = None


class Limits(Strict):
    max_hourly_cost: Positive | None = None
    max_total_cost: Positive | None = None


Objective = Literal["total_cost", "hourly_cost", "makespan"]
OBJECTIVES: tuple[str, ...] = get_args(Objective)


class Instance(Strict):
    model_config = ConfigDict(json_schema_extra={"$schema": "https://json-schema.org/draft/2020-12/schema"})

    schema_version: Annotated[Literal[1], WHOLE] = 1
    name: Name | None = None
    workload: Workload
    schedule: Schedule
    gpu_pools: list[GpuPool] = Field(min_length=1)
    inference: Inference
    training: Training
    environment: Environment
    freshness: Freshness = Freshness()
    objective: Objective = "total_cost"
    limits: Limits = Limits()
    uncertainty: Uncertainty | None = None

    def pool(self, name: str) -> GpuPool:
        return next(p for p in self.gpu_pools if p.name == name)
