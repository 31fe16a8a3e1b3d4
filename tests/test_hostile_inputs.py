"""Extreme inputs are input errors: the hostile corpus of tests/hostile.py (numbers beyond their caps, digits
Python cannot convert, nesting, YAML alias bombs, long lists, large files, grids and scenario tables too large
to build, the same through --set, unusable samples CSVs, unwritable output paths) exits 2 with one message
naming the file (or option) and the field, never 1.

The corpus runs in-process (click's CliRunner); the cases of megabytes and the allocations the issue saw
(931 GiB of training groups, 3.96 TiB of cadence grid) run as real processes under an address-space limit,
so a cap that stopped working would show as a MemoryError (exit 1), not as a slow test. Time and memory
are measured by bench/hostile.py.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.hostile import ROOT, SEED, Case, build, complaints, spread
from tests.strategies import deep
from trainground.cli import main
from trainground.models.load import InstanceError, load_instance, read_document, validate
from trainground.models.plausible import CAPS, FILE_CAP_VARIABLE
from trainground.simulation.output import OutputError, check_writable, make_folder, write_json

ADDRESS_SPACE = 3 << 30  # bytes a child process may map: imports fit, a table of 10^9 entries does not
IN_SUBPROCESS = {"gpus-1e12", "grid-step-1us", "scenarios-1e9", "alias-bomb-samples-11", "nested-100000.json"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list[Case]:
    return build(tmp_path_factory.mktemp("hostile"), big=False)


def test_the_corpus_is_varied(corpus):
    kinds = Counter(case.name.split("-")[0] for case in corpus)
    assert len(corpus) >= 250, len(corpus)
    kinds_needed = {"cap", "digits", "nested", "alias", "list", "file", "grid", "scenarios", "set", "samples", "out"}
    assert kinds_needed | {"calibrate", "stages", "planning", "reliability"} <= set(kinds), kinds
    capped = {case.args[1] for case in corpus if case.name.startswith("cap-")}
    assert len(capped) >= 4 * len(CAPS)  # every capped field, at least four ways
    suffixes = {Path(case.args[1]).suffix for case in corpus if case.args[0] == "solve"}
    assert {".yaml", ".json", ".toml"} <= suffixes


def test_every_hostile_input_is_an_input_error(corpus):
    failed = {}
    for case in corpus:
        result = CliRunner().invoke(main, list(case.args), env=case.env)
        problems = complaints(case, result.exit_code, result.stdout, result.stderr)
        if result.exit_code == 2 and not isinstance(result.exception, SystemExit):
            problems.append(f"raised {result.exception!r}")
        if problems:
            failed[case.name] = problems
    assert not failed, "\n".join(f"{name}: {'; '.join(p)}" for name, p in failed.items())


def _run(case: Case, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRAINGROUND_DEBUG"}
    env.update(case.env, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    return subprocess.run(
        [sys.executable, "-m", "trainground.cli", *case.args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
    )


def test_large_files_and_huge_tables_are_refused_in_a_real_process(tmp_path: Path):
    cases = [case for case in build(tmp_path) if case.big or case.name in IN_SUBPROCESS]
    assert len(cases) >= 10
    failed = {}
    for case in cases:
        proc = _run(case, tmp_path)
        problems = complaints(case, proc.returncode, proc.stdout, proc.stderr)
        if problems:
            failed[case.name] = problems
    assert not failed, "\n".join(f"{name}: {'; '.join(p)}" for name, p in failed.items())


def test_no_bundled_or_test_instance_is_refused_by_a_cap():
    """Every instance that validates without the caps validates with them, to the same instance."""
    files = [p for p in (ROOT / "instances").rglob("*") if p.suffix in (".yaml", ".toml", ".json")]
    files += [p for p in (ROOT / "tests" / "data").rglob("*") if p.suffix in (".yaml", ".toml", ".json")]
    checked = 0
    for path in files:
        if "invalid" in path.parts:
            continue
        try:
            loose = validate(read_document(path), str(path), path.parent, capped=False)
        except InstanceError:
            continue  # not an instance (a plan, a result) or invalid for a reason of its own
        assert validate(read_document(path), str(path), path.parent) == loose, path
        checked += 1
    assert checked >= 20


def test_the_size_cap_can_be_raised(tmp_path: Path, monkeypatch):
    path = tmp_path / "padded.yaml"
    path.write_text(SEED.read_text() + ("#" * 99 + "\n") * 110_000)  # 11 MB of comments
    with pytest.raises(InstanceError, match="MB cap"):
        load_instance(path)
    monkeypatch.setenv(FILE_CAP_VARIABLE, "12")
    assert load_instance(path).workload.iterations == 1000
    monkeypatch.setenv(FILE_CAP_VARIABLE, "0.0005")
    with pytest.raises(InstanceError, match="above the 0.0005 MB cap"):
        load_instance(SEED)


def test_caps_are_not_applied_to_the_programs_own_copies():
    """A scenario or a diagnosis may scale a field past its cap; only the user's file must meet them."""
    from trainground.models.edits import edited

    inst = load_instance(SEED)
    assert edited(inst, {"inference.shapes[0].tokens_per_gpu_s": 1e9}).inference.shapes[0].tokens_per_gpu_s == 1e9


def test_an_unwritable_output_path_is_an_output_error_naming_it(tmp_path: Path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match=f"^{blocker / 'out'}: cannot write here"):
        write_json(blocker / "out" / "result.json", {})
    with pytest.raises(OutputError, match=f"^{blocker}: cannot write here"):
        make_folder(blocker)
    assert make_folder(tmp_path / "new" / "folder").is_dir()


def test_output_paths_are_checked_without_creating_anything(tmp_path: Path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    for path in (blocker / "out", blocker / "deeper" / "plan.json"):
        with pytest.raises(OutputError, match=f"^{path}: cannot write here: {blocker} is a file, not a folder"):
            check_writable(path)
    for path in (blocker, tmp_path, tmp_path / "new" / "deeper" / "plan.json"):
        check_writable(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_plans_spanning_many_orders_of_magnitude_solve_or_are_refused(tmp_path: Path):
    """One field at its cap, its floor or 1e-6 of its seed value (a token rate of 10^7 per GPU, a node price
    of a micro-dollar): a plan, an infeasibility or an invalid input, never an internal error (exit 1)."""
    outcomes = {}
    files = spread(tmp_path)
    for path in files if deep() else files[::2]:  # every other file under the `ci` profile
        result = CliRunner().invoke(main, ["solve", str(path), "--time-limit", "20"])
        outcomes[path.stem] = result.exit_code
        assert "Traceback" not in result.output
    assert len(outcomes) >= (50 if deep() else 25)
    assert not [name for name, code in outcomes.items() if code not in (0, 2, 3, 4)], outcomes
    assert {0, 3} <= set(outcomes.values())  # some still have a plan, some have none


HEAVY = ("pyomo", "highspy", "matplotlib", "scipy")  # what a solve, a fit or a plot imports
WATCH = """
import atexit, json, sys
atexit.register(lambda: open(sys.argv[1], "w").write(json.dumps([m for m in HEAVY if m in sys.modules])))
from trainground.cli import main
main(sys.argv[2:], prog_name="trainground")
"""


def test_a_refused_file_costs_no_import_of_the_solver_a_fit_or_the_plots(corpus, tmp_path: Path):
    """Every command refuses a bad file before it imports what it would build, fit or plot with, so a refusal
    costs what reading the file costs (bench/hostile.py --only refusal- measures it)."""
    drivers = {"frontier", "compare", "sweep", "report", "calibrate"}  # solve's own path is the floor: not run here
    cases = [case for case in corpus if case.name.startswith("refusal-") and case.args[0] in drivers]
    assert {c.args[0] for c in cases} == drivers
    env = {k: v for k, v in os.environ.items() if k != "TRAINGROUND_DEBUG"} | {"PYTHONPATH": str(ROOT)}
    loaded = {}
    for case in cases:
        seen = tmp_path / f"{case.name}.json"
        script = f"HEAVY = {HEAVY!r}\n" + WATCH
        proc = subprocess.run(
            [sys.executable, "-c", script, str(seen), *case.args], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert not complaints(case, proc.returncode, proc.stdout, proc.stderr), (case.name, proc.stderr)
        loaded[case.name] = json.loads(seen.read_text())
    assert {name: mods for name, mods in loaded.items() if mods} == {}
