"""The training section of docs/model.md §5: the training pool and groups, and the update-time law U(m)
(inverse, amdahl or a table), validated by pydantic in SI units; re-exported by models.instance."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from trainground.models.base import (
    DURATION,
    FieldError,
    Fraction,
    Name,
    Positive,
    PositiveDuration,
    PositiveInt,
    Strict,
    about,
)

LAW = "How the update time U(m) of one outer iteration falls with the training GPUs m·gpus_per_group"
REFERENCE_GPUS = about("Training GPUs of the reference measurement", unit="GPUs", seed="7000")
REFERENCE_TIME = about("Update time measured on reference_gpus", unit=DURATION, typical="1m-20m", seed="300s")


class InverseLaw(Strict):
    law: Literal["inverse"] = Field(
        description=about(f"{LAW}: inverse, U = reference_time·reference_gpus/G (perfect scaling)", seed="inverse")
    )
    reference_gpus: Positive = Field(description=REFERENCE_GPUS)
    reference_time: PositiveDuration = Field(description=REFERENCE_TIME)


class AmdahlLaw(Strict):
    law: Literal["amdahl"] = Field(description=about(f"{LAW}: amdahl, U = reference_time·(f + (1-f)·reference_gpus/G)"))
    reference_gpus: Positive = Field(description=REFERENCE_GPUS)
    reference_time: PositiveDuration = Field(description=REFERENCE_TIME)
    serial_fraction: Fraction = Field(
        description=about(
            "f: the share of the update that does not scale with GPUs", unit="share in [0, 1]", typical="0.01-0.2"
        )
    )


class TablePoint(Strict):
    gpus: Positive = Field(description=about("Training GPUs of one measurement", unit="GPUs"))
    seconds: PositiveDuration = Field(description=about("Update time measured at those GPUs", unit=DURATION))


class TableLaw(Strict):
    law: Literal["table"] = Field(
        description=about(f"{LAW}: table, linear interpolation of measured points (no plan outside their range)")
    )
    points: list[TablePoint] = Field(
        min_length=2, description=about("Measured (gpus, seconds) points, by strictly increasing gpus, at least 2")
    )

    @model_validator(mode="after")
    def _increasing(self) -> TableLaw:
        for i in range(1, len(self.points)):
            before, here = self.points[i - 1].gpus, self.points[i].gpus
            if here <= before:
                raise FieldError(
                    ("points", i, "gpus"),
                    f"points must be listed by strictly increasing gpus: {here:g} follows {before:g}",
                )
        return self


UpdateTime = Annotated[InverseLaw | AmdahlLaw | TableLaw, Field(discriminator="law")]


class Training(Strict):
    pool: Name = Field(description=about("The gpu_pools name training groups run on", seed="main"))
    gpus_per_group: PositiveInt = Field(
        description=about(
            "GPUs in one training (parallelism) group; the plan chooses the number of groups m",
            unit="GPUs",
            typical="8-64",
            seed="8",
        )
    )
    min_groups: PositiveInt = Field(1, description=about("Fewest training groups", unit="groups", seed="1"))
    max_groups: PositiveInt | None = Field(
        None, description=about("Most training groups; null: as many as the pool holds", unit="groups", seed="null")
    )
    update_time: UpdateTime = Field(
        description=about(
            "Update time per outer iteration as a function of training GPUs; it must fit in the cadence (U <= L). "
            "law: inverse, amdahl or table",
            seed="inverse, 300s on 7000 GPUs",
        )
    )

    @model_validator(mode="after")
    def _range(self) -> Training:
        if self.max_groups is not None and self.max_groups < self.min_groups:
            raise FieldError("max_groups", f"max_groups ({self.max_groups}) must be >= min_groups ({self.min_groups})")
        return self
