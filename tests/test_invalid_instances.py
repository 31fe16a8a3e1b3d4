"""Bad input: every file in tests/data/invalid is refused with exit 2, naming the file, the field and the rule.

Each corpus file is the seed baseline with exactly one thing broken; the table below
(not the files) holds what the message must say. The CLI runs in-process through
click's CliRunner for every file, and as a real subprocess for a handful, to prove
that nothing but the message reaches stdout/stderr (no traceback).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainground.cli import main

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "invalid"
HELPER_SUFFIXES = {".csv"}  # sample files that corpus instances point at, not instances themselves
EXIT_INVALID = 2

# file name -> (field path or None for a file-level problem, fragment of the rule[, number of problems])
CASES: dict[str, tuple] = {
    # parsing and file-level problems
    "yaml-unparseable.yaml": (None, "not valid YAML at line 14"),
    "toml-unparseable.toml": (None, "not valid TOML"),
    "json-unparseable.json": (None, "not valid JSON at line"),
    "top-level-list.yaml": (None, "the top level must be a mapping of sections, got a list"),
    "empty.yaml": (None, "the top level must be a mapping of sections, got empty"),
    "instance.txt": (None, "unknown file type '.txt'"),
    "duplicate-yaml-key.yaml": ("workload.iterations", "key given twice (lines 5 and 6)"),
    "json-duplicate-key.json": ("objective", "key given twice"),
    # structure
    # a misspelled required key: its did-you-mean alone, not also the key it misses as missing
    "unknown-top-level-key.yaml": ("workloads", "unknown key 'workloads'; did you mean 'workload'?", 1),
    "unknown-nested-key.yaml": ("workload.intake_rat", "unknown key 'intake_rat'; did you mean 'intake_rate'?"),
    "unknown-occupancy-key.yaml": ("environment.occupancy.p50", "unknown key 'p50' (allowed here: distribution,"),
    "missing-required-field.yaml": ("workload.iterations", "required field is missing"),
    "missing-section.yaml": ("training", "required field is missing"),
    "toml-missing-section.toml": ("environment", "required field is missing"),
    "schema-version.yaml": ("schema_version", "must be 1, got 2"),
    "null-section.yaml": ("freshness", "must be a mapping, got null"),
    # types
    "wrong-type-string-for-int.yaml": ("workload.iterations", "must be a whole number, got 'a thousand'"),
    "wrong-type-bool-for-int.yaml": ("workload.group_size", "must be a whole number, got true"),
    "wrong-type-list-for-mapping.yaml": ("workload", "must be a mapping, got [1000"),
    "wrong-type-mapping-for-list.yaml": ("gpu_pools", "must be a list, got {"),
    "wrong-type-number-for-name.yaml": ("training.pool", "must be a string, got 7"),
    # numbers
    "negative-number.yaml": ("inference.shapes[0].tokens_per_gpu_s", "must be > 0, got -75"),
    "zero-gpus-per-group.yaml": ("training.gpus_per_group", "must be > 0, got 0"),
    "json-negative-node-density.json": ("environment.node_types[0].density.container", "must be > 0, got -1048"),
    "peak-to-mean-below-one.yaml": ("environment.peak_to_mean", "must be >= 1, got 0.5"),
    "nan.yaml": ("workload.tokens_per_attempt", "must be a finite number, got nan"),
    "nan-fraction.yaml": ("workload.intake_rate", "must be a finite number, got nan"),
    "toml-nan.toml": ("inference.shapes[0].version_slowdown", "must be a finite number, got nan"),
    "inf.yaml": ("gpu_pools[0].gpu_hour_cost", "must be a finite number, got inf"),
    "inf-duration.yaml": ("schedule.deadline", "must be a finite number, got inf"),
    "json-infinity.json": ("workload.batch_trajectories", "must be a finite number, got inf"),
    "intake-rate-above-one.yaml": ("workload.intake_rate", "must be in (0, 1], got 1.3"),
    "toml-intake-rate-above-one.toml": ("workload.intake_rate", "must be in (0, 1], got 1.3"),
    "availability-zero.yaml": ("inference.availability", "must be in (0, 1], got 0"),
    "backend-share-above-one.yaml": ("environment.backends[0].share", "must be in [0, 1], got 1.5"),
    "backend-shares-not-summing.yaml": ("environment.backends", "shares must sum to 1, got 0.9"),
    # names and references
    "unknown-shape-pool.yaml": ("inference.shapes[0].pool", "'mian' is not a gpu_pools name (have: main)"),
    "unknown-training-pool.yaml": ("training.pool", "'trainer' is not a gpu_pools name"),
    "toml-unknown-training-pool.toml": ("training.pool", "'trainer' is not a gpu_pools name"),
    "unknown-backend-node-density.yaml": (
        "environment.node_types[0].density.microvm",
        "'microvm' is not a backend name (have: container)",
    ),
    "unknown-backend-eligible-share.yaml": (
        "environment.cloud.eligible_share.containers",
        "'containers' is not a backend name",
    ),
    "unknown-backend-vm-density.yaml": (
        "environment.cloud.vm_types[0].density.gvisor",
        "'gvisor' is not a backend name",
    ),
    "duplicate-pool-names.yaml": ("gpu_pools[1].name", "duplicate name 'main'"),
    "json-duplicate-backend-names.json": ("environment.backends[1].name", "duplicate name 'container'"),
    "json-wrong-objective.json": ("objective", "must be 'total_cost', 'hourly_cost' or 'makespan', got 'cheapest'"),
    "wrong-objective.yaml": ("objective", "must be 'total_cost', 'hourly_cost' or 'makespan', got 'cost'"),
    # occupancy
    "occupancy-one-parameter.yaml": (
        "environment.occupancy",
        "exactly two of median, p99, mean, sigma (got 1: median)",
    ),
    "occupancy-three-parameters.yaml": ("environment.occupancy", "exactly two of median, p99, mean, sigma (got 3"),
    "occupancy-p99-below-median.yaml": ("environment.occupancy.p99", "must be above the median"),
    "occupancy-unknown-distribution.yaml": (
        "environment.occupancy.distribution",
        "must be 'lognormal' or 'empirical', got 'weibull'",
    ),
    "occupancy-missing-distribution.yaml": ("environment.occupancy.distribution", "required field is missing"),
    "empirical-missing-csv.yaml": ("environment.occupancy.csv", "no-such-samples.csv': No such file or directory"),
    "empirical-csv-not-a-number.yaml": (
        "environment.occupancy.csv",
        "occupancy-not-a-number.csv line 5: 'about an hour' is not a number of seconds",
    ),
    "empirical-one-sample.yaml": ("environment.occupancy.samples", "needs at least 2 samples, got 1"),
    # units, schedule, training
    "unit-unreadable.yaml": ("schedule.deadline", "cannot read duration '7days'"),
    "unit-parsecs.yaml": ("training.update_time.reference_time", "cannot read duration '10 parsecs'"),
    "extra-time-not-below-deadline.yaml": ("schedule.extra_time", "must be below the deadline"),
    "cadence-max-below-min.yaml": ("schedule.cadence.max", "cadence.max (30 s) must be >= cadence.min (60 s)"),
    "min-groups-above-max.yaml": ("training.max_groups", "max_groups (10) must be >= min_groups (100)"),
    "update-time-table-not-increasing.yaml": (
        "training.update_time.points[2].gpus",
        "points must be listed by strictly increasing gpus",
    ),
    "update-time-unknown-law.yaml": (
        "training.update_time.law",
        "must be 'inverse', 'amdahl' or 'table', got 'linear'",
    ),
    "amdahl-missing-serial-fraction.yaml": ("training.update_time.serial_fraction", "required field is missing"),
    # uncertainty (MODEL §9): paths, distribution parameters, factors that could only give invalid values
    "uncertainty-path-matches-nothing.yaml": (
        "uncertainty.factors[0].paths[0]",
        "'inference.shapes[*].tokens_per_gpu' matches no field that is set",
    ),
    "uncertainty-malformed-path.yaml": ("uncertainty.factors[0].paths[0]", "cannot read field path"),
    "uncertainty-whole-number-field.yaml": (
        "uncertainty.factors[0].paths[0]",
        "workload.iterations is a whole number; factors scale real-valued fields",
    ),
    "uncertainty-scales-backend-shares.yaml": ("uncertainty.factors[0].paths[0]", "a factor cannot scale them"),
    "uncertainty-some-occupancy-samples.yaml": (
        "uncertainty.factors[0].paths[0]",
        "a factor scales every occupancy sample or none",
    ),
    "uncertainty-normal-missing-sd.yaml": ("uncertainty.factors[0].sd", "a normal factor needs mean, sd (missing sd)"),
    "uncertainty-negative-sd.yaml": ("uncertainty.factors[0].sd", "must be >= 0, got -0.05"),
    "uncertainty-lognormal-zero-median.yaml": ("uncertainty.factors[0].median", "a multiplier's median must be > 0"),
    "uncertainty-uniform-high-below-low.yaml": ("uncertainty.factors[0].high", "high (0.95) must be >= low (1.3)"),
    "uncertainty-triangular-mode-outside.yaml": ("uncertainty.factors[0].mode", "mode (1.5) must lie in [low, high]"),
    "uncertainty-parameter-of-another-distribution.yaml": (
        "uncertainty.factors[0].low",
        "a normal factor takes mean, sd, not low",
    ),
    "uncertainty-unknown-distribution.yaml": (
        "uncertainty.factors[0].dist",
        "must be 'normal', 'lognormal', 'uniform' or 'triangular', got 'weibull'",
    ),
    "uncertainty-only-invalid-values.yaml": (
        "uncertainty.factors[0].paths[0]",
        "puts workload.intake_rate out of its range ((0, 1]): the factor could only",
    ),
    "uncertainty-peak-to-mean-below-one.yaml": (
        "uncertainty.factors[0].paths[0]",
        "puts environment.peak_to_mean out of its range (>= 1)",
    ),
    "uncertainty-duplicate-factor.yaml": ("uncertainty.factors[1].name", "duplicate factor name 'throughput'"),
    "uncertainty-no-factors.yaml": ("uncertainty.factors", "must have at least 1 item(s), got 0"),
    "uncertainty-confidence-above-one.yaml": ("uncertainty.confidence", "must be in [0, 1], got 90"),
    # run regimes (MODEL §14)
    "regime-mode-unknown.yaml": ("regime.mode", "must be 'async', 'pipelined' or 'colocated', got 'sync'"),
    "regime-pipelined-steps-ahead-two.yaml": ("regime.steps_ahead", "must be 0 or 1 with mode: pipelined, got 2"),
    "regime-admission-without-in-flight-updates.yaml": (
        "regime.in_flight_updates",
        "must be true with staleness: admission",
    ),
    "regime-switch-time-not-colocated.yaml": ("regime.switch_time", "applies to mode: colocated only"),
    "regime-colocated-shape-off-training-pool.yaml": (
        "inference.shapes[1].pool",
        "'side' is not the training pool 'main': under regime.mode colocated",
    ),
    # plausibility caps (models.plausible): refused before anything is built
    "gpus-above-cap.yaml": ("gpu_pools[0].gpus", "must be at most 10,000,000 GPUs, a plausibility cap"),
    "cadence-grid-too-fine.yaml": ("schedule.cadence.step", "makes 544,800,001 cadence grid points"),
    "uncertainty-too-many-scenarios.yaml": ("uncertainty.samples", "100,000 scenarios × 1,250 training-group counts"),
    "yaml-alias-bomb.yaml": ("environment.occupancy.samples", "holds 1,111,111,111 values (YAML aliases counted"),
    "json-huge-integer.json": ("gpu_pools[0].gpus", "a whole number of 5,001 digits"),
    "json-nested-too-deep.json": ("inference.shapes[0].tokens_per_gpu_s...", "nested 44 levels deep"),
    "empirical-csv-sample-too-long.yaml": (
        "environment.occupancy.csv",
        "occupancy-sample-too-long.csv line 4: must be at most 10 years",
    ),
}

# Run these as real processes too: one per parser, file-level problems, a rule that reads a side file.
SUBPROCESS_CASES = [
    "yaml-unparseable.yaml",
    "toml-unparseable.toml",
    "json-unparseable.json",
    "instance.txt",
    "top-level-list.yaml",
    "unknown-top-level-key.yaml",
    "nan.yaml",
    "empirical-csv-not-a-number.yaml",
    "unknown-backend-vm-density.yaml",
    "yaml-alias-bomb.yaml",
    "json-huge-integer.json",
]

# Field-level paths that the seed-shaped corpus must reach at least once (the brief's failure kinds).
PATHS_COVERED = {
    "workload.intake_rate",
    "workload.iterations",
    "training",
    "inference.availability",
    "inference.shapes[0].pool",
    "training.pool",
    "environment.occupancy",
    "schedule.deadline",
    "schedule.extra_time",
    "schedule.cadence.max",
    "training.max_groups",
    "gpu_pools[1].name",
    "training.update_time.law",
    "objective",
    "uncertainty.factors[0].paths[0]",
    "uncertainty.factors[0].sd",
}


def _expect(name: str) -> tuple[str | None, str, int]:
    field, fragment, *rest = CASES[name]
    return field, fragment, (rest[0] if rest else 1)


def _check_message(file: str, stderr: str, field: str | None, fragment: str, problems: int) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == problems, f"expected {problems} problem line(s), got:\n{stderr}"
    assert all(line.startswith(f"{file}: ") for line in lines), f"every line must name the file {file}:\n{stderr}"
    prefix = f"{file}: {field}: " if field else f"{file}: "
    hits = [line for line in lines if line.startswith(prefix) and fragment in line[len(prefix) :]]
    assert hits, f"no line starts with {prefix!r} and holds {fragment!r}:\n{stderr}"
    for word in ("Input should be", "pydantic", "errors.pydantic.dev", "Value error,"):
        assert word not in stderr, f"pydantic jargon {word!r} in:\n{stderr}"


def _no_traceback(*streams: str) -> None:
    for text in streams:
        assert "Traceback" not in text, text


def _invoke(path: str):
    return CliRunner().invoke(main, ["explain", path])


def _run(path: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRAINGROUND_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "trainground.cli", "explain", path],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_corpus_and_table_agree():
    files = {p.name for p in DATA.iterdir() if p.is_file() and p.suffix not in HELPER_SUFFIXES}
    assert files == set(CASES), (
        f"only on disk: {sorted(files - set(CASES))}; only in table: {sorted(set(CASES) - files)}"
    )
    assert len(files) >= 32
    assert {".yaml", ".toml", ".json", ".txt"} <= {Path(f).suffix for f in files}
    assert PATHS_COVERED <= {field for field, *_ in CASES.values()}
    assert set(SUBPROCESS_CASES) <= set(CASES)


@pytest.mark.parametrize("name", sorted(CASES), ids=str)
def test_invalid_instance_in_process(name: str):
    path = str(DATA / name)
    field, fragment, problems = _expect(name)
    result = _invoke(path)
    _no_traceback(result.stdout, result.stderr, result.output)
    assert result.exit_code == EXIT_INVALID, result.output
    assert isinstance(result.exception, SystemExit), result.exc_info  # no exception other than the exit
    assert result.stdout == ""
    _check_message(path, result.stderr, field, fragment, problems)


@pytest.mark.parametrize("name", SUBPROCESS_CASES, ids=str)
def test_invalid_instance_subprocess(name: str):
    path = os.path.relpath(DATA / name, ROOT)
    field, fragment, problems = _expect(name)
    proc = _run(path)
    _no_traceback(proc.stdout, proc.stderr)
    assert proc.returncode == EXIT_INVALID, proc.stderr
    assert proc.stdout == ""
    _check_message(path, proc.stderr, field, fragment, problems)


def test_csv_path_is_relative_to_the_instance_not_the_working_directory(tmp_path: Path, monkeypatch):
    """Run from elsewhere: the empirical CSV is still found beside the instance, so the rule is the CSV's content."""
    path = str(DATA / "empirical-csv-not-a-number.yaml")
    monkeypatch.chdir(tmp_path)
    result = _invoke(path)
    assert result.exit_code == EXIT_INVALID, result.output
    _check_message(path, result.stderr, "environment.occupancy.csv", "'about an hour' is not a number of seconds", 1)


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_not_an_instance_file(kind: str, tmp_path: Path):
    path = tmp_path / "no-such-instance.yaml" if kind == "missing" else tmp_path
    fragment = "no such file" if kind == "missing" else "is a directory, not an instance file"
    result = _invoke(str(path))
    _no_traceback(result.stdout, result.stderr)
    assert result.exit_code == EXIT_INVALID, result.output
    assert isinstance(result.exception, SystemExit)
    _check_message(str(path), result.stderr, None, fragment, 1)
    proc = _run(str(path))
    _no_traceback(proc.stdout, proc.stderr)
    assert proc.returncode == EXIT_INVALID, proc.stderr
    _check_message(str(path), proc.stderr, None, fragment, 1)
