"""One import namespace: what an installation holds is ``trainground`` and nothing else at the top of
site-packages (no ``models``, ``solver``, ``cli``, ...), though the repository keeps its folders at its top.

The build is run for real into a temporary folder (setup.py's build_py, the step that lays out what a wheel
holds), from a copy of the files a build reads, and the tree it writes is imported in a fresh interpreter."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(p.parent.name for p in ROOT.glob("*/__init__.py") if p.parent.name not in ("tests", "trainground"))
IMPORT_NAMES = {"simulate": "simulation"}  # trainground.simulate is the API's function (docs/api.md)


def installed(folder: str) -> str:
    """A folder's name under trainground."""
    return IMPORT_NAMES.get(folder, folder)


def test_every_folder_is_mapped_under_trainground():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    tool = config["tool"]["setuptools"]
    assert config["project"]["scripts"] == {"trainground": "trainground.cli:main"}
    assert "py-modules" not in tool, "a top-level module would be installed under its own name"
    subpackages = [
        ".".join(("trainground", installed(package), *init.parent.relative_to(ROOT / package).parts))
        for package in PACKAGES
        for init in (ROOT / package).rglob("__init__.py")
    ]
    assert sorted(tool["packages"]) == sorted(["trainground", *subpackages])
    assert tool["package-dir"] == {"trainground": "trainground", **{f"trainground.{installed(p)}": p for p in PACKAGES}}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """What a wheel of the repository holds, built from a copy of what the build reads."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "cli.py"):
        shutil.copy(ROOT / name, source / name)
    for folder in (*PACKAGES, "trainground"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("lib")
    done = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(out)],
        cwd=source,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return out


def test_the_build_holds_trainground_alone(built):
    assert sorted(p.name for p in built.iterdir()) == ["trainground"]
    inside = {p.relative_to(built / "trainground").as_posix() for p in (built / "trainground").rglob("*.py")}
    assert {"__init__.py", "api.py", "cli.py", "solver/solve.py", "models/instance.py"} <= inside
    for package in PACKAGES:
        expected = {
            f"{installed(package)}/{p.relative_to(ROOT / package).as_posix()}" for p in (ROOT / package).rglob("*.py")
        }
        assert expected <= inside, f"{package}/ files missing from the build: {sorted(expected - inside)[:3]}"


def test_the_built_tree_imports_as_trainground_and_has_no_generic_names(built, tmp_path):
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import trainground, trainground.cli, trainground.solver.solve\n"
        "assert trainground.solver.solve.__file__.startswith(sys.argv[1]), trainground.solver.solve.__file__\n"
        "assert callable(trainground.cli.main) and callable(trainground.solve)\n"
        "import importlib.util\n"
        f"print([n for n in {PACKAGES + ['cli']!r} if importlib.util.find_spec(n) is not None])\n"
    )
    # -I: neither the current folder nor PYTHONPATH on the path, as in a user's session elsewhere
    done = subprocess.run([sys.executable, "-I", "-c", probe, str(built)], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"generic top-level names importable: {done.stdout}"


def test_an_editable_install_imports_trainground_from_the_checkouts_folders(tmp_path):
    """pip install -e . (the README's set-up): trainground.solver is the checkout's solver/, trainground.cli its
    cli.py, trainground.simulation its simulate/, from any working folder."""
    probe = (
        "import trainground.solver.solve as s, trainground.cli as c, trainground.simulation.runner as r\n"
        "print(s.__file__); print(c.__file__); print(r.__file__)"
    )
    done = subprocess.run([sys.executable, "-I", "-c", probe], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert [Path(line) for line in done.stdout.split()] == [
        ROOT / "solver" / "solve.py",
        ROOT / "cli.py",
        ROOT / "simulate" / "runner.py",
    ]


@pytest.mark.parametrize("name", ["trainground.tests", "trainground.trainground", "trainground.simulate.runner"])
def test_a_checkouts_other_files_are_not_importable_under_trainground(name):
    """Only the mapped folders and cli.py are trainground's: not tests/, not trainground/ a second time, and
    trainground.simulate is a function, not a package."""
    probe = (
        f"import importlib, sys\ntry:\n    importlib.import_module({name!r})\nexcept ImportError:\n    sys.exit(3)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 3, (done.stdout, done.stderr)


def test_the_package_imports_none_of_its_modules_at_import_time():
    """No import cycle through the package: trainground/__init__.py imports nothing of trainground at module
    level (its API names load on first use), so `import trainground` loads it alone, and the names still work."""
    import ast

    tree = ast.parse((ROOT / "trainground" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.If):  # a TYPE_CHECKING block is an import all the same to a cycle check
            node = ast.Module(body=node.body, type_ignores=[])
        for inner in ast.walk(node) if not isinstance(node, ast.FunctionDef) else ():
            if isinstance(inner, ast.ImportFrom):
                assert not (inner.module or "").startswith("trainground"), ast.unparse(inner)
            if isinstance(inner, ast.Import):
                assert not any(a.name.startswith("trainground") for a in inner.names), ast.unparse(inner)
    probe = (
        "import sys, inspect, trainground\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('trainground'))\n"
        "assert loaded == ['trainground'], loaded\n"
        "assert callable(trainground.solve) and callable(trainground.simulate)\n"
        "assert 'replications' in inspect.signature(trainground.simulate).parameters\n"
        "assert callable(trainground.simulation.runner.simulate_plan)\n"
        "assert trainground.InstanceError.__module__.endswith('models.errors')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_type_checkers_mirror_is_the_installed_package():
    """.typing/trainground (mypy's view, pyproject.toml) links every mapped folder under its installed name, and
    the package's own files and cli.py, so a new folder cannot go unchecked or be read under another name."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mirror = ROOT / ".typing" / "trainground"
    folders = {
        name.removeprefix("trainground."): path
        for name, path in config["tool"]["setuptools"]["package-dir"].items()
        if name != "trainground"
    }
    assert {p.name for p in mirror.iterdir() if p.is_dir()} == set(folders)
    for name, folder in folders.items():
        assert (mirror / name).resolve() == (ROOT / folder).resolve(), name
    files = {p.name for p in (ROOT / "trainground").glob("*.py")} | {"cli.py"}
    assert {p.name for p in mirror.glob("*.py")} == files
    assert (mirror / "cli.py").resolve() == ROOT / "cli.py"
