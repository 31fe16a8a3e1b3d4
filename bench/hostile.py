"""Benchmark of hostile inputs: the corpus of tests/hostile.py (numbers beyond their caps or
below their floor, digits Python cannot convert, nesting, YAML alias bombs, long lists, files of 11-50 MB, grids
and scenario tables too large to build, --set edits, unusable samples CSVs, unwritable output paths, the stages,
planning and reliability sections, calibrate's logs, strings where numbers belong, bad values an option replaces,
one bad file through every command), each run as a whole `trainground` command in its own
process. Reports the exit codes, the cases whose message does not name the file and the field, wall and CPU time
(median, max) and peak RSS of each child (os.wait4), and every case over the targets: exit 2, under 1 s and
under 200 MB. On a loaded machine the wall time of a child stretches with the load while its CPU time does not:
the verdict on time is given on both.

Beside them, the interpreter's own start-up (python -c pass): a refusal's target is 1 s of CPU over it, and
--by-case prints each case's CPU time over it (--only refusal-: the commands refusing one bad file).

Each child runs under an address-space limit (--limit-gb, default 4), so a cap that stopped working shows as
exit 1 (MemoryError) rather than as a machine out of memory.

    python bench/hostile.py [--only SUBSTRING] [--limit-gb 4] [--keep FOLDER] [--by-case]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hostile import Case, build, complaints  # noqa: E402

TARGET_S = 1.0
TARGET_MB = 200.0


def command() -> list[str]:
    """The installed `trainground` script beside this interpreter, else the module."""
    script = Path(sys.executable).with_name("trainground")
    return [str(script)] if script.exists() else [sys.executable, "-m", "trainground.cli"]


def run(case: Case, cwd: Path, limit_bytes: int) -> tuple[int, float, float, float, str, str]:
    """(exit code, wall seconds, CPU seconds, peak RSS in MB, stdout, stderr) of one case in its own process."""
    return run_argv([*command(), *case.args], case, cwd, limit_bytes)


def run_argv(argv: list[str], case: Case, cwd: Path, limit_bytes: int) -> tuple[int, float, float, float, str, str]:
    """As :func:`run`, of the command line ``argv``."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRAINGROUND_DEBUG", "PYTHONDONTWRITEBYTECODE")}
    env.update(case.env, PYTHONPATH=str(ROOT))

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err, preexec_fn=limit)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        cpu = usage.ru_utime + usage.ru_stime
        return proc.returncode, wall, cpu, usage.ru_maxrss / 1024, out.read(), err.read()


def start_up(limit_bytes: int, runs: int = 5) -> tuple[float, float]:
    """(wall, CPU) seconds of the interpreter starting and ending with nothing to do (the median of ``runs``):
    the floor every refusal is measured against."""
    walls, cpus = [], []
    for _ in range(runs):
        case = Case("start-up", (), "", None, "")
        _, wall, cpu, *_ = run_argv([sys.executable, "-c", "pass"], case, Path.cwd(), limit_bytes)
        walls.append(wall)
        cpus.append(cpu)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run the cases whose name holds this")
    parser.add_argument("--limit-gb", type=float, default=4.0, help="address space of each child, GB")
    parser.add_argument("--keep", type=Path, help="write the corpus here and keep it")
    parser.add_argument("--by-case", action="store_true", help="print every case's figures")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        cases = [c for c in build(folder) if not args.only or args.only in c.name]
        print(f"{len(cases)} cases; load {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; {' '.join(command())}")
        floor_wall, floor_cpu = start_up(int(args.limit_gb * (1 << 30)))
        print(f"interpreter start-up (python -c pass, median of 5): {floor_wall:.2f} s wall, {floor_cpu:.2f} s CPU")
        rows = []
        for case in cases:
            code, wall, cpu, rss, stdout, stderr = run(case, folder, int(args.limit_gb * (1 << 30)))
            rows.append((case, code, wall, cpu, rss, complaints(case, code, stdout, stderr)))
    codes = Counter(code for _, code, *_ in rows)
    walls = [wall for _, _, wall, *_ in rows]
    cpus = [cpu for _, _, _, cpu, *_ in rows]
    rss = [r for *_, r, _ in rows]
    print("exit codes: " + ", ".join(f"{code}: {n}" for code, n in sorted(codes.items())))
    print(f"messages naming file and field: {sum(not p for *_, p in rows)} of {len(rows)}")
    print(f"wall s: median {statistics.median(walls):.2f}, max {max(walls):.2f}")
    print(f"CPU s: median {statistics.median(cpus):.2f}, max {max(cpus):.2f}")
    print(f"peak RSS MB: median {statistics.median(rss):.0f}, max {max(rss):.0f}")
    print(
        "slowest (CPU): " + ", ".join(f"{c.name} {u:.2f} s" for c, _, _, u, *_ in sorted(rows, key=lambda r: -r[3])[:5])
    )
    print("largest: " + ", ".join(f"{c.name} {m:.0f} MB" for c, _, _, _, m, _ in sorted(rows, key=lambda r: -r[4])[:5]))
    for label, column in (("wall", 2), ("CPU", 3)):
        off = [r for r in rows if r[5] or r[column] >= TARGET_S or r[4] >= TARGET_MB]
        print(
            f"on target by {label} time (exit 2, named, < {TARGET_S:g} s, < {TARGET_MB:g} MB): {len(rows) - len(off)} of {len(rows)}"
        )
    if args.by_case:
        print("case: exit, wall s, CPU s, CPU s over start-up, peak RSS MB")
        for case, code, wall, cpu, mb, _ in rows:
            print(f"  {case.name}: exit {code}, {wall:.2f}, {cpu:.2f}, {cpu - floor_cpu:+.2f}, {mb:.0f}")
    for case, code, wall, cpu, mb, problems in rows:
        if problems or cpu >= TARGET_S or mb >= TARGET_MB:
            print(
                f"  off target: {case.name}: exit {code}, {wall:.2f} s wall, {cpu:.2f} s CPU, {mb:.0f} MB {'; '.join(problems)}"
            )
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
