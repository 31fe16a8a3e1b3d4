"""The pieces of a self-contained HTML page: tables whose cells carry their number, the commands' own text
(rich, exported with inline styles), PNG plots embedded as base64. Nothing refers to the network."""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Callable, Sequence
from html import escape
from typing import Any

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1180px; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
table.figures { border-collapse: collapse; margin: .6em 0; }
table.figures th, table.figures td { border: 1px solid #ddd; padding: .25em .6em; text-align: right; }
table.figures td { white-space: nowrap; } table.figures th { background: #f4f4f4; } table.figures td.name, table.figures th.name { text-align: left; }
pre.term { font-family: monospace; font-size: 12px; background: #fbfbfb; border: 1px solid #eee; padding: .6em;
  overflow-x: auto; line-height: 1.25; }
img.plot { max-width: 100%; border: 1px solid #eee; }
p.note { color: #555; } p.lead { font-size: 1.15em; }
details { margin: .6em 0; } summary { cursor: pointer; color: #555; }
"""
TERMINAL_COLUMNS = 140  # the width the commands' text is laid out at


def page(title: str, sections: Sequence[str], data: dict) -> str:
    """The whole document; ``data`` (JSON-ready) is embedded as a JSON data block for programs reading the page."""
    blob = json.dumps(data, allow_nan=False).replace("</", "<\\/")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        f"<h1>{escape(title)}</h1>\n" + "\n".join(sections) + "\n"
        f'<script type="application/json" id="trainground-data">{blob}</script>\n'
        "</body>\n</html>\n"
    )


def section(anchor: str, heading: str, *parts: str) -> str:
    return f'<section id="{escape(anchor)}">\n<h2>{escape(heading)}</h2>\n' + "\n".join(parts) + "\n</section>"


def note(text: str) -> str:
    """A paragraph of prose; a `span in backticks` (a command, a path, a field) shows as code."""
    return '<p class="note">' + re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(text)) + "</p>"


def lead(text: str) -> str:
    """An opening paragraph of the page (what to run, what it costs, whether it holds); a `span in backticks`
    shows as code."""
    return '<p class="lead">' + re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(text)) + "</p>"


Cell = tuple[str, Any, str]  # (data key, value, text shown); key "" for a cell that carries no number


def figures(header: Sequence[str], rows: Sequence[Sequence[Cell | str]]) -> str:
    """A table: a plain string is a name cell; a (key, value, text) cell shows ``text`` and carries ``value``
    in ``data-value`` (JSON) under ``data-key``, so that a reader of the page can check it against the JSON."""
    head = "".join(f'<th class="{"name" if i == 0 else "num"}">{escape(h)}</th>' for i, h in enumerate(header))
    body = []
    for row in rows:
        cells = []
        for cell in row:
            if isinstance(cell, str):
                cells.append(f'<td class="name">{escape(cell)}</td>')
                continue
            key, value, text = cell
            attrs = f' data-key="{escape(key)}" data-value="{escape(json.dumps(value))}"' if key else ""
            cells.append(f"<td{attrs}>{escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<table class="figures">\n<thead><tr>{head}</tr></thead>\n<tbody>\n' + "\n".join(body) + "\n</tbody>\n</table>"
    )


def terminal(draw: Callable[[Any], None], what: str | None = "the command's own output") -> str:
    """What ``draw(console)`` prints, as the terminal shows it (colours inline, no stylesheet), folded under
    ``what`` (the tables above it carry the key numbers; None: shown open, where the text is the answer)."""
    from rich.console import Console

    console = Console(record=True, width=TERMINAL_COLUMNS, file=io.StringIO(), color_system="truecolor")
    draw(console)
    text = console.export_html(inline_styles=True, code_format='<pre class="term">{code}</pre>')
    if what is None:
        return text
    return f"<details>\n<summary>{escape(what)}</summary>\n{text}\n</details>"


def image(png: bytes, alt: str) -> str:
    return f'<p><img class="plot" alt="{escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}"></p>'


def money(x: float | None) -> str:
    return "n/a" if x is None else f"${x:,.0f}"


def share(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2%}"


def seconds(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.0f} s ({x / 86400:.3f} d)"
