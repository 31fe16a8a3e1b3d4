"""The timelines of an admission run (MODEL.md §14) over one replication's draws (:mod:`simulation.admission`).

:func:`timeline` lays a run out batch by batch over arrays where slots are freed at publishes alone (every group
a sample of g members, no concurrency cap); :func:`event_timeline` plays it event by event (completions,
boundaries, publishes, attempt ends, launches in time order; at one instant completions first, then a boundary,
then a publish, then launches), which plays every case. Both give the same run from the same draws where both
apply; :func:`replicate` takes the first that plays the setup.
"""

from __future__ import annotations

import heapq
import math
from collections import deque

import numpy as np

from trainground.simulation.admission import AdmissionRun, AdmissionSetup, Draws
from trainground.solver.laws import calculus as calc


def timeline(setup: AdmissionSetup, draws: Draws) -> AdmissionRun:
    """The run of a setup whose every group is a sample of g members and has no concurrency cap, batch by batch.

    Slots are then freed at publishes alone, so the groups a batch's launches may include are known before it:
    group ``i`` needs the ``(i - C + 1)``-th freed slot, which publishes up to ``p_{j-1}`` have freed or a later
    publish (after ``b_j``) will; it launches at ``max(due, the previous launch, that publish)``. Batch ``j`` is
    then the first ``B/g`` launched groups in completion order (ties by launch order) not yet taken."""
    if not setup.every_group_samples:
        raise ValueError("timeline plays runs whose every group is a sample of g members, without a cap")
    C, U, n = setup.slots, setup.update_s, setup.iterations
    per_batch = int(calc.ceil_tol(setup.batch / setup.group_size))
    launch = np.empty(C)  # each launched group's launch: the first ``launched`` entries
    launched = 0
    waiting = np.empty(0, dtype=np.int64)  # launched groups not yet taken, in completion order
    done_at = np.empty(0)  # their completions
    consumed_parts: list[np.ndarray] = []
    boundaries = np.empty(n)
    publishes = np.empty(n)
    freed = np.empty(n, dtype=np.int64)  # slots freed by publishes 0..j
    released, last, b = 0, 0.0, -math.inf
    for j in range(n):
        top = C + released  # every group below this has its slot
        if top > launched:
            draws.ensure(top)
            group = np.arange(launched, top)
            due = group * setup.spacing
            need = group - C  # the 0-based freed slot each group waits for (< 0: a slot free from the start)
            slot = np.full(group.size, -math.inf)
            waits = need >= 0
            slot[waits] = publishes[np.searchsorted(freed[:j], need[waits], side="right")]
            new = np.maximum.accumulate(np.maximum(np.maximum(due, slot), last))
            last = float(new[-1])
            if top > launch.size:
                launch = np.concatenate((launch, np.empty(max(launch.size, top - launch.size))))
            launch[launched:top] = new
            launched = top
            ends = new + draws.finish[group]
            order = np.argsort(ends, kind="stable")
            merged = np.argsort(np.concatenate((done_at, ends[order])), kind="stable")
            done_at = np.concatenate((done_at, ends[order]))[merged]
            waiting = np.concatenate((waiting, group[order]))[merged]
        filled = float(done_at[per_batch - 1])
        b = filled if j == 0 else max(b + U, filled)
        boundaries[j] = b
        publishes[j] = b + U + setup.sync_s
        consumed_parts.append(waiting[:per_batch])
        waiting, done_at = waiting[per_batch:], done_at[per_batch:]
        released += per_batch
        freed[j] = released
    consumed = np.full(launched, -1, dtype=np.int64)
    for j, taken in enumerate(consumed_parts):
        consumed[taken] = j
    makespan = float(boundaries[-1] + U + setup.extra_time)
    return AdmissionRun(setup, draws, launch[:launched], consumed, boundaries, publishes, True, makespan)


def event_timeline(setup: AdmissionSetup, draws: Draws) -> AdmissionRun:
    """The run event by event: group ``i`` launches at its due time, or at the first event after it that frees a
    slot (a publish, or the completion of a group without samples) and, with a cap, leaves room for its members
    among the running attempts. A run whose slots are all held by groups that cannot fill a batch stops there
    (``finished`` False, makespan inf)."""
    C, g, B, U, n, cap = setup.slots, setup.group_size, setup.batch, setup.update_s, setup.iterations, setup.cap
    delay = U + setup.sync_s
    launch: list[float] = []
    consumed: list[int] = []
    done: list[float] = []  # each launched group's completion
    completions: list[tuple[float, int]] = []  # heap of (completion, group) not yet completed
    ends: list[float] = []  # heap of the running attempts' ends (with a cap)
    waiting: deque[int] = deque()  # completed groups with samples, not yet taken, in completion order
    pending: deque[tuple[float, int]] = deque()  # (publish, slots it frees), in time order
    boundaries: list[float] = []
    publishes: list[float] = []
    free, running, buffered, last = C, 0, 0, 0.0
    ready = math.inf  # when the next batch forms, once the buffer holds one
    samples: list[int] = []  # each launched group's samples

    def next_ready() -> float:
        total = 0
        for gid in waiting:
            total += samples[gid]
            if total >= B:
                return done[gid] if not boundaries else max(done[gid], boundaries[-1] + U)
        return math.inf

    while len(boundaries) < n:
        x = max(len(launch) * setup.spacing, last)
        while len(boundaries) < n:  # every event up to x, in order
            tc = completions[0][0] if completions else math.inf
            tp = pending[0][0] if pending else math.inf
            te = ends[0] if ends else math.inf
            t = min(tc, ready, tp, te)
            if t > x or t == math.inf:
                break
            if tc == t:
                gid = heapq.heappop(completions)[1]
                if samples[gid] > 0:
                    waiting.append(gid)
                    buffered += samples[gid]
                    if ready == math.inf and buffered >= B:
                        ready = next_ready()
                else:
                    free += 1
            elif ready == t:
                j, taken, count = len(boundaries), 0, 0
                while taken < B:
                    gid = waiting.popleft()
                    taken += samples[gid]
                    consumed[gid] = j
                    count += 1
                buffered -= taken
                boundaries.append(t)
                publishes.append(t + delay)
                pending.append((t + delay, count))
                ready = next_ready() if buffered >= B else math.inf
            elif tp == t:
                free += pending.popleft()[1]
            else:
                heapq.heappop(ends)
                running -= 1
        if len(boundaries) == n:
            break
        if free > 0 and (cap is None or running + g <= cap):
            i = len(launch)
            draws.ensure(i + 1)
            launch.append(x)
            consumed.append(-1)
            samples.append(int(draws.samples[i]))
            done.append(x + float(draws.finish[i]))
            heapq.heappush(completions, (done[-1], i))
            free -= 1
            if cap is not None:
                for life in draws.life[i].tolist():
                    heapq.heappush(ends, x + life)
                running += g
            last = x
            continue
        after = min(
            completions[0][0] if completions else math.inf,
            ready,
            pending[0][0] if pending else math.inf,
            ends[0] if ends else math.inf,
        )
        if after == math.inf:  # nothing left to free a slot or form a batch
            break
        last = after
    finished = len(boundaries) == n
    makespan = boundaries[-1] + U + setup.extra_time if finished else math.inf
    return AdmissionRun(
        setup,
        draws,
        np.array(launch),
        np.array(consumed, dtype=np.int64),
        np.array(boundaries),
        np.array(publishes),
        finished,
        float(makespan),
    )


def replicate(setup: AdmissionSetup, seed, events: bool | None = None) -> AdmissionRun:
    """One replication with ``numpy.random.default_rng(seed)``: :func:`timeline` where it plays the setup, else (or
    with ``events=True``) :func:`event_timeline`."""
    draws = Draws(setup, np.random.default_rng(seed))
    if events is None:
        events = not setup.every_group_samples
    return event_timeline(setup, draws) if events else timeline(setup, draws)
