"""calibrate on logs drawn from known parameters (tests/calibrate_logs.py).

PYTHONPATH=. python bench/calibrate.py timing [--rows 1000000] [--repeats 3]
    a 1-million-row trajectory log (CSV) with its step log, the whole command in this process (read, fit
    with 200 bootstrap replicates, write the instance): median of REPEATS runs and the peak memory.
    Target: <= 10 s.
PYTHONPATH=. python bench/calibrate.py fixtures DIR [--log-end S]
    write the two-pool logs (tests/calibrate_logs.py) into DIR (what docs/calibrate.md runs calibrate on).
PYTHONPATH=. python bench/calibrate.py truth DIR
    calibrate DIR's logs and print truth against fitted per parameter, with the 90 % interval.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from tests.calibrate_logs import (  # noqa: E402
    Pool,
    StepTruth,
    Truth,
    TwoPools,
    columns,
    mess,
    step_records,
    two_pool_columns,
    write_csv,
    write_records,
    write_table,
)
from trainground.cli import main  # noqa: E402


def timing(rows: int, repeats: int) -> None:
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
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"calibrate: median {statistics.median(times):.2f} s over {repeats} runs "
            f"({', '.join(f'{t:.2f}' for t in times)}); peak memory of the process {peak:,.0f} MB"
        )


def fixtures(folder: Path, log_end: float) -> TwoPools:
    """The two-pool trajectory log (pool column, UUID groups, a timeout without a censored_at column, 5 NaN
    token cells and 3 ends 50 ms before their start), and one file per pool with censored_at."""
    truth = TwoPools(pools=(Pool("h100", 90.0, 128), Pool("a100", 40.0, 128)), log_end=log_end)
    folder.mkdir(parents=True, exist_ok=True)
    cols = two_pool_columns(truth, seed=22, censored_at=False)
    messy, _ = mess(cols, seed=23)
    write_table(folder / "trajectories.csv", messy, nan_as="NaN")
    with_cut = two_pool_columns(truth, seed=22)
    for pool in truth.pools:
        mine = with_cut["pool"] == pool.name
        write_table(folder / f"{pool.name}.csv", {k: v[mine] for k, v in with_cut.items() if k != "pool"})
    steps = StepTruth()
    for name, file in STEP_FILES.items():
        write_records(folder / file, step_records(steps, name, seed=24), name)
    (folder / "truth.json").write_text(
        json.dumps(
            {
                "median": truth.median,
                "p99": truth.p99,
                "timeout": round(truth.timeout, 1),
                "tokens_per_gpu_s": {p.name: p.tokens_per_gpu_s for p in truth.pools},
                "inference_gpus": {p.name: p.gpus for p in truth.pools},
                "tokens_per_attempt": truth.tokens_mean,
                "steps": {
                    "update_s": {f"{g:g}": float(steps.update(np.array(g))) for g in steps.training_gpus},
                    "weight_sync_s": steps.weight_sync,
                    "checkpoint_s": steps.checkpoint,
                    "generation_tokens_per_gpu_s": steps.tokens_per_gpu_s,
                    "inference_gpus": steps.inference_gpus,
                    "version_gap_mean": steps.staleness,
                    "agent_loop_median_s": steps.life_median,
                    "agent_loop_p99_s": steps.life_p99,
                },
            },
            indent=1,
        )
    )
    return truth


STEP_FILES = {"verl": "verl.jsonl", "slime": "slime.jsonl", "areal": "areal.csv"}


def _fit(*args: str) -> dict:
    out = CliRunner().invoke(main, ["calibrate", *args, "--json"])
    if out.exit_code != 0:
        raise SystemExit(f"calibrate failed ({out.exit_code}): {out.output}")
    return json.loads(out.output)


def truth_table(folder: Path) -> None:
    truth = json.loads((folder / "truth.json").read_text())
    gpus = ",".join(f"{k}={v}" for k, v in truth["inference_gpus"].items())
    logs = ["--trajectories", str(folder / "trajectories.csv"), "--inference-gpus", gpus]
    censored = _fit(*logs, "--timeout", str(truth["timeout"]))
    naive = _fit(*logs)
    rows = [
        ("occupancy median (s)", truth["median"], censored["occupancy"]["median"], naive["occupancy"]["median"]),
        ("occupancy p99 (s)", truth["p99"], censored["occupancy"]["p99"], naive["occupancy"]["p99"]),
        ("tokens per attempt", truth["tokens_per_attempt"], censored["tokens_per_attempt"], None),
    ]
    for pool, rate in truth["tokens_per_gpu_s"].items():
        rows.append((f"tokens/s per GPU, {pool}", rate, censored["tokens_per_gpu_s_per_pool"][pool], None))
    print(f"{'parameter':<26} {'truth':>9} {'fitted':>9} {'90 % interval':>19} {'error':>7} {'covers':>6}   naive fit")
    for name, true, fig, plain in rows:
        lo, hi = fig["interval"]
        covers = "yes" if lo <= true <= hi else "no"
        other = (
            ""
            if plain is None
            else f"   {plain['value']:,.0f} ({plain['value'] / true - 1:+.1%}, {naive['occupancy']['law']})"
        )
        print(
            f"{name:<26} {true:>9,.4g} {fig['value']:>9,.4g} {lo:>9,.4g}-{hi:<9,.4g} "
            f"{fig['value'] / true - 1:>+7.1%} {covers:>6}{other}"
        )
    print(
        f"naive fit: no --timeout, so the {censored['occupancy']['timeout_cut_rows']:,} attempts cut at "
        f"{truth['timeout']:,.0f} s read as ended there"
    )
    for name, file in STEP_FILES.items():
        print(f"\n{name} step log ({file}; --columns training_gpus=trainer/gpus --inference-gpus {gpus})")
        got = _fit(
            *logs[:2],
            "--steps",
            str(folder / file),
            "--columns",
            "training_gpus=trainer/gpus",
            "--inference-gpus",
            gpus,
        )
        fitted = {f"update time at {p['gpus']:g} GPUs (s)": p["seconds"] for p in got["update_time"]["points"]}
        rows = []
        ref = got["update_time"]["reference_time_s"]
        rows.append(
            (
                f"update time at {got['update_time']['reference_gpus']:g} GPUs (s), {got['update_time']['law']}",
                truth["steps"]["update_s"][f"{got['update_time']['reference_gpus']:g}"],
                ref,
            )
        )
        for key, label in (
            ("weight_sync_s", "weight sync per version (s)"),
            ("checkpoint_s", "checkpoint per save (s)"),
            ("generation_tokens_per_gpu_s", "tokens/s per GPU (step log)"),
            ("version_gap_mean", "version gap mean"),
            ("agent_loop_median_s", "occupancy median, agent loop (s)"),
            ("agent_loop_p99_s", "occupancy p99, agent loop (s)"),
        ):
            if key in got["step_log"]:
                rows.append((label, truth["steps"][key], got["step_log"][key]))
        for label, true, fig in rows:
            lo, hi = fig["interval"]
            covers = "yes" if lo <= true <= hi else "no"
            print(
                f"{label:<40} {true:>9,.4g} {fig['value']:>9,.4g} {lo:>9,.4g}-{hi:<9,.4g} {fig['value'] / true - 1:>+7.1%} {covers:>6}"
            )
        for label, value in fitted.items():
            gpus = label.split()[3]
            true = truth["steps"]["update_s"][gpus]
            print(f"{label:<40} {true:>9,.4g} {value:>9,.4g} {'(median)':>19} {value / true - 1:>+7.1%}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="mode", required=True)
    t = sub.add_parser("timing")
    t.add_argument("--rows", type=int, default=1_000_000)
    t.add_argument("--repeats", type=int, default=3)
    f = sub.add_parser("fixtures")
    f.add_argument("folder", type=Path)
    f.add_argument("--log-end", type=float, default=92_600.0)
    r = sub.add_parser("truth")
    r.add_argument("folder", type=Path)
    args = parser.parse_args()
    if args.mode == "timing":
        timing(args.rows, args.repeats)
    elif args.mode == "fixtures":
        fixtures(args.folder, args.log_end)
    else:
        truth_table(args.folder)
