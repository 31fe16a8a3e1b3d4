"""The shape of the code (STYLE.md, docs/design.md): no import cycle anywhere, each package imports only
the layers below it, files and solver functions stay short. Read from the source with ``ast`` (every
import counts, also one inside a function); nothing is imported or run."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The layers, lowest first: a module may import its own layer and the layers before it, never one after.
# Drivers run the core many times (STYLE.md: risk, simulation, calibration, levers, diagnosis): one layer, whose
# packages may import one another (module-level cycles are still refused by test_no_import_cycle).
LAYERS = (
    ("models",),
    ("solver",),
    ("drivers", "simulate", "calibrate"),
    ("render",),
    ("commands", "trainground"),
    ("cli",),
)
NEVER = {  # imports named in STYLE.md, checked apart so that the message says which rule broke
    "models": ("solver", "drivers", "simulate", "calibrate", "render", "commands", "cli", "pyomo", "highspy"),
    "solver": ("drivers", "simulate", "calibrate", "render", "commands", "cli"),
    # STYLE.md's order within the drivers' layer: calibrate -> simulate -> drivers, nothing running back up
    "simulate": ("drivers",),
    "calibrate": ("drivers",),
    "trainground": ("commands", "cli"),  # the Python API stands beside the commands, on the same drivers
}
MAX_FILE_LINES = 400  # every Python file outside tests/
MAX_SOLVER_FUNCTION_LINES = 60  # every function or method in solver/, docstring included
MAX_CLI_LINES = 300  # cli.py parses and calls; commands/ and render/ hold the rest
# Kept exceptions, path (or path:function) -> reason; docs/design.md repeats them. None today.
FILE_EXCEPTIONS: dict[str, str] = {}
FUNCTION_EXCEPTIONS: dict[str, str] = {}


def project_modules() -> dict[str, Path]:
    """Module name -> file, for cli.py and every package at the top of the repository (a folder with __init__.py)."""
    modules = {"cli": ROOT / "cli.py"}
    for init in sorted(ROOT.glob("*/__init__.py")):
        package = init.parent.name
        if package == "tests":
            continue
        for path in sorted(init.parent.rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


NAMESPACE = "trainground"  # the installed name of every package: trainground.solver is solver/ (pyproject.toml)
FOLDERS = {"simulation": "simulate"}  # installed names that are not their folder's (pyproject.toml)


def unqualified(target: str, modules: dict[str, Path]) -> str:
    """A module's name as the layers know it: trainground.solver.table.pairs is solver.table.pairs, trainground.cli is cli;
    trainground's own modules (trainground.api) keep theirs."""
    head, _, rest = target.partition(".")
    first, dot, tail = rest.partition(".")
    rest = FOLDERS.get(first, first) + dot + tail
    if head == NAMESPACE and rest and rest.split(".")[0] in {m.split(".")[0] for m in modules} - {NAMESPACE}:
        return rest
    return target


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """What ``name`` imports: project modules by name (``from p import m`` names p.m when m is a module; the
    namespace's names unqualified), other top-level distributions by their first component."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [f"{base}.{alias.name}" for alias in node.names]
            targets = [t if unqualified(t, modules) in modules else base for t in targets]
        else:
            continue
        for target in (unqualified(t, modules) for t in targets):
            while target not in modules and "." in target:
                target = target.rpartition(".")[0]
            found.add(target)
    found.discard(name)
    return found


@functools.cache
def graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_a_cycle():
    edges = {"a.x": {"a.y"}, "a.y": {"b.z"}, "b.z": {"a.x"}, "c": {"a.x"}}
    assert cycles(edges) == [["a.x", "a.y", "b.z"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_reader_sees_imports_inside_functions(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from solver.table import pairs\n    import drivers.batch.run as b\n")
    modules = {"solver": source, "solver.table.pairs": source, "drivers": source, "drivers.batch.run": source}
    assert imports_of("x.m", source, modules) == {"solver.table.pairs", "drivers.batch.run"}


def test_the_import_reader_reads_the_namespace_as_the_packages(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        "from trainground.solver.table import pairs\nimport trainground.drivers.batch.run\nfrom trainground import cli\n"
    )
    modules = {
        "solver": source,
        "solver.table.pairs": source,
        "drivers.batch.run": source,
        "cli": source,
        "trainground": source,
    }
    assert imports_of("x.m", source, modules) == {"solver.table.pairs", "drivers.batch.run", "cli"}


def test_no_import_cycle():
    found = cycles(graph())
    assert not found, "import cycles (a module imports, directly or not, one that imports it): " + "; ".join(
        " <-> ".join(c) for c in found
    )


def test_every_package_has_a_layer():
    packages = {name.split(".")[0] for name in project_modules()}
    placed = {package for layer in LAYERS for package in layer}
    assert packages <= placed, (
        f"packages without a layer: {sorted(packages - placed)}; "
        "place them in tests/test_architecture.py LAYERS and docs/design.md"
    )


def test_imports_go_down_the_layers():
    rank = {package: i for i, layer in enumerate(LAYERS) for package in layer}
    wrong = []
    for name, targets in graph().items():
        here = name.split(".")[0]
        for target in targets:
            top = target.split(".")[0]
            if top in rank and rank[top] > rank[here]:
                wrong.append(f"{name} imports {target}")
    order = " < ".join("/".join(layer) for layer in LAYERS)
    assert not wrong, f"imports against the layering {order}: " + "; ".join(sorted(wrong))


def test_models_and_solver_import_no_upper_layer_nor_models_pyomo():
    wrong = [
        f"{name} imports {target}"
        for name, targets in graph().items()
        for target in targets
        if target.split(".")[0] in NEVER.get(name.split(".")[0], ())
    ]
    assert not wrong, "; ".join(sorted(wrong))


def test_the_verifier_imports_nothing_of_the_model():
    """solver/verify/ reads MODEL.md on its own: its modules import one another and the schema (models/),
    nothing else of the project, so that a mistake of the model's cannot be repeated by its checker."""
    verifier = {name: targets for name, targets in graph().items() if name.startswith("solver.verify.")}
    assert {"solver.verify.plan", "solver.verify.laws", "solver.verify.stages"} <= set(verifier)
    wrong = [
        f"{name} imports {target}"
        for name, targets in verifier.items()
        for target in targets
        if target.split(".")[0] in project_packages() and not target.startswith(("solver.verify.", "models."))
    ]
    assert not wrong, "; ".join(sorted(wrong))


def test_the_verifier_rule_sees_an_import_of_the_model(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("from trainground.solver.tolerances import REL_TOL\n")
    modules = {"solver.tolerances": source, "solver.verify.plan": source}
    assert imports_of("solver.verify.plan", source, modules) == {"solver.tolerances"}


NO_PYOMO = ("solver.laws", "solver.table", "solver.uncertainty")  # closed forms and tables: arrays, no model


def test_the_closed_forms_and_tables_import_no_pyomo():
    """solver/laws/, table/ and uncertainty/ compute numbers (their __init__ docstrings say "No pyomo"): the model
    is built in mip/, so neither pyomo nor mip/ is imported there (an LP given to HiGHS through solver/highs.py,
    as the cost bounds and the scenarios' sandbox room do, is arithmetic on arrays, not the model)."""
    wrong = [
        f"{name} imports {target}"
        for name, targets in graph().items()
        if name.startswith(NO_PYOMO)
        for target in targets
        if target.split(".")[0] == "pyomo" or target.startswith("solver.mip")
    ]
    assert not wrong, "; ".join(sorted(wrong))


def project_packages() -> set[str]:
    return {name.split(".")[0] for name in project_modules()}


def test_files_are_short():
    long = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(("tests/", ".")) or "/." in rel or rel in FILE_EXCEPTIONS:
            continue
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_FILE_LINES:
            long.append(f"{rel} ({lines} lines)")
    assert not long, f"files over {MAX_FILE_LINES} lines: {', '.join(long)}"


def test_solver_functions_are_short():
    long = []
    for path in sorted((ROOT / "solver").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                where = f"{path.relative_to(ROOT).as_posix()}:{node.name}"
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_SOLVER_FUNCTION_LINES and where not in FUNCTION_EXCEPTIONS:
                    long.append(f"{where} ({lines} lines)")
    assert not long, f"functions in solver/ over {MAX_SOLVER_FUNCTION_LINES} lines: {', '.join(long)}"


def test_the_exceptions_still_exist():
    for rel in FILE_EXCEPTIONS:
        assert (ROOT / rel).is_file(), f"FILE_EXCEPTIONS names {rel}, which is gone: drop it"
    for where in FUNCTION_EXCEPTIONS:
        rel, _, function = where.partition(":")
        assert f"def {function}(" in (ROOT / rel).read_text(encoding="utf-8"), f"{where} is gone: drop it"


def test_the_cli_is_thin():
    lines = len((ROOT / "cli.py").read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_CLI_LINES, f"cli.py has {lines} lines: commands belong in commands/, rendering in render/"
