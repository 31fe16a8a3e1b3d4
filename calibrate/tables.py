"""Reading a log file into named columns (CSV, JSONL or Parquet, through pyarrow) and turning cells into numbers.

Every problem is an :class:`~models.load.InstanceError` naming the file and, where there is one, the
row and the column: ``steps.csv: row 12 (line 13), column 'update_s': must be >= 0, got -3``. Rows
count data rows from 1; the line is the file's line (CSV: the header is line 1; JSONL: row = line).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from models.load import InstanceError, Problem

FORMATS = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}


@dataclass
class Table:
    """A log file's columns (pyarrow arrays by name) and how to name a row of it in a message."""

    file: str
    kind: str
    columns: dict
    rows: int

    def where(self, row: int, column: str) -> str:
        line = {"csv": f" (line {row + 2})", "jsonl": f" (line {row + 1})"}.get(self.kind, "")
        return f"row {row + 1}{line}, column '{column}'"

    def fail(self, row: int | None, column: str | None, rule: str):
        path = self.where(row, column) if row is not None else (f"column '{column}'" if column else "")
        raise InstanceError(self.file, [Problem(path, rule)])

    def has(self, name: str) -> bool:
        return name in self.columns

    def require(self, *names: str) -> None:
        missing = [n for n in names if n not in self.columns]
        if missing:
            have = ", ".join(self.columns) or "none"
            self.fail(
                None,
                None,
                f"missing column{'s' if len(missing) > 1 else ''} {', '.join(repr(m) for m in missing)} (have: {have})",
            )


def _need_pyarrow(file: str):
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise InstanceError(
            file, [Problem("", "reading logs needs pyarrow: pip install 'trainground[parquet]'")]
        ) from None


def read_table(path: str | Path) -> Table:
    """The file's columns; InstanceError for a missing, empty, unreadable or unknown-type file."""
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

    try:
        table = _read(path, kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError, ValueError) as exc:
        raise InstanceError(file, [Problem("", f"cannot read as {kind.upper()}: {_first_line(exc)}")]) from None
    if table.num_rows == 0:
        raise InstanceError(file, [Problem("", "no rows: the log has a header but no data")])
    return Table(file, kind, {name: table.column(name).combine_chunks() for name in table.column_names}, table.num_rows)


def _read(path: Path, kind: str):
    if kind == "parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path)
    if kind == "jsonl":
        import pyarrow.json as pj

        return pj.read_json(path)
    import pyarrow.csv as pcsv

    return pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(strings_can_be_null=True))


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def numbers(table: Table, name: str, *, minimum: float | None = None, allow_null: bool = True) -> np.ndarray:
    """Column ``name`` as float64 (NaN for an empty cell); the first cell that is no number, or is below
    ``minimum``, or empty when that is not allowed, raises InstanceError naming its row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = table.columns[name]
    if pa.types.is_boolean(col.type):
        col = pc.cast(col, pa.int8())
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type) or pa.types.is_null(col.type)):
        col = _cast_text(table, name, col)
    values = col.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    if col.null_count:
        values = np.where(col.is_null().to_numpy(zero_copy_only=False), np.nan, values)
    bad = ~np.isfinite(values) & ~np.isnan(values)
    if not allow_null:
        bad |= np.isnan(values)
    if minimum is not None:
        bad |= values < minimum
    if bad.any():
        row = int(np.argmax(bad))
        v = values[row]
        rule = (
            "is empty (a value is required)"
            if math.isnan(v)
            else f"must be >= {minimum:g}, got {v:g}"
            if minimum is not None and v < minimum
            else f"must be finite, got {v}"
        )
        table.fail(row, name, rule)
    return values


def _cast_text(table: Table, name: str, col):
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return pc.cast(col, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        text = col.cast(pa.string()) if not pa.types.is_string(col.type) else col
        for row, cell in enumerate(text.to_pylist()):
            try:
                if cell is not None and cell.strip() != "":
                    float(cell)
            except ValueError:
                table.fail(row, name, f"{cell!r} is not a number")
        return pc.cast(pc.if_else(pc.equal(pc.utf8_trim_whitespace(text), ""), None, text), pa.float64())


def times(table: Table, name: str, *, allow_null: bool) -> tuple[np.ndarray, bool]:
    """A time column as float64 seconds (NaN for an empty cell) and whether it was ISO-8601 (absolute
    epoch seconds, UTC; a time without an offset is read as UTC) rather than seconds already."""
    import pyarrow as pa

    col = table.columns[name]
    if pa.types.is_timestamp(col.type) or pa.types.is_date(col.type):
        return _epoch(table, name, col, allow_null), True
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        sample = next((c for c in col.to_pylist()[:50] if c is not None and c.strip()), None)
        if sample is not None and _looks_iso(sample):
            return _iso(table, name, col, allow_null), True
    return numbers(table, name, allow_null=allow_null), False


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
    if not allow_null and np.isnan(values).any():
        table.fail(int(np.argmax(np.isnan(values))), name, "is empty (a time is required)")
    return values


def _iso(table: Table, name: str, col, allow_null: bool) -> np.ndarray:
    """ISO-8601 strings -> epoch seconds; fast through pyarrow, cell by cell only to find a bad one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for target in (pa.timestamp("ns", tz="UTC"), pa.timestamp("ns")):
        try:
            return _epoch(table, name, pc.cast(col, target), allow_null)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
    out = np.full(len(col), np.nan)
    for row, cell in enumerate(col.to_pylist()):
        if cell is None or not cell.strip():
            if not allow_null:
                table.fail(row, name, "is empty (a time is required)")
            continue
        try:
            moment = datetime.fromisoformat(cell.strip())
        except ValueError:
            table.fail(row, name, f"{cell!r} is neither seconds nor an ISO-8601 time")
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        out[row] = moment.timestamp()
    return out


def flags(table: Table, name: str) -> np.ndarray:
    """A true/false column as float (1, 0, NaN for empty): booleans, 0/1, or the words true/false/yes/no."""
    import pyarrow as pa

    col = table.columns[name]
    if pa.types.is_boolean(col.type) or pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
        values = numbers(table, name)
    else:
        words = {"true": 1.0, "yes": 1.0, "1": 1.0, "false": 0.0, "no": 0.0, "0": 0.0, "": math.nan}
        values = np.empty(len(col))
        for row, cell in enumerate(col.cast(pa.string()).to_pylist()):
            key = "" if cell is None else cell.strip().lower()
            if key not in words:
                table.fail(row, name, f"{cell!r} is not true/false")
            values[row] = words[key]
    bad = ~np.isnan(values) & (values != 0) & (values != 1)
    if bad.any():
        table.fail(int(np.argmax(bad)), name, f"must be true/false (or 1/0), got {values[np.argmax(bad)]:g}")
    return values


def labels(table: Table, name: str) -> tuple[list[str], np.ndarray]:
    """A text column (e.g. backend) as its distinct names and each row's index into them; an empty cell is
    an error."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = table.columns[name].cast(pa.string())
    if col.null_count:
        table.fail(int(np.argmax(col.is_null().to_numpy(zero_copy_only=False))), name, "is empty (a name is required)")
    encoded = pc.dictionary_encode(col)
    return [str(v) for v in encoded.dictionary.to_pylist()], encoded.indices.to_numpy(zero_copy_only=False).astype(
        np.int64
    )
