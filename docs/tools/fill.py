"""Put generated output into the docs: every ``<!-- output: PATH -->`` line in a markdown file is followed
by a fenced block holding the file PATH (relative to the repository root), replaced on each run.

    python docs/tools/fill.py [--check] [FILE.md ...]    (default: README.md, CONTRIBUTING.md, docs/*.md)

``--check`` changes nothing and exits 1 naming each file whose blocks differ from their outputs (the
test suite runs it); a missing output file is an error in both modes. The outputs themselves are
written by docs/regenerate.sh.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- output: (?P<path>\S+) -->$")
FENCE = re.compile(r"^(?P<ticks>`{3,})(?P<lang>[\w-]*)\s*$")


def default_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [f for f in files if f.is_file()]


def fence_for(text: str, lang: str) -> tuple[str, str]:
    longest = max((len(m.group()) for m in re.finditer(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return ticks + lang, ticks


def fill(markdown: str, where: Path) -> str:
    """``markdown`` with each marked block replaced by its output file's content."""
    lines = markdown.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        match = MARKER.match(line)
        if not match:
            continue
        source = ROOT / match["path"]
        if not source.is_file():
            raise SystemExit(f"{where.relative_to(ROOT)}: {match['path']} does not exist (run docs/regenerate.sh)")
        lang = "console"
        opening = FENCE.match(lines[i]) if i < len(lines) else None
        if opening:  # drop the old block, keep its language (none stays none)
            lang = opening["lang"]
            close = next((j for j in range(i + 1, len(lines)) if lines[j] == opening["ticks"]), None)
            if close is None:
                raise SystemExit(f"{where.relative_to(ROOT)}:{i + 1}: the block after the output marker never closes")
            i = close + 1
        content = source.read_text(encoding="utf-8").rstrip("\n")
        start, end = fence_for(content, lang)
        out.extend([start, *content.split("\n"), end])
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a doc is out of date")
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args(argv)
    stale = []
    for path in [p.resolve() for p in args.files] or default_files():
        text = path.read_text(encoding="utf-8")
        filled = fill(text, path)
        if filled != text:
            stale.append(path.relative_to(ROOT).as_posix())
            if not args.check:
                path.write_text(filled, encoding="utf-8")
    if args.check and stale:
        print("out of date (run python docs/tools/fill.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
