"""The inputs of a batch: the instance files named on the command line and one :class:`Task` per file
(where workers read it, where its result goes, the hash that lets ``--resume`` reuse a result)."""

from __future__ import annotations

import glob
import hashlib
import json
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from trainground.models.load import EXTENSIONS
from trainground.models.planning import default_basis

_HASH_VERSION = b"trainground-batch/2"  # 2: the default basis (TRAINGROUND_BASIS) is an option


class BatchError(Exception):
    """The batch cannot start: a PATH matching no file, or inputs inside the output folder."""


@dataclass(frozen=True)
class Task:
    """One input file: where workers read it, how it is shown, where its result goes (inside --out)."""

    path: str
    file: str
    result: str
    input_hash: str
    edits: tuple[str, ...] = ()  # --set PATH=VALUE edits applied to the file before it is validated


def discover(paths: Sequence[str], exclude: str | Path | None = None) -> list[Path]:
    """Instance files named by ``paths`` (files, folders searched recursively, globs), sorted, each once.

    Folders and globs yield only ``*.yaml|*.yml|*.toml|*.json`` files, skipping hidden
    entries and anything under ``exclude`` (the output folder); a file named explicitly is
    kept whatever its extension, so that it is reported as invalid rather than ignored.
    """
    skip = Path(exclude).resolve() if exclude is not None else None
    found: dict[Path, Path] = {}
    unmatched: list[str] = []
    for arg in paths:
        here = Path(arg)
        if here.is_file():
            matches = [here]
        elif here.is_dir():
            matches = _walk(here, skip)
        else:
            matches = []
            for hit in sorted(glob.glob(arg, recursive=True)):
                hit_path = Path(hit)
                if hit_path.is_dir():
                    matches += _walk(hit_path, skip)
                elif hit_path.suffix.lower() in EXTENSIONS and not _inside(hit_path, skip):
                    matches.append(hit_path)
        if not matches:
            unmatched.append(arg)
        for match in matches:
            found.setdefault(match.resolve(), match)
    if unmatched:
        raise BatchError("no instance files match " + ", ".join(repr(a) for a in unmatched))
    inside = [str(p) for p in found.values() if _inside(p, skip)]
    if inside:
        raise BatchError(f"input files inside the output folder {str(exclude)!r}: {', '.join(inside)}")
    return [found[key] for key in sorted(found, key=str)]


def _walk(folder: Path, skip: Path | None) -> list[Path]:
    out = []
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or _inside(path, skip):
            continue
        if path.suffix.lower() in EXTENSIONS and path.is_file():
            out.append(path)
    return out


def _inside(path: Path, folder: Path | None) -> bool:
    return folder is not None and path.resolve().is_relative_to(folder)


def input_hash(data: bytes, objective: str | None, time_limit: float | None, edits: Sequence[str] = ()) -> str:
    """sha256 of the file's bytes and the options that change its result: the objective, the time limit, the
    basis a file without one is planned on (docs/model.md §11) and the edits (only when there are some)."""
    chosen: dict = {"objective": objective, "time_limit": time_limit, "basis": default_basis()}
    if edits:
        chosen["edits"] = list(edits)
    options = json.dumps(chosen, sort_keys=True)
    return hashlib.sha256(_HASH_VERSION + b"\0" + options.encode() + b"\0" + data).hexdigest()


def result_names(files: Sequence[Path]) -> list[str]:
    """Result file names inside --out, mirroring the inputs' folders below their common folder.

    ``a/x.yaml`` -> ``a/x.json``; inputs sharing a stem in one folder keep their extension
    (``x.yaml.json``, ``x.toml.json``); anything still equal gets ``-2``, ``-3``... in input order.
    """
    absolute = [Path(os.path.abspath(f)) for f in files]
    if not absolute:
        return []
    base = Path(os.path.commonpath([str(p.parent) for p in absolute]))
    rel = [p.relative_to(base) for p in absolute]
    first = [r.with_suffix(".json").as_posix() for r in rel]
    clash = Counter(name.casefold() for name in first)
    names = [f if clash[f.casefold()] == 1 else (r.parent / (r.name + ".json")).as_posix() for f, r in zip(first, rel)]
    taken: set[str] = set()
    out = []
    for name in names:
        candidate, n = name, 1
        while candidate.casefold() in taken:
            n += 1
            candidate = f"{name[: -len('.json')]}-{n}.json"
        taken.add(candidate.casefold())
        out.append(candidate)
    return out


def plan_tasks(
    files: Sequence[Path],
    objective: str | None = None,
    time_limit: float | None = None,
    edits: Sequence[str] = (),
) -> list[Task]:
    tasks = []
    for path, name in zip(files, result_names(files)):
        try:
            data = path.read_bytes()
        except OSError:
            data = b""  # the worker reports why the file cannot be read
        tasks.append(
            Task(
                path=os.path.abspath(path),
                file=str(path),
                result=name,
                input_hash=input_hash(data, objective, time_limit, edits),
                edits=tuple(edits),
            )
        )
    return tasks
