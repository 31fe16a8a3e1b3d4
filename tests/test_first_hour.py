"""docs/first-hour.md quotes exactly the outputs docs/regenerate.d/first-hour.sh wrote, every one of them,
and its instance is valid (regenerate with: PYTHON=.venv/bin/python sh docs/regenerate.d/first-hour.sh)."""

from __future__ import annotations

import re
from pathlib import Path

from trainground.models.load import load_instance, read_document
from trainground.models.plausible import unit_warnings

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"<!-- output: (\S+) -->\n```\n(.*?)```\n", re.S)


def test_every_quoted_output_is_the_file_it_names():
    text = (DOCS / "first-hour.md").read_text(encoding="utf-8")
    quoted = {name: body for name, body in BLOCK.findall(text)}
    files = {f"docs/first-hour/{p.name}": p.read_text(encoding="utf-8") for p in (DOCS / "first-hour").glob("*.txt")}
    assert quoted == files
    assert all(body.strip() for body in quoted.values())


def test_the_walk_through_instance_is_valid_and_plausible():
    path = DOCS / "first-hour" / "my-run.yaml"
    inst = load_instance(path)
    assert (inst.name, [p.gpus for p in inst.gpu_pools]) == ("h100-h200-10d", [4096, 2048])
    assert unit_warnings(read_document(path)) == []


def test_the_prose_quotes_no_figure_its_outputs_do_not_show():
    """A figure with a decimal point in the prose (a computed one: 0.5442) must be in a quoted output, and the
    prose's start-up bullet must agree with what solve says of the start-up."""
    text = (DOCS / "first-hour.md").read_text(encoding="utf-8")
    outputs = "".join(body for _, body in BLOCK.findall(text))
    prose = BLOCK.sub("", text)
    prose = re.sub(r"```\n.*?```\n", "", prose, flags=re.S)  # the commands shown, not outputs
    figures = re.findall(r"(?<![\w.§])\d[\d,]*\.\d{2,}", prose)
    assert [f for f in figures if f not in outputs] == []
    solve = (DOCS / "first-hour" / "solve.txt").read_text(encoding="utf-8")
    if "start-up: counted" in solve:
        assert "not counted unless" not in prose
