"""Plans that hold (MODEL.md §11): what the allowance loop costs, and whether its plans hold in fresh replays.

    python bench/hold.py [--sections timing model frontier drivers finegrid acceptance] [--repeats 3]
                         [--replications 20] [--seed 1000] [--baseline PATH/TO/trainground]

timing: the whole `trainground solve instances/seed-week-75.yaml --no-levers --json` command on each basis,
``--repeats`` runs each, in fresh processes (imports, loading, solving, the replays, printing): the median
wall-clock seconds, the median CPU seconds (the command and its children; the replays run on threads), the
rounds and the allowance's start, and the ratio hold / steady_state; then the hold command with the levers
(without --no-levers). ``--baseline``: another checkout's `trainground` executable, whose hold command is
timed in the same run, interleaved with this one's.

model: for each instance below, the hold solve's prediction of its replays' median makespan
(hold.predicted_makespan_s, made before any replay) beside the final plan's replays (their median and p90),
the allowance, the rounds and where the allowance started; "within" says whether the median lies within
max(0.1 %, two standard errors of the median) of the prediction (the standard error from the replays' p50
and p90 as if normal: 1.2533·sd/sqrt(R), sd = (p90 - p50)/1.2816).

frontier: the whole `trainground frontier instances/seed-week-75.yaml` on each basis (median wall and CPU
of ``--repeats`` runs, the points found, the ratio hold / steady_state).

drivers: the whole `sweep` of the seed over four throughputs (each point's plan differs, so under hold each
point runs its own allowance loop) and the whole `batch` of five seed variants on 2 workers, on each basis
(median wall and CPU of ``--repeats`` runs, the ratio hold / steady_state).

finegrid: `solve instances/seed-two-pools.yaml --set schedule.cadence.step=0.01s --time-limit 20` on each
basis, ``--repeats`` runs: wall seconds, peak memory (maximum resident set of the command), the status, the
gap and the plan's cost (the same plan in every run or not).

acceptance: for each instance below, the plan `solve` prints under hold, replayed by
`simulate --plan PLAN --replications R --seed S` with seeds the allowance was not tuned on (replay i of
the allowance used seed planning.seed + i; simulate's replication r of seed S draws from (S, r)): the
on-time count, the mean sandbox wait share, and the price of holding (the replays' expected cost over
the steady_state optimum). The first line printed is the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAINGROUND = Path(sys.executable).with_name("trainground")
SEED = "instances/seed-week-75.yaml"
AMDAHL = "training.update_time={law: amdahl, reference_gpus: 7000, reference_time: 300s, serial_fraction: 0.05}"
CASES = [  # (label, file, edits): the seed, a two-pool instance, an Amdahl law, cloud spillover, comonotone groups
    ("seed-week-75", SEED, []),
    ("seed-two-pools", "instances/seed-two-pools.yaml", []),
    ("seed, Amdahl updates", SEED, ["--set", AMDAHL]),
    ("two-backends-cloud (spillover)", "instances/two-backends-cloud.yaml", []),
    ("seed-drop-comonotone", "instances/seed-drop-comonotone.yaml", []),
]


def environment() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "TRAINGROUND_BASIS")}
    return env


def timed(args: list[str]) -> tuple[float, float, subprocess.CompletedProcess]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    clock = time.perf_counter()
    done = subprocess.run(args, cwd=ROOT, env=environment(), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - clock
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done


def timing(repeats: int, baseline: str | None = None) -> None:
    print("whole `solve instances/seed-week-75.yaml --no-levers --json`, medians of", repeats)
    print(f"{'command':<22} {'wall s':>8} {'cpu s':>8}  rounds  replays run  start")
    runs = [("steady_state", str(TRAINGROUND), ["--basis", "steady_state", "--no-levers"])]
    runs.append(("hold", str(TRAINGROUND), ["--basis", "hold", "--no-levers"]))
    if baseline:
        runs.append(("hold (baseline)", baseline, ["--basis", "hold", "--no-levers"]))
    runs.append(("hold, with levers", str(TRAINGROUND), ["--basis", "hold"]))
    walls: dict[str, list[float]] = {label: [] for label, _, _ in runs}
    cpus: dict[str, list[float]] = {label: [] for label, _, _ in runs}
    seen: dict[str, str] = {}
    for _ in range(repeats):  # interleaved, so that a change in the machine's load falls on every command
        for label, executable, options in runs:
            wall, cpu, done = timed([executable, "solve", SEED, "--json", *options])
            if done.returncode != 0:
                sys.exit(f"solve ({label}) failed: {done.stderr.strip()}")
            walls[label].append(wall)
            cpus[label].append(cpu)
            hold = json.loads(done.stdout).get("hold")
            seen[label] = (
                ""
                if not hold
                else f"{hold['rounds']:>6}  {hold['rounds'] * hold['replays']:>11}  {hold.get('allowance_start') or '—'}"
            )
    for label, _, _ in runs:
        print(
            f"{label:<22} {statistics.median(walls[label]):>8.2f} {statistics.median(cpus[label]):>8.2f}  {seen[label]}"
        )
    steady = statistics.median(walls["steady_state"])
    for label, _, _ in runs[1:]:
        print(f"{label} / steady_state: {statistics.median(walls[label]) / steady:.2f}x wall")


def model() -> None:
    print("the model's prediction of its replays (hold.predicted_makespan_s) and the final plan's replays")
    head = f"{'instance':<32} {'predicted s':>12} {'median s':>11} {'p90 s':>11} {'error':>7} {'within':>6}"
    print(head + f" {'allowance s':>11} {'rounds':>6}  start")
    for label, file, edits in CASES:
        _, _, done = timed([str(TRAINGROUND), "solve", file, *edits, "--no-levers", "--json", "--basis", "hold"])
        if done.returncode != 0:
            print(f"{label:<32} solve exit {done.returncode}: {done.stderr.strip()[:80]}")
            continue
        hold = json.loads(done.stdout)["hold"]
        predicted, spans = hold.get("predicted_makespan_s"), hold["makespan_s"]
        median, p90 = spans["p50"], spans["p90"]
        if predicted is None or median is None:
            print(f"{label:<32} {'—':>12} {median or float('nan'):>11,.0f}")
            continue
        standard_error = 1.2533 * (p90 - median) / 1.2816 / hold["replays"] ** 0.5
        within = abs(median - predicted) <= max(0.001 * median, 2 * standard_error)
        print(
            f"{label:<32} {predicted:>12,.0f} {median:>11,.0f} {p90:>11,.0f} {(predicted - median) / median:>+7.3%} "
            f"{'yes' if within else 'no':>6} {hold['allowance_s']:>11,.0f} {hold['rounds']:>6}  {hold['allowance_start']}"
        )


def frontier(repeats: int) -> None:
    print("whole `frontier instances/seed-week-75.yaml`, medians of", repeats)
    print(f"{'basis':<14} {'wall s':>8} {'cpu s':>8}  points (total, hourly)")
    medians = {}
    with tempfile.TemporaryDirectory() as scratch:
        for basis in ("steady_state", "hold"):
            walls, cpus, points = [], [], ""
            for _ in range(repeats):
                args = [str(TRAINGROUND), "frontier", SEED, "--json", "--out", scratch, "--basis", basis]
                wall, cpu, done = timed(args)
                if done.returncode != 0:
                    sys.exit(f"frontier --basis {basis} failed: {done.stderr.strip()}")
                walls.append(wall)
                cpus.append(cpu)
                fronts = json.loads(done.stdout)["frontiers"]
                points = ", ".join(str(len(f["points"])) for f in fronts.values())
            medians[basis] = statistics.median(walls)
            print(f"{basis:<14} {medians[basis]:>8.2f} {statistics.median(cpus):>8.2f}  {points}")
    print(f"hold / steady_state: {medians['hold'] / medians['steady_state']:.2f}x wall")


SWEEP = ["--set", "inference.shapes[*].tokens_per_gpu_s=70,75,80,90"]
BATCH = [SEED, "instances/seed-two-pools.yaml", "instances/seed-cadence-500.yaml", "instances/seed-intake-80.yaml"]
BATCH += ["instances/seed-drop-comonotone.yaml"]


def rounds_seen(name: str, stdout: str, scratch: str) -> str:
    """Rounds and allowance starts of each new plan under hold: a sweep's rows (its sweep.json: the rows it prints
    leave out each point's result), a batch's result files."""
    if name == "sweep":
        points = json.loads((Path(scratch) / "sweep.json").read_text())["points"]
        holds = [(row.get("result") or {}).get("hold") for row in points]
    else:
        holds = []
        for path in sorted(Path(scratch).glob("*.json")):
            try:
                holds.append(json.loads(path.read_text()).get("hold"))
            except (ValueError, AttributeError):
                continue
    return ", ".join(f"{h['rounds']} ({h.get('allowance_start') or '—'})" for h in holds if h)


def drivers(repeats: int, baseline: str | None = None) -> None:
    print(f"whole `sweep {SEED} {' '.join(SWEEP[1:])}` and `batch` of {len(BATCH)} seed variants, medians of", repeats)
    print(f"{'command':<8} {'basis':<18} {'wall s':>8} {'cpu s':>8}  rounds (start) per plan")
    runs = [("steady_state", str(TRAINGROUND)), ("hold", str(TRAINGROUND))]
    if baseline:
        runs.append(("hold (baseline)", baseline))
    for name, command in (
        ("sweep", ["sweep", SEED, *SWEEP, "--json"]),
        ("batch", ["batch", *BATCH, "--workers", "2", "--quiet"]),
    ):
        walls: dict[str, list[float]] = {label: [] for label, _ in runs}
        cpus: dict[str, list[float]] = {label: [] for label, _ in runs}
        seen: dict[str, str] = {}
        for _ in range(repeats):
            for label, executable in runs:
                basis = "steady_state" if label == "steady_state" else "hold"
                with tempfile.TemporaryDirectory() as scratch:
                    wall, cpu, done = timed([executable, *command, "--out", scratch, "--basis", basis])
                    if done.returncode not in (0, 3):
                        sys.exit(f"{name} ({label}) failed: {done.stderr.strip()}")
                    seen[label] = "" if basis != "hold" else rounds_seen(name, done.stdout, scratch)
                walls[label].append(wall)
                cpus[label].append(cpu)
        for label, _ in runs:
            print(
                f"{name:<8} {label:<18} {statistics.median(walls[label]):>8.2f} {statistics.median(cpus[label]):>8.2f}"
                f"  {seen[label]}"
            )
        steady = statistics.median(walls["steady_state"])
        for label, _ in runs[1:]:
            print(f"{name}: {label} / steady_state {statistics.median(walls[label]) / steady:.2f}x wall")


def finegrid(repeats: int, time_limit: float = 20.0) -> None:
    """The fine-grid what-if on each basis, ``repeats`` runs each: the whole command's wall and CPU
    time (from the command's start, imports included) against the time limit + 2 s, its peak memory, and what
    it returned (status, MIP gap, the plan's cadence and cost, under hold the rounds and the replays that ran),
    so that identical runs can be compared."""
    print(f"`solve instances/seed-two-pools.yaml --set schedule.cadence.step=0.01s --time-limit {time_limit:g}`")
    print(
        f"{'basis':<14} {'wall s':>8} {'cpu s':>8} {'peak MB':>8}  status       gap    cadence s     total cost  hold"
    )
    for basis in ("steady_state", "hold"):
        for _ in range(repeats):
            args = ["/usr/bin/time", "-f", "%M", str(TRAINGROUND), "solve", "instances/seed-two-pools.yaml"]
            args += ["--set", "schedule.cadence.step=0.01s", "--time-limit", f"{time_limit:g}", "--no-levers", "--json"]
            wall, cpu, done = timed([*args, "--basis", basis])
            peak = int(done.stderr.strip().splitlines()[-1]) / 1024
            result = json.loads(done.stdout)
            plan = result.get("plan") or {}
            gap = result.get("mip_gap")
            gap_text = "—" if gap is None else f"{gap:.2%}"
            cost_text = "—" if plan.get("total_cost") is None else f"${plan['total_cost']:,.0f}"
            hold = result.get("hold") or {}
            held = f"{hold['rounds']} rounds, {hold['replays']} replays" if hold else ""
            print(
                f"{basis:<14} {wall:>8.2f} {cpu:>8.2f} {peak:>8.0f}  {result['status']:<12} {gap_text:>6} "
                f"{plan.get('cadence_s', float('nan')):>10.2f} {cost_text:>14}  {held}"
            )
    print(f"target: wall <= {time_limit + 2:g} s, peak <= 1,536 MB, the same plan and gap in every run of a basis")


def acceptance(replications: int, seed: int) -> None:
    print(f"fresh replays: simulate --replications {replications} --seed {seed} of the plan solve prints (hold)")
    head = f"{'instance':<32} {'on time':>8} {'wait share':>10} {'allowance s':>11} {'rounds':>6} {'price':>7}"
    print(head + "  solve s")
    with tempfile.TemporaryDirectory() as scratch:
        for label, file, edits in CASES:
            plan = Path(scratch) / "plan.json"
            wall, _, done = timed(
                [str(TRAINGROUND), "solve", file, *edits, "--no-levers", "--out", str(plan), "--json"]
            )
            if done.returncode != 0:
                print(f"{label:<32} solve exit {done.returncode}: {done.stderr.strip()[:80]}")
                continue
            result = json.loads(done.stdout)
            hold = result["hold"]
            args = [str(TRAINGROUND), "simulate", file, *edits, "--plan", str(plan), "--json"]
            args += ["--replications", str(replications), "--seed", str(seed), "--workers", "2"]
            _, _, sim = timed(args)
            if sim.returncode != 0:
                print(f"{label:<32} simulate exit {sim.returncode}: {sim.stderr.strip()[:80]}")
                continue
            report = json.loads(sim.stdout)
            runs = report.get("runs") or []
            on_time = sum(1 for r in runs if r.get("on_time"))
            waits = [r.get("sandbox_wait_share") or 0.0 for r in runs]
            steady = hold["steady_state_total_cost"]
            price = hold["expected_total_cost"] / steady - 1 if steady and hold["expected_total_cost"] else None
            price_text = "n/a" if price is None else f"{price:+.1%}"
            print(
                f"{label:<32} {on_time:>3} of {len(runs):<2} {statistics.mean(waits):>10.3%} "
                f"{hold['allowance_s']:>11,.0f} {hold['rounds']:>6} {price_text:>7}  {wall:7.1f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sections = ["timing", "model", "frontier", "drivers", "finegrid", "acceptance"]
    parser.add_argument("--sections", nargs="+", default=sections, choices=sections)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--replications", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--baseline", help="another checkout's trainground executable, timed in the same run")
    args = parser.parse_args()
    print("load average:", " ".join(Path("/proc/loadavg").read_text().split()[:3]))
    if "timing" in args.sections:
        timing(args.repeats, args.baseline)
    if "model" in args.sections:
        model()
    if "frontier" in args.sections:
        frontier(args.repeats)
    if "drivers" in args.sections:
        drivers(args.repeats, args.baseline)
    if "finegrid" in args.sections:
        finegrid(args.repeats)
    if "acceptance" in args.sections:
        acceptance(args.replications, args.seed)


if __name__ == "__main__":
    main()
