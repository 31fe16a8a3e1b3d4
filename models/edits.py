"""Field edits addressed by MODEL.md paths (``inference.shapes[0].tokens_per_gpu_s=60``), applied before validation."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from models.instance import Instance
from models.load import InstanceError, Problem, read_document, validate
from models.plausible import Huge, unit_warnings

_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def parse_path(path: str) -> list[str | int]:
    """``a.b[0].c`` -> ['a', 'b', 0, 'c']; raises ValueError on a malformed path."""
    tokens: list[str | int] = []
    pos = 0
    text = path.strip()
    while pos < len(text):
        if text[pos] == "." and tokens:
            pos += 1
        match = _TOKEN.match(text, pos)
        if not match:
            raise ValueError(f"cannot read field path {path!r}")
        tokens.append(match.group(1) if match.group(1) is not None else int(match.group(2)))
        pos = match.end()
    if not tokens:
        raise ValueError("empty field path")
    return tokens


_PLAIN_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_PLAIN_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\.[0-9]*")


def parse_value(text: str) -> Any:
    """A value as YAML reads it: numbers, strings ('7d'), null, lists, mappings.

    Plain integers and decimals without exponent (a sweep's usual values) are read directly, as
    YAML reads them, without the cost of the YAML parser; anything else goes through YAML.
    """
    if _PLAIN_INT.fullmatch(text):
        try:
            return int(text)
        except ValueError:  # more digits than Python converts: the magnitude check names the field
            return Huge(len(text.lstrip("+-")))
    if _PLAIN_DECIMAL.fullmatch(text):
        return float(text)
    return yaml.safe_load(text) if text.strip() else ""


def split_edit(edit: str) -> tuple[str, str]:
    if "=" not in edit:
        raise ValueError(f"edit {edit!r} must look like PATH=VALUE")
    path, value = edit.split("=", 1)
    return path.strip(), value


def apply_edit(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Return ``data`` with the field at ``path`` set to ``value``, leaving ``data`` itself unchanged.

    Only the mappings and lists on the path are copied; the rest is shared with ``data`` (a sweep
    edits one field of the same document per point, and validation never mutates its input).
    """
    tokens = parse_path(path)
    out = _shallow(data)
    node: Any = out
    last = len(tokens) - 1
    for depth, token in enumerate(tokens):
        problem = None
        if isinstance(token, int):
            if not isinstance(node, list) or token >= len(node):
                problem = "no such list item"
        elif not isinstance(node, dict):
            problem = "not a mapping"
        if problem is not None:  # named by the path up to here (only now rendered: sweeps call this per point)
            raise ValueError(f"{path if depth == last else _render(tokens[: depth + 1])}: {problem}")
        if depth == last:
            node[token] = value
        else:
            child = _shallow(node[token]) if isinstance(token, int) or token in node else {}
            node[token] = child
            node = child
    return out


def _shallow(node: Any) -> Any:
    return dict(node) if isinstance(node, dict) else list(node) if isinstance(node, list) else node


def _render(tokens: list[str | int]) -> str:
    out = ""
    for t in tokens:
        out += f"[{t}]" if isinstance(t, int) else ("." if out else "") + t
    return out


def edited_document(path: Path, edits: list[str]) -> dict[str, Any]:
    data = read_document(path)
    for edit in edits:
        try:
            field, text = split_edit(edit)
            data = apply_edit(data, field, parse_value(text))
        except (ValueError, yaml.YAMLError) as exc:
            raise InstanceError(str(path), [Problem("", str(exc).splitlines()[0], source=f"--set {edit}")]) from None
    return data


def load_edited(path: Path, edits: list[str]) -> Instance:
    """The instance at ``path`` with ``--set`` edits applied; a problem in an edited field names the option."""
    return load_edited_checked(path, edits)[0]


def load_edited_checked(path: Path, edits: list[str]) -> tuple[Instance, list[str]]:
    """:func:`load_edited` and the warnings about bare numbers read as implausible seconds (models.plausible)."""
    data = edited_document(path, edits)
    try:
        inst = validate(data, str(path), path.parent)
    except InstanceError as exc:
        raise blamed_on_edits(exc, edits) from None
    return inst, unit_warnings(data)


def blamed_on_edits(error: InstanceError, edits: list[str]) -> InstanceError:
    """``error`` with each problem at (or above, or below) an edited field's path named by that ``--set`` option."""
    paths = []
    for edit in edits:
        try:
            paths.append((_render(parse_path(split_edit(edit)[0])), edit))
        except ValueError:
            continue
    problems = []
    for problem in error.problems:
        source = next(
            (
                f"--set {edit}"
                for field, edit in reversed(paths)
                if problem.path and (_within(problem.path, field) or _within(field, problem.path))
            ),
            None,
        )
        problems.append(Problem(problem.path, problem.rule, source) if source else problem)
    return InstanceError(error.file, problems)


def _within(path: str, prefix: str) -> bool:
    """Whether ``path`` is ``prefix`` or a field below it (``a.b[0]`` is within ``a.b``, ``a.bc`` is not)."""
    return path == prefix or (path.startswith(prefix) and path[len(prefix)] in ".[")


def edited(inst: Instance, changes: dict[str, Any]) -> Instance:
    """A copy of a validated instance with fields replaced by MODEL.md path (``{"schedule.deadline": 8e5}``).

    The plausibility caps (models.plausible) are not checked again: the copies are the program's own (a
    scenario's scaled fields, a diagnosis's relaxed limit), and a cap met by the user's file is not the user's
    to meet in them."""
    data = inst.model_dump(mode="python", exclude_none=False)
    occupancy = data["environment"]["occupancy"]
    if occupancy.get("distribution") == "empirical":
        occupancy.pop("csv", None)  # the samples were read already
    for path, value in changes.items():
        data = apply_edit(data, path, value)
    return validate(data, f"{inst.name}.yaml", capped=False)
