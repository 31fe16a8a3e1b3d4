"""`trainground init` writes a commented starter instance: every schema field present (or, for the other
kinds of a tagged union, explained in a comment), each preceded by its description; it validates and solves."""

from __future__ import annotations

import re

import pytest
import yaml
from click.testing import CliRunner

from trainground.cli import main
from trainground.models.fields import field_docs
from trainground.models.load import InstanceError, validate
from trainground.solver.solve import solve_instance
from trainground.solver.verify.plan import verify_plan


def init(*args: str) -> str:
    result = CliRunner().invoke(main, ["init", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def paths(node, prefix: str = "") -> set[str]:
    """Every key path of a document, list indices as []."""
    out: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{prefix}.{key}" if prefix else key
            out.add(here)
            if not re.search(r"density$|eligible_share$", here):
                out |= paths(value, here)
    elif isinstance(node, list):
        for item in node:
            out |= paths(item, f"{prefix}[]")
    return out


@pytest.mark.parametrize(
    "args, pools, backends", [((), 1, 1), (("--pools", "3", "--backends", "container,microvm,vm"), 3, 3)]
)
def test_init_output_validates_and_solves(args, pools, backends):
    text = init(*args)
    inst = validate(yaml.safe_load(text), "starter.yaml")
    assert (len(inst.gpu_pools), len(inst.environment.backends)) == (pools, backends)
    assert sum(b.share for b in inst.environment.backends) == pytest.approx(1.0, abs=1e-9)
    result = solve_instance(inst)
    assert result.status == "optimal", result.message
    assert verify_plan(inst, result.plan).violations == []


def test_every_field_is_present_and_explained():
    text = init("--pools", "2", "--backends", "container,microvm")
    present = paths(yaml.safe_load(text)) | paths(yaml.safe_load(uncommented(text)))
    comments = "\n".join(line.strip().lstrip("# ") for line in text.splitlines() if line.strip().startswith("#"))
    chosen = {"law: inverse", "distribution: lognormal"}
    for doc in field_docs():
        if doc.variant is None or doc.variant in chosen:
            assert doc.path in present, doc.path
        else:  # another kind of union: named in an "Instead, law: table: ..." comment
            assert f"Instead, {doc.variant}:" in " ".join(comments.split()), doc.variant
            assert doc.path.rsplit(".", 1)[-1].split("[")[0] in comments, doc.path
    flat = " ".join(comments.split())
    for doc in field_docs():  # each description in full, once wrapped lines are joined again
        assert " ".join(doc.description.split()) in flat, doc.path


def uncommented(text: str, only: str | None = None) -> str:
    """The starter with its optional blocks (between the OPTIONAL_START and OPTIONAL_END lines) uncommented:
    every one, or the one named ``only``."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("# ---- optional, uncomment to use:"):
            inside = only is None or line.endswith(f": {only} ----")
        elif line.startswith("# ---- end of "):
            inside = False
        elif inside:
            out.append(line[2:])
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def test_the_optional_reliability_block_uncommented_is_the_sourced_figures():
    text = init()
    assert "reliability" not in yaml.safe_load(text)  # off unless the user uncomments it
    inst = validate(yaml.safe_load(uncommented(text, "reliability")), "starter.yaml")
    rel = inst.reliability
    assert (rel.gpu_mtbf, rel.restart_time, rel.checkpoint_time) == (50000 * 3600.0, 900.0, 60.0)
    assert (rel.checkpoint_interval, rel.weight_sync_time) == ("auto", 16.0)


def test_init_writes_a_file_and_refuses_to_overwrite_it(tmp_path):
    out = tmp_path / "run.yaml"
    first = CliRunner().invoke(main, ["init", "-o", str(out)])
    assert first.exit_code == 0 and out.read_text().startswith("# Starter instance")
    again = CliRunner().invoke(main, ["init", "-o", str(out)])
    assert again.exit_code == 2 and "--force" in again.output
    assert CliRunner().invoke(main, ["init", "-o", str(out), "--force", "--pools", "2"]).exit_code == 0
    assert "pool2" in out.read_text()


@pytest.mark.parametrize(
    "args, message",
    [
        (("-o", "x.json"), ".yaml"),
        (("--backends", "a,,b"), "--backends"),
        (("--backends", "a,a"), "distinct"),
        (("--pools", "0"), "--pools"),
    ],
)
def test_init_refuses_bad_options(args, message, tmp_path):
    result = CliRunner().invoke(main, ["init", *args])
    assert result.exit_code == 2 and message in result.output


def test_the_optional_stages_block_uncommented_plans_three_stages_on_the_default_basis():
    text = init()
    assert "stages" not in yaml.safe_load(text)
    document = yaml.safe_load(uncommented(text, "stages"))
    inst = validate(document, "starter.yaml")
    assert inst.holds  # staged plans hold (MODEL §12 under §11)
    assert [s.tokens_per_attempt for s in inst.stages.list] == [16384, None, 49152]
    document["uncertainty"]["confidence"] = 0.9
    with pytest.raises(InstanceError, match="uncertainty.confidence: is not available with stages"):
        validate(document, "starter.yaml")
    assert sum(s.iterations for s in inst.stages.list) == inst.workload.iterations
