"""Benchmark of the caps on what a solve tabulates (docs/fields.md, plausibility caps; docs/stages.md): what a
(cadence, K) entry of the pair table costs in memory, and what a refusal costs, each a whole `trainground` command in
its own process (wall and CPU seconds, peak RSS from os.wait4, the exit code and the message's first line).

``--grids``: the seed week (instances/seed-week-75.yaml) on cadence grids that no plan can use (1 us steps from
1 us, below any update time: every entry is tabulated, every pair cut, and `solve` then runs its diagnosis, whose
re-solves of edited copies tabulate again), at 1, 2 and 4 million (cadence, K) entries on both bases; the bytes an
entry costs are the slope of peak RSS over entries (least squares), which models.plausible.TABLE_ENTRY_BYTES must
cover. Beside them the seed at a 0.001 s step (5.45 million entries, a plan exists).

``--rows``: what a (cadence, K, training groups) row of a table costs with start-up counted (the hold basis): the
seed at a 10-year deadline on a 10 s step from 60 s, its grid's top (cadence.max) at 1,500, 2,500 and 4,000 s, solved
for the least makespan (every row) without levers; the rows are read from the refusal under a cap of one row
($TRAINGROUND_MAX_TABLE_ROWS=1), the bytes a row costs are the slope of peak RSS over rows (least squares), which
models.row_budget.TABLE_ROW_BYTES must cover. Beside them the seed at the 10-year deadline without cadence.max,
refused as the file's table is counted (makespan) and solved with its levers skipped (total_cost).

``--refusals``: the inputs a cap refuses: a grid at 10 million entries (1 us to 1 s in 1 us steps), and the staged
seed (instances/seed-week-stages.yaml) with stages of 1 and 999 iterations on both bases, whose first stage's grid
runs to its deadline pace (604,800 s), over 80,000 staged pairs (735,000 under hold).

    python bench/caps.py [--grids] [--rows] [--refusals]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"
STAGED = ROOT / "instances" / "seed-week-stages.yaml"


def command() -> list[str]:
    """The installed `trainground` script beside this interpreter, else the checkout's cli.py."""
    script = Path(sys.executable).with_name("trainground")
    return [str(script)] if script.exists() else [sys.executable, str(ROOT / "cli.py")]


def run(args: list[str], **variables: str) -> dict:
    """One command in its own process (``variables`` added to its environment): exit code, wall and CPU seconds,
    peak RSS (MB), the first line of stderr."""
    env = {k: v for k, v in os.environ.items() if k != "TRAINGROUND_DEBUG"} | variables
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([*command(), *args], stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        err.seek(0)
        first = (err.read().strip().splitlines() or [""])[0]
    return {
        "code": os.waitstatus_to_exitcode(status),
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "mb": usage.ru_maxrss / 1024,
        "message": first,
    }


def write(folder: Path, name: str, doc: dict) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def seed_grid(entries: int) -> dict:
    """The seed on a grid of ``entries`` (cadence, K) entries from 1 us in 1 us steps (K = 10)."""
    doc = yaml.safe_load(SEED.read_text())
    kept = doc["freshness"]["max_versions_kept"]
    doc["schedule"]["cadence"] = {"min": 1e-6, "max": entries // kept * 1e-6, "step": 1e-6}
    return doc


def staged_short(basis: str) -> dict:
    doc = yaml.safe_load(STAGED.read_text())
    doc["stages"]["list"] = [{"name": "a", "iterations": 1}, {"name": "b", "iterations": 999}]
    doc["planning"] = {"basis": basis}
    return doc


def show(label: str, got: dict) -> None:
    print(
        f"{label:<44} exit {got['code']}  {got['wall']:6.2f} s wall  {got['cpu']:6.2f} s CPU  {got['mb']:7.0f} MB"
        + (f"\n    {got['message'][:220]}" if got["code"] != 0 else "")
    )


def grids(folder: Path) -> None:
    for basis in ("steady_state", "hold"):
        sizes, peaks = [], []
        for entries in (1_000_000, 2_000_000, 4_000_000):
            path = write(folder, f"grid-{entries}", seed_grid(entries))
            got = run(["solve", str(path), "--no-levers", "--basis", basis])
            show(f"{entries:,} entries, {basis}", got)
            sizes.append(entries)
            peaks.append(got["mb"] * 2**20)
        slope, base = np.polyfit(sizes, peaks, 1)
        print(f"  {basis}: {slope:.0f} bytes an entry over {base / 2**20:.0f} MB (least squares)")
    doc = yaml.safe_load(SEED.read_text())
    doc["schedule"]["cadence"] = {"min": "60s", "step": "0.001s"}
    show("seed at a 0.001 s step (5.45M entries)", run(["solve", str(write(folder, "fine", doc)), "--no-levers"]))


def long_deadline(top: float | None) -> dict:
    """The seed at a 10-year deadline on a 10 s step from 60 s, up to ``top`` s (None: the deadline pace)."""
    doc = yaml.safe_load(SEED.read_text())
    doc["schedule"]["deadline"] = "3652.5d"
    doc["schedule"]["cadence"] = {"min": "60s", "step": "10s"} | ({"max": f"{top:g}s"} if top else {})
    return doc


def rows(folder: Path) -> None:
    sizes, peaks = [], []
    for top in (1500.0, 2500.0, 4000.0):
        path = write(folder, f"rows-{top:g}", long_deadline(top))
        makespan = ["solve", str(path), "--basis", "hold", "--objective", "makespan", "--no-levers"]
        counted = run(makespan, TRAINGROUND_MAX_TABLE_ROWS="1")["message"]
        found = re.search(r"would hold ([\d,]+) \(cadence, K, training groups\) rows", counted)
        if found is None:
            print(f"cadence.max {top:g} s: no row count in {counted[:200]!r}")
            return
        got = run(makespan)
        count = int(found.group(1).replace(",", ""))
        show(f"cadence.max {top:g} s, {count:,} rows", got)
        sizes.append(count)
        peaks.append(got["mb"] * 2**20)
    slope, base = np.polyfit(sizes, peaks, 1)
    print(f"  hold: {slope:.0f} bytes a row over {base / 2**20:.0f} MB (least squares)")
    path = write(folder, "rows-pace", long_deadline(None))
    show("no cadence.max, makespan", run(["solve", str(path), "--basis", "hold", "--objective", "makespan"]))
    show("no cadence.max, total_cost (levers skipped)", run(["solve", str(path), "--basis", "hold"]))


def refusals(folder: Path) -> None:
    doc = seed_grid(10_000_000)
    doc["schedule"]["cadence"]["max"] = 1.0
    show("grid of 10M entries (1 us to 1 s)", run(["solve", str(write(folder, "grid-cap", doc)), "--no-levers"]))
    for basis in ("steady_state", "hold"):
        path = write(folder, f"stages-1-999-{basis}", staged_short(basis))
        for cmd in ("solve", "frontier", "simulate"):
            show(f"stages 1 + 999 ({basis}), {cmd}", run([cmd, str(path)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grids", action="store_true", help="the memory an entry costs")
    parser.add_argument("--rows", action="store_true", help="the memory a row of a table costs (start-up counted)")
    parser.add_argument("--refusals", action="store_true", help="what the caps' refusals cost")
    args = parser.parse_args()
    every = not (args.grids or args.rows or args.refusals)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        if args.grids or every:
            grids(Path(tmp))
        if args.rows or every:
            rows(Path(tmp))
        if args.refusals or every:
            refusals(Path(tmp))


if __name__ == "__main__":
    main()
