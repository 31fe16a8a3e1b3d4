"""The per-step metrics RL frameworks write, read as they write them: one record per step.

Console logs (any file that is not CSV, JSONL or Parquet), after ANSI colour codes are stripped and lines
split at carriage returns (progress bars):

- verl (``Tracking``'s console backend, ``concat_dict_to_str``): ``step:12 - timing_s/gen:123.4 - ...`` after
  any prefix (Ray's ``(TaskRunner pid=…)``, a timestamp); values as Python prints them (``np.float64(…)``,
  ``tensor(…)``, ``nan``); the pairs may run on over following lines (``step:1`` then `` - key:value`` lines,
  or a line wrapped mid-key by a paste), read until a line that holds no pair.
- slime (``log_perf_data_raw`` and the rollout manager): ``perf N: {'perf/…': …}`` dicts, the trainer's and the
  rollout manager's of the same N merged into one record; ``rollout N: {...}`` merged likewise; a dict
  wrapped over lines is joined. An ``eval N: {...}`` line marks the first step whose perf lines end after it
  (``EVAL_MARK``): slime logs no time for a validation, which runs between two trainer steps (``train.py``).
- AReaL (``StatsLogger.commit``): ``… Train step G/T done.`` then ``tabulate_stats`` tables, ``│ key │ value │``
  cells (``|`` too), read as step G. AReaL v0.2 (realhf's master worker): ``Epoch e/E step s/S (global step G)
  finishes. … #End to end# execution time: *T*s.``, read as step G timed whole (``E2E``).

JSONL: one object per line; verl's ``file`` backend nests the metrics under ``data``. A record without any
timing key (verl's validation before training, ``step:0 - val-core/…``) is a record of its step like any
other: what it holds is decided later, not here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from trainground.calibrate.guards import check_text
from trainground.models.load import InstanceError, Problem

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
VERL_STEP = re.compile(r"(?<![\w/.])step:\s*(\d+)(?=\s*(?:-\s|$))")
SLIME_DICT = re.compile(r"(?<![\w/])(perf|rollout|eval)\s+(\d+):\s*\{")
AREAL_STEP = re.compile(r"Train step (\d+)/\d+ done")
# AReaL v0.2 (realhf's master worker) times a step whole, on its ``… (global step G) finishes. … #End to end#
# execution time: *T*s.`` line, and no phase of it
E2E = "#End to end# execution time"
AREAL_V02 = re.compile(r"\(global step (\d+)\) finishes\..*#End to end# execution time: \*?([^*\s]+?)\*?s\.")
NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf(?:inity)?)"
WRAPPED = re.compile(rf"^(?:np\.\w+|numpy\.\w+|tensor|torch\.tensor)\(\s*({NUMBER})\s*(?:,[^)]*)?\)$", re.I)
PLAIN = re.compile(rf"^({NUMBER})$", re.I)
PAIR = re.compile(rf"'([^'\n]+)'\s*:\s*_?\s*((?:np\.\w+|tensor)\(\s*(?:{NUMBER})[^)]*\)|{NUMBER}|None)", re.I)
CELL_RULE = re.compile(r"^[\s╒╞╘├┝┠╟═─┼╪╤╧┬┴╕╡╛┤┥┨╢+|=-]+$")
EVAL_MARK = "eval/at_this_step"  # slime: a validation ran inside this step (1)
MAX_WRAP = 5000  # lines a record may run on over (one key a line: a few hundred)


def number(text: str) -> float | None:
    """A logged value as a float: ``1.5``, ``np.float64(1.5)``, ``tensor(1.5, device='cuda:0')``; None for
    anything else (a word, a list). NaN and infinities are returned as they are (missing, decided later)."""
    text = text.strip().strip(",")
    match = PLAIN.match(text) or WRAPPED.match(text)
    if match is None:
        return None
    try:
        return float(match.group(1))
    except ValueError:
        return None


@dataclass
class Records:
    """A metrics log as records: one dict per logged step (the last of a repeated step is kept later, by the
    step reader), the line each starts at, and what was found on the way."""

    file: str
    kind: str  # console | jsonl
    rows: list[dict] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    framework: str | None = None  # the framework whose records a console log held (None: JSONL, decided by keys)
    evals: list[int] = field(default_factory=list)  # slime: steps with an ``eval N`` record
    counts: dict[str, int] = field(default_factory=dict)  # console: records found per framework


def read_records(path: str | Path) -> Records:
    """The records of a JSONL log or of a console log (any other file)."""
    path = Path(path)
    file = str(path)
    if not path.exists():
        raise InstanceError(file, [Problem("", "no such file")])
    if path.is_dir():
        raise InstanceError(file, [Problem("", "is a directory, not a log file")])
    if path.stat().st_size == 0:
        raise InstanceError(file, [Problem("", "empty file: no step records")])
    if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        check_text(path, "jsonl")
        return _jsonl(path)
    check_text(path, "console")
    return console_records(file, path.read_text(encoding="utf-8"))


def _jsonl(path: Path) -> Records:
    out = Records(str(path), "jsonl")
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as exc:
                raise InstanceError(str(path), [Problem(f"line {line_no}", f"not valid JSON: {exc}")]) from None
            if not isinstance(record, dict):
                raise InstanceError(str(path), [Problem(f"line {line_no}", "each line must be a JSON object")])
            data = record.get("data")
            flat = {**{k: v for k, v in record.items() if k != "data"}, **data} if isinstance(data, dict) else record
            out.rows.append(flat)
            out.lines.append(line_no)
    return out


def console_records(file: str, text: str) -> Records:
    """Every framework's records found in a console log; the framework with the most is the log's."""
    lines = [ANSI.sub("", part) for line in text.split("\n") for part in _segments(line)]
    found = {"verl": _verl(lines), "slime": _slime(lines), "areal": _areal(lines)}
    counts = {name: len(records[0]) for name, records in found.items()}
    best = max(counts, key=lambda name: counts[name])
    out = Records(file, "console", counts=counts)
    if counts[best]:
        out.rows, out.lines = found[best][0], found[best][1]
        out.framework = best
        out.evals = found[best][2] if len(found[best]) > 2 else []
    return out


def _segments(line: str) -> list[str]:
    """A physical line's parts between carriage returns (a progress bar rewrites its line with them): the last
    part is what a terminal shows, the others are kept too (a step line may sit before a bar's ``\\r``)."""
    return [p for p in line.split("\r") if p.strip()] or [""]


def _pairs(text: str) -> dict[str, float | None]:
    """``key:value - key:value ...`` pairs; a piece without ``key:`` is skipped."""
    out: dict[str, float | None] = {}
    for piece in re.split(r"(?:^|\s)-\s+", " " + text.strip()):
        key, colon, value = piece.strip().rpartition(":")
        if colon and key and " " not in key.strip():
            out[key.strip()] = number(value)
    return out


def _continues(line: str) -> bool:
    """A line that carries on the record above: `` - key:value`` lines, or a wrapped line of pairs."""
    stripped = line.strip()
    if not stripped or VERL_STEP.search(line):
        return False
    if stripped.startswith("- ") and ":" in stripped:
        return True
    pieces = [p for p in re.split(r"\s-\s", stripped) if ":" in p]
    return len(pieces) >= 2 and sum(number(p.rpartition(":")[2]) is not None for p in pieces) >= 2


def _verl(lines: list[str]) -> tuple[list[dict], list[int]]:
    rows, starts = [], []
    i = 0
    while i < len(lines):
        match = VERL_STEP.search(lines[i])
        if match is None:
            i += 1
            continue
        record: dict = {"step": float(match.group(1))}
        record.update(_pairs(lines[i][match.end() :]))
        start, i = i + 1, i + 1
        while i < len(lines) and i - start < MAX_WRAP and _continues(lines[i]):
            record.update(_pairs(lines[i]))
            i += 1
        rows.append(record)
        starts.append(start)
    return rows, starts


def _slime(lines: list[str]) -> tuple[list[dict], list[int], list[int]]:
    """``perf N`` and ``rollout N`` dicts merged per N, in order of first appearance; ``eval N`` steps apart."""
    merged: dict[int, dict] = {}
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    evals: list[int] = []
    eval_lines: list[int] = []
    i = 0
    while i < len(lines):
        match = SLIME_DICT.search(lines[i])
        if match is None:
            i += 1
            continue
        text, start = lines[i][match.end() :], i
        while "}" not in text and i + 1 < len(lines) and i - start < MAX_WRAP:  # a dict wrapped over lines
            i += 1
            text += lines[i]
        kind, n = match.group(1), int(match.group(2))
        i += 1
        if kind == "eval":
            evals.append(n)
            eval_lines.append(start)
            continue
        body = {key: (number(value) if value != "None" else None) for key, value in PAIR.findall(text)}
        merged.setdefault(n, {"step": float(n)}).update(body)
        first.setdefault(n, start + 1)
        last[n] = start
    for line in eval_lines:
        after = [n for n in merged if last[n] > line]
        if after:
            merged[min(after, key=lambda n: last[n])][EVAL_MARK] = 1.0
    order = sorted(merged, key=lambda n: first[n])
    return [merged[n] for n in order], [first[n] for n in order], evals


def _areal(lines: list[str]) -> tuple[list[dict], list[int]]:
    rows, starts = [], []
    current: dict | None = None
    for i, line in enumerate(lines):
        whole = AREAL_V02.search(line)
        if whole is not None:
            rows.append({"step": float(whole.group(1)), E2E: number(whole.group(2))})
            starts.append(i + 1)
            current = None
            continue
        match = AREAL_STEP.search(line)
        if match is not None:
            current = {"step": float(match.group(1))}
            rows.append(current)
            starts.append(i + 1)
            continue
        if current is None or not ("│" in line or line.strip().startswith("|")) or CELL_RULE.match(line):
            continue
        cells = [c.strip() for c in re.split(r"[│|]", line)]
        cells = [c for c in cells if c]
        for key, value in zip(cells[::2], cells[1::2]):
            if "/" in key and " " not in key:
                current[key] = number(value)
    return rows, starts
