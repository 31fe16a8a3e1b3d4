"""The hostile corpus by mutation families: each case one mutation of one bundled file, described here and written
into a folder only when a run asks for it (the whole corpus is tens of thousands of files). ``bench/mutations.py``
runs a sample of it through every command and tallies the outcomes; ``tests/test_mutation_corpus.py`` runs its
small families through ``solve`` in-process.

- ``leaf:<kind>``: every numeric leaf of every bundled instance (instances/*.yaml, instances/regimes/*.yaml and
  docs/first-hour/my-run.yaml; numbers, and durations written with a unit) set to 0, -1, NaN, inf, 1e12 (huge),
  1e-12 (tiny), a string and a list;
- ``enum:value`` and ``enum:bad``: every field the instance schema gives an enum, set to each of its values and
  to one that is none of them (in the uncertain seed, the staged seed for ``stages.*`` and a regime instance for
  ``regime.*``);
- ``encoding``: the seed in UTF-16, UTF-8 with a byte-order mark, Latin-1, invalid UTF-8, with a NUL byte, with
  CRLF lines, empty, binary bytes, and a UTF-16 JSON file;
- ``duplicate``: a key given twice (top level and nested; YAML, JSON, TOML) and two list items of one name (pools,
  shapes, backends, node types, VM types, stages, factors);
- ``log:<kind>``: calibrate's logs (the bundled seed-small trajectory and step logs): each numeric cell of their
  first two rows mutated as the leaves are, a row given three times, and the encodings;
- ``issue``: the cases issue 40 lists, each through the command it names.
"""

from __future__ import annotations

import codecs
import copy
import json
import math
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from trainground.models.edits import apply_edit

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"
UNCERTAIN = ROOT / "instances" / "seed-week-75-uncertain.yaml"
STAGED = ROOT / "instances" / "seed-week-stages.yaml"
LOGS = ROOT / "instances" / "logs"
BUNDLED = (
    sorted((ROOT / "instances").glob("*.yaml"))
    + sorted((ROOT / "instances" / "regimes").glob("*.yaml"))
    + [ROOT / "docs" / "first-hour" / "my-run.yaml"]
)
LEAF_VALUES: dict[str, Any] = {
    "zero": 0,
    "minus-one": -1,
    "nan": math.nan,
    "inf": math.inf,
    "huge": 1e12,
    "tiny": 1e-12,
    "string": "abc",
    "list": [1, 2],
}
DURATION = re.compile(r"^\s*[0-9.]+\s*(us|ms|s|m|min|h|d|w)\s*$")
FILE = "{file}"  # in a case's options: the path its file was written to


@dataclass(frozen=True)
class Case:
    """One mutation: ``content()`` gives the file's bytes (written as ``name`` + ``suffix`` on demand), or ``given``
    names a file used as it is; ``command`` is the one command an issue or log case runs (None: every instance
    command), ``options`` what it adds (``FILE`` stands for the written file)."""

    family: str
    name: str
    content: Callable[[], bytes] | None = None
    suffix: str = ".yaml"
    given: str | None = None
    command: str | None = None
    options: tuple[str, ...] = ()

    def write(self, folder: Path) -> str:
        if self.content is None:
            assert self.given is not None
            return self.given
        path = folder / f"{self.name}{self.suffix}"
        path.write_bytes(self.content())
        return str(path)

    def args(self, file: str) -> tuple[str, ...]:
        return tuple(file if a == FILE else a for a in self.options)


def _yaml(doc: Any) -> bytes:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode()


def _mutated(source: Path, path: str, value: Any) -> Callable[[], bytes]:
    return lambda: _yaml(apply_edit(yaml.safe_load(source.read_text()), path, value))


def leaves(doc: Any, path: str = "") -> list[str]:
    """The field path (as --set takes it) of every numeric leaf: numbers and durations written with a unit."""
    if isinstance(doc, dict):
        return [p for key, value in doc.items() for p in leaves(value, f"{path}.{key}" if path else str(key))]
    if isinstance(doc, list):
        return [p for i, value in enumerate(doc) for p in leaves(value, f"{path}[{i}]")]
    numeric = isinstance(doc, (int, float)) and not isinstance(doc, bool)
    return [path] if numeric or (isinstance(doc, str) and DURATION.match(doc)) else []


def _label(*parts: str) -> str:
    return "--".join(parts).replace("[", "(").replace("]", ")")


def leaf_cases() -> list[Case]:
    cases = []
    for source in BUNDLED:
        for path in leaves(yaml.safe_load(source.read_text())):
            for kind, value in LEAF_VALUES.items():
                name = _label(source.stem, path, kind)
                cases.append(Case(f"leaf:{kind}", name, _mutated(source, path, value)))
    return cases


def enum_fields() -> dict[str, list]:
    """Field path (``[*]`` for every item) -> its values, for every field the instance schema gives an enum."""
    from trainground.models.fields import instance_schema

    schema = instance_schema()
    defs = schema.get("$defs", {})
    found: dict[str, list] = defaultdict(list)

    def walk(node: Any, path: str, depth: int) -> None:
        if not isinstance(node, dict) or depth > 12:
            return
        for value in node.get("enum", []) + ([node["const"]] if "const" in node else []):
            if value not in found[path]:
                found[path].append(value)
        if "$ref" in node:
            walk(defs[node["$ref"].split("/")[-1]], path, depth + 1)
        for key, value in node.get("properties", {}).items():
            walk(value, f"{path}.{key}" if path else key, depth + 1)
        for key in ("anyOf", "oneOf", "allOf"):
            for value in node.get(key, []):
                walk(value, path, depth + 1)
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}[*]", depth + 1)

    walk(schema, "", 0)
    return {path: values for path, values in found.items() if path != "schema_version"}


def enum_cases() -> list[Case]:
    regime = sorted((ROOT / "instances" / "regimes").glob("*.yaml"))
    cases = []
    for path, values in enum_fields().items():
        base = STAGED if path.startswith("stages.") else regime[0] if path.startswith("regime.") else UNCERTAIN
        concrete = path.replace("[*]", "[0]")
        try:
            apply_edit(yaml.safe_load(base.read_text()), concrete, "x")
        except (KeyError, IndexError, TypeError, ValueError):
            continue  # a field of a section or law the base has not: its own bundled files' leaves cover it
        for value in [*values, "wrong_value"]:
            family = "enum:bad" if value == "wrong_value" else "enum:value"
            cases.append(Case(family, _label("enum", concrete, str(value)), _mutated(base, concrete, value)))
    return cases


def encoding_cases() -> list[Case]:
    text = SEED.read_text().replace("name: seed-week-75", "name: seed-wéek")
    doc = json.dumps(yaml.safe_load(text), ensure_ascii=False)
    variants: dict[str, tuple[bytes, str]] = {
        "utf16": (text.encode("utf-16"), ".yaml"),
        "utf8-bom": (codecs.BOM_UTF8 + text.encode(), ".yaml"),
        "latin1": (text.encode("latin-1"), ".yaml"),
        "invalid-utf8": (text.encode().replace(b"seed-w", b"seed-w\xff\xfe", 1), ".yaml"),
        "nul": (text.encode().replace(b"objective:", b"objective\x00:", 1), ".yaml"),
        "crlf": (text.replace("\n", "\r\n").encode(), ".yaml"),
        "empty": (b"", ".yaml"),
        "binary": (bytes(range(256)) * 4, ".yaml"),
        "utf16-json": (doc.encode("utf-16"), ".json"),
        "latin1-json": (doc.encode("latin-1"), ".json"),
    }
    return [
        Case("encoding", f"encoding-{name}", (lambda b=content: b), suffix)
        for name, (content, suffix) in variants.items()
    ]


def duplicate_cases() -> list[Case]:
    seed = SEED.read_text()
    toml = (ROOT / "instances" / "seed-week-75.toml").read_text()
    assert "  iterations: 1000\n" in seed
    texts = {
        "top-key": (seed + "objective: makespan\n", ".yaml"),
        "nested-key": (seed.replace("  iterations: 1000\n", "  iterations: 1000\n  iterations: 10\n", 1), ".yaml"),
        "top-key-json": ('{"objective": "makespan", ' + json.dumps(yaml.safe_load(seed))[1:], ".json"),
        "top-key-toml": (toml + '\nobjective = "makespan"\n', ".toml"),
    }
    cases = [
        Case("duplicate", f"duplicate-{name}", (lambda t=text: t.encode()), suffix)
        for name, (text, suffix) in texts.items()
    ]
    lists = {
        "gpu_pools": (UNCERTAIN, "gpu_pools"),
        "shapes": (UNCERTAIN, "inference.shapes"),
        "backends": (UNCERTAIN, "environment.backends"),
        "node_types": (UNCERTAIN, "environment.node_types"),
        "vm_types": (UNCERTAIN, "environment.cloud.vm_types"),
        "factors": (UNCERTAIN, "uncertainty.factors"),
        "stages": (STAGED, "stages.list"),
    }
    for name, (source, path) in lists.items():

        def twice(source: Path = source, path: str = path) -> bytes:
            doc = yaml.safe_load(source.read_text())
            node = doc
            for key in path.split("."):
                node = node[key]
            node.append(copy.deepcopy(node[0]))
            return _yaml(doc)

        cases.append(Case("duplicate", f"duplicate-{name}", twice))
    return cases


def log_cases() -> list[Case]:
    """calibrate's logs: each numeric cell of the first two rows of the seed-small logs mutated, a row given three
    times, and the trajectory log's encodings; each run with the other log as it is, into the seed."""
    logs = {k: (LOGS / f"seed-small-{k}.csv").read_text().splitlines() for k in ("trajectories", "steps")}
    cases = []
    for label, lines in logs.items():
        header = lines[0].split(",")
        for row in (1, 2):
            cells = lines[row].split(",")
            for column, cell in enumerate(cells):
                if not re.fullmatch(r"-?[0-9.]+", cell):
                    continue
                for kind, value in LEAF_VALUES.items():
                    mutated = list(cells)
                    mutated[column] = '"1,2"' if kind == "list" else str(value)
                    text = "\n".join([*lines[:row], ",".join(mutated), *lines[row + 1 :]]) + "\n"
                    name = f"log-{label}-row{row}-{header[column]}-{kind}"
                    cases.append(_log(f"log:{kind}", name, text.encode(), label))
        repeated = "\n".join([lines[0], lines[1], lines[1], lines[1], *lines[2:]]) + "\n"
        cases.append(_log("log:repeat", f"log-{label}-row1-thrice", repeated.encode(), label))
    text = "\n".join(logs["trajectories"]) + "\n"
    for kind, content in {
        "utf16": text.encode("utf-16"),
        "bom": codecs.BOM_UTF8 + text.encode(),
        "invalid-utf8": text.encode().replace(b"\n", b"\xff\n", 2),
        "nul": text.encode().replace(b",", b"\x00,", 1),
        "crlf": text.replace("\n", "\r\n").encode(),
        "empty": b"",
    }.items():
        cases.append(_log("log:encoding", f"log-trajectories-{kind}", content, "trajectories"))
    return cases


def _log(family: str, name: str, content: bytes, label: str) -> Case:
    logs = {k: str(LOGS / f"seed-small-{k}.csv") for k in ("trajectories", "steps")} | {label: FILE}
    options = ("--trajectories", logs["trajectories"], "--steps", logs["steps"], "--into", str(SEED), "--json")
    return Case(family, name, lambda: content, ".csv", command="calibrate", options=options)


def issue_cases() -> list[Case]:
    """The cases issue 40 lists, each through the command it names."""
    seed, staged = yaml.safe_load(SEED.read_text()), yaml.safe_load(STAGED.read_text())
    uncertain = yaml.safe_load(UNCERTAIN.read_text())

    def doc(base: dict, **edits: Any) -> Callable[[], bytes]:
        def make() -> bytes:
            out = copy.deepcopy(base)
            for path, value in edits.items():
                out = apply_edit(out, path.replace("__", "."), value)
            return _yaml(out)

        return make

    replan = {
        "capacity": "replan",
        "switch_time": "30m",
        "list": [
            {"name": "a", "iterations": 334, "tokens_per_attempt": 16384},
            {"name": "b", "iterations": 333, "tokens_per_attempt": 24576},
            {"name": "c", "iterations": 333, "tokens_per_attempt": 36864},
        ],
    }
    misspelled = {("workloads" if k == "workload" else k): v for k, v in seed.items()}
    return [
        Case("issue", "confidence-nan", given=str(UNCERTAIN), command="solve", options=("--confidence", "nan")),
        Case("issue", "report-staged-uncertain", doc(staged, uncertainty=uncertain["uncertainty"]), command="report"),
        Case("issue", "sweep-staged-replan", doc(staged, stages=replan), command="sweep"),
        Case("issue", "frontier-step-0.01s", doc(seed, schedule__cadence__step="0.01s"), command="frontier"),
        Case(
            "issue",
            "checkpoint-interval-1s",
            doc(
                seed,
                reliability={
                    "gpu_mtbf": "50000h",
                    "restart_time": "15m",
                    "checkpoint_time": "60s",
                    "checkpoint_interval": "1s",
                },
            ),
            command="solve",
        ),
        Case(
            "issue",
            "basis-wrong-value",
            doc(seed, planning__basis="wrong_value"),
            command="simulate",
            options=("--basis", "hold"),
        ),
        Case("issue", "count-startup-yes", doc(seed, schedule__count_startup="yes"), command="solve"),
        Case("issue", "deadline-5days", doc(seed, schedule__deadline="5days"), command="solve"),
        Case("issue", "misspelled-key", lambda: _yaml(misspelled), command="solve"),
        Case("issue", "switch-time-fixed", doc(staged, stages__switch_time="30m"), command="solve"),
        Case(
            "issue",
            "grid-at-cap",
            doc(seed, schedule__cadence__min="1us", schedule__cadence__max="1s"),
            command="solve",
        ),
    ]


def corpus() -> list[Case]:
    cases = leaf_cases() + enum_cases() + encoding_cases() + duplicate_cases() + log_cases() + issue_cases()
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    return cases
