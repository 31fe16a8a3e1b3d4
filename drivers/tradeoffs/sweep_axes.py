"""The axes of a sweep: each a MODEL.md field path with the values to try, as ``--set PATH=V1,V2,...`` writes them.

Values are split on top-level commas (``{a: 1, b: 2}`` and ``[1,2]`` stay whole) and kept as
written (``7d`` stays ``7d``); the loader reads them when a point is built. The sweep's points
are the cartesian product of its axes' values (:func:`grid_points`), except that the axes given
with ``--zip`` vary together: their i-th values go into the same point, and the group is one
factor of the product, placed where its first axis stands.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from trainground.models.edits import WILDCARD, parse_path


class SweepError(ValueError):
    """A ``--set PATH=V1,V2`` option that cannot describe an axis (no '=', a malformed path, no value)."""


@dataclass(frozen=True)
class Axis:
    """One swept field: its MODEL.md path and the values to try, as written (``7d`` stays ``7d``)."""

    path: str
    texts: tuple[str, ...]
    zipped: bool = False  # varied together with the sweep's other zipped axes (``--zip``)

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


def parse_axis(option: str, zipped: bool = False) -> Axis:
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
    return Axis(path, tuple(texts), zipped)


def parse_axes(crossed: Sequence[str], zipped: Sequence[str] = ()) -> list[Axis]:
    """The ``--set`` axes (crossed) then the ``--zip`` axes (varied together); raises SweepError when a
    path is swept twice or the zipped axes do not all have the same number of values."""
    axes = [parse_axis(o) for o in crossed] + [parse_axis(o, zipped=True) for o in zipped]
    seen: set[str] = set()
    for axis in axes:
        if axis.path in seen:
            raise SweepError(f"{axis.path} is swept twice: give each field one --set or --zip")
        seen.add(axis.path)
    counts = {axis.path: len(axis.texts) for axis in axes if axis.zipped}
    if len(set(counts.values())) > 1:
        sizes = ", ".join(f"{path} has {n}" for path, n in counts.items())
        raise SweepError(f"--zip axes vary together, so each needs the same number of values: {sizes}")
    return axes


def dimensions(axes: Sequence[Axis]) -> list[int]:
    """Each axis's factor of the product: its own, or, for a zipped axis, the one its group shares."""
    out, zipped_at, count = [], None, 0
    for axis in axes:
        if axis.zipped and zipped_at is not None:
            out.append(zipped_at)
            continue
        if axis.zipped:
            zipped_at = count
        out.append(count)
        count += 1
    return out


def grid_points(axes: Sequence[Axis]) -> list[tuple[str, ...]]:
    """One value per axis for every point: the product of the factors (:func:`dimensions`), the first
    varying slowest; the axes of the zipped factor take their values at the same position."""
    dims = dimensions(axes)
    sizes = [0] * (max(dims) + 1) if dims else []
    for axis, d in zip(axes, dims):
        sizes[d] = len(axis.texts)
    return [
        tuple(axis.texts[combo[d]] for axis, d in zip(axes, dims))
        for combo in itertools.product(*(range(n) for n in sizes))
    ]


def item_names(document: dict, paths: Sequence[str]) -> dict[str, str]:
    """The ``name`` of every list item along ``paths`` in the base document, by item path
    (``inference.shapes[1]`` -> ``h200-tp8``); items without a name are left out, and so is
    what follows a ``[*]`` (every item: :func:`render.labels.field_label` says so)."""
    out: dict[str, str] = {}
    for path in paths:
        node: Any = document
        prefix = ""
        for token in parse_path(path):
            if token == WILDCARD:
                break
            if isinstance(token, int):
                prefix += f"[{token}]"
                node = node[token] if isinstance(node, list) and token < len(node) else None
                if isinstance(node, dict) and isinstance(node.get("name"), str):
                    out[prefix] = node["name"]
            else:
                prefix = f"{prefix}.{token}" if prefix else token
                node = node.get(token) if isinstance(node, dict) else None
            if node is None:
                break
    return out
