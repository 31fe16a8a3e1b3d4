"""The hostile corpus by mutation families (tests/mutations.py), regenerated on every run, and its tally per
command: exit codes, internal errors, hangs, and the wall time, CPU time and peak memory of each refusal.

Every case of the instance families (numeric leaves, enums, encodings, duplicates) runs through ``solve``,
``simulate``, ``risk``, ``frontier``, ``sweep``, ``report`` and the Python API (``trainground.solve``); the log
families through ``calibrate``; each issue case through the command it names. Each run is a process and session
of its own under an address-space limit (--limit-gb), killed after --hang-s seconds (a hang); the commands that
take ``--time-limit`` get --time-limit seconds. An internal error is an exit 1, a signal (other than the kill of
a hang) or a traceback on either stream.

The whole corpus through every command is tens of thousands of runs (hours on two cores), so the runs are a
seeded sample: up to --per-cell cases of each (family, command) cell, and every issue case. The first line says
the corpus's size and the sample's.

    python bench/mutations.py [--per-cell 3] [--seed 0] [--hang-s 180] [--time-limit 60] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.mutations import Case, corpus  # noqa: E402

INSTANCE_COMMANDS = ("solve", "simulate", "risk", "frontier", "sweep", "report", "api")
CLI = "from trainground import cli; cli.main(prog_name='trainground')"
API = (
    "import sys, trainground\n"
    "try:\n"
    "    trainground.solve(sys.argv[1], time_limit=float(sys.argv[2]), levers_time=2.0)\n"
    "except trainground.InstanceError as exc:\n"
    "    print(exc, file=sys.stderr)\n"
    "    sys.exit(2)\n"
)


@dataclass
class Run:
    case: Case
    command: str
    code: int  # the exit code; -N for a process signal N ended (a hang's is the kill)
    wall: float
    cpu: float
    rss_mb: float
    hung: bool
    traceback: bool
    message: str  # the first line of standard error

    @property
    def internal(self) -> bool:
        return not self.hung and (self.code == 1 or self.code < 0 or self.traceback)


def argv_of(case: Case, command: str, file: str, out: Path, time_limit: float) -> list[str]:
    """The command line of one run: the checkout's cli as `trainground`, or the API in a Python process."""
    if command == "api":
        return [sys.executable, "-c", API, file, f"{time_limit:g}"]
    limit = ("--time-limit", f"{time_limit:g}")
    own = {
        "solve": ("solve", file, *limit, "--levers-time", "2"),
        "simulate": ("simulate", file),
        "risk": ("risk", file, "--samples", "500"),
        "frontier": ("frontier", file, "--out", str(out), *limit),
        "sweep": ("sweep", file, "--set", "objective=total_cost,hourly_cost", "--out", str(out), *limit),
        "report": ("report", file, "--out", str(out / "r.html"), *limit, "--samples", "500", "--no-frontier"),
        "calibrate": ("calibrate",),
    }[command]
    return [sys.executable, "-c", CLI, *own, *case.args(file)]


def run(case: Case, command: str, scratch: Path, limit_bytes: int, hang_s: float, time_limit: float) -> Run:
    """One run in a process (and session) of its own under an address-space limit; killed at ``hang_s``."""
    out = Path(tempfile.mkdtemp(dir=scratch))
    file = case.write(out)
    env = {k: v for k, v in os.environ.items() if k != "TRAINGROUND_DEBUG"}
    env.update(PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv_of(case, command, file, out, time_limit),
            cwd=out,
            env=env,
            stdout=stdout,
            stderr=stderr,
            preexec_fn=limit,
            start_new_session=True,
        )
        hung = threading.Event()

        def kill() -> None:
            hung.set()
            os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(hang_s, kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
        wall = time.perf_counter() - start
        stdout.seek(0)
        stderr.seek(0)
        errors = stderr.read()
        both = stdout.read() + errors
    lines = [line for line in errors.splitlines() if line.strip()]
    return Run(
        case=case,
        command=command,
        code=os.waitstatus_to_exitcode(status),
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime,
        rss_mb=usage.ru_maxrss / 1024,
        hung=hung.is_set(),
        traceback="Traceback" in both,
        message=lines[0][:240] if lines else "",
    )


def sample(cases: list[Case], per_cell: int, seed: int) -> list[tuple[Case, str]]:
    """Up to ``per_cell`` cases of each (family, command) cell, drawn with ``seed``; every issue case."""
    rng = random.Random(seed)
    cells: dict[tuple[str, str], list[Case]] = defaultdict(list)
    for case in cases:
        for command in (case.command,) if case.command else INSTANCE_COMMANDS:
            cells[(case.family, command)].append(case)
    chosen = []
    for (family, command), members in sorted(cells.items()):
        picked = members if family == "issue" else rng.sample(members, min(per_cell, len(members)))
        chosen += [(case, command) for case in picked]
    return chosen


def spread(values: list[float], digits: int = 2) -> str:
    """'median / p95 / max' (the p95 the nearest rank), or a dash."""
    if not values:
        return "—"
    ordered = sorted(values)
    p95 = ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]
    return f"{statistics.median(ordered):.{digits}f} / {p95:.{digits}f} / {ordered[-1]:.{digits}f}"


def tally(runs: list[Run]) -> list[str]:
    """A row per command: runs, exit codes, internal errors, hangs, and the refusals' (exit 2) time and memory."""
    head = (
        f"{'command':<10}{'runs':>5}  {'exit codes':<30}{'internal':>9}{'hangs':>6}{'refused':>8}  "
        f"{'refusal wall s':<20}{'refusal CPU s':<20}refusal peak MB"
    )
    lines = [head, f"{'':79}(median / p95 / max, each)"]
    for command in (*INSTANCE_COMMANDS, "calibrate"):
        mine = [r for r in runs if r.command == command]
        if not mine:
            continue
        codes = Counter("hang" if r.hung else str(r.code) for r in mine)
        refused = [r for r in mine if r.code == 2 and not r.hung]
        lines.append(
            f"{command:<10}{len(mine):>5}  {', '.join(f'{k}: {v}' for k, v in sorted(codes.items())):<30}"
            f"{sum(r.internal for r in mine):>9}{sum(r.hung for r in mine):>6}{len(refused):>8}  "
            f"{spread([r.wall for r in refused]):<20}{spread([r.cpu for r in refused]):<20}"
            f"{spread([r.rss_mb for r in refused], 0)}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-cell", type=int, default=3, help="cases per (family, command) cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hang-s", type=float, default=180.0, help="a run still going after this is a hang")
    parser.add_argument("--time-limit", type=float, default=60.0, help="--time-limit of the commands that take it")
    parser.add_argument("--limit-gb", type=float, default=4.0, help="address space of each run, GB")
    parser.add_argument("--only", help="run the sampled runs whose case name holds this, or of this command")
    parser.add_argument("--family", help="sample only these families (comma-separated prefixes: leaf:zero,enum)")
    parser.add_argument("--json", type=Path, help="write every run's figures here")
    args = parser.parse_args()
    cases = corpus()
    families = Counter(c.family.split(":")[0] for c in cases)
    total = sum(1 if c.command else len(INSTANCE_COMMANDS) for c in cases)
    wanted = tuple(args.family.split(",")) if args.family else ("",)
    chosen = sample([c for c in cases if c.family.startswith(wanted)], args.per_cell, args.seed)
    if args.only:
        chosen = [(c, m) for c, m in chosen if args.only in c.name or args.only == m]
    print(
        f"corpus: {len(cases):,} cases ({', '.join(f'{k} {v:,}' for k, v in sorted(families.items()))}), "
        f"{total:,} runs through their commands; the sample: {len(chosen)} runs (up to {args.per_cell} of each "
        f"(family, command) cell{' of ' + args.family if args.family else ''}, seed {args.seed}, and every issue case "
        f"sampled); load {os.getloadavg()[0]:.2f}"
    )
    start, runs = time.perf_counter(), []
    with tempfile.TemporaryDirectory() as scratch:
        for case, command in chosen:
            runs.append(run(case, command, Path(scratch), int(args.limit_gb * (1 << 30)), args.hang_s, args.time_limit))
    load = os.getloadavg()
    print(
        f"ran in {time.perf_counter() - start:,.0f} s; load average at the end {load[0]:.2f} {load[1]:.2f} on "
        f"{os.cpu_count()} cores; hang at {args.hang_s:g} s, --time-limit {args.time_limit:g} s"
    )
    print(*tally(runs), sep="\n")
    for r in runs:
        if r.internal or r.hung:
            what = "hang" if r.hung else f"internal error (exit {r.code})"
            print(f"  {what}: {r.command} {r.case.name}: {r.message}")
    print("issue cases:")
    for r in runs:
        if r.case.family == "issue":
            code = "hang" if r.hung else f"exit {r.code}"
            print(f"  {r.case.name} ({r.command}): {code}, {r.wall:.1f} s, {r.rss_mb:.0f} MB: {r.message[:110]}")
    if args.json:
        rows = [
            {
                "family": r.case.family,
                "case": r.case.name,
                "command": r.command,
                "code": r.code,
                "hung": r.hung,
                "internal": r.internal,
                "wall_s": r.wall,
                "cpu_s": r.cpu,
                "rss_mb": r.rss_mb,
                "message": r.message,
            }
            for r in runs
        ]
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
