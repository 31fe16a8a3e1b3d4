"""Field edits addressed by MODEL.md paths (``inference.shapes[0].tokens_per_gpu_s=60``), applied before validation."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from trainground.models.documents import EXPONENT
from trainground.models.instance import Instance
from trainground.models.load import MISSING, InstanceError, Problem, read_document, validate
from trainground.models.plausible import Huge, unit_warnings
from trainground.models.stage_rules import factor_warnings, switch_warnings
from trainground.models.uncertainty import path_tokens, render_path

WILDCARD = "*"  # the token of ``[*]``: every element of a list (MODEL.md §9's paths)


def parse_path(path: str) -> list[str | int]:
    """``a.b[0].c`` -> ['a', 'b', 0, 'c'], ``a.b[*].c`` -> ['a', 'b', '*', 'c']; ValueError on a malformed path.

    One grammar for every path the product takes (``--set``, sweep axes, uncertainty factors):
    :func:`models.uncertainty.path_tokens`.
    """
    return path_tokens(path)


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
    if _PLAIN_DECIMAL.fullmatch(text) or EXPONENT.fullmatch(text):
        return float(text.replace("_", ""))
    return yaml.safe_load(text) if text.strip() else ""


def split_edit(edit: str) -> tuple[str, str]:
    if "=" not in edit:
        raise ValueError(f"edit {edit!r} must look like PATH=VALUE")
    path, value = edit.split("=", 1)
    return path.strip(), value


def apply_edit(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Return ``data`` with the field at ``path`` set to ``value``, leaving ``data`` itself unchanged.

    ``[*]`` sets the field in every element of that list (``inference.shapes[*].tokens_per_gpu_s``).
    Only the mappings and lists on the path are copied; the rest is shared with ``data`` (a sweep
    edits one field of the same document per point, and validation never mutates its input).
    """
    tokens = parse_path(path)
    return _set(data, tokens, 0, value, path)


def _set(node: Any, tokens: list[str | int], depth: int, value: Any, path: str) -> Any:
    """``node`` (a shallow copy) with ``tokens[depth:]`` set to ``value``; a missing mapping on the way is created."""
    token = tokens[depth]
    last = depth == len(tokens) - 1
    problem = None
    if token == WILDCARD:
        if not isinstance(node, list):
            problem = "not a list"
        elif not node:
            problem = "[*] matches no list item (the list is empty)"
    elif isinstance(token, int):
        if not isinstance(node, list) or token >= len(node):
            problem = "no such list item"
    elif not isinstance(node, dict):
        problem = "not a mapping"
    if problem is not None:  # named by the path up to here (only now rendered: sweeps call this per point)
        raise ValueError(f"{path if last else render_path(tokens[: depth + 1])}: {problem}")
    out = _shallow(node)
    keys = range(len(node)) if token == WILDCARD else [token]
    for key in keys:
        if last:
            out[key] = value
        else:
            child = node[key] if isinstance(key, int) or key in node else {}
            out[key] = _set(child, tokens, depth + 1, value, path)
    return out


def _shallow(node: Any) -> Any:
    return dict(node) if isinstance(node, dict) else list(node) if isinstance(node, list) else node


def edited_document(path: Path, edits: list[str], data: dict[str, Any] | None = None) -> dict[str, Any]:
    """The document at ``path`` (or ``data``, already read from it) with ``edits`` applied."""
    data = read_document(path) if data is None else data
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
    """:func:`load_edited` and its warnings: bare numbers read as implausible seconds (models.plausible), and
    uncertainty factors whose draws miss stages that set the field for themselves (models.stage_rules)."""
    own = read_document(path)
    data = edited_document(path, edits, own)
    try:
        inst = validate(data, str(path), path.parent)
    except InstanceError as exc:
        raise blamed_on_edits(exc, edits) from None
    refuse_replaced(own, edits, str(path), path.parent)
    return inst, unit_warnings(data) + switch_warnings(inst) + factor_warnings(inst)


def refuse_replaced(own: dict[str, Any], edits: list[str], file: str, base_dir: Path) -> None:
    """Refuse (InstanceError) a file whose own value at a field an edit replaces is invalid: an option that
    overrides a field (``--set``, ``--basis``, a sweep axis) does not hide a bad value in the file. A field the
    file leaves out, which an edit supplies, is no problem; only the document's own values are validated."""
    replaced = []
    for edit in edits:
        try:
            tokens = parse_path(split_edit(edit)[0])
        except ValueError:
            continue
        if _present(own, tokens):
            replaced.append((tokens, edit))
    if not replaced:
        return
    try:
        validate(own, file, base_dir)
    except InstanceError as exc:
        problems = []
        for problem in exc.problems:
            by = next((e for field, e in reversed(replaced) if problem.path and _related(problem.path, field)), None)
            if by is not None and problem.rule != MISSING:
                rule = f"{problem.rule} (the file's own value, which {by} replaces here)"
                problems.append(Problem(problem.path, rule, problem.source))
        if problems:
            raise InstanceError(file, problems) from None


def refuse_invalid(path: str | Path, edits: list[str]) -> None:
    """Refuse (InstanceError) the file at ``path`` when it is invalid on its own, whatever ``edits`` (a sweep's
    axes, ``PATH=VALUES``) would make of it: only a required field that an edit supplies may be missing."""
    path = Path(path)
    own = read_document(path)
    supplied = []
    for edit in edits:
        try:
            supplied.append(parse_path(split_edit(edit)[0]))
        except ValueError:
            continue
    try:
        validate(own, str(path), path.parent)
    except InstanceError as exc:
        problems = [
            p
            for p in exc.problems
            if not (p.rule == MISSING and p.path and any(_related(p.path, field) for field in supplied))
        ]
        if problems:
            refuse_replaced(own, edits, str(path), path.parent)  # a bad value an edit replaces: said so
            raise InstanceError(str(path), problems) from None


def _present(node: Any, tokens: list[str | int]) -> bool:
    """Whether the document ``node`` holds a value at ``tokens`` (``[*]``: in some item of the list)."""
    if not tokens:
        return True
    token, rest = tokens[0], tokens[1:]
    if token == WILDCARD:
        return isinstance(node, list) and any(_present(item, rest) for item in node)
    if isinstance(token, int):
        return isinstance(node, list) and token < len(node) and _present(node[token], rest)
    return isinstance(node, dict) and token in node and _present(node[token], rest)


def blamed_on_edits(error: InstanceError, edits: list[str]) -> InstanceError:
    """``error`` with each problem at (or above, or below) an edited field's path named by that ``--set`` option."""
    paths = []
    for edit in edits:
        try:
            paths.append((parse_path(split_edit(edit)[0]), edit))
        except ValueError:
            continue
    problems = []
    for problem in error.problems:
        source = next(
            (f"--set {edit}" for field, edit in reversed(paths) if problem.path and _related(problem.path, field)),
            None,
        )
        problems.append(Problem(problem.path, problem.rule, source) if source else problem)
    return InstanceError(error.file, problems)


def _related(path: str, field: list[str | int]) -> bool:
    """Whether the problem's ``path`` is the edited ``field``, lies below it or above it; ``[*]`` in
    ``field`` matches every item (``a.b[0]`` is related to ``a.b``, ``a.b[*].c`` and ``a``; ``a.bc`` is not)."""
    try:
        tokens = parse_path(path.split("...", 1)[0])  # a path shortened with "..." (deep nesting) by its head
    except ValueError:
        return False
    return all(f == t or (f == WILDCARD and isinstance(t, int)) for f, t in zip(field, tokens))


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
