"""Writing results: every file is written whole or not at all (temp file in the same folder + rename); a
folder or file that cannot be written is an :class:`OutputError` naming it (the commands exit 2)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()  # what open() would give a new file (mkstemp makes it 0600)


class OutputError(Exception):
    """An output path that cannot be written (a read-only folder, a file where a folder must be, a full disk);
    ``str()`` is the message: the path and the reason."""

    def __init__(self, path: str | Path, exc: OSError):
        self.path = str(path)
        super().__init__(f"{self.path}: cannot write here: {exc.strerror or exc}")


def make_folder(folder: str | Path) -> Path:
    """``folder`` and its parents, created where missing; OutputError naming it where that fails."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(folder, exc) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(folder, PermissionError(13, "Permission denied"))
    return folder


def check_writable(path: str | Path) -> None:
    """OutputError unless ``path`` (a file or a folder, there or not yet) could be written: it is a writable
    file or folder, or the nearest part of it that exists is a folder this process may create entries in.
    Nothing is created: a command checks its output paths before its work, and writes them after."""
    path = Path(path).absolute()
    there = next((p for p in (path, *path.parents) if p.exists()), None)
    if there is None:
        return
    if there.is_dir():
        if not os.access(there, os.W_OK | os.X_OK):
            raise OutputError(there, PermissionError(13, "Permission denied"))
    elif there != path:
        raise OutputError(path, NotADirectoryError(20, f"{there} is a file, not a folder"))
    elif not os.access(there, os.W_OK):
        raise OutputError(there, PermissionError(13, "Permission denied"))


def write_atomic_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader (or a killed writer) never sees a truncated file."""
    path = Path(path)
    make_folder(path.parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise OutputError(path, exc) from None
    try:
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(path, exc) from None
        raise


# The temporary file write_atomic_bytes writes beside its target: the target's name, hidden, mkstemp's 8 characters.
_TEMPORARY = re.compile(r"\..+\.[A-Za-z0-9_]{8}\.tmp")


def remove_temporaries(folder: str | Path) -> int:
    """Remove the temporary files :func:`write_atomic_bytes` left under ``folder`` when its writer was killed
    before it could (SIGKILL); how many. Only for a folder no other writer is using (a batch it resumes)."""
    removed = 0
    for path in Path(folder).rglob(".*.tmp"):
        if _TEMPORARY.fullmatch(path.name) and path.is_file():
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            removed += 1
    return removed


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
