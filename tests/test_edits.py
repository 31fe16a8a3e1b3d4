"""Field edits by MODEL.md path: values read as a file's YAML reads them, documents never changed in place."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import examples
from trainground.models.documents import EXPONENT
from trainground.models.edits import apply_edit, parse_value
from trainground.models.load import read_document

INSTANCES = Path(__file__).resolve().parents[1] / "instances"

NUMBER_TEXT = st.from_regex(r"\A[-+]?[0-9]{0,4}(\.[0-9]{0,4})?([eE][-+]?[0-9]{1,2})?\Z")


@settings(max_examples=examples(400), deadline=None)
@given(
    NUMBER_TEXT
    | st.sampled_from(
        [
            "7d",
            "1e3",
            "1.5e+3",
            "010",
            "0x1F",
            ".5",
            "-.5",
            "+7",
            "-0",
            "0.",
            "null",
            "true",
            "yes",
            "[1, 2]",
            "{a: 1}",
            " 76",
            "76 ",
            "1_000",
            "",
        ]
    )
)
def test_parse_value_reads_like_a_file(text):
    """As YAML reads a value in a file, exponent notation without a decimal point (1e3) included: a number."""
    expected = yaml.safe_load(text) if text.strip() else ""
    if EXPONENT.fullmatch(text):
        expected = float(text)
    got = parse_value(text)
    assert type(got) is type(expected)
    assert got == expected or (isinstance(got, float) and math.isnan(got) and math.isnan(expected))


def test_apply_edit_copies_only_the_path():
    doc = read_document(INSTANCES / "seed-week-75.yaml")
    before = copy.deepcopy(doc)
    out = apply_edit(doc, "inference.shapes[0].tokens_per_gpu_s", 90.0)
    assert doc == before  # the input is untouched
    assert out["inference"]["shapes"][0]["tokens_per_gpu_s"] == 90.0
    assert out["environment"] is doc["environment"]  # off the path: shared, not copied
    assert out["inference"]["shapes"] is not doc["inference"]["shapes"]
    again = apply_edit(out, "inference.shapes[0].tokens_per_gpu_s", 60.0)
    assert (
        out["inference"]["shapes"][0]["tokens_per_gpu_s"] == 90.0
        and again["inference"]["shapes"][0]["tokens_per_gpu_s"] == 60.0
    )


def test_apply_edit_creates_missing_mappings():
    doc = {"name": "x"}
    out = apply_edit(doc, "limits.max_hourly_cost", 5.0)
    assert out == {"name": "x", "limits": {"max_hourly_cost": 5.0}} and doc == {"name": "x"}


@pytest.mark.parametrize(
    "path, rule",
    [
        ("inference.shapes[9].tokens_per_gpu_s", "inference.shapes[9]: no such list item"),
        ("name.first", "name.first: not a mapping"),
        ("name.first.second", "name.first: not a mapping"),
        ("gpu_pools[0][1]", "gpu_pools[0][1]: no such list item"),
        ("a..b[", "cannot read field path"),
    ],
)
def test_apply_edit_rejects_paths_that_do_not_exist(path, rule):
    doc = read_document(INSTANCES / "seed-week-75.yaml")
    before = copy.deepcopy(doc)
    with pytest.raises(ValueError, match=rule.replace("[", r"\[").replace("]", r"\]")):
        apply_edit(doc, path, 1)
    assert doc == before
