"""Reading instance files: parse by extension, validate, check names; errors say file, field path and rule."""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from trainground.models.documents import EXTENSIONS, read_capped, read_document
from trainground.models.errors import InstanceError, Problem
from trainground.models.instance import FieldError, Instance, Occupancy, UpdateTime
from trainground.models.plausible import magnitude_errors, size_errors
from trainground.models.regime_rules import regime_errors
from trainground.models.stage_rules import stage_errors
from trainground.models.uncertainty import path_errors

__all__ = [
    "EXTENSIONS",
    "MISSING",
    "InstanceError",
    "Problem",
    "load_instance",
    "read_capped",
    "read_document",
    "validate",
]

MISSING = "required field is missing"  # the rule of a required field the document leaves out
_UNION_TAGS = {"occupancy", "update_time"}
# Each model of a tagged union by its tag ("lognormal" -> Lognormal): pydantic puts the tag into error locations.
_TAG_MODELS = {
    get_args(model.model_fields[tag].annotation)[0]: model
    for union, tag in ((Occupancy, "distribution"), (UpdateTime, "law"))
    for model in get_args(get_args(union)[0])
}


def validate(data: dict[str, Any], file: str, base_dir: Path | None = None, *, capped: bool = True) -> Instance:
    """Validate a parsed document into an Instance; raise InstanceError listing every problem.

    ``capped``: check the magnitudes first and the sizes of the tables a solve builds last (models.plausible);
    off only for copies the program derives from an instance that passed them."""
    if capped:
        problems = [Problem(where, rule) for where, rule in magnitude_errors(data)]
        if problems:
            raise InstanceError(file, problems)
    try:
        # Strict on the user's document: a string is not read as a number or a boolean ('yes', '75'), nor a
        # number as a boolean; the program's own copies (capped off) keep the values they were given.
        instance = Instance.model_validate(data, strict=capped, context={"base_dir": str(base_dir or Path("."))})
    except ValidationError as exc:
        raise InstanceError(file, _typos_first([_problem(err) for err in exc.errors()])) from None
    problems = reference_errors(instance) + stage_errors(instance) + regime_errors(instance)
    if instance.uncertainty is not None and not problems:
        problems = [Problem(where, rule) for where, rule in path_errors(instance.model_dump(mode="python"))]
    if capped and not problems:
        problems = [Problem(where, rule) for where, rule in size_errors(instance)]
    if problems:
        raise InstanceError(file, problems)
    if instance.name is None:
        instance = instance.model_copy(update={"name": Path(file).stem})
    return instance


def load_instance(path: str | Path) -> Instance:
    path = Path(path)
    return validate(read_document(path), str(path), path.parent)


def field_path(loc: tuple) -> str:
    out = ""
    previous = None
    for part in loc:
        if previous in _UNION_TAGS and part in _TAG_MODELS:
            previous = part
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
        previous = part
    return out


def _fmt(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return json.dumps(value)  # as written in the file: null, true, false
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:g}"
    if isinstance(value, (dict, list)):
        text = json.dumps(value, default=str)
        return text if len(text) <= 60 else text[:57] + "..."
    return repr(value)


def _allowed_keys(loc: tuple) -> list[str]:
    """Field names of the model holding the unknown key ``loc[-1]`` (for typo hints)."""
    model: Any = Instance
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        if part in _TAG_MODELS:
            model = _TAG_MODELS[part]
            continue
        field = model.model_fields.get(part) if model is not None else None
        model = _model_in(field.annotation) if field is not None else None
    return list(model.model_fields) if model is not None else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The one pydantic model a field annotation holds (through lists and optionals), if unique."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    found = {m for m in map(_model_in, get_args(annotation)) if m is not None}
    return found.pop() if len(found) == 1 else None


_SIGNS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}


def _typos_first(problems: list[Problem]) -> list[Problem]:
    """A misspelled key (``deadlin``) is the one problem behind the required key it misses (``deadline``): its
    did-you-mean comes first, and the missing key it names is not reported apart."""
    meant = set()
    for p in problems:
        match = _DID_YOU_MEAN.search(p.rule)
        if p.rule.startswith("unknown key") and match:
            meant.add(f"{p.path.rsplit('.', 1)[0]}.{match.group(1)}" if "." in p.path else match.group(1))
    if not meant:
        return problems
    typos = [p for p in problems if p.rule.startswith("unknown key") and _DID_YOU_MEAN.search(p.rule)]
    rest = [p for p in problems if p not in typos and not (p.rule == MISSING and p.path in meant)]
    return typos + rest


_DID_YOU_MEAN = re.compile(r"; did you mean '([^']+)'\?")


def _problem(err: Mapping[str, Any]) -> Problem:
    loc = tuple(err["loc"])
    kind = err["type"]
    ctx = err.get("ctx") or {}
    given = err.get("input")
    if kind == "missing":
        rule = MISSING
    elif kind == "extra_forbidden":
        allowed = _allowed_keys(loc)
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        rule = f"unknown key '{loc[-1]}'" + (f"; did you mean '{close[0]}'?" if close else "")
        rule += f" (allowed here: {', '.join(allowed)})" if allowed else ""
    elif kind in _SIGNS:
        sign = _SIGNS[kind]
        bound = next(iter(ctx.values()))
        rule = f"must be {sign} {_fmt(float(bound)) if isinstance(bound, (int, float)) else bound}, got {_fmt(given)}"
    elif kind == "finite_number":
        rule = f"must be a finite number, got {_fmt(given)}"
    elif kind in ("int_type", "int_parsing", "int_from_float") and isinstance(given, float):
        if not math.isfinite(given):
            rule = f"must be a finite number, got {_fmt(given)}"
        elif given == int(given):
            rule = f"must be a whole number, got {given!r} (write {int(given)}, without a decimal point)"
        else:
            rule = f"must be a whole number, got {_fmt(given)}"
    elif kind in ("int_type", "int_parsing", "int_from_float"):
        rule = f"must be a whole number, got {_fmt(given)}"
    elif kind in ("float_type", "float_parsing"):
        rule = f"must be a number, got {_fmt(given)}"
    elif kind in ("string_type",):
        rule = f"must be a string, got {_fmt(given)}"
    elif kind in ("list_type",):
        rule = f"must be a list, got {_fmt(given)}"
    elif kind in ("dict_type", "model_type", "model_attributes_type"):
        rule = f"must be a mapping, got {_fmt(given)}"
    elif kind == "too_short":
        rule = f"must have at least {ctx.get('min_length')} item(s), got {ctx.get('actual_length')}"
    elif kind == "string_too_short":
        rule = "must not be empty"
    elif kind == "literal_error":
        rule = f"must be {ctx.get('expected')}, got {_fmt(given)}"
    elif kind == "union_tag_invalid":
        loc += (str(ctx.get("discriminator", "")).strip("'"),)
        tags = str(ctx.get("expected_tags", "")).split(", ")
        expected = tags[0] if len(tags) == 1 else f"{', '.join(tags[:-1])} or {tags[-1]}"
        rule = f"must be {expected}, got {_fmt(ctx.get('tag'))}"
    elif kind == "union_tag_not_found":
        loc += (str(ctx.get("discriminator", "")).strip("'"),)
        rule = MISSING
    elif kind == "value_error":
        error = ctx.get("error")
        if isinstance(error, FieldError):
            loc += error.where
        rule = str(error if error is not None else err["msg"])
    elif kind == "bool_type" or kind == "bool_parsing":
        rule = f"must be true or false, got {_fmt(given)}"
    else:
        rule = err["msg"]
    if loc and loc[-1] == "[key]":  # a mapping key of the wrong type: name the mapping, not pydantic's marker
        loc, rule = loc[:-2], f"key {_fmt(loc[-2])}: {rule}"
    return Problem(field_path(loc), rule)


def reference_errors(inst: Instance) -> list[Problem]:
    """Names must resolve: pools, backends, node and VM densities, eligible shares; names unique; shares sum to 1."""
    problems: list[Problem] = []
    pools = [p.name for p in inst.gpu_pools]
    backends = [b.name for b in inst.environment.backends]

    def unique(names: list[str], where: str) -> None:
        seen: set[str] = set()
        for i, name in enumerate(names):
            if name in seen:
                problems.append(Problem(f"{where}[{i}].name", f"duplicate name '{name}'"))
            seen.add(name)

    unique(pools, "gpu_pools")
    unique([s.name for s in inst.inference.shapes], "inference.shapes")
    unique(backends, "environment.backends")
    unique([k.name for k in inst.environment.node_types], "environment.node_types")
    unique([v.name for v in inst.environment.cloud.vm_types], "environment.cloud.vm_types")

    def pool_ref(name: str, where: str) -> None:
        if name not in pools:
            problems.append(Problem(where, f"'{name}' is not a gpu_pools name (have: {', '.join(pools)})"))

    for i, shape in enumerate(inst.inference.shapes):
        pool_ref(shape.pool, f"inference.shapes[{i}].pool")
    pool_ref(inst.training.pool, "training.pool")
    for pool in inst.gpu_pools:
        if pool.name == inst.training.pool and pool.preemptions_per_hour is not None:
            problems.append(
                Problem(
                    "training.pool",
                    f"'{pool.name}' is preemptible (gpu_pools: {pool.name} has preemptions_per_hour): a preempted "
                    "trainer loses its progress since the last checkpoint; place training on a pool without "
                    "preemptions_per_hour (docs/model.md §13)",
                )
            )

    def backend_refs(mapping: dict[str, float], where: str) -> None:
        for key in mapping:
            if key not in backends:
                problems.append(
                    Problem(f"{where}.{key}", f"'{key}' is not a backend name (have: {', '.join(backends)})")
                )

    for i, node in enumerate(inst.environment.node_types):
        backend_refs(node.density, f"environment.node_types[{i}].density")
    for i, vm in enumerate(inst.environment.cloud.vm_types):
        backend_refs(vm.density, f"environment.cloud.vm_types[{i}].density")
    backend_refs(inst.environment.cloud.eligible_share, "environment.cloud.eligible_share")

    total = sum(b.share for b in inst.environment.backends)
    if inst.environment.backends and abs(total - 1.0) > 1e-6:
        problems.append(Problem("environment.backends", f"shares must sum to 1, got {total:g}"))

    return problems
