"""A valid lower bound on the hourly cost of any plan at each (cadence, K) pair: the cost searches
open only the pairs whose bound does not already exceed a plan in hand. No pyomo."""

from __future__ import annotations

import highspy
import numpy as np

from trainground.models.instance import Instance
from trainground.solver.highs import new_highs, pass_lp
from trainground.solver.laws import calculus as calc
from trainground.solver.laws.holding import sandbox_occupancy
from trainground.solver.table.coefficients import global_values, gpu_prices, index_of, reserved_cost
from trainground.solver.table.pairs import Pairs
from trainground.solver.tolerances import BOUND_SLACK, REL_TOL


def hourly_lower_bound(
    inst: Instance, pairs: Pairs, shared: dict[str, dict] | None = None, lp: SandboxLP | None = None
) -> np.ndarray:
    """A valid lower bound on the hourly cost of any plan at each pair ($/h); inf where none can exist.

    Training: the pair's fewest groups at the training pool's price. Inference: the LP relaxation over
    shapes and pool sizes (integrality relaxed). Sandboxes: the environments that must stay on local
    nodes — the steady load, and the non-eligible share of the peak — at the cheapest node price per
    environment of one resource row at a time. VMs cost at least 0. ``shared``: the model's
    ``global_values`` of ``inst``, when the caller has them; ``lp``: its :class:`SandboxLP`, when the
    caller keeps one.
    """
    return bound_of_terms(inst, *hourly_bound_terms(inst, pairs, shared, lp))


def shares_gpus(inst: Instance) -> bool:
    """A colocated run: one set of GPUs takes turns generating and training, so its bound's GPU terms do not add."""
    return inst.regime is not None and inst.regime.mode == "colocated"


def bound_of_terms(inst: Instance, train: np.ndarray, inference: np.ndarray, sandbox: np.ndarray) -> np.ndarray:
    """:func:`hourly_lower_bound` from its terms (:func:`hourly_bound_terms`)."""
    gpus = np.maximum(train, inference) if shares_gpus(inst) else train + inference
    return reserved_cost(inst) + gpus + sandbox


def hourly_bound_terms(
    inst: Instance, pairs: Pairs, shared: dict[str, dict] | None = None, lp: SandboxLP | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The terms of :func:`hourly_lower_bound` at each pair ($/h): the training GPUs at the pair's fewest groups,
    the inference GPUs' LP bound and the nodes' and VMs' bound; each is a valid lower bound on what a plan at the
    pair pays for those counts, so plans with the same counts at several pairs pay at least each term's largest."""
    price = gpu_prices(inst)  # 0 in a reserved pool: its GPUs are billed as a fixed term
    train = price[inst.training.pool] * pairs.groups * inst.training.gpus_per_group
    inference = inference_lower_bound(inst, pairs, pairs.attempts, whole_pools=shares_gpus(inst))
    return train, inference, sandbox_lower_bound(inst, pairs, shared, lp)


def sandbox_lower_bound(
    inst: Instance,
    pairs: Pairs,
    shared: dict[str, dict] | None = None,
    lp: SandboxLP | None = None,
    curve: SandboxCurve | None = None,
) -> np.ndarray:
    """A valid lower bound on the nodes' and VMs' $/h of any plan at each pair that holds the pair's
    in-flight and peak loads (``pairs.inflight``, ``pairs.peak``, ``pairs.attempts`` for the LP curve;
    ``lp``: the instance's sandbox LP, when the caller keeps one; ``curve``: its curve sampled over the
    rates asked, when the caller keeps one, else sampled over these pairs' rates)."""
    env = inst.environment
    if shared is None:
        shared = global_values(inst, index_of(inst))
    # Sandboxes: the steady split and the local part of the peak split each need their environments on
    # nodes, and each resource row (density, cores, memory) alone bounds what those nodes cost: every
    # environment of b takes coef_b of a row's capacity on some node type that runs b. Each (split,
    # row) bound is valid, so is the largest; a sum of per-backend worst cases would not be.
    row_load, row_cap = shared["row_load"], shared["row_cap"]  # per environment and per node, of each resource row
    active = [(j, b) for j, b in enumerate(env.backends) if b.share > 0]
    resources = ("density", "cores", "memory")
    cheapest = np.full((len(active), len(resources)), np.inf)  # $/h per environment of b on row r, best node type
    for i, (_, b) in enumerate(active):
        for r, resource in enumerate(resources):
            for k in env.node_types:
                if b.name not in k.density:
                    continue
                row = ("node", k.name, resource)
                if row not in row_cap:  # this node type has no such row: the row costs nothing there
                    cheapest[i, r] = 0.0
                    continue
                cheapest[i, r] = min(cheapest[i, r], k.hour_cost * row_load[(*row, b.name)] / row_cap[row])
    columns = [j for j, _ in active]
    local = np.array([1 - env.cloud.eligible_share.get(b.name, 0.0) for _, b in active])
    loads = np.stack([pairs.inflight[:, columns], local * pairs.peak[:, columns]])  # (split, pair, backend)
    bound = np.empty((*loads.shape[:2], len(resources)))  # (split, pair, row): Σ_b load_b · cheapest_b,row
    for r in range(len(resources)):
        price = cheapest[:, r]
        finite = np.isfinite(price)
        bound[..., r] = loads[..., finite] @ price[finite]
        if not finite.all():  # a backend no node type runs on this row: any load of it has no local home
            bound[..., r][(loads[..., ~finite] > 0).any(axis=-1)] = np.inf
    if len(env.node_types) == 1 and env.node_types[0].hour_cost > 0:
        # one node type: the bound is its price times a node count, which is an integer
        price_node = env.node_types[0].hour_cost
        bound = calc.ceil_tol(bound / price_node, BOUND_SLACK) * price_node
    sandbox = bound.max(axis=(0, 2), initial=0.0)  # the largest (split, row) bound, at least 0
    if lp is None:
        lp = SandboxLP(inst, index_of(inst), shared)
    rates = pairs.attempts if pairs.sandbox_rate is None else pairs.sandbox_rate
    sandbox = np.maximum(sandbox, (SandboxCurve(lp, rates) if curve is None else curve)(rates))
    return sandbox


def inference_lower_bound(inst: Instance, pairs: Pairs, attempts: np.ndarray, whole_pools: bool = False) -> np.ndarray:
    """A valid lower bound on the inference GPUs' $/h of any plan at each pair whose replicas supply
    ``attempts`` (attempts/s, per pair) at the pair's per-replica supply (inf where none can); ``whole_pools``:
    the replicas may take every GPU of their pools (a colocated run's training takes turns with them)."""
    tok = inst.workload.tokens_per_attempt
    price = gpu_prices(inst)
    # Inference: the LP relaxation of min cost s.t. supply >= demand and pool sizes. Within a pool the
    # cheapest shape per attempt is also the one with the most attempts per GPU, so each pool offers one
    # rate; across pools, filling the cheapest first is optimal (a fractional knapsack).
    offers = []  # (cost per attempt, attempts/s the pool can give) per pool, each (pairs,)
    for pool in inst.gpu_pools:
        per_gpu = np.zeros(pairs.size)  # attempts/s per GPU of the pool's best shape
        for i, s in enumerate(inst.inference.shapes):
            if s.pool == pool.name:
                per_gpu = np.maximum(per_gpu, pairs.supply_per_replica[:, i] / tok / s.gpus_per_replica)
        free = np.full(pairs.size, pool.gpus) if whole_pools else calc.free_gpus(inst, pool, pairs.groups)
        cost = np.where(per_gpu > 0, price[pool.name] / np.where(per_gpu > 0, per_gpu, 1.0), np.inf)
        offers.append((cost, free * per_gpu))
    costs = np.stack([c for c, _ in offers], axis=1) if offers else np.zeros((pairs.size, 0))
    caps = np.stack([c for _, c in offers], axis=1) if offers else np.zeros((pairs.size, 0))
    order = np.argsort(costs, axis=1, kind="stable")
    need = attempts.astype(float).copy()
    inference = np.zeros(pairs.size)
    for j in range(costs.shape[1]):
        pick = order[:, j]
        cost = np.take_along_axis(costs, pick[:, None], axis=1)[:, 0]
        cap = np.take_along_axis(caps, pick[:, None], axis=1)[:, 0]
        take = np.where(np.isfinite(cost), np.minimum(need, cap), 0.0)
        inference += np.where(take > 0, take * np.where(np.isfinite(cost), cost, 0.0), 0.0)
        need -= take
    inference = np.where(need > REL_TOL * np.maximum(attempts, 1.0), np.inf, inference)
    shapes = inst.inference.shapes
    if len(shapes) == 1:  # one shape: its replica count is an integer, so round the LP bound up
        per_replica = pairs.supply_per_replica[:, 0] / tok
        with np.errstate(divide="ignore", invalid="ignore"):
            needed = np.where(per_replica > 0, attempts * (1 - REL_TOL) / per_replica, np.inf)
            replicas = calc.ceil_tol(needed, BOUND_SLACK)
        price_replica = price[shapes[0].pool] * shapes[0].gpus_per_replica
        inference = np.maximum(inference, np.where(np.isfinite(replicas), replicas * price_replica, np.inf))
    return inference


class SandboxCurve:
    """The LP relaxation of the sandbox part of a plan's cost, as a function of the pair's attempt rate.

    Every sandbox load of a pair — steady in-flight E_b, peak E^pk_b, the cloud-eligible part — is
    the pair's attempt rate ``a`` times a fixed per-attempt vector, so the cheapest fractional fleet
    of nodes and VMs (MODEL §3.5, §3.6, with max_nodes and max_vms) costs ``C(a)``, the optimal value
    of an LP whose right-hand side is linear in ``a``: convex and piecewise linear in ``a``. Its
    value and slope at a few sampled rates give supporting lines, and the largest of them at any
    ``a`` is a valid lower bound on C(a) (exact at the samples). Beyond the largest rate the capped
    fleet can hold, no plan exists (infinite bound).
    """

    SAMPLES = 24

    def __init__(self, lp: SandboxLP, rates: np.ndarray):
        self.lines: list[tuple[float, float]] = []  # (value at a_i, slope) as (intercept, slope)
        self.top = np.inf
        self._lp = lp
        if self._lp.empty or rates.size == 0:
            return
        self.top = self._lp.largest_rate()
        self._lp.restart()
        lo, hi = float(rates.min()), float(min(rates.max(), self.top))
        if not hi > 0:
            return
        samples = np.unique(np.geomspace(max(lo, hi * 1e-6), hi, self.SAMPLES)) if hi > lo else np.array([hi])
        for a in samples:
            solved = self._lp.value_at(a)
            if solved is not None:
                value, slope = solved
                self.lines.append((value - slope * a, slope))

    SAFETY = 1e-6  # relative: LP tolerances in the sampled values and slopes must not make the bound invalid

    def __call__(self, rates: np.ndarray) -> np.ndarray:
        bound = np.zeros(rates.shape)
        for intercept, slope in self.lines:
            bound = np.maximum(bound, intercept + slope * rates)
        return np.where(rates > self.top * (1 + self.SAFETY), np.inf, bound * (1 - self.SAFETY))


class SandboxLP:
    """The sandbox LP of MODEL §3.5 and §3.6 with fractional counts, loads per unit attempt rate:
    variables N_k, V_v, the splits y (steady), y' (peak) and c (cloud); rows ``A x <= a·coef``.

    A :class:`~solver.solve.Planner` keeps its instance's LP across retargets while ``key`` (every number
    of the LP: A, coef, prices, column bounds) is unchanged, reusing its HiGHS object and largest rate."""

    def __init__(self, inst: Instance, ix, shared: dict):
        env = inst.environment
        per_attempt = sandbox_occupancy(inst)
        e1 = {b.name: b.share * per_attempt for b in env.backends}
        peak1 = {b: e * env.peak_to_mean for b, e in e1.items()}
        columns = [("N", k) for k in ix.nodes] + [("V", v) for v in ix.vms]
        if ix.steady_split:
            columns += [("y", kb) for kb in ix.node_backends]
        columns += [("yp", kb) for kb in ix.node_backends] + [("c", vb) for vb in ix.vm_backends]
        self.empty = not ix.backends
        col = {c: i for i, c in enumerate(columns)}
        rows, coef = [], []  # sparse rows {column: value}, and the right-hand side per unit rate

        def host_rows(kind: str, split: str, count: str, pairs) -> None:
            for kk, host, resource in ix.rows:
                if kk != kind:
                    continue
                row = {
                    col[(split, (h, b))]: shared["row_load"][kind, host, resource, b] for (h, b) in pairs if h == host
                }
                row[col[(count, host)]] = -shared["row_cap"][kind, host, resource]
                rows.append(row)
                coef.append(0.0)

        for b in ix.backends:
            if ix.steady_split:
                rows.append({col[("y", kb)]: -1.0 for kb in ix.node_backends if kb[1] == b})
                coef.append(-e1[b])
            cover = {col[("yp", kb)]: -1.0 for kb in ix.node_backends if kb[1] == b}
            cover |= {col[("c", vb)]: -1.0 for vb in ix.vm_backends if vb[1] == b}
            rows.append(cover)
            coef.append(-peak1[b])
            if any(vb[1] == b for vb in ix.vm_backends):
                rows.append({col[("c", vb)]: 1.0 for vb in ix.vm_backends if vb[1] == b})
                coef.append(env.cloud.eligible_share.get(b, 0.0) * peak1[b])
        if ix.steady_split:
            host_rows("node", "y", "N", ix.node_backends)
        host_rows("node", "yp", "N", ix.node_backends)
        host_rows("vm", "c", "V", ix.vm_backends)
        self.A = np.zeros((len(rows), len(columns)))
        for i, row in enumerate(rows):
            for j, value in row.items():
                self.A[i, j] = value
        self.coef = np.array(coef) * (1 - REL_TOL)
        self.prices = self._cost_vector(columns, shared)
        limits = {("N", k.name): k.max_nodes for k in env.node_types} | {
            ("V", v.name): v.max_vms for v in env.cloud.vm_types
        }
        self.bounds = [(0, limits.get(c)) for c in columns]
        self.key = (self.A.shape, self.A.tobytes(), self.coef.tobytes(), self.prices.tobytes(), tuple(self.bounds))
        self._lp: highspy.Highs | None = None
        self._top: float | None = None

    @staticmethod
    def _cost_vector(columns, shared) -> np.ndarray:
        prices = {("N", k): p for k, p in shared["node_price"].items()} | {
            ("V", v): p for v, p in shared["vm_price"].items()
        }
        return np.array([prices.get(c, 0.0) for c in columns])

    def value_at(self, rate: float) -> tuple[float, float] | None:
        """(C(rate), dC/da) or None when no fractional fleet holds the load."""
        highs = self._highs()
        rhs = rate * self.coef
        highs.changeRowsBounds(  # type: ignore[attr-defined]  # in highspy, not in its stubs
            len(rhs), np.arange(len(rhs), dtype=np.int32), np.full(len(rhs), -highspy.kHighsInf), rhs
        )
        highs.run()
        if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        duals = np.asarray(highs.getSolution().row_dual)  # d objective / d row bound
        return float(highs.getInfo().objective_function_value), float(duals @ self.coef)

    def restart(self) -> None:
        """Forget the last basis: the next :meth:`value_at` solves from scratch, as on a new LP, so a curve's
        samples do not depend on the curves sampled before it."""
        if self._lp is not None:
            self._lp.clearSolver()

    def largest_rate(self) -> float:
        """The largest attempt rate any fractional fleet within max_nodes / max_vms holds (inf if none caps it)."""
        if self._top is None:
            self._top = self._solve_largest_rate()
        return self._top

    def _solve_largest_rate(self) -> float:
        highs = new_highs()
        n = self.A.shape[1]
        A = np.hstack([self.A, -self.coef[:, None]])
        cost = np.zeros(n + 1)
        cost[-1] = -1.0
        pass_lp(highs, cost, A, np.zeros(len(self.coef)), [*self.bounds, (0, 1e12)])
        highs.run()
        # The LP is feasible (no fleet at rate 0). HiGHS calls it unbounded when nothing caps the rate and the rate's
        # bound times a per-attempt load of 10^5 s or more passes its infinity; on that or any other status short
        # of optimal, no cap is known, and none is the safe reading: it only lowers the bound, never closes a pair.
        if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return np.inf
        top = float(highs.getSolution().col_value[-1])
        return np.inf if top >= 1e11 else top

    def _highs(self) -> highspy.Highs:
        """One HiGHS LP, re-solved from its last basis as the rate changes."""
        if self._lp is None:
            self._lp = new_highs()
            pass_lp(self._lp, self.prices, self.A, np.zeros(len(self.coef)), self.bounds)
        return self._lp
