"""The building blocks of every schema section: strict models, checked numbers, field-level errors."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field


class FieldError(ValueError):
    """A rule checked on a whole model that is about one of its fields.

    ``where`` is that field's path below the model (``("points", 2, "gpus")``), so the
    error names ``training.update_time.points[2].gpus`` rather than just the model.
    """

    def __init__(self, where: str | tuple[str | int, ...], rule: str):
        super().__init__(rule)
        self.where = (where,) if isinstance(where, str) else tuple(where)


def not_bool(kind: str):
    """YAML reads ``yes``/``no``/``on``/``off`` as booleans, which pydantic would quietly take as 1 and 0."""

    def check(value: object) -> object:
        if isinstance(value, bool):
            raise ValueError(f"must be {kind}, got {str(value).lower()}")
        return value

    return BeforeValidator(check)


NUMBER = not_bool("a number")
WHOLE = not_bool("a whole number")


Positive = Annotated[float, Field(gt=0), NUMBER]
NonNegative = Annotated[float, Field(ge=0), NUMBER]
AtLeastOne = Annotated[float, Field(ge=1), NUMBER]


def _unit_interval(closed_below: bool):
    def check(value: float) -> float:
        if (value < 0 if closed_below else value <= 0) or value > 1:
            raise ValueError(f"must be in {'[' if closed_below else '('}0, 1], got {value:g}")
        return value

    return check


Fraction = Annotated[
    float, AfterValidator(_unit_interval(True)), NUMBER, Field(json_schema_extra={"minimum": 0, "maximum": 1})
]
PositiveFraction = Annotated[
    float,
    AfterValidator(_unit_interval(False)),
    NUMBER,
    Field(json_schema_extra={"exclusiveMinimum": 0, "maximum": 1}),
]
PositiveInt = Annotated[int, Field(gt=0), WHOLE]
Count = Annotated[int, Field(ge=0), WHOLE]
Name = Annotated[str, Field(min_length=1)]


class Strict(BaseModel):
    """Base: unknown keys are errors (typos must not be silently ignored), no NaN or inf."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)
