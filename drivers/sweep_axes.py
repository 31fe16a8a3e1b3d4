"""The axes of a sweep: each a MODEL.md field path with the values to try, as ``--set PATH=V1,V2,...`` writes them.

Values are split on top-level commas (``{a: 1, b: 2}`` and ``[1,2]`` stay whole) and kept as
written (``7d`` stays ``7d``); the loader reads them when a point is built. The sweep's points
are the cartesian product of its axes' values (:func:`grid_points`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import yaml

from models.edits import parse_path


class SweepError(ValueError):
    """A ``--set PATH=V1,V2`` option that cannot describe an axis (no '=', a malformed path, no value)."""


@dataclass(frozen=True)
class Axis:
    """One swept field: its MODEL.md path and the values to try, as written (``7d`` stays ``7d``)."""

    path: str
    texts: tuple[str, ...]

    @property
    def numeric(self) -> bool:
        """Every value reads as a plain number (plots put them on a numeric axis)."""
        return all(_number(t) is not None for t in self.texts)

    def numbers(self) -> list[float]:
        return [float(_number(t)) for t in self.texts]


def _number(text: str) -> float | None:
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def split_values(text: str) -> list[str]:
    """Split on commas outside brackets, braces and quotes: ``1,{a: 1, b: 2},[3,4]`` -> 3 values."""
    values, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            values.append(text[start:i].strip())
            start = i + 1
    values.append(text[start:].strip())
    return values


def parse_axis(option: str) -> Axis:
    """``PATH=V1,V2,...`` -> Axis; raises SweepError naming what is wrong."""
    if "=" not in option:
        raise SweepError(f"{option!r} must look like PATH=V1,V2,...")
    path, text = (part.strip() for part in option.split("=", 1))
    try:
        parse_path(path)
    except ValueError as exc:
        raise SweepError(f"{option!r}: {exc}") from None
    texts = split_values(text)
    if not text or any(not t for t in texts):
        raise SweepError(f"{option!r}: every value must be non-empty (values are separated by top-level commas)")
    return Axis(path, tuple(texts))


def grid_points(axes: Sequence[Axis]) -> list[tuple[str, ...]]:
    """The cartesian product of the axes' values, the first axis varying slowest."""
    return list(itertools.product(*(axis.texts for axis in axes)))
