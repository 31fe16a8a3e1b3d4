"""The hostile corpus by mutation families (tests/mutations.py; bench/mutations.py runs a sample of it through
every command): it covers every family the issue lists, every bundled instance's numeric leaves and every enum of
the schema, and its families that no reading can accept are refused by `solve` with one message naming the file,
never an internal error."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.mutations import BUNDLED, LEAF_VALUES, SEED, corpus, enum_fields, leaves
from trainground.cli import main


@pytest.fixture(scope="module")
def cases():
    return corpus()


def test_the_corpus_covers_every_family_leaf_and_enum(cases):
    families = Counter(case.family for case in cases)
    assert {f"leaf:{kind}" for kind in LEAF_VALUES} <= set(families)
    assert {"enum:value", "enum:bad", "encoding", "duplicate", "issue", "log:repeat", "log:encoding"} <= set(families)
    named = {case.name.split("--")[0] for case in cases if case.family.startswith("leaf:")}
    assert named == {path.stem for path in BUNDLED}  # every bundled instance gives leaves
    seed_leaves = leaves(yaml.safe_load(SEED.read_text()))
    assert {"workload.iterations", "schedule.deadline", "gpu_pools[0].gpu_hour_cost"} <= set(seed_leaves)
    bad = {case.name.split("--")[1] for case in cases if case.family == "enum:bad"}
    assert {"objective", "planning.basis", "stages.capacity", "freshness.overrun_policy"} <= bad
    assert len(bad) >= len(enum_fields()) - 4  # a field of a law or section no base file has is skipped


def refused(case, folder: Path) -> list[str]:
    """What is wrong with `solve` on ``case`` if it must be refused (exit 2, one message naming the file)."""
    file = case.write(folder)
    result = CliRunner().invoke(main, ["solve", file])
    problems = []
    if result.exit_code != 2:
        problems.append(f"exit {result.exit_code}")
    if "Traceback" in result.output or (result.exception and not isinstance(result.exception, SystemExit)):
        problems.append(f"raised {result.exception!r}")
    lines = result.stderr.strip().splitlines()
    if not lines or not lines[0].startswith(f"{file}: "):
        problems.append(f"message does not name the file: {result.stderr[:200]!r}")
    return problems


REFUSED_ENCODINGS = {"utf16", "latin1", "invalid-utf8", "nul", "empty", "binary", "utf16-json", "latin1-json"}


def test_bad_enums_duplicates_and_unreadable_encodings_are_refused_naming_the_file(cases, tmp_path):
    chosen = [c for c in cases if c.family in ("enum:bad", "duplicate")]
    chosen += [c for c in cases if c.family == "encoding" and c.name.removeprefix("encoding-") in REFUSED_ENCODINGS]
    assert len(chosen) >= 30
    failed = {c.name: p for c in chosen if (p := refused(c, tmp_path))}
    assert not failed, failed


def test_the_seeds_leaves_set_to_nan_are_refused_naming_the_file(cases, tmp_path):
    chosen = [c for c in cases if c.family == "leaf:nan" and c.name.startswith(f"{SEED.stem}--")]
    assert len(chosen) >= 35
    failed = {c.name: p for c in chosen if (p := refused(c, tmp_path))}
    assert not failed, failed
