"""Reading a log file into named columns (CSV, JSONL or Parquet, through pyarrow) and turning cells into numbers.

Every problem is an :class:`~models.load.InstanceError` naming the file and, where there is one, the
row and the column: ``steps.csv: row 12 (line 13), column 'update_s': must be >= 0, got -3``. Rows
count data rows from 1; the line is the file's line (CSV: the header is line 1; JSONL: row = line).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

import numpy as np

from trainground.calibrate.guards import check_header, check_text
from trainground.models.load import InstanceError, Problem

FORMATS = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}


EPOCH_AFTER = 1e9  # numeric times from here on (2001-09-09) are Unix seconds, not seconds from the run's start
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "min": 60.0, "h": 3600.0}  # declared as COLUMN:UNIT
MAX_BAD_SHARE = 0.01  # default share of a log's rows that may be set aside for a bad cell before it is refused


@dataclass
class Table:
    """A log file's columns (pyarrow arrays by name), how to name a row of it in a message, and the rows set
    aside for a bad cell (counted; above a share of the log the log is refused, naming the first)."""

    file: str
    kind: str
    columns: dict
    rows: int
    sources: dict = field(default_factory=dict)  # name read as -> the file's own column name (--columns)
    scales: dict = field(default_factory=dict)  # name read as -> seconds per unit of the file's numbers
    bad: np.ndarray | None = None  # rows set aside
    reasons: list = field(default_factory=list)  # (rows, first row, column, rule) per problem found
    line_of: list[int] | None = None  # console and JSONL records: the file's line each row starts at

    def label(self, column: str) -> str:
        source = self.sources.get(column, column)
        return f"'{source}'" if source == column else f"'{source}' (read as {column})"

    def where(self, row: int, column: str) -> str:
        if self.line_of is not None and row < len(self.line_of):
            return f"row {row + 1} (line {self.line_of[row]}), column {self.label(column)}"
        line = {"csv": f" (line {row + 2})", "jsonl": f" (line {row + 1})"}.get(self.kind, "")
        return f"row {row + 1}{line}, column {self.label(column)}"

    def fail(self, row: int | None, column: str | None, rule: str) -> NoReturn:
        path = self.where(row, column) if row is not None else (f"column {self.label(column)}" if column else "")
        raise InstanceError(self.file, [Problem(path, rule)])

    def has(self, name: str) -> bool:
        return name in self.columns

    def column(self, name: str):
        """The column as a pyarrow array; a column of objects or lists is refused (a log cell is flat)."""
        import pyarrow as pa

        col = self.columns[name]
        if pa.types.is_nested(col.type):
            row = int(np.argmax(col.is_valid().to_numpy(zero_copy_only=False))) if len(col) else 0
            self.fail(row, name, f"holds nested values ({col.type}): a log cell is a number, a time or a name")
        return col

    def require(self, *names: str) -> None:
        missing = [n for n in names if n not in self.columns]
        if missing:
            have = ", ".join(self.sources.get(n, n) for n in self.columns) or "none"
            named = ", ".join(self.label(m) for m in missing)
            self.fail(None, None, f"missing column{'s' if len(missing) > 1 else ''} {named} (have: {have})")

    def skip(self, mask: np.ndarray, column: str, describe) -> None:
        """Set aside the rows of ``mask`` for a bad cell of ``column``; ``describe(row)`` is the rule broken."""
        if not mask.any():
            return
        if self.bad is None:
            self.bad = np.zeros(self.rows, bool)
        row = int(np.argmax(mask))
        self.bad |= mask
        self.reasons.append((int(mask.sum()), row, column, describe(row)))

    def settle(self, max_share: float = MAX_BAD_SHARE) -> np.ndarray | None:
        """The rows kept (None: all), after refusing the log when more than ``max_share`` of it is bad."""
        if self.bad is None:
            return None
        count = int(self.bad.sum())
        if count > max_share * self.rows:
            _, row, column, rule = min(self.reasons, key=lambda r: r[1])
            self.fail(
                row,
                column,
                f"{rule}; {count:,} of {self.rows:,} rows have a bad cell, more than the {max_share:.0%} "
                "a log may skip (--max-bad-rows)",
            )
        return ~self.bad

    def skipped_note(self) -> str | None:
        if self.bad is None:
            return None
        kinds = "; ".join(
            f"{n:,} at column {self.label(c)} (first: {self.where(r, c).split(',')[0]}, {rule})"
            for n, r, c, rule in self.reasons
        )
        return f"{Path(self.file).name}: {int(self.bad.sum()):,} of {self.rows:,} rows skipped for a bad cell: {kinds}"


def _need_pyarrow(file: str):
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise InstanceError(
            file, [Problem("", "reading logs needs pyarrow: pip install 'trainground[parquet]'")]
        ) from None


def read_table(path: str | Path, mapping: dict[str, str] | None = None, nan_is_empty: bool = True) -> Table:
    """The file's columns, renamed by ``mapping`` (name read as -> the file's column name); ``nan_is_empty``:
    a CSV ``nan``/``NaN`` cell reads as empty (else as NaN, a framework export's missing value); InstanceError for
    a missing, empty, unreadable or unknown-type file, a byte that is not UTF-8, too deep a nesting or a
    column named twice."""
    path = Path(path)
    file = str(path)
    if not path.exists():
        raise InstanceError(file, [Problem("", "no such file")])
    if path.is_dir():
        raise InstanceError(file, [Problem("", "is a directory, not a log file")])
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise InstanceError(file, [Problem("", f"unknown log type '{path.suffix}': use .csv, .jsonl or .parquet")])
    if path.stat().st_size == 0:
        raise InstanceError(file, [Problem("", "empty file: a log needs a header (or keys) and at least one row")])
    _need_pyarrow(file)
    import pyarrow as pa

    if kind != "parquet":
        check_text(path, kind)
    try:
        table = _read(path, kind, nan_is_empty)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError, ValueError) as exc:
        raise InstanceError(file, [Problem("", f"cannot read as {kind.upper()}: {_first_line(exc)}")]) from None
    check_header(file, table.column_names)
    if table.num_rows == 0:
        raise InstanceError(file, [Problem("", "no rows: the log has a header but no data")])
    columns = {name: table.column(i).combine_chunks() for i, name in enumerate(table.column_names)}
    sources, scales = {}, {}
    for name, spec in (mapping or {}).items():
        source, unit = split_unit(spec)
        if source in columns:
            columns[name] = columns.pop(source)
            sources[name] = source
        if unit is not None:
            scales[name] = UNITS[unit]
    return Table(file, kind, columns, table.num_rows, sources, scales)


def split_unit(spec: str) -> tuple[str, str | None]:
    """``COLUMN:UNIT`` (a unit of UNITS) -> (COLUMN, UNIT); anything else is a column name alone."""
    head, _, unit = spec.rpartition(":")
    return (head, unit) if head and unit in UNITS else (spec, None)


def _read(path: Path, kind: str, nan_is_empty: bool = True):
    if kind == "parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path)
    if kind == "jsonl":
        import pyarrow.json as pj

        return pj.read_json(path)
    import pyarrow.csv as pcsv

    if nan_is_empty:
        return pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(strings_can_be_null=True))
    return pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(strings_can_be_null=True, null_values=[""]))


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


NUMBER = r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$|^\s*[+-]?(nan|inf|infinity)\s*$"


def numbers(table: Table, name: str, *, minimum: float | None = None, allow_null: bool = True) -> np.ndarray:
    """Column ``name`` as float64 (NaN for an empty cell). A cell that is no number, NaN, infinite, below
    ``minimum``, or empty when that is not allowed sets its row aside (``Table.skip``) and reads as NaN."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = table.column(name)
    if pa.types.is_boolean(col.type):
        col = pc.cast(col, pa.int8())
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type) or pa.types.is_null(col.type)):
        col = _cast_text(table, name, col)
    values = col.to_numpy(zero_copy_only=False).astype(np.float64, copy=True)
    empty = col.is_null().to_numpy(zero_copy_only=False) if col.null_count else np.zeros(values.size, bool)
    values[empty] = np.nan
    table.skip(np.isnan(values) & ~empty, name, lambda row: "is NaN (not a number)")
    table.skip(np.isinf(values), name, lambda row: f"must be finite, got {values[row]}")
    if not allow_null:
        table.skip(empty, name, lambda row: "is empty (a value is required)")
    if minimum is not None:
        table.skip(values < minimum, name, lambda row: f"must be >= {minimum:g}, got {values[row]:g}")
        values[values < minimum] = np.nan
    values[np.isinf(values)] = np.nan
    return values * table.scales[name] if name in table.scales else values


def _cast_text(table: Table, name: str, col):
    """Text cells as numbers; a cell that is no number sets its row aside and reads as empty."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text = col.cast(pa.string()) if not pa.types.is_string(col.type) else col
    blank = pc.equal(pc.utf8_trim_whitespace(text), "")
    number = pc.match_substring_regex(text, NUMBER, ignore_case=True)
    wrong = pc.and_(pc.invert(number), pc.invert(blank)).fill_null(False).to_numpy(zero_copy_only=False)
    cells = text.to_pylist() if wrong.any() else []
    table.skip(wrong, name, lambda row: f"{cells[row]!r} is not a number")
    keep = pc.if_else(pc.or_(blank, pa.array(wrong)), None, text)
    return pc.cast(keep, pa.float64())


def times(table: Table, name: str, *, allow_null: bool) -> tuple[np.ndarray, bool]:
    """A time column as float64 seconds (NaN for an empty cell) and whether it is absolute: ISO-8601 (UTC
    when without an offset) or numbers from EPOCH_AFTER on (Unix seconds), rather than seconds from the
    run's start."""
    import pyarrow as pa

    col = table.column(name)
    if pa.types.is_timestamp(col.type) or pa.types.is_date(col.type):
        return _epoch(table, name, col, allow_null), True
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        sample = next((c for c in col.to_pylist()[:50] if c is not None and c.strip()), None)
        if sample is not None and _looks_iso(sample):
            return _iso(table, name, col, allow_null), True
    values = numbers(table, name, allow_null=allow_null)
    return values, bool(np.isfinite(values).any() and np.nanmin(values) >= EPOCH_AFTER)


def _looks_iso(cell: str) -> bool:
    return len(cell) >= 10 and cell[4] == "-" and cell[7] == "-"


def _epoch(table: Table, name: str, col, allow_null: bool) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_date(col.type):
        col = pc.cast(col, pa.timestamp("s"))
    ns = pc.cast(col, pa.timestamp("ns", tz=col.type.tz) if getattr(col.type, "tz", None) else pa.timestamp("ns"))
    values = pc.cast(ns, pa.int64()).to_numpy(zero_copy_only=False).astype(np.float64) / 1e9
    if col.null_count:
        values = np.where(col.is_null().to_numpy(zero_copy_only=False), np.nan, values)
    if not allow_null:
        table.skip(np.isnan(values), name, lambda row: "is empty (a time is required)")
    return values


def _iso(table: Table, name: str, col, allow_null: bool) -> np.ndarray:
    """ISO-8601 strings -> epoch seconds; fast through pyarrow, cell by cell only when a cell is bad (its row
    is set aside)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for target in (pa.timestamp("ns", tz="UTC"), pa.timestamp("ns")):
        try:
            return _epoch(table, name, pc.cast(col, target), allow_null)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
    cells = col.to_pylist()
    out = np.full(len(col), np.nan)
    empty, wrong = np.zeros(out.size, bool), np.zeros(out.size, bool)
    for row, cell in enumerate(cells):
        if cell is None or not cell.strip():
            empty[row] = True
            continue
        try:
            moment = datetime.fromisoformat(cell.strip())
        except ValueError:
            wrong[row] = True
            continue
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        out[row] = moment.timestamp()
    table.skip(wrong, name, lambda row: f"{cells[row]!r} is neither seconds nor an ISO-8601 time")
    if not allow_null:
        table.skip(empty, name, lambda row: "is empty (a time is required)")
    return out


def flags(table: Table, name: str) -> np.ndarray:
    """A true/false column as float (1, 0, NaN for empty): booleans, 0/1, or the words true/false/yes/no; any
    other cell sets its row aside."""
    import pyarrow as pa

    col = table.column(name)
    if pa.types.is_boolean(col.type) or pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
        values = numbers(table, name)
        cells = values.tolist()
    else:
        words = {"true": 1.0, "yes": 1.0, "1": 1.0, "false": 0.0, "no": 0.0, "0": 0.0, "": math.nan}
        cells = col.cast(pa.string()).to_pylist()
        values = np.array([words.get("" if c is None else c.strip().lower(), 2.0) for c in cells])
    table.skip(~np.isnan(values) & (values != 0) & (values != 1), name, lambda row: f"{cells[row]!r} is not true/false")
    values[values == 2.0] = np.nan
    return values


def labels(table: Table, name: str) -> tuple[list[str], np.ndarray]:
    """A text (or numeric) column such as a backend or a group id, as its distinct names and each row's index
    into them; an empty cell sets its row aside (index -1)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = table.column(name).cast(pa.string())
    empty = col.is_null().to_numpy(zero_copy_only=False) if col.null_count else np.zeros(len(col), bool)
    table.skip(empty, name, lambda row: "is empty (a name is required)")
    encoded = pc.dictionary_encode(col)
    index = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return [str(v) for v in encoded.dictionary.to_pylist()], index
