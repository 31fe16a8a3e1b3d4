"""A starter instance as commented YAML: each field preceded by its description, the other kinds of a
tagged union (update laws, occupancy laws) listed where the chosen kind stands."""

from __future__ import annotations

import textwrap
from typing import Any

import yaml

WIDTH = 100


OPTIONAL_START = "# ---- optional, uncomment to use: {name} ----"
OPTIONAL_END = "# ---- end of {name} ----"


def commented_yaml(document: dict[str, Any], docs: list, header: str, optional: dict[str, Any] | None = None) -> str:
    """``document`` as block YAML; ``docs`` are the schema's FieldDoc rows (path, kind, description, variant).
    Each top-level section of ``optional`` follows, explained the same way and commented out line by line
    between an OPTIONAL_START and an OPTIONAL_END line.

    Only the first item of a list is commented (the others repeat its fields)."""
    by_path = {(d.path, d.variant): d for d in docs}
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    _mapping(document, "", "", None, True, by_path, docs, lines)
    for name, section in (optional or {}).items():
        block: list[str] = []
        _mapping({name: section}, "", "", None, True, by_path, docs, block)
        lines += [
            "",
            OPTIONAL_START.format(name=name),
            *(f"# {line}" for line in block),
            OPTIONAL_END.format(name=name),
        ]
    return "\n".join(lines) + "\n"


def _comment(text: str, indent: str, lines: list[str]) -> None:
    lines += textwrap.wrap(
        text,
        WIDTH - len(indent) - 2,
        initial_indent=f"{indent}# ",
        subsequent_indent=f"{indent}# ",
        break_on_hyphens=False,
    )


def _scalar(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000, sort_keys=False).strip()
    return text[: -len("...")].strip() if text.endswith("...") else text


def _flow(value: Any, doc) -> bool:
    """Written on one line: a scalar, a list of scalars, or a map field (``density: {container: 1048}``)."""
    if isinstance(value, list):
        return all(not isinstance(v, (dict, list)) for v in value)
    if isinstance(value, dict):
        return doc is not None and doc.kind.startswith("map")
    return True


def _mapping(
    node: dict, path: str, indent: str, variant: str | None, explain: bool, by_path, docs, lines: list[str]
) -> None:
    for key, value in node.items():
        here = f"{path}.{key}" if path else key
        doc = by_path.get((here, variant)) or by_path.get((here, None))
        if not indent and lines:
            lines.append("")
        if explain and doc is not None:
            _comment(doc.description, indent, lines)
        if _flow(value, doc):
            lines.append(f"{indent}{key}: {_scalar(value)}")
        elif isinstance(value, dict):
            lines.append(f"{indent}{key}:")
            tag = _tag(value, here, docs)
            _mapping(value, here, indent + "  ", tag or variant, explain, by_path, docs, lines)
            if explain and tag:
                _alternatives(here, tag, value, indent + "  ", docs, lines)
        else:
            lines.append(f"{indent}{key}:")
            for i, item in enumerate(value):
                lines.append(f"{indent}  -")
                _mapping(item, f"{here}[]", indent + "    ", variant, explain and i == 0, by_path, docs, lines)


def _tag(value: dict, path: str, docs) -> str | None:
    """The variant ("law: inverse") a mapping at ``path`` belongs to, when ``path`` is a tagged union."""
    for doc in docs:
        if doc.path.startswith(path + ".") and doc.variant:
            tag = doc.variant.split(":")[0]
            return f"{tag}: {value.get(tag)}"
    return None


def _alternatives(path: str, chosen: str, value: dict, indent: str, docs, lines: list[str]) -> None:
    """The union's other kinds, each with its description and the fields it takes, as comments."""
    others: dict[str, list] = {}
    for doc in docs:
        if doc.variant and doc.variant != chosen and doc.path.startswith(path + "."):
            name = doc.path[len(path) + 1 :]
            if name == doc.variant.split(":")[0]:
                others.setdefault(doc.variant, []).insert(0, doc.description)
            elif name.split(".")[0].split("[")[0] not in value:
                others.setdefault(doc.variant, []).append(f"{name}: {doc.description}")
    for variant, texts in others.items():
        _comment(f"Instead, {variant}: " + " ".join(texts), indent, lines)
