"""`trainground schema` prints a JSON Schema that accepts every bundled instance and refuses broken ones.

The instances directory is globbed when the tests are collected, so files added there are checked too.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from trainground.cli import main
from trainground.models.load import EXTENSIONS, read_document

ROOT = Path(__file__).resolve().parent.parent
INSTANCES = ROOT / "instances"
INVALID = Path(__file__).resolve().parent / "data" / "invalid"


def _instance_files() -> list[Path]:
    return sorted(p for p in INSTANCES.iterdir() if p.is_file() and p.suffix.lower() in EXTENSIONS)


@pytest.fixture(scope="module")
def schema() -> dict:
    result = CliRunner().invoke(main, ["schema"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def validator(schema: dict) -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _errors(validator, data) -> list[str]:
    """Every error as 'json/path: message', including those under oneOf/anyOf branches."""
    out: list[str] = []

    def add(error) -> None:
        out.append(f"{'/'.join(map(str, error.absolute_path)) or '<root>'}: {error.message}")
        for sub in error.context or ():
            add(sub)

    for error in validator.iter_errors(data):
        add(error)
    return out


def test_schema_is_valid_json_schema(schema: dict):
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object" and schema["additionalProperties"] is False


def test_schema_uses_only_json_schema_keywords(schema: dict):
    """pydantic writes its own 'gt'/'ge' when a constraint sits outside a validator; those bind nothing."""
    found: list[str] = []

    def walk(node, where: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in {"gt", "ge", "lt", "le", "min_length", "max_length"} and not where.endswith("/properties"):
                    found.append(f"{where}/{key}")
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}/{i}")

    walk(schema, "#")
    assert not found


def test_there_are_instances():
    assert _instance_files(), f"no instance files in {INSTANCES}"
    assert (INSTANCES / "seed-week-75.yaml") in _instance_files()


@pytest.mark.parametrize("path", _instance_files(), ids=lambda p: p.name)
def test_schema_validates_instance(validator, path: Path):
    data = read_document(path)
    assert not _errors(validator, data)


@pytest.mark.parametrize("deadline", [604800, 604800.0, "7d", "168h", "604800s", "604800", "1.5w"], ids=repr)
def test_durations_may_be_numbers_or_strings(validator, deadline):
    data = copy.deepcopy(read_document(INSTANCES / "seed-week-75.yaml"))
    data["schedule"]["deadline"] = deadline
    assert not _errors(validator, data)


BROKEN = [
    ("unit-unreadable.yaml", "schedule/deadline"),
    ("unit-parsecs.yaml", "training/update_time/reference_time"),
    ("unknown-nested-key.yaml", "workload"),
    ("unknown-top-level-key.yaml", "<root>"),
    ("missing-section.yaml", "<root>"),
    ("intake-rate-above-one.yaml", "workload/intake_rate"),
    ("availability-zero.yaml", "inference/availability"),
    ("negative-number.yaml", "inference/shapes/0/tokens_per_gpu_s"),
    ("zero-gpus-per-group.yaml", "training/gpus_per_group"),
    ("wrong-type-bool-for-int.yaml", "workload/group_size"),
    ("wrong-type-string-for-int.yaml", "workload/iterations"),
    ("wrong-objective.yaml", "objective"),
    ("occupancy-unknown-distribution.yaml", "environment/occupancy"),
    ("update-time-unknown-law.yaml", "training/update_time"),
    ("json-negative-node-density.json", "environment/node_types/0/density/container"),
    ("regime-mode-unknown.yaml", "regime/mode"),
]


@pytest.mark.parametrize("name, where", BROKEN, ids=[name for name, _ in BROKEN])
def test_schema_refuses_broken_instances(validator, name: str, where: str):
    """The schema is not vacuous: field-level breaks in the corpus fail it at the broken field."""
    errors = _errors(validator, read_document(INVALID / name))
    assert any(e.startswith(f"{where}: ") for e in errors), errors
