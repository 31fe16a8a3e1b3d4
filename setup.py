"""The one step of the build pyproject.toml cannot state: cli.py, the command group at the top of the
repository, is installed as the module trainground.cli (the packages are mapped in pyproject.toml). An
editable install needs no copy: trainground/__init__.py finds cli.py in the checkout."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if not getattr(self, "editable_mode", False):
            self.copy_file("cli.py", str(Path(self.build_lib, "trainground", "cli.py")), preserve_mode=False)


setup(cmdclass={"build_py": BuildPy})
