"""The docs say what the code does: every marked output block equals the output file docs/regenerate.sh
wrote (no command is rerun here), every link points at a file of the repository, the README stays short,
and its set-up commands are the ones CI runs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from docs.tools import fill

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_every_output_block_matches_its_file():
    assert fill.main(["--check"]) == 0, "a doc is out of date: run docs/regenerate.sh (or docs/tools/fill.py)"


def test_fill_replaces_a_stale_block_and_fences_backticks(tmp_path, monkeypatch):
    monkeypatch.setattr(fill, "ROOT", tmp_path)
    (tmp_path / "out.txt").write_text("$ echo '```'\n```\n")
    doc = tmp_path / "doc.md"
    text = "intro\n<!-- output: out.txt -->\n```text\nold\n```\nafter\n"
    filled = fill.fill(text, doc)
    assert filled == "intro\n<!-- output: out.txt -->\n````text\n$ echo '```'\n```\n````\nafter\n"
    assert fill.fill(filled, doc) == filled
    with pytest.raises(SystemExit, match="missing.txt does not exist"):
        fill.fill("<!-- output: missing.txt -->\n", doc)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_links_point_at_files_of_the_repository(doc):
    broken = []
    for target in LINK.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (doc.parent / target.split("#")[0]).resolve()
        if not path.is_relative_to(ROOT) or not path.exists():
            broken.append(target)
    assert not broken, f"{doc.name}: links to nothing in the repository: {broken}"


def test_readme_is_short_and_self_contained():
    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) <= 15_000
    assert "../" not in text and "/work/" not in text
    assert "(docs/model.md)" in text


def test_readme_set_up_is_what_ci_runs():
    """The README's first code block, command by command, appears in .ci/run in the same order."""
    block = re.search(r"```\n(.*?)```", README.read_text(encoding="utf-8"), re.S)[1]
    commands = [shlex.split(c) for line in block.splitlines() for c in line.split("&&")]
    ci = [
        shlex.split(line)
        for line in (ROOT / ".ci/run").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    quiet = [[word for word in line if word != "-q"] for line in ci]
    position = 0
    for command in commands:
        plain = [word for word in command if word != "-q"]
        if plain[0] == ".":  # activating the venv again in a new shell
            assert plain in quiet
            continue
        assert plain in quiet[position:], f"README runs {' '.join(command)!r}, which .ci/run does not (in order)"
        position = quiet.index(plain, position) + 1


def test_the_model_page_names_every_result_and_instance_field():
    """docs/model.md stays in step with the schemas: every top-level instance field and every key of the
    result, its plan and its metrics appears in it (as code, a JSON key or a key of the example file)."""
    from trainground.models.instance import Instance
    from trainground.models.result import Metrics, Plan, Result

    text = (ROOT / "docs" / "model.md").read_text(encoding="utf-8")
    missing = [
        f"{schema.__name__}.{name}"
        for schema in (Instance, Result, Plan, Metrics)
        for name in schema.model_fields
        if not any(form in text for form in (f"`{name}`", f'"{name}"', f"\n{name}:", f"\n  {name}:"))
    ]
    assert not missing, f"docs/model.md does not name: {missing}"
