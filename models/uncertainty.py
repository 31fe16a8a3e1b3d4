"""The optional ``uncertainty`` section of MODEL.md §9: run-level factors that multiply instance fields.

A factor is a distribution of multipliers (median 1 for an unbiased estimate) and the
MODEL paths it scales, with ``[*]`` for every element of a list. Checks that need the
rest of the instance (a path must match real-valued fields that are set) live in
:func:`path_errors`, called by the loader after the field-level validation here.
"""

from __future__ import annotations

import math
import re
from statistics import NormalDist
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from trainground.models.base import NUMBER, Count, FieldError, Fraction, Name, PositiveInt, Strict, with_defaults

Number = Annotated[float, NUMBER]
NonNegativeNumber = Annotated[float, Field(ge=0), NUMBER]

DISTRIBUTIONS = {
    "normal": ("mean", "sd"),
    "lognormal": ("median", "sigma"),
    "uniform": ("low", "high"),
    "triangular": ("low", "mode", "high"),
}
_PARAMETERS = ("mean", "sd", "median", "sigma", "low", "mode", "high")
_STANDARD_NORMAL = NormalDist()

POSITIVE_FLOOR = 1e-9
"""MODEL §9: a scaled field that must be positive is clipped to at least this (a normal multiplier can
draw 0 or less)."""

_AT_MOST_ONE = {
    "intake_rate",
    "availability",
    "utilisation_cap",
    "serial_fraction",
    "billed_fraction",
    "max_exceedance",
    "max_group_drop",
}
_MAY_BE_ZERO = {
    "version_slowdown",
    "gpu_hour_cost",
    "hour_cost",
    "extra_time",
    "serial_fraction",
    "billed_fraction",
    "max_exceedance",
    "max_group_drop",
}


def valid_range(path: str) -> tuple[float, float]:
    """(lowest, highest) value the schema admits for the real-valued field at ``path`` (a concrete MODEL
    path): what a scaled field is clipped into (MODEL §9)."""
    parts = path.replace("]", "").replace("[", ".").split(".")
    name, parent = parts[-1], parts[-2] if len(parts) > 1 else ""
    if parent == "eligible_share":
        return 0.0, 1.0
    low = 1.0 if name == "peak_to_mean" else 0.0 if name in _MAY_BE_ZERO else POSITIVE_FLOOR
    return low, 1.0 if name in _AT_MOST_ONE else math.inf


def _parameters_schema() -> dict:
    """JSON Schema of the parameter rule: each distribution requires its own parameters, and no other."""
    return {
        "allOf": [
            {
                "if": {"properties": {"dist": {"const": dist}}, "required": ["dist"]},
                "then": {
                    "required": list(wanted),
                    "properties": {p: {"type": "number" if p in wanted else "null"} for p in _PARAMETERS},
                },
            }
            for dist, wanted in DISTRIBUTIONS.items()
        ]
    }


def _factor_schema(schema: dict, cls: type | None = None) -> None:
    """The described properties every model has, plus the parameter rule."""
    with_defaults(schema, cls)
    schema.update(_parameters_schema())


class Factor(Strict):
    model_config = ConfigDict(json_schema_extra=_factor_schema)

    name: Name = Field(description="what the factor stands for, e.g. throughput; named in risk reports")
    paths: list[str] = Field(
        min_length=1,
        description="field paths it multiplies (as --set takes them), [*] for every list element, "
        "e.g. inference.shapes[*].tokens_per_gpu_s",
    )
    dist: Literal["normal", "lognormal", "uniform", "triangular"] = Field(
        description="distribution of the multiplier: normal (mean, sd), lognormal (median, sigma), "
        "uniform (low, high), triangular (low, mode, high)"
    )
    mean: Number | None = Field(None, description="normal: mean multiplier, typically 1")
    sd: NonNegativeNumber | None = Field(None, description="normal: standard deviation, e.g. 0.05 for ±5 %")
    median: Number | None = Field(None, description="lognormal: median multiplier, typically 1")
    sigma: NonNegativeNumber | None = Field(None, description="lognormal: sigma of the log, e.g. 0.2")
    low: Number | None = Field(None, description="uniform, triangular: smallest multiplier")
    mode: Number | None = Field(None, description="triangular: most likely multiplier")
    high: Number | None = Field(None, description="uniform, triangular: largest multiplier")

    @model_validator(mode="after")
    def _parameters(self) -> Factor:
        wanted = DISTRIBUTIONS[self.dist]
        for name in wanted:
            if getattr(self, name) is None:
                raise FieldError(name, f"a {self.dist} factor needs {', '.join(wanted)} (missing {name})")
        for name in _PARAMETERS:
            if name not in wanted and getattr(self, name) is not None:
                raise FieldError(name, f"a {self.dist} factor takes {', '.join(wanted)}, not {name}")
        if self.dist == "normal" and self.mean <= 0:
            raise FieldError("mean", f"a multiplier's mean must be > 0, got {self.mean:g}")
        if self.dist == "lognormal" and self.median <= 0:
            raise FieldError("median", f"a multiplier's median must be > 0, got {self.median:g}")
        if self.dist in ("uniform", "triangular"):
            if self.low < 0:
                raise FieldError("low", f"a multiplier cannot be negative, got low = {self.low:g}")
            if self.high < self.low:
                raise FieldError("high", f"high ({self.high:g}) must be >= low ({self.low:g})")
            if self.high <= 0:
                raise FieldError("high", "high must be > 0: every draw would scale the fields to 0")
        if self.dist == "triangular" and not self.low <= self.mode <= self.high:
            raise FieldError("mode", f"mode ({self.mode:g}) must lie in [low, high] = [{self.low:g}, {self.high:g}]")
        return self

    @property
    def degenerate(self) -> bool:
        """Every draw is the same number (sd 0, sigma 0, low = high)."""
        return self.quantile(0.0 + 1e-12) == self.quantile(1.0 - 1e-12)

    @property
    def support(self) -> tuple[float, float]:
        """(smallest, largest) multiplier a draw can take (infinite for a normal or lognormal tail)."""
        if self.dist == "normal":
            return (self.mean, self.mean) if self.sd == 0 else (-math.inf, math.inf)
        if self.dist == "lognormal":
            return (self.median, self.median) if self.sigma == 0 else (0.0, math.inf)
        return self.low, self.high

    def quantile(self, p: float) -> float:
        """The multiplier at probability ``p`` in (0, 1)."""
        if self.dist == "normal":
            return self.mean + self.sd * _STANDARD_NORMAL.inv_cdf(p) if self.sd else self.mean
        if self.dist == "lognormal":
            return self.median * math.exp(self.sigma * _STANDARD_NORMAL.inv_cdf(p)) if self.sigma else self.median
        if self.dist == "uniform":
            return self.low + (self.high - self.low) * p
        return _triangular_quantile(self.low, self.mode, self.high, p)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` independent multipliers (not yet clipped into any field's range)."""
        if self.dist == "normal":
            return rng.normal(self.mean, self.sd, n) if self.sd else np.full(n, float(self.mean))
        if self.dist == "lognormal":
            return (
                self.median * np.exp(rng.normal(0.0, self.sigma, n)) if self.sigma else np.full(n, float(self.median))
            )
        if self.dist == "uniform":
            return rng.uniform(self.low, self.high, n) if self.high > self.low else np.full(n, float(self.low))
        if self.high == self.low:
            return np.full(n, float(self.low))
        return rng.triangular(self.low, self.mode, self.high, n)


def _triangular_quantile(low: float, mode: float, high: float, p: float) -> float:
    if high == low:
        return low
    split = (mode - low) / (high - low)
    if p < split:
        return low + math.sqrt(p * (high - low) * (mode - low))
    return high - math.sqrt((1 - p) * (high - low) * (high - mode))


class Uncertainty(Strict):
    samples: PositiveInt = Field(
        1000, description="scenarios S drawn for a confidence solve (sample average approximation)"
    )
    seed: Count = Field(0, description="seed of the scenario draws; the same seed gives the same scenarios")
    confidence: Fraction | None = Field(
        None, description="plan for this on-time probability (e.g. 0.9); solve --confidence overrides it"
    )
    factors: list[Factor] = Field(min_length=1, description="independent run-level factors")

    @model_validator(mode="after")
    def _unique(self) -> Uncertainty:
        seen: set[str] = set()
        for i, factor in enumerate(self.factors):
            if factor.name in seen:
                raise FieldError(("factors", i, "name"), f"duplicate factor name '{factor.name}'")
            seen.add(factor.name)
        return self

    def draws(self, n: int, seed: int | None = None) -> np.ndarray:
        """(n, factors) multipliers: factor j from its own stream of ``seed`` (default the section's), so
        adding a factor leaves the draws of the others unchanged."""
        streams = np.random.SeedSequence(self.seed if seed is None else seed).spawn(len(self.factors))
        return np.stack([f.sample(np.random.default_rng(s), n) for f, s in zip(self.factors, streams)], axis=1)


_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+|\*)\]")


def path_tokens(path: str) -> list[str | int]:
    """``a.b[*].c`` -> ['a', 'b', '*', 'c']; ``[0]`` -> 0. Raises ValueError on a malformed path."""
    tokens: list[str | int] = []
    text = path.strip()
    pos = 0
    while pos < len(text):
        if text[pos] == "." and tokens:
            pos += 1
        match = _TOKEN.match(text, pos)
        if not match:
            raise ValueError(f"cannot read field path {path!r}")
        if match.group(1) is not None:
            tokens.append(match.group(1))
        else:
            tokens.append("*" if match.group(2) == "*" else int(match.group(2)))
        pos = match.end()
    if not tokens:
        raise ValueError("empty field path")
    return tokens


def render_path(tokens: list[str | int]) -> str:
    out = ""
    for t in tokens:
        out += f"[{t}]" if isinstance(t, int) else ("." if out else "") + t
    return out


def expand(document: dict[str, Any], path: str) -> list[tuple[list[str | int], Any]]:
    """Every concrete (tokens, value) the path reaches in ``document``; [*] runs over a list's elements.

    A step that does not exist reaches nothing (an empty list); a malformed path raises ValueError.
    """
    found: list[tuple[list[str | int], Any]] = []

    def walk(node: Any, rest: list[str | int], here: list[str | int]) -> None:
        if not rest:
            found.append((here, node))
            return
        token, tail = rest[0], rest[1:]
        if token == "*" and isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, tail, here + [i])
        elif isinstance(token, int) and isinstance(node, list) and 0 <= token < len(node):
            walk(node[token], tail, here + [token])
        elif isinstance(token, str) and token != "*" and isinstance(node, dict) and token in node:
            walk(node[token], tail, here + [token])

    walk(document, path_tokens(path), [])
    return found


def path_errors(document: dict[str, Any]) -> list[tuple[str, str]]:
    """(field path, rule) for every factor path that matches nothing or a field a multiplier cannot scale.

    ``document``: the validated instance dumped to plain Python (durations in seconds)."""
    section = document.get("uncertainty")
    if not section:
        return []
    problems = []
    for i, factor in enumerate(section["factors"]):
        for j, path in enumerate(factor["paths"]):
            where = f"uncertainty.factors[{i}].paths[{j}]"
            try:
                hits = expand(document, path)
            except ValueError as exc:
                problems.append((where, str(exc)))
                continue
            if path_tokens(path)[0] == "uncertainty":
                problems.append((where, "a factor cannot scale the uncertainty section itself"))
                continue
            hits = [(tokens, value) for tokens, value in hits if value is not None]
            if not hits:
                problems.append((where, f"'{path}' matches no field that is set in this instance"))
                continue
            samples = [t for t, _ in hits if t[:3] == ["environment", "occupancy", "samples"]]
            if samples and len(samples) != len(document["environment"]["occupancy"]["samples"]):
                problems.append(
                    (
                        where,
                        "a factor scales every occupancy sample or none "
                        "(environment.occupancy.samples[*]): the law keeps its shape",
                    )
                )
                continue
            problems += _hit_errors(where, factor, hits)
    return problems


def _hit_errors(where: str, factor: dict, hits: list[tuple[list[str | int], Any]]) -> list[tuple[str, str]]:
    """The rules on the fields one path of a factor reaches: real-valued, scalable, some draw valid."""
    low_draw, high_draw = Factor.model_validate(factor).support
    for tokens, value in hits:
        if isinstance(value, bool) or not isinstance(value, float):
            kind = "a whole number" if isinstance(value, int) and not isinstance(value, bool) else "not a number"
            return [(where, f"{render_path(tokens)} is {kind}; factors scale real-valued fields only")]
        if tokens[:2] == ["environment", "backends"] and tokens[-1] == "share":
            return [(where, "backend shares must sum to 1; a factor cannot scale them")]
        low, high = valid_range(render_path(tokens))
        lowest, highest = sorted((value * low_draw, value * high_draw))
        if value != 0 and (lowest > high or highest < low or (low == POSITIVE_FLOOR and highest <= 0)):
            opening = "(0" if low == POSITIVE_FLOOR else f"[{low:g}"
            bounds = (
                f"{opening}, {high:g}]" if math.isfinite(high) else "> 0" if low == POSITIVE_FLOOR else f">= {low:g}"
            )
            return [
                (
                    where,
                    f"every draw of factor '{factor['name']}' ({lowest:g} to {highest:g}) puts "
                    f"{render_path(tokens)} out of its range ({bounds}): the factor could only give invalid values",
                )
            ]
    return []
