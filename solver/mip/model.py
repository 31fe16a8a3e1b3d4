"""The planning MIP of MODEL.md §1–§4 in pyomo, disaggregated over (cadence, K) pairs.

Each pair ``p`` (a cadence grid point with a number of resident versions, see
:mod:`solver.table.pairs`) gets its own block: a copy of the count and split
variables, all bounded by the pair's selection binary ``z``; exactly one pair is
selected. Every coefficient is then a constant of its pair, ``total_cost =
Σ_p T_p · hourly_p`` is linear with no big-M product, and the LP relaxation is the
convex hull of the selection (MODEL.md §7).

Blocks are added on demand (:func:`add_pair`): the solve driver builds only the pairs a
cost bound cannot rule out, so an instance with thousands of cadence points builds a
few dozen blocks. A pair block reads like a table of contents: decisions, then one
``add_<family>`` per constraint family of MODEL.md §3, then its named cost terms; the
rows that span pairs (one selection, budgets, objectives) are :func:`refresh_globals`.

Numbers enter the rows through coefficient tables: plain floats for a one-off solve,
or mutable pyomo Params in a reusable model, whose blocks :func:`set_pair_coefficients`
retargets to another instance of the same structure (a sweep point) without a rebuild.
"""

from __future__ import annotations

import pyomo.core as pyo

from trainground.models.instance import OBJECTIVES, Instance
from trainground.solver.table.coefficients import PairValues, global_values, index_of
from trainground.solver.table.pairs import Pairs


def _table(m, block, name: str, values: dict, mutable: bool):
    """A coefficient table on ``block`` (the model ``m`` or one of its blocks): a mutable Param (reusable
    model) or the plain dict."""
    if not mutable:
        return values
    keys = tuple(values)
    if keys == (None,):
        param = pyo.Param(mutable=True, initialize=values[None], within=pyo.Any)
        block.add_component(f"k_{name}", param)
        return {None: param}
    param = pyo.Param(_index(m, keys), mutable=True, initialize=values, within=pyo.Any)
    block.add_component(f"k_{name}", param)
    return param


def _index(m, items: tuple):
    """The Set of ``items`` on the model ``m``, built on first use and shared by every block's components. An
    index given as a tuple would be copied into a Set of the component's own, the larger part of a pair
    block's build; this Set is that copy (same members, same order), made once."""
    found = m.index_sets.get(items)
    if found is None:
        members = pyo.SetOf(items)
        found = m.index_sets[items] = pyo.Set(initialize=members, ordered=members.isordered())
        m.add_component(f"ix_{len(m.index_sets)}", found)
    return found


# ---------------------------------------------------------------- the model


def build_model(inst: Instance, pairs: Pairs, reusable: bool = False, extension=None) -> pyo.ConcreteModel:
    """An empty model for ``inst``: global coefficients, and a place for pair blocks and the global rows.

    ``reusable`` makes every coefficient a mutable Param so the model can be retargeted (sweeps).
    ``extension`` adds its own decisions and rows (the chance constraint of MODEL §9,
    :class:`solver.confidence.model.PairExtension`): its globals now, its part of each pair block
    in :func:`add_pair`.
    """
    m = pyo.ConcreteModel(name=inst.name)
    m.inst, m.pairs, m.ix, m.mutable, m.extension = inst, pairs, index_of(inst), reusable, extension
    m.blocks = {}  # pair key (cadence, K, groups) -> its block
    m.index_sets = {}  # the members of an index -> its Set, shared by the blocks (_index)
    m.batches, m.summed = [], 0  # the sums of the blocks built so far, and how many blocks they cover
    m.pair_values = PairValues(inst, m.ix)
    m.k_values = global_values(inst, m.ix)  # the numbers in m.k, as plain dicts (a retarget compares them first)
    m.k = {name: _table(m, m, name, values, reusable) for name, values in m.k_values.items()}
    m.caps = pyo.ConstraintList()  # a Planner's extra restrictions (budgets, cards), refreshed per solve
    if extension is not None:
        extension.declare_globals(m)
    return m


def add_pair(m: pyo.ConcreteModel, p: int, key: tuple[float, int, int]) -> pyo.Block:
    """Build the block of pair ``key`` (row p of m.pairs): its decisions, every constraint family of
    MODEL.md §3, its cost terms."""
    blk = pyo.Block(concrete=True)
    m.add_component(f"pair_{len(m.blocks)}", blk)
    blk.key = key
    blk.k_values = m.pair_values(m.pairs, p)
    if m.extension is not None:
        m.extension.adjust(blk.k_values, p)
    blk.k = {name: _table(m, blk, name, values, m.mutable) for name, values in blk.k_values.items()}
    declare_decisions(m, blk)
    if m.extension is not None:
        m.extension.declare(m, blk, p)
    add_selection(m, blk)
    add_pool_capacity(m, blk)
    add_throughput(m, blk)
    add_update_time(m, blk)
    add_deadline(m, blk)
    add_steady_sandbox(m, blk)
    add_peak_sandbox(m, blk)
    add_freshness(m, blk)
    add_cost_terms(m, blk)
    if m.extension is not None:
        m.extension.add_rows(m, blk, p, _host_rows)
    m.blocks[key] = blk
    return blk


def set_pair_coefficients(
    m: pyo.ConcreteModel, inst: Instance, pairs: Pairs, where: dict, shared: dict[str, dict]
) -> set[int]:
    """Retarget a reusable model: global coefficients ``shared`` (the global_values of ``inst``), each
    built block's from row ``where[key]`` of ``pairs`` (blocks absent from ``where`` keep theirs; the
    caller keeps them closed). Returns the ids of the Params whose value changed."""
    m.inst, m.pairs, m.pair_values = inst, pairs, PairValues(inst, m.ix)
    changed: set[int] = set()
    _store(m, shared, changed)
    for key, blk in m.blocks.items():
        if key in where:
            _store(blk, m.pair_values(pairs, where[key]), changed)
    return changed


def rekey_pair(m: pyo.ConcreteModel, blk: pyo.Block, p: int, key: tuple[float, int, int]) -> set[int]:
    """Point a built block of a reusable model at pair ``key`` (row p of m.pairs) by a parameter update, in
    place of building one: the block keeps its place in m.blocks under its new key. Returns the ids of the
    Params whose value changed."""
    old = blk.key
    m.blocks = {(key if seen == old else seen): b for seen, b in m.blocks.items()}
    blk.key = key
    changed: set[int] = set()
    _store(blk, m.pair_values(m.pairs, p), changed)
    return changed


def _store(holder, tables: dict[str, dict], changed: set[int]) -> None:
    """Set the Params of ``holder`` (the model or a block) to ``tables``, skipping the tables equal to
    the numbers they hold (most of them, in a sweep that edits one field)."""
    for name, values in tables.items():
        if values != holder.k_values[name]:
            _store_table(holder.k[name], values, changed)
            holder.k_values[name] = values


def _store_table(table, values: dict, changed: set[int]) -> None:
    for key, value in values.items():
        entry = table[key]
        if entry.value != value:
            entry.set_value(value)
            changed.add(id(entry))


def declare_decisions(m: pyo.ConcreteModel, blk: pyo.Block) -> None:
    """Selection z, replicas x[s], nodes N[k], VMs V[v], steady split y, peak split y', cloud split c."""
    ix, k = m.ix, blk.k

    def capped(table):
        return None if m.mutable else (lambda _, name: (0, table[name]))

    blk.z = pyo.Var(domain=pyo.Binary, bounds=(0, 1))
    blk.x = pyo.Var(_index(m, ix.shapes), domain=pyo.NonNegativeIntegers, bounds=capped(k["replica_cap"]))
    blk.N = pyo.Var(_index(m, ix.nodes), domain=pyo.NonNegativeIntegers, bounds=capped(k["node_cap"]))
    blk.V = pyo.Var(_index(m, ix.vms), domain=pyo.NonNegativeIntegers, bounds=capped(k["vm_cap"]))
    blk.y_peak = pyo.Var(_index(m, ix.node_backends), domain=pyo.NonNegativeReals)
    blk.c = pyo.Var(_index(m, ix.vm_backends), domain=pyo.NonNegativeReals)
    blk.y = pyo.Var(_index(m, ix.node_backends if ix.steady_split else ()), domain=pyo.NonNegativeReals)


def add_selection(m: pyo.ConcreteModel, blk: pyo.Block) -> None:
    """Every count of the pair is 0 unless its z = 1: x_s <= cap_s·z, N_k <= cap_k·z, V_v <= cap_v·z [counts].
    Exactly one z is 1 over all pairs (a global row, see refresh_globals)."""
    k = blk.k
    ix = m.ix
    blk.replicas_off = pyo.Constraint(_index(m, ix.shapes), rule=lambda b, s: b.x[s] <= k["replica_cap"][s] * b.z)
    blk.nodes_off = pyo.Constraint(_index(m, ix.nodes), rule=lambda b, n: b.N[n] <= k["node_cap"][n] * b.z)
    blk.vms_off = pyo.Constraint(_index(m, ix.vms), rule=lambda b, v: b.V[v] <= k["vm_cap"][v] * b.z)


def add_pool_capacity(m: pyo.ConcreteModel, blk: pyo.Block) -> None:
    """MODEL §3.1, per pool: Σ_{s in pool} x_s·g_s + [training pool] m·gpus_per_group <= gpus·z  [GPUs].

    The training term is the fewest groups that keep up at this pair (a constant of the pair) times z.
    """
    shapes = m.inst.inference.shapes

    def rule(b, pool):
        used = sum(s.gpus_per_replica * b.x[s.name] for s in shapes if s.pool == pool)
        if pool == m.ix.training_pool:
            used = used + b.k["train_gpus"][None] * b.z + _extra_training_gpus(m, b)
        if isinstance(used, int):
            return pyo.Constraint.Skip
        return used <= m.k["pool_gpus"][pool] * b.z

    blk.pool_capacity = pyo.Constraint(_index(m, m.ix.pools), rule=rule)


def _extra_training_gpus(m: pyo.ConcreteModel, blk: pyo.Block):
    """GPUs of the training groups an extension adds beyond the pair's fewest (0 without one)."""
    extra = getattr(blk, "extra_groups", None)
    return 0 if extra is None else m.inst.training.gpus_per_group * extra


def add_throughput(m: pyo.ConcreteModel, blk: pyo.Block) -> None:
    """MODEL §3.2: a·Σ_s x_s·g_s·r_s·(1 - slowdown_s(K-1)) >= R_raw(L,K)·tokens_per_attempt  [tokens/s].

    Written per attempt (both sides divided by tokens_per_attempt) to keep the row well scaled.
    """
    k = blk.k
    blk.throughput = pyo.Constraint(
        expr=sum(k["supply"][s] * blk.x[s] for s in m.ix.shapes) >= k["attempts"][None] * blk.z
    )


def add_update_time(m: pyo.ConcreteModel, blk: pyo.Block) -> None:
    """MODEL §3.3: U(m) <= L [s]. No row: the pair table holds it, in ``solver.table.pairs._demand`` (the cut
    named ``update_time``: grid points where no admissible group count has U <= L are never pairs) and
    in the pair's key, whose training is the fewest groups with U <= L (``calculus.min_groups_for``;
    with start-up counted, ``solver.table.group_counts.group_rows`` gives each count that still shortens U(m) its own
    pair, every one with U <= L).

    More groups only take pool GPUs and cost more, so fixing m at that minimum loses no
    optimum; a table law whose feasible group counts have holes is handled exactly. A diagnosis counts
    the cut grid points by this name.
    """


def add_deadline(m: pyo.ConcreteModel, blk: pyo.Block) -> None:
    """MODEL §3.4: T = n·L + extra_time <= deadline [s]. No row: the pair table holds it, in
    ``solver.table.pairs._demand`` (the cut named ``deadline``; with start-up counted, after the fill is known,
    and per training-group count in ``solver.table.group_counts``): pairs past it are never built, and a
    diagnosis counts them by this name."""


def _host_rows(m, blk, kind: str, count, split, name: str) -> None:
    """Rows of one split against its hosts, per existing (host, resource) row:
    Σ_b split[h,b]·load_{h,r,b} <= cap_{h,r}·count[h], with load 1/density, cores_b or memory_b and
    cap u, u·cores_h or u·memory_h on nodes (1, cores_v, memory_v on VMs)  [nodes or VMs]."""
    hosted = m.ix.node_backends if kind == "node" else m.ix.vm_backends
    keys = tuple((h, r) for (kk, h, r) in m.ix.rows if kk == kind)
    load, cap = m.k["row_load"], m.k["row_cap"]

    def rule(b, h, r):
        used = sum(split[h, bb] * load[kind, h, r, bb] for (hh, bb) in hosted if hh == h)
        return used <= cap[kind, h, r] * count[h]

    blk.add_component(name, pyo.Constraint(_index(m, keys), rule=rule))


def add_steady_sandbox(m: pyo.ConcreteModel, blk: pyo.Block) -> None:
    """MODEL §3.5: steady load E_b stays local: Σ_k y_kb >= E_b; per node type, density, cores and memory
    rows under the cap u: Σ_b y_kb/density_kb <= u·N_k, Σ_b y_kb·cores_b <= u·N_k·cores_k, ... [environments].

    Without cloud capacity the peak split of §3.6 (E^pk >= E, same rows) implies this one, so it is omitted.
    """
    ix = m.ix
    if not ix.steady_split:
        return
    blk.steady_cover = pyo.Constraint(
        _index(m, ix.backends),
        rule=lambda b, bk: sum(b.y[n, bk] for (n, bb) in ix.node_backends if bb == bk) >= b.k["inflight"][bk] * b.z,
    )
    _host_rows(m, blk, "node", blk.N, blk.y, "steady_nodes")


def add_peak_sandbox(m: pyo.ConcreteModel, blk: pyo.Block) -> None:
    """MODEL §3.6: peaks E^pk_b = peak_to_mean·E_b on local nodes (same rows and cap as §3.5, same N_k)
    plus cloud VMs at full capacity: Σ_k y'_kb + Σ_v c_vb >= E^pk_b, Σ_v c_vb <= eligible_share_b·E^pk_b,
    and per VM type Σ_b c_vb/density_vb <= V_v, with cores and memory rows [environments]."""
    ix = m.ix
    blk.peak_cover = pyo.Constraint(
        _index(m, ix.backends),
        rule=lambda b, bk: (
            sum(b.y_peak[n, bk] for (n, bb) in ix.node_backends if bb == bk)
            + sum(b.c[v, bk] for (v, bb) in ix.vm_backends if bb == bk)
            >= b.k["peak"][bk] * b.z
        ),
    )
    _host_rows(m, blk, "node", blk.N, blk.y_peak, "peak_nodes")
    cloud_backends = tuple(sorted({bk for (_, bk) in ix.vm_backends}, key=ix.backends.index))
    blk.cloud_eligible = pyo.Constraint(
        _index(m, cloud_backends),
        rule=lambda b, bk: sum(b.c[v, bk] for (v, bb) in ix.vm_backends if bb == bk) <= b.k["cloud_cap"][bk] * b.z,
    )
    _host_rows(m, blk, "vm", blk.V, blk.c, "cloud_vms")


def add_freshness(m: pyo.ConcreteModel, blk: pyo.Block) -> None:
    """MODEL §3.7: mean gap <= max_mean_gap, q(L,K) <= max_exceedance, drop <= max_group_drop. No row: each
    is a function of the pair alone, so the pair table holds it, in ``solver.table.pairs._demand`` (the cuts
    named ``max_mean_gap``, ``max_exceedance`` and ``max_group_drop``): inadmissible pairs are never built,
    and a diagnosis counts them by these names."""


def add_cost_terms(m: pyo.ConcreteModel, blk: pyo.Block) -> None:
    """MODEL §4, for the pair [$/h]: GPU = Σ_pools gpu_hour_cost·GPUs billed (those used; all of a reserved
    pool, a constant of the selected pair); node = Σ_k N_k·hour_cost_k;
    VM = Σ_v V_v·hour_cost_v·billed_fraction_v. Named so each can be reported on its own; the pair's
    share of total_cost is (T/3600)·hourly [$], linear because the pair has its own copy."""
    ix, price = m.ix, m.k["gpu_price"]
    shapes = m.inst.inference.shapes
    blk.gpu_cost = pyo.Expression(
        expr=sum(price[s.pool] * s.gpus_per_replica * blk.x[s.name] for s in shapes)
        + price[ix.training_pool] * (blk.k["train_gpus"][None] * blk.z + _extra_training_gpus(m, blk))
        + m.k["reserved_cost"][None] * blk.z
    )
    blk.node_cost = pyo.Expression(expr=sum(m.k["node_price"][n] * blk.N[n] for n in ix.nodes))
    blk.vm_cost = pyo.Expression(expr=sum(m.k["vm_price"][v] * blk.V[v] for v in ix.vms))
    blk.hourly_cost = pyo.Expression(expr=blk.gpu_cost + blk.node_cost + blk.vm_cost)
    blk.total_cost = pyo.Expression(expr=blk.k["hours"][None] * blk.hourly_cost)
    blk.makespan = pyo.Expression(expr=blk.k["makespan"][None] * blk.z)


def add_batch(m: pyo.ConcreteModel) -> list:
    """The blocks built since the last batch, summed: a batch block whose variables z, hourly_cost,
    total_cost and makespan equal the sums of its blocks' own (one row each). Returns its rows (none when
    no block is new)."""
    fresh = list(m.blocks.values())[m.summed :]
    if not fresh:
        return []
    batch = pyo.Block(concrete=True)
    m.add_component(f"batch_{len(m.batches)}", batch)
    rows = []
    for name in ("z", "hourly_cost", "total_cost", "makespan"):
        batch.add_component(name, pyo.Var(domain=pyo.Reals))
        row = pyo.Constraint(expr=getattr(batch, name) == sum(getattr(b, name) for b in fresh))
        batch.add_component(f"sum_{name}", row)
        rows.append(row)
    m.batches.append(batch)
    m.summed = len(m.blocks)
    return rows


def refresh_globals(m: pyo.ConcreteModel) -> tuple[list, list]:
    """The rows spanning the built pairs, rebuilt after blocks are added; returns (removed, added) rows.

    One selection: Σ_p z_p = 1. MODEL §3.8 budgets (rows always present in a reusable model; an unset
    budget is an infinite bound): Σ_p hourly_p <= max_hourly_cost [$/h], Σ_p (T_p/3600)·hourly_p <=
    max_total_cost [$]. And the three objectives of MODEL §4 over the built pairs. The sums run over
    batches (:func:`add_batch`): a refresh sums the blocks added since the last one, and the rows and
    objectives read one variable per batch, not every block again.
    """
    removed = [
        c for c in (getattr(m, n, None) for n in ("one_cadence", "max_hourly_cost", "max_total_cost")) if c is not None
    ]
    for name in (
        "one_cadence",
        "max_hourly_cost",
        "max_total_cost",
        "hourly_cost",
        "total_cost",
        "makespan",
        *(f"objective_{o}" for o in OBJECTIVES),
    ):
        if hasattr(m, name):
            m.del_component(name)
    added = add_batch(m)
    batches = m.batches
    m.one_cadence = pyo.Constraint(expr=sum(b.z for b in batches) == 1)
    m.hourly_cost = pyo.Expression(expr=sum(b.hourly_cost for b in batches))
    m.total_cost = pyo.Expression(expr=sum(b.total_cost for b in batches))
    m.makespan = pyo.Expression(expr=sum(b.makespan for b in batches))
    added.append(m.one_cadence)
    limits = m.inst.limits
    if m.mutable or limits.max_hourly_cost is not None:
        m.max_hourly_cost = pyo.Constraint(expr=m.hourly_cost <= m.k["budget"]["hourly"])
        added.append(m.max_hourly_cost)
    if m.mutable or limits.max_total_cost is not None:
        m.max_total_cost = pyo.Constraint(expr=m.total_cost <= m.k["budget"]["total"])
        added.append(m.max_total_cost)
    if m.extension is not None:
        gone, new = m.extension.refresh(m)
        removed += gone
        added += new
    for name in OBJECTIVES:
        objective = pyo.Objective(expr=getattr(m, name), sense=pyo.minimize)
        m.add_component(f"objective_{name}", objective)
        objective.deactivate()
    return removed, added
