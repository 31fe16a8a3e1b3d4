"""Fitted fields in the calibrated instance's YAML text: a placeholder per field, replaced by ``value  # comment``
(the comment names the figure's source, rows and interval), and the rule that a figure from too few rows is
reported, never written."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from trainground.calibrate.figures import Figure

if TYPE_CHECKING:
    from trainground.calibrate.fit import Calibration

MIN_ROWS = 3  # a figure from fewer rows is reported, never written into the instance


class Fields:
    """Placeholders and the text that replaces each: ``value  # comment``."""

    def __init__(self):
        self.text: dict[str, str] = {}

    def put(self, value: str, note: str) -> str:
        key = f"__CALIBRATED_{len(self.text)}__"
        self.text[key] = f"{value}  # {note}"
        return key


def number(value: float) -> str:
    """A float PyYAML reads back as a float (six significant digits, never '1e-05')."""
    text = f"{value:.6g}"
    if "e" in text or "inf" in text or "nan" in text:
        text = f"{value:.12f}".rstrip("0")
    return text if "." in text else text + ".0"


def interval(f: Figure) -> str:
    if f.low is None or f.high is None:
        return "no interval"
    return f"90 % interval {number(f.low)}-{number(f.high)}"


def comment(f: Figure, what: str | None = None) -> str:
    file, _, keys = f.source.partition(": ")
    where = Path(file.split(" (")[0]).name + (f" ({keys})" if keys else "")
    return f"calibrated{': ' + what if what else ''}: {f.rows:,} rows of {where}, {interval(f)}"


def enough(cal: Calibration, figure: Figure, what: str) -> bool:
    """Whether ``figure`` has the rows to be written; when not, a note says it is reported only, and why."""
    if figure.rows >= MIN_ROWS:
        return True
    if what not in cal.unwritten:
        cal.unwritten.append(what)
    note = (
        f"not written: {what} ({figure.value:,.4g} {figure.unit} from {figure.rows:,} row"
        f"{'s' if figure.rows != 1 else ''} of {Path(figure.source.partition(': ')[0]).name}): a figure needs "
        f"{MIN_ROWS} rows to go into the instance; it is reported above"
    )
    if note not in cal.notes:
        cal.notes.append(note)
    return False
