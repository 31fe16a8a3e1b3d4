"""Calibrate a 1-million-row trajectory log (CSV) with its step log: the whole command in this process
(read, fit with 200 bootstrap replicates, write the instance), median of REPEATS runs. Target: <= 10 s.

    PYTHONPATH=. python bench/calibrate.py [--rows 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

from cli import main  # noqa: E402
from tests.calibrate_logs import Truth, columns, write_csv  # noqa: E402


def run(rows: int, repeats: int) -> None:
    truth = Truth()
    truth = replace(truth, attempts_per_s=rows / truth.log_end)
    with tempfile.TemporaryDirectory() as folder:
        traj, steps = columns(truth, seed=1)
        tpath, spath = Path(folder) / "trajectories.csv", Path(folder) / "steps.csv"
        write_csv(tpath, traj)
        write_csv(spath, steps)
        print(
            f"{traj['start'].size:,} trajectory rows, {steps['iteration'].size} step rows "
            f"({tpath.stat().st_size / 1e6:,.0f} MB CSV)"
        )
        times = []
        for _ in range(repeats):
            began = time.perf_counter()
            result = CliRunner().invoke(
                main,
                [
                    "calibrate",
                    "--trajectories",
                    str(tpath),
                    "--steps",
                    str(spath),
                    "--into",
                    str(ROOT / "instances/seed-week-75.yaml"),
                    "-o",
                    str(Path(folder) / "out.yaml"),
                    "--json",
                ],
            )
            times.append(time.perf_counter() - began)
            if result.exit_code != 0:
                raise SystemExit(f"calibrate failed ({result.exit_code}): {result.output}")
        print(
            f"calibrate: median {statistics.median(times):.2f} s over {repeats} runs "
            f"({', '.join(f'{t:.2f}' for t in times)})"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    run(args.rows, args.repeats)
