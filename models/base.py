"""The building blocks of every schema section: strict models, checked numbers, field-level errors."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from trainground.models.units import _DURATION, parse_duration


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


def _duration_schema(**number: float) -> WithJsonSchema:
    """Validation-mode JSON schema of a duration: seconds as a number, or a string with a unit."""
    string = {"type": "string", "pattern": _DURATION.pattern, "examples": ["600s", "10m", "168h", "7d", "2w"]}
    return WithJsonSchema({"anyOf": [{"type": "number", **number}, string]}, mode="validation")


# Constraints come before the BeforeValidator so pydantic puts them on the float itself
# (standard JSON-schema keywords, messages "must be > 0"), and the parser or bool check runs first.
PositiveDuration = Annotated[float, Field(gt=0), BeforeValidator(parse_duration), _duration_schema(exclusiveMinimum=0)]
NonNegativeDuration = Annotated[float, Field(ge=0), BeforeValidator(parse_duration), _duration_schema(minimum=0)]

DURATION = "seconds, or a string with a unit: 600s, 10m, 168h, 7d, 2w"


def about(meaning: str, *, unit: str | None = None, typical: str | None = None, seed: str | None = None) -> str:
    """A field's description as `trainground schema`, docs/fields.md and `init` show it: what it means, its
    unit, typical values and the seed baseline's value (the default or "Required." is added from the schema)."""
    parts = [meaning.rstrip(".") + "."]
    parts += [f"{label}: {text}." for label, text in (("Unit", unit), ("Typical", typical), ("Seed", seed)) if text]
    return " ".join(parts)


def with_defaults(schema: dict, cls: type | None = None) -> None:
    """Close each property's description with its default (or "Required."), read off the schema itself so
    the text cannot drift from the model."""
    required = set(schema.get("required", ()))
    for name, prop in schema.get("properties", {}).items():
        text = prop.get("description", "").strip()
        if not text:
            continue
        text += "" if text.endswith((".", "?", "!")) else "."
        field = getattr(cls, "model_fields", {}).get(name)
        if name in required:
            text += " Required."
        elif "default" in prop:
            default = prop["default"]
            shown = "each field at its own default" if isinstance(default, dict) and default else _shown(default)
            text += f" Default: {shown}."
        elif field is not None and field.default_factory is not None:
            text += f" Default: {_shown(field.default_factory())}."
        prop["description"] = text


def _shown(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (list, dict)) and not value:
        return f"{value} (none)"
    return str(value)


class Strict(BaseModel):
    """Base: unknown keys are errors (typos must not be silently ignored), no NaN or inf."""

    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, frozen=True, json_schema_extra=with_defaults, defer_build=True
    )
