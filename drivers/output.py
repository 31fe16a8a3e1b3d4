"""Writing results: every file is written whole or not at all (temp file in the same folder + rename)."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()  # what open() would give a new file (mkstemp makes it 0600)


def write_atomic_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader (or a killed writer) never sees a truncated file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    write_atomic_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, data: object) -> None:
    write_atomic(path, json.dumps(data, indent=2) + "\n")


def write_csv(path: str | Path, columns: Sequence[str], rows: Iterable[dict]) -> None:
    """A CSV with a header of ``columns``, one line per row (other keys left out; missing keys and None
    empty), written atomically."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(path, buffer.getvalue())
