"""The model of one instance as it lives across solves: the pyomo model, built pair by pair on
demand, and its mirror in HiGHS, kept equal to it by every method here.

State that must match between the two: the pair blocks built, which pairs may be selected
(upper bounds of their selection binaries), the rows spanning the built pairs (one
selection, budgets), this solve's caps, the active objective, and — in a reusable model —
the coefficient Params, which :meth:`LiveModel.retarget` points at another instance of
the same structure, and the keys of the blocks, which a retargeted model may move to other pairs.
"""

from __future__ import annotations

from contextlib import contextmanager

from trainground.models.instance import OBJECTIVES, Instance
from trainground.models.result import Status
from trainground.solver.highs import NO_BOUND, STAGE_OPTIONS, HighsModel, Outcome
from trainground.solver.mip.model import add_pair, build_model, refresh_globals, rekey_pair, set_pair_coefficients
from trainground.solver.stopwatch import Stopwatch
from trainground.solver.table.coefficients import global_values, index_of
from trainground.solver.table.pairs import Pairs

MAX_REUSED_BLOCKS = 48  # a reusable model that has built more pairs is rebuilt: rows over all pairs grow with it


class LiveModel:
    """One instance's pyomo model and its HiGHS mirror. ``pairs`` is the instance's pair table; a
    block, once built, stays (opening and closing pairs is a bound change)."""

    def __init__(
        self,
        inst: Instance,
        pairs: Pairs,
        reusable: bool = False,
        threads: int = 1,
        clock: Stopwatch | None = None,
        extension=None,
        options: dict | None = None,
    ):
        """``extension``: a regime's rows in each pair block (:func:`solver.regimes.table.extension_of`); a model
        with one is not retargeted (its rows hold plain numbers). ``options``: HiGHS options of every run over
        those of :data:`solver.highs.OPTIONS` (a regime's tolerance, :func:`solver.regimes.table.highs_options`)."""
        self.options = dict(options or {})
        self.clock = clock or Stopwatch()
        self.reusable = reusable and extension is None
        self.threads = threads
        with self.clock.phase("build"):
            self.model = build_model(inst, pairs, self.reusable, extension)
        self.inst, self.pairs = inst, pairs
        self.keys = pairs.keys()
        self.row_of = {key: row for row, key in enumerate(self.keys)}
        self.block_rows: dict[tuple[float, int, int], int] = {}  # key of a built block -> its row in self.pairs
        self._highs: HighsModel | None = None
        self._open: dict[tuple[float, int, int], int] = {}  # key -> upper bound of its z, as HiGHS holds it
        self._dirty = True  # blocks were added since the global rows were last built
        self._objective: str | None = None
        self._caps: list = []  # this solve's (kind, limit) restrictions
        self._cap_rows: list = []  # their rows in the model and in HiGHS

    @property
    def highs(self) -> HighsModel:
        if self._highs is None:
            with self.clock.phase("build"):
                self._highs = HighsModel(self.threads)
                self._highs.load(self.model)
        return self._highs

    @property
    def blocks(self) -> dict:
        return self.model.blocks

    def retarget(self, inst: Instance, pairs: Pairs) -> bool:
        """Point a reusable model at another instance of the same structure by a parameter update of
        the built pairs. False when it cannot (not reusable, another structure, or more than
        MAX_REUSED_BLOCKS pairs built, past which a fresh model is cheaper)."""
        if not self.reusable or index_of(inst) != self.model.ix or len(self.blocks) > MAX_REUSED_BLOCKS:
            return False
        with self.clock.phase("build"):
            self.inst, self.pairs = inst, pairs
            self.keys = pairs.keys()
            self.row_of = {key: row for row, key in enumerate(self.keys)}
            where = {key: self.row_of[key] for key in self.blocks if key in self.row_of}
            changed = set_pair_coefficients(self.model, inst, pairs, where, global_values(inst, self.model.ix))
            self.block_rows = where
            if self._highs is not None and changed:
                self._highs.params_changed(changed)
        return True

    def set_caps(self, caps: list) -> None:
        """This solve's extra restrictions, (kind, limit) with kind hourly | total | cards | nodes; None limits skip."""
        self._caps = [(kind, limit) for kind, limit in caps if limit is not None]

    @contextmanager
    def extra_cap(self, kind: str, limit: float):
        """This solve's caps and one more (kind, limit) for the runs inside the block; the solve's own after."""
        caps = list(self._caps)
        self._drop_cap_rows()
        self._caps = caps + [(kind, limit)]
        try:
            yield
        finally:
            self._drop_cap_rows()
            self._caps = caps

    def run(self, objective: str, rows: list[int], bound: float = NO_BOUND, relaxation: bool = False) -> Outcome:
        """One HiGHS run with exactly the pairs of ``rows`` selectable (built first if needed), within
        what is left of the clock's time limit; ``relaxation``: of the LP relaxation alone (its optimum
        bounds the MIP's from below)."""
        self._build(rows)
        self.clock.note(
            f"{self.inst.name}: HiGHS over {len(rows):,} of {self.pairs.size:,} pairs "
            f"({len(self.blocks):,} built), {objective}"
        )
        if self.clock.expired():
            return Outcome(status=Status.TIME_LIMIT, objective_value=None, bound=None, highs_seconds=0.0, runs=0)
        self._sync_rows()
        self._open_only({self.keys[r] for r in rows})
        self._use(objective)
        options = {**STAGE_OPTIONS[objective], **self.options, "objective_bound": bound, "solve_relaxation": relaxation}
        outcome = self.highs.run(options, self.clock.remaining())
        if outcome.status == Status.ERROR and options["presolve"] == "on":
            # HiGHS's postsolve can stop with a solve error on rows that sit a hair above an integer
            # (seen at 1e-6 over): the same run without presolve is exact, only slower.
            outcome = self.highs.run({**options, "presolve": "off"}, self.clock.remaining())
            outcome.runs = 2
        return outcome

    def end_solve(self) -> None:
        """Drop this solve's caps from the model and from HiGHS."""
        if self._cap_rows:
            self.highs.remove_rows(self._cap_rows)
            self.model.caps.clear()
        self._cap_rows = []
        self._caps = []

    def selected(self, values):
        """The built pair block whose selection binary is on in a solution."""
        return max(self.blocks.values(), key=lambda blk: float(values.get(blk.z, 0.0) or 0.0))

    def size(self) -> dict[str, int]:
        columns, rows = self.highs.size()
        return {
            "grid_points": self.pairs.grid_points,
            "pairs": self.pairs.size,
            "pairs_built": len(self.blocks),
            "variables": columns,
            "rows": rows,
        }

    # -- keeping HiGHS in step ----------------------------------------------------

    def _build(self, rows: list[int]) -> None:
        """Blocks of the pairs of ``rows`` not built yet; stops early when the clock's time is up. In a
        retargeted model, a block no pair of this instance uses (built for an earlier one; closed before the run) is
        pointed at a missing pair first: a parameter update instead of a new block and new global rows."""
        fresh, changed = [], set()
        missing = sum(self.keys[row] not in self.blocks for row in rows)
        if missing:
            self.clock.note(f"{self.inst.name}: building {missing:,} pair blocks")
        spare = [key for key in self.blocks if key not in self.row_of] if missing else []
        with self.clock.phase("build"):
            for row in rows:
                if self.clock.expired():
                    break
                key = self.keys[row]
                if key in self.blocks:
                    continue
                if spare:
                    old = spare.pop(0)
                    changed |= rekey_pair(self.model, self.blocks[old], row, key)
                    self._open[key] = self._open.pop(old)
                else:
                    fresh.append(add_pair(self.model, row, key))
                    self._open[key] = 1
                self.block_rows[key] = row
            if self._highs is not None and changed:
                self._highs.params_changed(changed)
            if fresh:
                self._dirty = True
                if self._highs is not None:
                    for blk in fresh:
                        self._highs.add_block(blk)

    def _sync_rows(self) -> None:
        """Rebuild the rows spanning the built pairs after blocks were added, and this solve's caps."""
        m, highs = self.model, self.highs
        if self._dirty:
            self._drop_cap_rows()
            removed, added = refresh_globals(m)
            highs.remove_rows(removed)
            highs.add_rows(added)
            self._objective = None
            self._dirty = False
        if self._caps and not self._cap_rows:
            shapes = self.inst.inference.shapes
            for kind, limit in self._caps:
                if kind == "hourly":
                    self._cap_rows.append(m.caps.add(m.hourly_cost <= limit))
                elif kind == "total":
                    self._cap_rows.append(m.caps.add(m.total_cost <= limit))
                elif kind == "nodes":
                    nodes = sum(b.N[k] for b in self.blocks.values() for k in m.ix.nodes)
                    self._cap_rows.append(m.caps.add(nodes <= limit))
                else:
                    cards = sum(s.gpus_per_replica * b.x[s.name] for b in self.blocks.values() for s in shapes)
                    self._cap_rows.append(m.caps.add(cards <= limit))
            highs.add_rows(self._cap_rows)

    def _drop_cap_rows(self) -> None:
        if self._cap_rows:
            self.highs.remove_rows(self._cap_rows)
            self.model.caps.clear()
        self._cap_rows = []

    def _use(self, objective: str) -> None:
        if objective == self._objective:
            return
        m = self.model
        for name in OBJECTIVES:
            getattr(m, f"objective_{name}").deactivate()
        getattr(m, f"objective_{objective}").activate()
        self.highs.use_objective(getattr(m, f"objective_{objective}"))
        self._objective = objective

    def _open_only(self, keys: set) -> None:
        """Let exactly the pairs of ``keys`` be selected (z upper bounds)."""
        changed = []
        for key, blk in self.blocks.items():
            upper = 1 if key in keys else 0
            if self._open.get(key) != upper:
                blk.z.setub(upper)
                self._open[key] = upper
                changed.append(blk.z)
        self.highs.bounds_changed(changed)
