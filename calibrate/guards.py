"""Checks a log file must pass before a parser sees it: UTF-8 text, JSON lines nested no deeper than a log
needs, a header without repeated names. pyarrow would crash on deep nesting, mis-read a bad byte and
refuse a repeated name with an error that names neither the row nor the column; these checks name them.

The scans read the file in CHUNK-byte pieces (a 50 MB log costs one pass and a few MB of memory).
"""

from __future__ import annotations

import codecs
from pathlib import Path

import numpy as np

from trainground.models.load import InstanceError, Problem

CHUNK = 8 << 20
MAX_DEPTH = 32  # deepest nesting of objects and arrays on one JSONL line (verl's records nest 2 deep)
OPEN = np.zeros(256, np.int8)
OPEN[[ord("["), ord("{")]] = 1
OPEN[[ord("]"), ord("}")]] = -1


def check_text(path: Path, kind: str) -> None:
    """InstanceError naming the line (and the CSV column) of the first byte that is not UTF-8, or of the
    first JSONL line nested deeper than MAX_DEPTH."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset, line, depth = 0, 1, 0
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                _not_utf8(path, kind, offset + exc.start, exc.object[exc.start])
            if kind == "jsonl":
                depth = _deepest(path, chunk, line, depth)
            line += chunk.count(b"\n")
            offset += len(chunk)
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        _not_utf8(path, kind, offset - 1, None)


def _not_utf8(path: Path, kind: str, position: int, byte: int | None) -> None:
    head = path.read_bytes()[: position + 1] if position < 64 << 20 else b""
    line = head.count(b"\n") + 1
    where = f"line {line}"
    if kind == "csv" and line > 1:
        start = head.rfind(b"\n", 0, position) + 1
        header = head.split(b"\n", 1)[0].decode("utf-8", "replace").strip().split(",")
        field = head[start:position].count(b",")
        row = f"row {line - 1} ({where})"
        where = f"{row}, column '{header[field]}'" if field < len(header) else row
    what = f"byte 0x{byte:02x}" if byte is not None else "the last bytes"
    raise InstanceError(str(path), [Problem(where, f"is not UTF-8 text ({what}): save the log as UTF-8")])


def _deepest(path: Path, chunk: bytes, first_line: int, carried: int) -> int:
    """The nesting depth at the chunk's end; InstanceError at the first line deeper than MAX_DEPTH. Brackets
    inside strings count too, which can only over-count: such a line is checked exactly before refusal."""
    raw = np.frombuffer(chunk, np.uint8)
    step = OPEN[raw].astype(np.int32)
    newline = raw == ord("\n")
    if not step.any():
        return 0 if newline.any() else carried
    depth = np.cumsum(step) + carried
    last_newline = np.maximum.accumulate(np.where(newline, np.arange(raw.size), -1))
    depth -= np.where(last_newline >= 0, depth[np.maximum(last_newline, 0)], 0)
    deep = np.flatnonzero(depth > MAX_DEPTH)
    for begin in np.unique(last_newline[deep]) + 1 if deep.size else ():
        end = chunk.find(b"\n", int(begin))
        text = chunk[int(begin) : end if end >= 0 else None]
        if exact_depth(text) + (carried if begin == 0 else 0) > MAX_DEPTH:
            line = first_line + chunk.count(b"\n", 0, int(begin))
            raise InstanceError(
                str(path),
                [Problem(f"line {line}", f"nests objects or arrays more than {MAX_DEPTH} deep: a log row is flat")],
            )
    return int(depth[-1]) if not newline[-1] else 0


def exact_depth(line: bytes) -> int:
    """Deepest nesting of one JSON text, brackets inside strings skipped."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in line:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def check_header(file: str, names: list[str]) -> None:
    """A column named twice is ambiguous: refuse it, naming both positions."""
    seen: dict[str, int] = {}
    for position, name in enumerate(names, start=1):
        if name in seen:
            raise InstanceError(
                file,
                [Problem(f"column '{name}'", f"appears twice in the header (columns {seen[name]} and {position})")],
            )
        seen[name] = position
