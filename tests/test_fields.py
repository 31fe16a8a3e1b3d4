"""Every instance field is explained: `trainground schema` describes each property (meaning, then its
default or "Required."), and docs/fields.md is exactly what docs/tools/fields.py generates from it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from click.testing import CliRunner

from trainground.cli import main

ROOT = Path(__file__).resolve().parent.parent


def cli_schema() -> dict:
    result = CliRunner().invoke(main, ["schema"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def properties(node, where: str = "#"):
    """(json path, property schema, required?) of every property anywhere in the schema, $defs included."""
    if isinstance(node, dict):
        if "if" in node and "then" in node:
            return  # a conditional rule (which parameters a distribution takes), not fields
        required = set(node.get("required") or ())
        for name, prop in (node.get("properties") or {}).items():
            yield f"{where}/properties/{name}", prop, name in required
        for key, value in node.items():
            yield from properties(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from properties(value, f"{where}/{i}")


def test_every_property_has_a_description():
    found = list(properties(cli_schema()))
    assert len(found) > 90  # the walk reaches nested sections, list items and every union member
    missing = [where for where, prop, _ in found if not str(prop.get("description", "")).strip()]
    assert missing == []


def test_every_description_ends_with_its_default_or_required():
    schema = cli_schema()
    for where, prop, required in properties(schema):
        text = prop["description"]
        if required:
            assert text.endswith("Required."), where
        else:
            assert "Default: " in text and "Required." not in text, where


def test_descriptions_state_units_and_seed_values_where_they_have_them():
    defs = cli_schema()["$defs"]
    deadline = defs["Schedule"]["properties"]["deadline"]["description"]
    assert "Unit: seconds, or a string with a unit" in deadline and "Seed: 7d." in deadline
    price = defs["GpuPool"]["properties"]["gpu_hour_cost"]["description"]
    assert "$ per GPU-hour" in price and "Seed: 2.0." in price
    cap = defs["Environment"]["properties"]["utilisation_cap"]["description"]
    assert "Default: 1." in cap and "Typical: 0.7-0.9" in cap


def generator():
    spec = importlib.util.spec_from_file_location("fields_doc", ROOT / "docs" / "tools" / "fields.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_fields_md_is_the_generators_output():
    """Regenerate with: sh docs/regenerate.d/fields.sh"""
    text = generator().render()
    assert (ROOT / "docs" / "fields.md").read_text(encoding="utf-8") == text


def test_docs_fields_md_lists_every_leaf_field():
    text = (ROOT / "docs" / "fields.md").read_text(encoding="utf-8")
    for path in (
        "environment.cloud.vm_types[].billed_fraction",
        "freshness.group_correlation",
        "training.update_time.serial_fraction",
        "environment.occupancy.csv",
        "gpu_pools[].billing",
        "uncertainty.factors[].paths",
    ):
        assert f"| `{path}`" in text, path
