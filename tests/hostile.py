"""A corpus of hostile inputs to ``trainground solve``, written into a folder on demand (never committed):
numbers beyond every field's plausibility cap, whole numbers of more digits than Python converts, nesting
and YAML alias bombs, lists and files beyond their caps, cadence grids and scenario tables too large to
build, the same through ``--set``, samples CSVs that cannot be used, output paths that cannot be written, the
optional sections (stages, planning, reliability) and calibrate's logs.

Every case must exit 2 with one message naming what to blame (the file, a ``--set`` option or the size
variable) and the field or place, never 1 ("internal error"). ``tests/test_hostile_inputs.py`` runs it
in-process; ``bench/hostile.py`` runs each case as a whole command and measures it.
"""

from __future__ import annotations

import copy
import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from trainground.models.edits import apply_edit
from trainground.models.plausible import CAPS, FILE_CAP_VARIABLE, FLOOR, MAX_ITEMS, MAX_SAMPLES, SECONDS, YEAR

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"
UNCERTAIN = ROOT / "instances" / "seed-week-75-uncertain.yaml"
STAGED = ROOT / "instances" / "seed-week-stages.yaml"
TOML_SEED = ROOT / "instances" / "seed-week-75.toml"
DIGITS = 5001  # more than Python's 4,300-digit limit on converting a whole number
INT_FIELDS = {
    "iterations",
    "max_concurrent_attempts",
    "batch_trajectories",
    "group_size",
    "gpus",
    "gpus_per_replica",
    "gpus_per_group",
    "min_groups",
    "max_groups",
    "max_nodes",
    "max_vms",
    "max_versions_kept",
    "samples",
    "seed",
}
AT_MOST = "must be at most"


@dataclass(frozen=True)
class Case:
    """One hostile run: ``args`` after ``trainground`` (``solve`` and the file first); every line of standard
    error starts with ``blamed``, one line with ``blamed: where`` and holds ``fragment``."""

    name: str
    args: tuple[str, ...]
    blamed: str
    where: str | None
    fragment: str
    env: dict[str, str] = field(default_factory=dict)
    big: bool = False  # writes or reads megabytes (the test runs these as real processes)


def complaints(case: Case, exit_code: int, stdout: str, stderr: str) -> list[str]:
    """What is wrong with one run's outcome (empty: the case held)."""
    out = []
    if exit_code != 2:
        out.append(f"exit {exit_code}, not 2")
    if "Traceback" in stdout + stderr:
        out.append("a traceback")
    if stdout:
        out.append("output on stdout: the command did work before it refused its input")
    lines = stderr.strip().splitlines()
    if not lines or not all(line.startswith(f"{case.blamed}: ") for line in lines):
        out.append(f"not every line names {case.blamed!r}")
    prefix = f"{case.blamed}: {case.where}" if case.where else f"{case.blamed}: "
    if not any(line.startswith(prefix) and case.fragment in line for line in lines):
        out.append(f"no line starts {prefix!r} and holds {case.fragment!r}")
    return out + ([f"stderr: {stderr.strip()[:300]}"] if out else [])


def build(folder: Path, big: bool = True) -> list[Case]:
    """Write every case's files into ``folder`` and return the cases; ``big=False`` leaves out the cases of
    megabytes (``Case.big``)."""
    folder.mkdir(parents=True, exist_ok=True)
    cases = _caps(folder) + _digits(folder) + _nesting(folder) + _aliases(folder) + _lists(folder, big)
    cases += _files(folder, big) + _grids(folder) + _edits(folder) + _samples_csv(folder, big) + _outputs(folder)
    cases += _bundled(folder) + _sections(folder) + _calibrate(folder) + _strings(folder) + _overridden(folder)
    cases += _refusals(folder)
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    return cases


def _doc(path: Path = UNCERTAIN) -> dict[str, Any]:
    """A fresh copy of ``path``'s document (parsed once: the corpus edits hundreds of copies of a few files)."""
    return copy.deepcopy(_parsed(path))


@functools.cache
def _parsed(path: Path) -> dict[str, Any]:
    return yaml.load(path.read_text(), Loader=_LOADER)


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser where PyYAML was built with it
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _write(folder: Path, name: str, doc: Any, ext: str) -> str:
    path = folder / f"{name}{ext}"
    path.write_text(json.dumps(doc) if ext == ".json" else yaml.dump(doc, Dumper=_DUMPER, sort_keys=False))
    return str(path)


def _solve(path: str, *more: str) -> tuple[str, ...]:
    return ("solve", path, *more)


def _concrete(norm: str) -> str:
    return norm.replace("[*]", "[0]").replace(".*", ".container").replace("samples[0]", "samples[1]")


def _base_for(path: str) -> dict[str, Any]:
    """The uncertain seed (the staged seed for a stages field), with a table law or empirical samples where
    ``path`` needs them."""
    doc = _doc(STAGED if path.startswith("stages.") else UNCERTAIN)
    if path.startswith("stages.") and ".samples[" in path:
        doc["stages"]["list"][0]["occupancy"] = {"distribution": "empirical", "samples": [600, 1200, 3000]}
        return doc
    if ".points[" in path:
        doc["training"]["update_time"] = {"law": "table", "points": [{"gpus": 1000, "seconds": 300}] * 2}
    if ".samples[" in path:
        doc["environment"]["occupancy"] = {"distribution": "empirical", "samples": [600, 1200, 3000]}
    return doc


def _caps(folder: Path) -> list[Case]:
    """Each capped field just above its cap, far above it as a whole number, as a float and negative as a
    whole number of many digits; durations also as a string with a unit; real-valued fields also below their
    floor and at the smallest positive float."""
    cases = []
    for i, (norm, (largest, unit)) in enumerate(CAPS.items()):
        path = _concrete(norm)
        whole = path.rsplit(".", 1)[-1] in INT_FIELDS
        values: dict[str, Any] = {
            "above": int(largest) + 1 if whole else largest * 1.5,
            "whole-1e40": 10**40,
            "float-1e300": 1e300,
            "negative-1e40": -(10**40),
        }
        if unit == SECONDS:
            values["unit-string"] = f"{largest * 1.5 / 86400:.6g}d"
        if not whole:
            values |= {"subnormal": 5e-324, "below-floor": FLOOR / 2}
        for j, (label, value) in enumerate(values.items()):
            ext = (".yaml", ".json")[(i + j) % 2]
            name = f"cap-{path}-{label}".replace("[", "(").replace("]", ")")
            file = _write(folder, name, apply_edit(_base_for(path), path, value), ext)
            fragment = "must be 0 or at least" if label in ("subnormal", "below-floor") else AT_MOST
            cases.append(Case(name, _solve(file), file, f"{path}: ", fragment))
    return cases


def _digits(folder: Path) -> list[Case]:
    cases = []
    huge = "1" * DIGITS
    seed_text = SEED.read_text()
    for field_path, old, new in (
        ("gpu_pools[0].gpus", "gpus: 10000", f"gpus: {huge}"),
        ("gpu_pools[0].gpu_hour_cost", "gpu_hour_cost: 2.0", f"gpu_hour_cost: {huge}"),
        ("training.gpus_per_group", "gpus_per_group: 8", f"gpus_per_group: {huge}"),
        ("workload.iterations", "iterations: 1000", f"iterations: -{huge}"),
    ):
        for ext in (".yaml", ".json"):
            name = f"digits-{field_path}{ext}".replace("[", "(").replace("]", ")")
            path = folder / name
            if ext == ".yaml":
                assert old in seed_text
                path.write_text(seed_text.replace(old, new, 1))
            else:
                doc = yaml.safe_load(seed_text)
                marker = 123456789123
                text = json.dumps(apply_edit(doc, field_path, marker)).replace(str(marker), new.split(": ")[1])
                path.write_text(text)
            cases.append(Case(name, _solve(str(path)), str(path), f"{field_path}: ", f"{DIGITS:,} digits"))
    toml = TOML_SEED.read_text()
    for old in ("gpus = 10000", "tokens_per_gpu_s = 75", "iterations = 1000"):
        key, _ = old.split(" = ")
        line = toml[: toml.index(old)].count("\n") + 1
        path = folder / f"digits-toml-{key}.toml"
        path.write_text(toml.replace(old, f"{key} = {huge}", 1))
        cases.append(Case(path.name, _solve(str(path)), str(path), f"line {line}: ", f"{DIGITS:,} digits"))
    return cases


def _nesting(folder: Path) -> list[Case]:
    def flow(depth: int) -> str:
        return "[" * depth + "1" + "]" * depth

    seed = _doc(SEED)
    cases = []
    for depth in (100_000, 2_000, 500, 17):
        for ext in (".json", ".toml", ".yaml"):
            name = f"nested-{depth}{ext}"
            path = folder / name
            if ext == ".json":
                path.write_text(json.dumps(seed)[:-1] + f', "extra": {flow(depth)}}}')
            elif ext == ".toml":
                path.write_text(f"extra = {flow(depth)}\n" + TOML_SEED.read_text())
            else:
                path.write_text(SEED.read_text() + f"extra: {flow(depth)}\n")
            fragment = "nesting depth" if ext == ".yaml" and depth > 1000 else "nested"
            cases.append(Case(name, _solve(str(path)), str(path), None, fragment))
    block = "".join(f"{'  ' * i}level{i}:\n" for i in range(30)) + "  " * 30 + "x: 1\n"
    path = folder / "nested-block.yaml"
    path.write_text(SEED.read_text() + "extra:\n" + "".join("  " + line + "\n" for line in block.splitlines()))
    cases.append(Case(path.name, _solve(str(path)), str(path), "extra.level0.level1.level2...: ", "nested 32"))
    doc = apply_edit(seed, "inference.shapes[0].tokens_per_gpu_s", json.loads(flow(40)))
    file = _write(folder, "nested-in-field", doc, ".json")
    cases.append(Case("nested-in-field", _solve(file), file, "inference.shapes[0].tokens_per_gpu_s...: ", "nested"))
    return cases


def _bomb(levels: int, leaf: str = "600") -> str:
    """A YAML flow list of 10**(levels + 1) leaves built from ``levels`` anchors, each used ten times."""
    text = f"&l0 [{', '.join([leaf] * 10)}]"
    for k in range(1, levels + 1):
        text = f"&l{k} [{text}, {', '.join([f'*l{k - 1}'] * 9)}]"
    return text


def _aliases(folder: Path) -> list[Case]:
    seed = SEED.read_text()
    occupancy = "  occupancy: {distribution: lognormal, median: 1044s, p99: 13900s}"
    assert occupancy in seed
    cases = []
    for levels in (6, 8, 11):
        bomb = f"  occupancy: {{distribution: empirical, samples: {_bomb(levels)}}}"
        path = folder / f"alias-bomb-samples-{levels}.yaml"
        path.write_text(seed.replace(occupancy, bomb))
        cases.append(Case(path.name, _solve(str(path)), str(path), "environment.occupancy.samples", "values"))
    path = folder / "alias-bomb-top.yaml"
    path.write_text(seed + f"extra: {_bomb(9)}\n")
    cases.append(Case(path.name, _solve(str(path)), str(path), "extra", "values"))
    shape = "{name: tp8, pool: main, gpus_per_replica: 8, tokens_per_gpu_s: 75}"
    path = folder / "alias-bomb-shapes.yaml"
    path.write_text(seed + f"x-shapes: {_bomb(8, shape)}\n")
    cases.append(Case(path.name, _solve(str(path)), str(path), "x-shapes", "values"))
    long_name = seed.replace("name: seed-week-75", "name: " + "x" * 5_000_000)
    path = folder / "long-name.yaml"
    path.write_text(long_name)
    cases.append(Case(path.name, _solve(str(path)), str(path), "name: ", "5,000,000 characters"))
    path = folder / "long-key.json"
    path.write_text(json.dumps({**yaml.safe_load(seed), "y" * 200_000: 1}))
    cases.append(Case(path.name, _solve(str(path)), str(path), None, "200,000 characters"))
    path = folder / "alias-cycle.yaml"
    path.write_text(seed + "extra: &loop [1, *loop]\n")
    cases.append(Case(path.name, _solve(str(path)), str(path), "extra: ", "cycle"))
    return cases


def _lists(folder: Path, big: bool) -> list[Case]:
    cases = []
    seed = _doc(SEED)
    for where, item, count in (
        ("inference.shapes", seed["inference"]["shapes"][0], MAX_ITEMS + 1),
        ("gpu_pools", seed["gpu_pools"][0], 3 * MAX_ITEMS),
        ("environment.backends", seed["environment"]["backends"][0], MAX_ITEMS + 1),
        ("environment.node_types", seed["environment"]["node_types"][0], MAX_ITEMS + 1),
        ("extra", 1, 6_000_000 // 8),
    ):
        name = f"list-{where}"
        file = _write(folder, name, apply_edit(seed, where, [item] * count), ".json")
        cases.append(Case(name, _solve(file), file, f"{where}: ", f"lists {count:,} items"))
    if not big:
        return cases
    occupancy = {"distribution": "empirical", "samples": [600] * (MAX_SAMPLES + 1)}
    file = _write(folder, "list-samples", apply_edit(seed, "environment.occupancy", occupancy), ".json")
    cases.append(
        Case("list-samples", _solve(file), file, "environment.occupancy.samples: ", "lists 1,000,001", big=True)
    )
    return cases


def _files(folder: Path, big: bool) -> list[Case]:
    cases = []
    seed = SEED.read_text()
    for name, text in (
        ()
        if not big
        else (
            ("file-11MB.yaml", seed + ("#" * 99 + "\n") * 110_000),
            ("file-11MB.json", json.dumps(_doc(SEED)) + " " * 11_000_000),
            ("file-50MB.yaml", seed + ("#" * 999 + "\n") * 50_000),
            ("file-6M-items.json", json.dumps({**_doc(SEED), "extra": [1] * 6_000_000})),
        )
    ):
        path = folder / name
        path.write_text(text)
        cases.append(Case(name, _solve(str(path)), str(path), None, "MB cap", big=True))
    path = folder / "file-seed-small-cap.yaml"
    path.write_text(seed)
    cases.append(Case(path.name, _solve(str(path)), str(path), None, "MB cap", {FILE_CAP_VARIABLE: "0.001"}))
    for value in ("lots", "-5", "nan"):
        cases.append(
            Case(
                f"file-cap-{value}", _solve(str(path)), FILE_CAP_VARIABLE, None, "positive", {FILE_CAP_VARIABLE: value}
            )
        )
    return cases


def _grids(folder: Path) -> list[Case]:
    step = "schedule.cadence.step"
    cases = []
    for name, edits, where, fragment in (
        ("grid-step-1us", {step: 1e-6}, step, "cadence grid points"),
        ("grid-step-string", {step: "0.00001s"}, step, "cadence grid points"),
        ("grid-step-subnormal-string", {step: "1e-320s"}, step, "must be 0 or at least 1e-06 s"),
        ("grid-step-fine-max", {step: 0.05, "schedule.cadence.max": "30d"}, step, "cadence grid points"),
        ("grid-long-pace", {"workload.iterations": 10, "schedule.deadline": "3650d"}, step, "cadence grid points"),
        ("grid-many-versions", {step: 0.1, "freshness.max_versions_kept": 5000}, step, "(cadence, K) entries"),
        ("scenarios-times-groups", {"uncertainty.samples": 100_000}, "uncertainty.samples", "training-group counts"),
        (
            "scenarios-one-gpu-groups",
            {"uncertainty.samples": 5000, "training.gpus_per_group": 1, "gpu_pools[0].gpus": 100_000},
            "uncertainty.samples",
            "training-group counts",
        ),
        ("scenarios-1e9", {"uncertainty.samples": 10**9}, "uncertainty.samples", AT_MOST),
        ("gpus-1e12", {"gpu_pools[0].gpus": 10**12}, "gpu_pools[0].gpus", AT_MOST),
        (
            "throughput-1e12",
            {"inference.shapes[0].tokens_per_gpu_s": 1e12},
            "inference.shapes[0].tokens_per_gpu_s",
            AT_MOST,
        ),
    ):
        doc = _doc()
        for path, value in edits.items():
            doc = apply_edit(doc, path, value)
        file = _write(folder, name, doc, ".yaml")
        cases.append(Case(name, _solve(file, "--confidence", "0.9"), file, f"{where}: ", fragment))
    return cases


def _edits(folder: Path) -> list[Case]:
    file = str(SEED)
    cases = []
    for i, (edit, where, fragment) in enumerate(
        (
            ("gpu_pools[0].gpus=1000000000000", "gpu_pools[0].gpus", AT_MOST),
            ("schedule.cadence.step=0.000001", "schedule.cadence.step", "cadence grid points"),
            ("schedule.cadence.step=1e-6s", "schedule.cadence.step", "cadence grid points"),
            ("inference.shapes[0].tokens_per_gpu_s=1.0e+30", "inference.shapes[0].tokens_per_gpu_s", AT_MOST),
            (f"workload.iterations={'9' * DIGITS}", "workload.iterations", f"{DIGITS:,} digits"),
            (f"training.gpus_per_group={'9' * 40}", "training.gpus_per_group", AT_MOST),
            (
                "environment.node_types[0].density.container=1.0e+9",
                "environment.node_types[0].density.container",
                AT_MOST,
            ),
            ("schedule.deadline=1000000d", "schedule.deadline", AT_MOST),
            ("freshness.max_versions_kept=100000000", "freshness.max_versions_kept", AT_MOST),
            ("environment.peak_to_mean=[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]", "environment.peak_to_mean", "nested"),
        )
    ):
        cases.append(Case(f"set-{i}", _solve(file, "--set", edit), f"--set {edit}", f"{where}", fragment))
    return cases


def _samples_csv(folder: Path, big: bool) -> list[Case]:
    cases = []
    where = "environment.occupancy.csv: "
    for name, content, fragment, big_one in (
        ("too-many", "seconds\n" + "600\n" * (MAX_SAMPLES + 1), "lines, more than the 1,000,000 samples", True),
        ("too-long", "600\n1200\n" + f"{20 * YEAR:.0f}\n", f"line 3: {AT_MOST}", False),
        ("not-utf8", b"600\n1200\n\xff\xfe9\n", "not UTF-8", False),
        ("too-large", "600\n" * 3_000_000, "MB cap", True),
    ):
        if big_one and not big:
            continue
        csv = folder / f"samples-{name}.csv"
        if isinstance(content, bytes):
            csv.write_bytes(content)
        else:
            csv.write_text(content)
        cases.append(_with_csv(folder, name, csv.name, where, fragment, big_one))
    if big:
        cases.append(_with_csv(folder, "dev-zero", os.devnull.replace("null", "zero"), where, "MB cap", True))
    cases.append(_with_csv(folder, "a-folder", ".", where, "cannot read samples CSV", False))
    return cases


def _with_csv(folder: Path, name: str, csv: str, where: str, fragment: str, big: bool) -> Case:
    doc = apply_edit(_doc(SEED), "environment.occupancy", {"distribution": "empirical", "csv": csv})
    file = _write(folder, f"samples-{name}", doc, ".yaml")
    return Case(f"samples-{name}", _solve(file), file, where, fragment, big=big)


def _outputs(folder: Path) -> list[Case]:
    """Output paths under a regular file (no folder can be made there): the commands that write files, each
    refused before it solves or simulates anything."""
    blocker = folder / "a-file"
    blocker.write_text("not a folder\n")
    quick = _doc(SEED)
    quick["schedule"]["cadence"] = {"min": "60s", "step": "60s"}
    file = _write(folder, "quick", quick, ".yaml")
    target = str(blocker / "out")
    return [
        Case("out-solve", _solve(file, "--out", f"{target}/plan.json"), f"{target}/plan.json", None, "cannot write"),
        Case("out-batch", ("batch", file, "--out", target), target, None, "cannot write here"),
        Case("out-trace", ("simulate", file, "--iterations", "20", "--trace", target), target, None, "cannot write"),
        Case("out-sweep", ("sweep", file, "--set", "schedule.deadline=7d,8d", "--out", target), target, None, "cannot"),
    ]


def _bundled(folder: Path) -> list[Case]:
    """Every bundled instance with a pool of 10^12 GPUs and, unless its cadence is pinned (min = max), with a
    cadence step of a micro-second."""
    cases = []
    for path in sorted((ROOT / "instances").glob("*.yaml")):
        doc = _doc(path)
        cadence = doc["schedule"].get("cadence", {})
        pinned = "max" in cadence and cadence["max"] == cadence.get("min")
        for label, where, value, fragment in (
            ("gpus", "gpu_pools[0].gpus", 10**12, AT_MOST),
            ("step", "schedule.cadence.step", "0.000001s", "cadence grid points"),
        ):
            if label == "step" and pinned:
                continue
            name = f"bundled-{path.stem}-{label}"
            file = _write(folder, name, apply_edit(copy.deepcopy(doc), where, value), ".yaml")
            cases.append(Case(name, _solve(file), file, f"{where}: ", fragment))
    return cases


def _sections(folder: Path) -> list[Case]:
    """The optional sections beyond the caps: stages whose cadence grids together are too large to tabulate,
    replays beyond their cap, a reliability section and a planning section of the wrong shape."""
    cases = []
    staged = _doc(STAGED)
    staged["stages"]["list"] = [{"name": f"s{i}", "iterations": 1} for i in range(1000)]
    file = _write(folder, "stages-1000-of-one", staged, ".yaml")
    cases.append(Case("stages-1000-of-one", _solve(file), file, "stages.list[0].iterations: ", "cadence grids"))
    staged = _doc(STAGED)
    staged["stages"]["list"] = [{"name": "a", "iterations": 995}, {"name": "b", "iterations": 5}]
    staged["schedule"]["cadence"]["step"] = "0.1s"
    file = _write(folder, "stages-short-fine", staged, ".yaml")
    cases.append(Case("stages-short-fine", _solve(file), file, "stages.list[1].iterations: ", "cadence grids"))
    for name, where, value, fragment in (
        ("planning-replays-1e9", "planning.replays", 10**9, AT_MOST),
        ("planning-replays-digits", "planning.replays", int("9" * 40), AT_MOST),
        ("planning-list", "planning", [1, 2], "mapping"),
        ("reliability-mtbf-1e300", "reliability.gpu_mtbf", 1e300, AT_MOST),
        ("reliability-restart-10y", "reliability.restart_time", "4000d", AT_MOST),
    ):
        file = _write(folder, name, apply_edit(_doc(SEED), where, value), ".yaml")
        cases.append(Case(name, _solve(file), file, f"{where}: ", fragment))
    return cases


def _strings(folder: Path) -> list[Case]:
    """Strings where the schema wants a boolean or a number: never read as one ('yes' is not true)."""
    cases = []
    for name, where, value, fragment in (
        ("strings-count-startup-yes", "schedule.count_startup", "yes", "must be true or false, got 'yes'"),
        ("strings-count-startup-one", "schedule.count_startup", 1, "must be true or false, got 1"),
        ("strings-gpus", "gpu_pools[0].gpus", "10000", "must be a whole number, got '10000'"),
        ("strings-gpus-float", "gpu_pools[0].gpus", 10000.0, "write 10000, without a decimal point"),
        ("strings-tokens", "inference.shapes[0].tokens_per_gpu_s", "75", "must be a number, got '75'"),
        ("strings-peak", "environment.peak_to_mean", "1.2", "must be a number, got '1.2'"),
        ("strings-deadline-days", "schedule.deadline", "5days", "did you mean '5d'?"),
        ("strings-step-hours", "schedule.cadence.step", "1 Hour", "did you mean '1h'?"),
        ("strings-restart-mins", "reliability.restart_time", "15mins", "did you mean '15m'?"),
    ):
        file = _write(folder, name, apply_edit(_doc(SEED), where, value), (".yaml", ".json")[len(cases) % 2])
        cases.append(Case(name, _solve(file), file, f"{where}: ", fragment))
    return cases


def _overridden(folder: Path) -> list[Case]:
    """A bad value in the file at a field an option replaces (--basis, --set, a sweep axis): still refused."""
    file = _write(folder, "override-basis", apply_edit(_doc(STAGED), "planning.basis", "wrong_value"), ".yaml")
    deadline = _write(folder, "override-deadline", apply_edit(_doc(SEED), "schedule.deadline", "5days"), ".yaml")
    fragment = "the file's own value, which"
    sweep = ("sweep", file, "--basis", "hold", "--set", "schedule.deadline=7d,8d", "--out", str(folder / "sweep"))
    return [
        Case("override-basis-solve", _solve(file, "--basis", "hold"), file, "planning.basis: ", fragment),
        Case("override-basis-simulate", ("simulate", file, "--basis", "hold"), file, "planning.basis: ", fragment),
        Case("override-basis-frontier", ("frontier", file, "--basis", "hold"), file, "planning.basis: ", fragment),
        Case("override-basis-risk", ("risk", file, "--basis", "hold"), file, "planning.basis: ", fragment),
        Case("override-basis-sweep", sweep, file, "planning.basis: ", fragment),
        Case(
            "override-set-deadline",
            _solve(deadline, "--set", "schedule.deadline=7d"),
            deadline,
            "schedule.deadline: ",
            "schedule.deadline=7d replaces here",
        ),
    ]


def _refusals(folder: Path) -> list[Case]:
    """One bad file (a negative iteration count) through every command that reads an instance: each refuses it
    before it builds, solves, plots or writes anything (bench/hostile.py --only refusal- times them)."""
    bad = _write(folder, "refusal-bad", apply_edit(_doc(SEED), "workload.iterations", -5), ".yaml")
    logs = folder / "refusal-trajectories.csv"
    logs.write_text("start,end,output_tokens\n" + "".join(f"{i},{i - 5},5\n" for i in range(30)))
    where, fragment = "workload.iterations: ", "must be > 0"
    out = str(folder / "refusal-out")
    commands = {
        "solve": ("solve", bad),
        "explain": ("explain", bad),
        "simulate": ("simulate", bad),
        "risk": ("risk", bad),
        "frontier": ("frontier", bad, "--out", out),
        "compare": ("compare", bad),
        "sweep": ("sweep", bad, "--set", "schedule.deadline=7d,8d", "--out", out),
        "report": ("report", bad, "--out", f"{out}/report.html"),
    }
    cases = [Case(f"refusal-{name}", args, bad, where, fragment) for name, args in commands.items()]
    calibrate = ("calibrate", "--trajectories", str(logs), "--inference-gpus", "8")
    cases.append(Case("refusal-calibrate", calibrate, str(logs), "row 1 (line 2), column 'end': ", "before"))
    good = folder / "refusal-good-trajectories.csv"
    good.write_text(TRAJECTORIES)
    into = ("calibrate", "--trajectories", str(good), "--into", bad, "--inference-gpus", "8", "-o", f"{out}.yaml")
    cases.append(Case("refusal-calibrate-into", into, bad, where, fragment))
    return cases


# The calibrate cases: (name, file name, content, the row or column named, the rule's fragment, --steps: the
# step log given with a good trajectory log)
TRAJECTORIES = "start,end,output_tokens\n" + "".join(f"{i * 10},{i * 10 + 100 + 7 * i},50\n" for i in range(200))
CALIBRATE = (
    (
        "nested-100000",
        "t.jsonl",
        '{"start": 0, "end": 10, "output_tokens": 5}\n{"start": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
        "line 2: ",
        "nests objects or arrays",
        False,
    ),
    (
        "nested-cell",
        "t.jsonl",
        "".join(f'{{"start": [{i}, 1], "end": {i + 50}, "output_tokens": 5}}\n' for i in range(20)),
        "row 1 (line 1), column 'start': ",
        "nested values",
        False,
    ),
    (
        "not-utf8",
        "t.csv",
        b"start,end,output_tokens\n0,100,5\n10,120,\xff5\n",
        "row 2 (line 3), column 'output_tokens': ",
        "not UTF-8",
        False,
    ),
    (
        "header-twice",
        "t.csv",
        "start,end,output_tokens,end\n" + "".join(f"{i},{i + 9},5,{i + 9}\n" for i in range(20)),
        "column 'end': ",
        "appears twice",
        False,
    ),
    (
        "end-is-start",
        "t.csv",
        "start,end,output_tokens\n" + "".join(f"{i},{i},5\n" for i in range(30)),
        "column 'end': ",
        "ends at its start",
        False,
    ),
    (
        "milliseconds",
        "t.csv",
        "start,end,output_tokens\n" + "".join(f"{1.7e12 + i * 1e3},{1.7e12 + i * 1e3 + 9e5},5\n" for i in range(30)),
        "column 'start': ",
        "milliseconds?",
        False,
    ),
    (
        "iteration-repeated",
        "s.csv",
        "iteration,update_s,training_gpus\n" + "".join(f"0,{100 + i},64\n" for i in range(50)),
        "column 'iteration': ",
        "repeat an earlier iteration",
        True,
    ),
    (
        "iteration-cycles",
        "s.csv",
        "iteration,update_s,training_gpus\n" + "".join(f"{i % 5},{100 + i},64\n" for i in range(50)),
        "column 'iteration': ",
        "repeat an earlier iteration",
        True,
    ),
    (
        "update-in-ms",
        "s.csv",
        "iteration,update_s,training_gpus\n" + "".join(f"{i},{300000 + i},64\n" for i in range(50)),
        "column 'update_s': ",
        "milliseconds?",
        True,
    ),
)


def _calibrate(folder: Path) -> list[Case]:
    """calibrate's logs: deep nesting, a nested cell, a byte that is not UTF-8, a header naming a
    column twice, lifetimes of zero, times in milliseconds, a step log whose iteration numbers repeat more than
    a restart does, and an output folder that cannot be written."""
    cases = []
    good = folder / "calibrate-good-trajectories.csv"
    good.write_text(TRAJECTORIES)
    for name, file_name, content, where, fragment, steps in CALIBRATE:
        path = folder / f"calibrate-{name}-{file_name}"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        log = ("--trajectories", str(good), "--steps", str(path)) if steps else ("--trajectories", str(path))
        cases.append(
            Case(f"calibrate-{name}", ("calibrate", *log, "--inference-gpus", "8"), str(path), where, fragment)
        )
    target = str(folder / "a-file" / "out.yaml")
    args = ("calibrate", "--trajectories", str(good), "--inference-gpus", "8", "--into", str(SEED), "-o", target)
    cases.append(Case("calibrate-out", args, target, None, "cannot write"))
    return cases


# Fields of the seed scaled to their cap and far below their seed value: such a plan spans many orders of
# magnitude, and must be solved, found infeasible or refused, never an internal error.
SPREAD = (
    "workload.iterations",
    "workload.batch_trajectories",
    "workload.group_size",
    "workload.tokens_per_attempt",
    "schedule.deadline",
    "gpu_pools[0].gpus",
    "gpu_pools[0].gpu_hour_cost",
    "inference.shapes[0].gpus_per_replica",
    "inference.shapes[0].tokens_per_gpu_s",
    "training.gpus_per_group",
    "training.update_time.reference_gpus",
    "training.update_time.reference_time",
    "environment.occupancy.median",
    "environment.occupancy.p99",
    "environment.backends[0].cores",
    "environment.backends[0].memory_gb",
    "environment.node_types[0].cores",
    "environment.node_types[0].memory_gb",
    "environment.node_types[0].density.container",
    "environment.node_types[0].hour_cost",
    "environment.cloud.vm_types[0].density.container",
    "environment.cloud.vm_types[0].hour_cost",
)


def spread(folder: Path) -> list[Path]:
    """The seed (on a 10 s cadence step) with one SPREAD field at its cap, at its floor and at 1e-6 of its seed
    value (whole-number fields: at their cap only)."""
    from trainground.models.uncertainty import expand
    from trainground.models.units import parse_duration

    folder.mkdir(parents=True, exist_ok=True)
    seed = _doc(SEED)
    seed["schedule"]["cadence"] = {"min": "60s", "step": "10s"}
    out = []
    for path in SPREAD:
        largest, _ = CAPS[path.replace("[0]", "[*]").replace(".container", ".*")]
        (_, written), *_ = expand(seed, path)
        value = float(parse_duration(written))  # type: ignore[arg-type]
        whole = path.rsplit(".", 1)[-1] in INT_FIELDS
        values = {"cap": int(largest)} if whole else {"cap": largest, "floor": FLOOR, "tiny": max(value * 1e-6, FLOOR)}
        for label, scaled in values.items():
            file = folder / f"spread-{path}-{label}.yaml".replace("[", "(").replace("]", ")")
            file.write_text(yaml.safe_dump(apply_edit(seed, path, scaled)))
            out.append(file)
    return out
