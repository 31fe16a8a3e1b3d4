"""Parsing instance files by extension (YAML, TOML, JSON) into a mapping, within the caps of models.plausible on
file size, nesting and digits; keys given twice are errors, not silently the last one."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import yaml

from trainground.models.errors import InstanceError, Problem
from trainground.models.plausible import FILE_CAP_VARIABLE, MAX_DEPTH, Huge, file_cap_bytes, too_large
from trainground.models.shape import holds_containers

EXTENSIONS = (".yaml", ".yml", ".toml", ".json")


def read_document(path: Path) -> dict[str, Any]:
    """Parse a YAML, TOML or JSON file into a mapping; raise InstanceError naming the file."""
    file = str(path)
    if not path.exists():
        raise InstanceError(file, [Problem("", "no such file")])
    if path.is_dir():
        raise InstanceError(file, [Problem("", "is a directory, not an instance file")])
    suffix = path.suffix.lower()
    if suffix not in EXTENSIONS:
        raise InstanceError(file, [Problem("", f"unknown file type '{suffix}': use one of {', '.join(EXTENSIONS)}")])
    text = read_capped(path, file)
    duplicates: list[Problem] = []
    try:
        if suffix == ".toml":
            data = tomllib.loads(text)
        elif suffix == ".json":
            data = _unique_json(_load_json(text), "", duplicates)
        else:
            data = _load_yaml(text, duplicates)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise InstanceError(file, [Problem("", f"not valid YAML{where}: {getattr(exc, 'problem', exc)}")]) from None
    except tomllib.TOMLDecodeError as exc:
        raise InstanceError(file, [Problem("", f"not valid TOML: {exc}")]) from None
    except json.JSONDecodeError as exc:
        raise InstanceError(
            file, [Problem("", f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}")]
        ) from None
    except RecursionError:  # the parser's own stack, long before the shape check (models.plausible) could run
        raise InstanceError(file, [Problem("", _too_deep_at(text))]) from None
    except ValueError:  # tomllib: a whole number of more digits than Python converts (JSON and YAML return Huge)
        raise InstanceError(file, [Problem("", _huge_number_at(text))]) from None
    if duplicates:
        raise InstanceError(file, duplicates)
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise InstanceError(file, [Problem("", f"the top level must be a mapping of sections, got {kind}")])
    return data


def read_capped(path: Path, file: str) -> str:
    """The file's text (UTF-8), refused above the size cap (models.plausible.file_cap_bytes) before it is read
    whole: at most the cap and one byte are read, so a device or a growing file stops there too."""
    try:
        cap = file_cap_bytes()
    except ValueError as exc:
        raise InstanceError(file, [Problem("", str(exc), source=FILE_CAP_VARIABLE)]) from None
    try:
        size = path.stat().st_size
        if size > cap:
            raise InstanceError(file, [Problem("", too_large(size, cap))])
        with path.open("rb") as handle:
            data = handle.read(cap + 1)
        if len(data) > cap:
            raise InstanceError(file, [Problem("", too_large(len(data), cap))])
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InstanceError(file, [Problem("", f"cannot read file: {exc}")]) from None


def _too_deep_at(text: str) -> str:
    """Where the brackets and braces of a JSON or TOML text first nest deeper than MAX_DEPTH (strings skipped)."""
    depth, quote, line, start = 0, "", 1, 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return f"line {line}, column {i - start + 1}: nested more than {MAX_DEPTH} levels deep, the most an instance nests"
        elif ch in "]}":
            depth -= 1
        elif ch == "\n":
            line, start = line + 1, i + 1
    return f"nested too deeply to read; an instance nests at most {MAX_DEPTH} levels"


def _load_json(text: str) -> Any:
    """``json.loads`` with each object as its pairs; a whole number of more digits than Python converts is read
    again with those numbers as :class:`Huge` (a hook on every number would slow every file down)."""
    try:
        return json.loads(text, object_pairs_hook=_Pairs)
    except json.JSONDecodeError:
        raise
    except ValueError:
        return json.loads(text, object_pairs_hook=_Pairs, parse_int=_json_int)


def _json_int(digits: str) -> int:
    try:
        return int(digits)
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
        return Huge(len(digits.lstrip("-")))


_LONG_NUMBER = re.compile(r"[0-9_]{1000,}")


def _huge_number_at(text: str) -> str:
    match = _LONG_NUMBER.search(text)
    if match is None:
        return "a number cannot be read"
    line = text.count("\n", 0, match.start()) + 1
    digits = len(match.group().replace("_", ""))
    return f"line {line}: a whole number of {digits:,} digits is beyond any plausible value"


_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the pure-Python one where libyaml is missing


class _Loader(_SAFE_LOADER):  # type: ignore[valid-type, misc]
    """The safe loader, with a whole number of more digits than Python converts read as :class:`Huge`."""


def _yaml_int(loader: Any, node: yaml.ScalarNode) -> int:
    try:
        return yaml.SafeLoader.construct_yaml_int(loader, node)
    except ValueError:
        return Huge(sum(ch.isdigit() for ch in str(node.value)))


_Loader.add_constructor("tag:yaml.org,2002:int", _yaml_int)
# A number in exponent notation without a decimal point (1e-3, 5E6) is a float in YAML 1.2 and JSON, a string in
# PyYAML's YAML 1.1: read it as the number it is (the schema takes no string where it wants a number).
EXPONENT = re.compile(r"[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+\Z")
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", EXPONENT, list("-+0123456789"))


def _load_yaml(text: str, duplicates: list[Problem]) -> Any:
    """``yaml.safe_load``, noting keys given twice in one mapping (PyYAML silently keeps the last). PyYAML's
    libyaml loader reads a file ~9x faster than its pure-Python one, with the same nodes and marks; the
    wording of a syntax error differs between the two (its line and column do not)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _yaml_duplicates(node, "", duplicates, set())
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _yaml_duplicates(node: yaml.Node, where: str, duplicates: list[Problem], seen_nodes: set[int]) -> None:
    if id(node) in seen_nodes:  # an alias: already checked where its anchor is
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        lines: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else None
            if key is None or key == "<<":
                continue
            path = f"{where}.{key}" if where else key
            line = key_node.start_mark.line + 1
            if key in lines:
                duplicates.append(Problem(path, f"key given twice (lines {lines[key]} and {line}); keep one"))
            else:
                lines[key] = line
            _yaml_duplicates(value_node, path, duplicates, seen_nodes)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            if not isinstance(item, yaml.ScalarNode):
                _yaml_duplicates(item, f"{where}[{i}]", duplicates, seen_nodes)


class _Pairs(list):
    """A JSON object as its (key, value) pairs, so that a key given twice can be reported."""


def _unique_json(value: Any, where: str, duplicates: list[Problem]) -> Any:
    """Turn ``_Pairs`` back into dicts, noting keys given twice (``json`` silently keeps the last)."""
    if isinstance(value, _Pairs):
        out: dict[str, Any] = {}
        for key, item in value:
            path = f"{where}.{key}" if where else key
            if key in out:
                duplicates.append(Problem(path, "key given twice; keep one"))
            out[key] = _unique_json(item, path, duplicates)
        return out
    if isinstance(value, list) and holds_containers(value):  # a _Pairs is a list too
        return [_unique_json(item, f"{where}[{i}]", duplicates) for i, item in enumerate(value)]
    return value  # a scalar, or a list of scalars (a million samples need no walk)
