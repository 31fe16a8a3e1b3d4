"""A round's replays (drivers/replays.py): on forked processes where that is safe, else on threads or here,
with the same makespans and waits whichever runs them, and a stop that keeps the first replays in order."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import trainground.drivers.replays as replays
from trainground.drivers.hold import solve_planned
from trainground.simulate.runner import seed_for
from trainground.simulate.setup import setup_of

from .test_hold import small

SEEDS = [3, 4, 5, 6, 7]


@pytest.fixture(scope="module")
def setup():
    inst = small()
    result = solve_planned(inst)
    return setup_of(inst, result.plan, result.metrics)


def streams():
    return [seed_for(s, 0) for s in SEEDS]


@pytest.mark.skipif(sys.platform != "linux", reason="replays fork only on Linux")
def test_forked_replays_are_the_replays_run_here(setup, monkeypatch):
    forked = []
    real = replays._on_forks
    monkeypatch.setattr(replays, "_on_forks", lambda *a: forked.append(1) or real(*a))
    here = replays.run_streams([setup] * len(SEEDS), streams(), threads=1)
    there = replays.run_streams([setup] * len(SEEDS), streams(), threads=2)
    assert forked == [1]
    assert np.array_equal(here.makespans, there.makespans) and np.array_equal(here.wait_shares, there.wait_shares)


def test_with_another_python_thread_running_replays_run_on_threads(setup, monkeypatch):
    """A process with other threads (a notebook's kernel) is not forked: the replays run on threads."""

    def refuse(*args):
        raise AssertionError("forked a process that runs another thread")

    monkeypatch.setattr(replays, "_on_forks", refuse)
    here = replays.run_streams([setup] * len(SEEDS), streams(), threads=1)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        threaded = replays.run_streams([setup] * len(SEEDS), streams(), threads=2)
    finally:
        release.set()
        other.join()
    assert np.array_equal(here.makespans, threaded.makespans)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_stop_keeps_the_replays_started_before_it_in_order(setup, threads):
    asked = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 3  # the fourth start is refused

    here = replays.run_streams([setup] * len(SEEDS), streams(), threads=1)
    cut = replays.run_streams([setup] * len(SEEDS), streams(), threads=threads, stop=stop)
    assert np.array_equal(cut.makespans, here.makespans[:3])
