"""The stages of MODEL.md §12 in the replay of §10: a staged plan's setup, and the engine's stage bookkeeping.

The stages are played in order. An attempt launched while version ``v`` is current takes the tokens,
lifetimes and intake of the stage containing iteration ``v``, and groups launch at that stage's attempt
rate; version ``v`` is published at boundary ``b_{v-1}``, so a stage starts when its first version is.
The update of iteration ``j - 1`` (between boundaries ``j - 1`` and ``j``) takes its stage's ``U``, and
the makespan ends with the last stage's. Each stage's sandboxes are its own plan's (under ``fixed`` the
same hosts; the backend mix placed per stage); a queue keeps the attempts it holds when the capacity
changes, new ones starting as the new capacity allows. Under ``replan`` a change of capacity between
stages costs ``switch_time``: launches of the new stage start that long after its first version is
published, and its first boundary comes no sooner than the last update plus that time.

:class:`StagePlayer` is the engine's side: which stage launches now, when the next stage starts, and
the snapshot that lets a window drawn past a stage's start be cut back to it (the groups launched
from that start are drawn again at the new stage's values; the draws set aside are independent of
everything kept, so the replay stays a draw of the staged run).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.models.result import Metrics, Plan
from trainground.models.stage_rules import stage_instance, stage_rows_instance
from trainground.solver.laws import calculus as calc
from trainground.solver.verify.plan import verify_plan

HORIZON_FACTOR = 20.0  # as simulate.setup's: a replay gives up after this many predicted makespans


@dataclass(frozen=True)
class StageSetup:
    """One stage as the replay plays it: from iteration ``first`` (0-based) on."""

    name: str
    first: int
    attempts_per_s: float
    occupancy: calc.Occupancy
    intake: float
    tokens_per_attempt: float
    update_s: float
    local: tuple[float, ...]
    cloud: tuple[float, ...]
    switch_s: float  # paid before this stage starts (replan, a change of capacity); 0 for the first

    def key(self) -> tuple:
        """Every field, the occupancy law by its parameters or samples (a replay cache's key)."""
        occ = self.occupancy
        law = (occ.mu, occ.sigma) if occ.samples is None else (occ.samples.size, occ.samples.tobytes())
        return tuple(law if f.name == "occupancy" else getattr(self, f.name) for f in dataclasses.fields(self))


def stage_metrics(inst: Instance, plan: Plan) -> list[Metrics]:
    """Each stage's metrics (MODEL §2 at its cadence and values), read by the verifier from its own plan."""
    assert inst.stages is not None and plan.stages
    out = []
    for stage, row in zip(inst.stages.list, plan.stages):
        if row.plan is None:
            raise ValueError(
                f"stage {stage.name} carries no plan of its own (a staged plan is replayed from its solve)"
            )
        check = verify_plan(stage_rows_instance(inst, stage), row.plan)
        if check.metrics is None:
            raise ValueError(f"stage {stage.name}: its plan cannot be read: {'; '.join(check.violations)}")
        out.append(check.metrics)
    return out


def staged_setup(one_stage, inst: Instance, plan: Plan, launch: str, iterations: int | None):
    """The replay of a staged ``plan``: the first stage's launch figures, the last stage's update (which ends
    the run), the run's deadline (pro rata with ``iterations``) and horizon, and every stage's
    :class:`StageSetup`. ``one_stage``: :func:`simulate.setup.setup_of` for a stage's own plan."""
    assert inst.stages is not None and plan.stages
    n = inst.workload.iterations
    total = iterations or n
    metrics = stage_metrics(inst, plan)
    stages, first, changes = [], 0, plan.capacity_changes()
    for p, (stage, row, met) in enumerate(zip(inst.stages.list, plan.stages, metrics)):
        own = one_stage(stage_instance(inst, stage), row.plan, met, launch=launch)
        switch = inst.stages.switch_time if (p - 1) in changes else 0.0
        stages.append(
            StageSetup(
                name=stage.name,
                first=round(first * total / n),
                attempts_per_s=own.attempts_per_s,
                occupancy=own.occupancy,
                intake=own.intake,
                tokens_per_attempt=own.tokens_per_attempt,
                update_s=own.update_s,
                local=own.local,
                cloud=own.cloud,
                switch_s=switch,
            )
        )
        first += stage.iterations
    base = one_stage(stage_instance(inst, inst.stages.list[0]), plan.stages[0].plan, metrics[0], launch=launch)
    extra = inst.schedule.extra_time
    deadline = extra + (inst.schedule.deadline - extra) * total / n
    predicted = plan.makespan_s * total / n + max(s.occupancy.p99 for s in stages)
    return dataclasses.replace(
        base,
        iterations=total,
        deadline=deadline,
        extra_time=extra,
        update_s=stages[-1].update_s,
        horizon=HORIZON_FACTOR * predicted,
        inference_gpus=plan.inference_gpus,
        training_gpus=plan.training_gpus,
        stages=tuple(stages),
    )


def view(setup, stage: StageSetup):
    """``setup`` as one stage launches and queues: its rate, lifetimes, intake, tokens and sandboxes."""
    return dataclasses.replace(
        setup,
        attempts_per_s=stage.attempts_per_s,
        occupancy=stage.occupancy,
        intake=stage.intake,
        tokens_per_attempt=stage.tokens_per_attempt,
        local=stage.local,
        cloud=stage.cloud,
        stages=(),
    )


class StagePlayer:
    """Which stage launches now and when the next one starts (the engine's stage bookkeeping)."""

    def __init__(self, setup):
        self.setup = setup
        self.stages = setup.stages
        self.index = 0
        firsts = [s.first for s in self.stages]
        # U before boundary j (the update of iteration j - 1): its stage's, plus a switch at a stage's first.
        j = np.arange(setup.iterations)
        of = np.searchsorted(firsts, np.maximum(j - 1, 0), side="right") - 1
        self.spacing = np.array([self.stages[p].update_s for p in of])
        for s in self.stages[1:]:
            if 0 < s.first < setup.iterations:
                self.spacing[s.first] += s.switch_s

    @property
    def current(self):
        return view(self.setup, self.stages[self.index])

    def starts_at(self, boundaries: list[float]) -> float | None:
        """When the next stage starts (its first version published: boundary ``first - 1``), once placed."""
        if self.index + 1 >= len(self.stages):
            return None
        first = self.stages[self.index + 1].first
        if first <= 0:
            return 0.0
        return boundaries[first - 1] if len(boundaries) >= first else None

    def advance(self) -> StageSetup:
        self.index += 1
        return self.stages[self.index]


@dataclass
class Snapshot:
    """What a window changes, as it was before it: the buffer's arrays and list lengths, each queue's state."""

    buffer: tuple
    queues: list[tuple]
    groups: int


def snapshot(buffer, queues, groups: int) -> Snapshot:
    """The state before a window (arrays are replaced, never changed in place, by the buffer and queues)."""
    state = (buffer.comp, buffer.launch, buffer.eff, buffer.gid, len(buffer.boundaries))
    state += (len(buffer.consumed), len(buffer.dropped))
    return Snapshot(state, [(q.pending, q.frontier, q.waited_until) for q in queues], groups)


def restore(snap: Snapshot, buffer, queues) -> None:
    comp, launch, eff, gid, nb, nc, nd = snap.buffer
    buffer.comp, buffer.launch, buffer.eff, buffer.gid = comp, launch, eff, gid
    del buffer.boundaries[nb:], buffer.consumed[nc:], buffer.dropped[nd:]
    for q, (pending, frontier, waited) in zip(queues, snap.queues):
        q.pending, q.frontier, q.waited_until = pending, frontier, waited


def readmit(queues, arrival: np.ndarray, life: np.ndarray, backend: np.ndarray) -> None:
    """Put the kept attempts back in their queues (restored to before the window): admitted again in the
    same order with the same arrivals and lifetimes, FIFO gives them the same starts."""
    if len(queues) == 1:
        queues[0].admit(arrival, life)
        return
    for b, queue in enumerate(queues):
        mine = np.flatnonzero(backend == b)
        queue.admit(arrival[mine], life[mine])
