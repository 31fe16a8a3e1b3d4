"""Dask is an optional extra (``pip install 'trainground[dask]'``): ``--scheduler`` without it is one clear
message and exit 2, before any work starts; the local pool needs no Dask."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner

from trainground import cli
from trainground.commands.common import require_dask

SEED = "instances/seed-week-75.yaml"


@pytest.fixture
def without_dask(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` now raises ImportError


@pytest.mark.parametrize(
    "command",
    [
        ["batch", SEED, "--scheduler", "tcp://127.0.0.1:1", "--quiet"],
        ["simulate", SEED, "--scheduler", "tcp://127.0.0.1:1", "--replications", "2"],
    ],
)
def test_scheduler_without_dask_says_how_to_install_it(without_dask, tmp_path, command):
    run = CliRunner().invoke(cli.main, command + (["--out", str(tmp_path / "out")]))
    assert run.exit_code == 2, run.output
    assert "trainground[dask]" in run.output and "Traceback" not in run.output
    assert not (tmp_path / "out").exists()


def test_the_check_passes_with_dask_or_without_scheduler(without_dask):
    require_dask(None)  # no --scheduler: Dask is not needed
    sys.modules.pop("distributed")
    import distributed  # noqa: F401  (the test extra installs Dask; then the check passes)

    require_dask("tcp://127.0.0.1:1")
