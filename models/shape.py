"""The shape of a parsed document, measured before anything walks it by path: how deep it nests, how many
values it holds (a YAML alias is the same object at every place it is used, so a small file of aliases can
expand to billions of values), whether it refers to itself; and quick tests of a list's item types."""

from __future__ import annotations

from typing import Any


def holds_containers(items: Any) -> bool:
    """Whether a list (or a mapping's values) holds a mapping or a list: the types are collected at C speed,
    so that a list of a million numbers costs little."""
    return any(issubclass(kind, (dict, list)) for kind in set(map(type, items)))


def plain_numbers(items: list) -> bool:
    """Whether every item is a plain int or float (no bool, no Huge, no string)."""
    return set(map(type, items)) <= {int, float}


def shape_error(document: Any, max_depth: int, max_values: int) -> tuple[str, str] | None:
    """(field path, rule) when the document nests deeper than ``max_depth``, holds more than ``max_values``
    values or refers to itself, else None. Each container is measured once (a YAML alias is the same object at
    every place it is used), so a small file of aliases that expands to billions of values costs its own size."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(document, False)]
    open_: set[int] = set()
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        kids = list(node.values()) if isinstance(node, dict) else node if isinstance(node, list) else None
        if kids is None or (key in size and not children_done):
            continue
        nested = [k for k in kids if isinstance(k, (dict, list))] if holds_containers(kids) else []
        if children_done:
            open_.discard(key)
            size[key] = 1 + len(kids) - len(nested) + sum(size[id(k)] for k in nested)
            depth[key] = 1 + max((depth[id(k)] for k in nested), default=0)
            continue
        if key in open_:
            return "", "a YAML alias refers to a mapping or list that holds it (a cycle); no instance does"
        open_.add(key)
        stack.append((node, True))
        for k in nested:
            if id(k) in open_:
                return _culprit(document, k), "a YAML alias refers to a mapping or list that holds it (a cycle)"
            stack.append((k, False))
    if depth.get(id(document), 0) > max_depth:
        where = _deepest(document, depth)
        return where, f"nested {depth[id(document)]:,} levels deep; an instance nests at most {max_depth}"
    if size.get(id(document), 0) > max_values:
        where, node = _largest(document, size, max_values)
        return where, (
            f"holds {size[id(node)]:,} values (YAML aliases counted where they are used), above the "
            f"{max_values:,} an instance may hold"
        )
    return None


def _items(node: Any) -> list[tuple[str, Any]]:
    if isinstance(node, dict):
        return [(f".{k}", v) for k, v in node.items()]
    return [(f"[{i}]", v) for i, v in enumerate(node)]


def _deepest(document: Any, depth: dict[int, int]) -> str:
    """The path down the deepest branch (shown to its first levels)."""
    path, node, level = "", document, 0
    while isinstance(node, (dict, list)) and level < 4:
        step, node = max(
            ((s, v) for s, v in _items(node) if isinstance(v, (dict, list))), key=lambda sv: depth[id(sv[1])]
        )
        path += step
        level += 1
    return path.lstrip(".") + ("..." if isinstance(node, (dict, list)) else "")


def _largest(document: Any, size: dict[int, int], max_values: int) -> tuple[str, Any]:
    """(path, container) of the field that holds over max_values values: down the mappings that do, to the
    first list that does (the field as written, not the aliases inside it) or the last such mapping."""
    path, node = "", document
    while isinstance(node, dict):
        over = [(s, v) for s, v in _items(node) if isinstance(v, (dict, list)) and size[id(v)] > max_values]
        if not over:
            break
        step, node = over[0]
        path += step
    return path.lstrip("."), node


def _culprit(document: Any, target: Any) -> str:
    """The first path at which ``target`` is reached (where a cycle closes)."""
    stack: list[tuple[Any, str]] = [(document, "")]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if node is target:
            return path.lstrip(".")
        if isinstance(node, (dict, list)) and id(node) not in seen:
            seen.add(id(node))
            stack += [(v, path + s) for s, v in _items(node)]
    return ""
