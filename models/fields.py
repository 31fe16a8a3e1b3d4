"""The instance schema as a flat list of documented fields, read off `trainground schema`'s JSON Schema.

What docs/fields.md and `trainground init` show: each field's path (``gpu_pools[].gpus``; the
variant of a tagged union, ``law: amdahl``, beside it), a short type and its description.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldDoc:
    path: str
    kind: str
    description: str
    variant: str | None = None  # "law: amdahl" for a field of one member of a tagged union


def instance_schema() -> dict:
    from trainground.models.instance import Instance

    return Instance.model_json_schema(mode="validation")


def field_docs(schema: dict | None = None) -> list[FieldDoc]:
    """Every property of the instance schema, depth first in the models' field order."""
    schema = schema or instance_schema()
    out: list[FieldDoc] = []
    _walk_object(schema, schema, "", None, out)
    return out


def descriptions(schema: dict | None = None) -> dict[tuple[str, str | None], str]:
    """{(path, variant): description} over :func:`field_docs`."""
    return {(f.path, f.variant): f.description for f in field_docs(schema)}


def _resolve(root: dict, node: dict) -> dict:
    while "$ref" in node:
        node = root["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _walk_object(root: dict, node: dict, prefix: str, variant: str | None, out: list[FieldDoc]) -> None:
    for name, prop in node.get("properties", {}).items():
        path = f"{prefix}.{name}" if prefix else name
        out.append(FieldDoc(path, kind(root, prop), prop.get("description", ""), variant))
        for child, child_prefix, child_variant in _children(root, prop, path):
            _walk_object(root, child, child_prefix, child_variant or variant, out)


def _children(root: dict, prop: dict, path: str):
    """The objects below a property: its model, its list items' model, each member of a tagged union."""
    options = [prop] + [o for o in prop.get("anyOf", []) if o.get("type") != "null"]
    for option in options:
        if "discriminator" in option or "oneOf" in option:
            tag = option["discriminator"]["propertyName"]
            for member in option["oneOf"]:
                model = _resolve(root, member)
                yield model, path, f"{tag}: {model['properties'][tag].get('const', _enum(model['properties'][tag]))}"
            return
        target = _resolve(root, option)
        if target.get("type") == "array" and "items" in target:
            items = _resolve(root, target["items"])
            if "properties" in items:
                yield items, f"{path}[]", None
            return
        if "properties" in target:
            yield target, path, None
            return


def _enum(node: dict) -> str:
    return "|".join(map(str, node.get("enum", [])))


def kind(root: dict, prop: dict) -> str:
    """A short type: 'integer > 0', 'duration ≥ 0', 'used | reserved', 'list of GpuPool', 'map of number > 0'."""
    options = prop.get("anyOf")
    if options:
        non_null = [o for o in options if o.get("type") != "null"]
        types = {o.get("type") for o in non_null}
        if types == {"number", "string"} and any("pattern" in o for o in non_null):
            text = "duration" + _bounds(next(o for o in non_null if o.get("type") == "number"))
        else:
            text = " or ".join(kind(root, o) for o in non_null)
        return text + (" or null" if len(non_null) < len(options) else "")
    if "oneOf" in prop:
        return "one of: " + ", ".join(_resolve(root, m).get("title", "?") for m in prop["oneOf"])
    if "$ref" in prop:
        return "section" if "properties" in _resolve(root, prop) else kind(root, _resolve(root, prop))
    if "const" in prop:
        return repr(prop["const"]) if isinstance(prop["const"], str) else str(prop["const"])
    if "enum" in prop:
        return " | ".join(map(str, prop["enum"]))
    t = prop.get("type")
    if t == "array":
        items = prop.get("items", {})
        inner = _resolve(root, items).get("title", "item") if "$ref" in items else kind(root, items)
        return f"list of {inner}" + (f" (at least {prop['minItems']})" if prop.get("minItems") else "")
    if t == "object":
        extra = prop.get("additionalProperties")
        return f"map of name → {kind(root, extra)}" if isinstance(extra, dict) else "mapping"
    if t in ("number", "integer"):
        return t + _bounds(prop)
    return t or "any"


def _bounds(node: dict) -> str:
    low = (">", node["exclusiveMinimum"]) if "exclusiveMinimum" in node else ("≥", node.get("minimum"))
    high = node.get("maximum")
    if low[1] is not None and high is not None:
        return f" in {'(' if low[0] == '>' else '['}{low[1]:g}, {high:g}]"
    if low[1] is not None:
        return f" {low[0]} {low[1]:g}"
    return ""
