"""The planner: where each replica goes and in what order, the six criteria at once.

Three programs, each small enough for a 40-broker, 10,000-partition cluster:

1. placement (milp, over candidate moves): which replicas move where. Hard: no broker outside
   the target set keeps a replica, no partition breaks its rack cap. Minimised: replica counts
   outside floor/ceil of the mean (heavily), the byte spread beyond the tolerance, then the
   bytes and partitions moved. Candidates are the replicas of brokers above their share (a
   spread sample of them by size), of removed brokers and of rack-violating partitions;
   destinations the brokers below their share. A placement already within bounds is kept.
   A large cluster whose racks fix each rack's share gets one program per rack.
2. order (milp): each partition's leader and first follower (where a failed leader's
   partitions go), minimising the preferred-leader spread plus the worst spread among the
   survivors of any one broker's failure, then changes to the present order: one exact program
   for small clusters, staged (leaders, then each broker's first followers) for large ones.
3. a plan that improves nothing is no plan: each stage keeps the present state unless its
   answer is strictly better on what it optimises, so a planned cluster plans to no moves.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from math import ceil, floor

from kcoord.reassign import milp
from kcoord.reassign.model import Cluster, Partition, PlanError
from kcoord.reassign.score import broker_down_spread, leaders, rack_cap, rack_count, spread

INF = milp.INF

OBJECTIVES = ("bytes", "count")


@dataclass(frozen=True)
class Options:
    add: tuple[int, ...] = ()
    remove: tuple[int, ...] = ()
    topics: frozenset[str] | None = None
    objective: str = "bytes"       # storage balanced by "bytes", or by replica "count" alone
    tolerance: float = 0.05        # a byte spread up to this fraction of the mean counts as balanced
    count_band: float = 0.25       # balancing bytes: replica counts within this fraction of their share
    candidates_per_broker: int = 150


def target_brokers(cluster: Cluster, options: Options) -> set[int]:
    """The brokers meant to hold the replicas: those holding some now, plus --add-broker,
    less --remove-broker. PlanError for an id the cluster lacks."""
    for flag, ids in (("--add-broker", options.add), ("--remove-broker", options.remove)):
        unknown = sorted(set(ids) - set(cluster.racks))
        if unknown:
            raise PlanError(f"{flag} {unknown[0]}: no such broker (the cluster has "
                            f"{', '.join(map(str, sorted(cluster.racks)))})")
    both = sorted(set(options.add) & set(options.remove))
    if both:
        raise PlanError(f"broker {both[0]} is both added and removed")
    if options.objective not in OBJECTIVES:
        raise PlanError(f"--objective {options.objective}: expected one of {', '.join(OBJECTIVES)}")
    targets = (cluster.holders() | set(options.add)) - set(options.remove)
    if not targets:
        raise PlanError("no broker is left to hold the replicas")
    return targets


def scope(cluster: Cluster, options: Options) -> Cluster:
    if options.topics is None:
        return cluster
    unknown = sorted(options.topics - {p.topic for p in cluster.partitions})
    if unknown:
        raise PlanError(f"--topics {unknown[0]}: no such topic")
    return cluster.topics(set(options.topics))


def check_racks(cluster: Cluster, targets: set[int]) -> None:
    """PlanError if some partition cannot be placed on `targets` within its rack cap."""
    racks = rack_count(cluster, targets)
    per_rack: dict[str | None, int] = {}
    for b in targets:
        per_rack[cluster.racks.get(b)] = per_rack.get(cluster.racks.get(b), 0) + 1
    for p in cluster.partitions:
        r = len(p.replicas)
        if r > len(targets):
            raise PlanError(f"{p.topic}-{p.partition} has {r} replicas but only {len(targets)} of the brokers "
                            f"would hold replicas: {', '.join(map(str, sorted(targets)))}")
        if racks:
            cap = rack_cap(r, racks)
            room = sum(min(cap, n) for n in per_rack.values())
            if room < r:
                raise PlanError(f"{p.topic}-{p.partition} has {r} replicas but racks "
                                f"{', '.join(f'{k}:{n}' for k, n in sorted(per_rack.items()))} (brokers per rack) "
                                f"hold at most {room} of them with no more than {cap} in one rack")


def plan(cluster: Cluster, options: Options = Options()) -> Cluster:
    """The cluster as the plan leaves it (partitions outside --topics untouched)."""
    targets = target_brokers(cluster, options)
    part = scope(cluster, options)
    check_racks(part, targets)
    # A re-plan of the plan places and orders it again from itself, so each stage is repeated
    # from its own result until that changes nothing, and a re-plan has nothing left to do.
    # Placement, solved to within a gap, can leave the byte spread a little beyond the tolerance
    # where one more small move costs less than the spread left (a re-plan, whose objective is
    # then that remainder, would make it); the staged order programs are exact stage by stage,
    # not at once, and a second pass can still improve.
    placed = _settled(lambda c: place(c, targets, options), place(part, targets, options), PLACE_PASSES)
    ordered = _settled(lambda c: order(c, targets, c), order(placed, targets, part), ORDER_PASSES)
    return cluster.with_assignment(ordered.assignment()) if options.topics is not None else \
        Cluster(cluster.racks, ordered.partitions)


def _settled(step, cluster: Cluster, passes: int) -> Cluster:
    """`step` applied to its own result until it returns its input (the same object), at most
    `passes` times."""
    for _ in range(passes):
        again = step(cluster)
        if again is cluster:
            break
        cluster = again
    return cluster


# ------------------------------------------------------------------ 1. placement
@dataclass
class _Load:
    count: dict[int, int]
    size: dict[int, int]


def _load(cluster: Cluster, brokers: set[int]) -> _Load:
    load = _Load({b: 0 for b in brokers}, {b: 0 for b in brokers})
    for p in cluster.partitions:
        for b in p.replicas:
            load.count[b] = load.count.get(b, 0) + 1
            load.size[b] = load.size.get(b, 0) + p.size
    return load


def _violating(p: Partition, racks: dict[int, str | None], cap: int) -> bool:
    seen: dict[str | None, int] = {}
    for b in p.replicas:
        seen[racks.get(b)] = seen.get(racks.get(b), 0) + 1
    return any(n > cap for n in seen.values())


def _spread_sample(items: list, k: int) -> list:
    """k of the (sorted) items, evenly spaced: small, middling and large replicas alike."""
    if len(items) <= k:
        return items
    return [items[(i * len(items)) // k] for i in range(k)]


@dataclass
class _Frame:
    """What the placement program balances against: each broker's group (its rack when the
    racks fix each rack's share, else one group), count band, byte share and deviation."""
    group: dict[int, str | None]
    lo: dict[int, int]
    hi: dict[int, int]
    mean_count: dict[int, float]
    deviation: dict[int, float]
    tol: float
    unit: float
    by_size: bool
    caps: dict[tuple[str, int], int]
    racks_n: int

    @property
    def groups(self) -> list[str | None]:
        return sorted(set(self.group.values()), key=str)


def _frame(cluster: Cluster, targets: set[int], options: Options, load: _Load) -> _Frame:
    racks_n = rack_count(cluster, targets)
    total_count = sum(len(p.replicas) for p in cluster.partitions)
    total_size = sum(p.size * len(p.replicas) for p in cluster.partitions)
    by_size = options.objective == "bytes" and total_size > 0
    # Each broker's share: of the whole, or of its rack's when the racks fix what each rack
    # holds (every partition's replicas a multiple of the racks: so many in each).
    if racks_n and all(len(p.replicas) % racks_n == 0 for p in cluster.partitions):
        group = {b: cluster.racks[b] for b in targets}
        share_count = {k: sum(len(p.replicas) // racks_n for p in cluster.partitions) for k in group.values()}
        share_size = {k: sum(p.size * len(p.replicas) // racks_n for p in cluster.partitions)
                      for k in group.values()}
    else:
        group = dict.fromkeys(targets)
        share_count, share_size = {None: total_count}, {None: total_size}
    members = {k: sum(1 for g in group.values() if g == k) for k in share_count}
    mean_count = {b: share_count[group[b]] / members[group[b]] for b in targets}
    # Balancing bytes, replica counts only need to stay within a band around their share, wide
    # enough for a few large partitions to carry a broker's share of bytes. Its floor keeps
    # twice a broker's share of leaders (partitions / brokers): it must lead its share and be
    # first follower to as many, or it cannot take its share of a failed broker's partitions.
    # Balancing counts, within floor/ceil of the share.
    band = options.count_band if by_size else 0.0
    roles = 2 * len(cluster.partitions) / len(targets)
    lo = {b: floor(max(mean_count[b] * (1 - band), min(mean_count[b], roles))) for b in targets}
    hi = {b: ceil(mean_count[b] * (1 + band)) for b in targets}
    share = {b: share_size[group[b]] / members[group[b]] for b in targets}
    mean = total_size / len(targets)
    return _Frame(group, lo, hi, mean_count, {b: load.size[b] - share[b] for b in targets},
                  options.tolerance * mean, mean / 1000 if total_size else 1.0, by_size,
                  {p.key: rack_cap(len(p.replicas), racks_n) for p in cluster.partitions}, racks_n)


def _spreads(frame: _Frame, separately: bool) -> list[float]:
    """The byte spreads (most minus least deviation from the share): one over all brokers, or
    one per group when the groups are planned separately."""
    groups = frame.groups if separately else [None]
    out = []
    for g in groups:
        devs = [d for b, d in frame.deviation.items() if not separately or frame.group[b] == g]
        out.append(max(devs) - min(devs))
    return out


def place(cluster: Cluster, targets: set[int], options: Options) -> Cluster:
    load = _load(cluster, targets)
    f = _frame(cluster, targets, options, load)
    violating = {p.key for p in cluster.partitions if f.racks_n and _violating(p, cluster.racks, f.caps[p.key])}
    strays = {b for b in load.count if b not in targets and load.count[b]}
    # A large cluster whose racks fix each rack's share is planned rack by rack: a replica then
    # only moves within its rack, so the racks' programs share nothing but which partitions have
    # moved already, and three programs of a third the size close far sooner than one.
    separately = (len(cluster.partitions) >= SEPARATE_RACKS_FROM and len(f.groups) > 1
                  and not violating and not strays)
    count_ok = all(f.lo[b] <= load.count[b] <= f.hi[b] for b in targets)
    size_ok = not f.by_size or max(_spreads(f, separately)) <= f.tol
    if not violating and not strays and count_ok and size_ok:
        return cluster

    deviation, tol = f.deviation, f.tol
    over = strays | {b for b in targets if load.count[b] > f.hi[b] or (f.by_size and deviation[b] > tol / 2)}
    if not over and not size_ok:   # spread too wide with nobody far above: take from the fullest
        over = {b for b in targets if deviation[b] > 0}
    if not over and not count_ok:
        over = {b for b in targets if load.count[b] > f.mean_count[b]}
    under = {b for b in targets if load.count[b] < f.lo[b] or (f.by_size and deviation[b] < -tol / 2)}
    if not size_ok and not under:
        under = {b for b in targets if deviation[b] < 0}
    under |= {b for b in targets if load.count[b] < f.hi[b] and b not in over} if not under else set()

    on_broker: dict[int, list[Partition]] = {}
    for p in cluster.partitions:
        for b in p.replicas:
            on_broker.setdefault(b, []).append(p)
    # Candidates are partitions: every replica of a chosen partition on a broker above its share
    # may move, so that one partition can carry several replicas to several brokers below theirs
    # (a partition moved is one partition however many of its replicas move).
    chosen_partitions: set[tuple[str, int]] = set(violating)
    for b in sorted(over):
        mine = sorted(on_broker.get(b, []), key=lambda p: (p.size, p.key))
        wanted = max(options.candidates_per_broker,
                     CANDIDATES_PER_EXCESS * round(load.count[b] - f.mean_count.get(b, 0)))
        chosen = mine if b in strays else _spread_sample(mine, wanted) + mine[max(0, len(mine) - wanted // 4):]
        chosen_partitions |= {p.key for p in chosen}
    candidates = {(key, b) for key in chosen_partitions for b in cluster.partition(key).replicas
                  if b in over or key in violating}
    if not separately:
        chosen_moves = _placement(cluster, targets, f, load, candidates, sorted(under), violating, strays, set(targets))
        return _moved(cluster, chosen_moves)
    moved: dict[tuple[str, int], int] = {}
    for g in f.groups:
        brokers = {b for b in targets if f.group[b] == g}
        mine = {(k, b) for k, b in candidates if b in brokers}
        chosen_moves = _placement(cluster, targets, f, load, mine, sorted(set(under) & brokers), violating, strays,
                                  brokers, moved)
        for k, _ in chosen_moves:
            moved[k] = moved.get(k, 0) + 1
        cluster = _moved(cluster, chosen_moves)
    return cluster


SEPARATE_RACKS_FROM = 2000   # partitions from which racks that fix their shares are planned one by one
CANDIDATES_PER_EXCESS = 2    # candidate partitions of a broker above its share, per replica it holds beyond it
PLACE_PASSES = 3             # placements of a plan from its own placement, until one changes nothing


def _moved(cluster: Cluster, chosen: dict[tuple[tuple[str, int], int], int]) -> Cluster:
    if not chosen:
        return cluster
    replaced = []
    for p in cluster.partitions:
        if any((p.key, b) in chosen for b in p.replicas):
            p = replace(p, replicas=tuple(chosen.get((p.key, b), b) for b in p.replicas), isr=None)
        replaced.append(p)
    return Cluster(cluster.racks, tuple(replaced))


def _placement(cluster: Cluster, targets: set[int], f: _Frame, load: _Load, candidates, under: list[int],
               violating: set, strays: set[int], brokers: set[int],
               moved: dict[tuple[str, int], int] | None = None) -> dict[tuple[tuple[str, int], int], int]:
    """One placement program over `candidates`, balancing `brokers`: the moves it chooses,
    (partition, source) -> destination. `moved` counts the replicas of each partition that
    earlier programs moved (those partitions are paid for already)."""
    moved = moved or {}
    group, unit = f.group, f.unit
    destinations_all = sorted(set(under) | (set(targets) if violating else set()))
    prog = milp.Program()
    moves: dict[tuple[tuple[str, int], int], dict[int, int]] = {}
    out_of: dict[int, dict[int, float]] = {b: {} for b in load.count}
    into: dict[int, dict[int, float]] = {b: {} for b in targets}
    per_partition: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
    touched: dict[tuple[str, int], int] = {}
    for key, src in sorted(candidates):
        p = cluster.partition(key)
        # With racks fixing each rack's share, a replica only needs to move within its rack.
        dests = [d for d in (sorted(targets) if src in strays or key in violating else destinations_all)
                 if d not in p.replicas and (src in strays or key in violating or group[d] == group[src])]
        if not dests:
            if src in strays:
                raise PlanError(f"{key[0]}-{key[1]} has nowhere to go from broker {src}")
            continue
        if key not in touched:
            touched[key] = prog.binary(0.0 if key in moved else PARTITION_MOVED)
        # A replica moved costs its bytes; a tiny rank term breaks ties by broker id.
        choice = {d: prog.binary(p.size / unit + 1e-6 * rank) for rank, d in enumerate(dests)}
        moves[(key, src)] = choice
        prog.row(dict.fromkeys(choice.values(), 1.0), 1.0 if src in strays else 0.0, 1.0)
        prog.row(dict.fromkeys(choice.values(), 1.0) | {touched[key]: -1.0}, -INF, 0.0)
        for d, v in choice.items():
            out_of[src][v] = 1.0
            into[d][v] = 1.0
            per_partition.setdefault(key, []).append((src, d, v))

    heavy = 1000.0 * 1000   # a replica outside the count band outweighs any byte consideration
    for b in sorted(brokers):
        terms = {v: -1.0 for v in out_of[b]} | {v: 1.0 for v in into[b]}
        below, above = prog.var(heavy), prog.var(heavy)
        prog.row(terms | {below: 1.0}, f.lo[b] - load.count[b], INF)
        prog.row(terms | {above: -1.0}, -INF, f.hi[b] - load.count[b])
    if f.by_size:
        top, bottom = prog.var(0.0, -INF), prog.var(0.0, -INF)
        excess = prog.var(4.0 * (1 + PARTITION_MOVED))   # spread removed is worth its bytes and partitions
        size_terms: dict[int, dict[int, float]] = {b: {} for b in brokers}
        for (k, s), c in moves.items():
            size = cluster.partition(k).size / unit
            for d, v in c.items():
                if s in size_terms:
                    size_terms[s][v] = size_terms[s].get(v, 0.0) - size
                if d in size_terms:
                    size_terms[d][v] = size_terms[d].get(v, 0.0) + size
        for b in sorted(brokers):
            base = f.deviation[b] / unit
            prog.row(size_terms[b] | {top: -1.0}, -INF, -base)
            prog.row(size_terms[b] | {bottom: -1.0}, -base, INF)
        prog.row({excess: 1.0, top: -1.0, bottom: 1.0}, -f.tol / unit, INF)
    for key, entries in sorted(per_partition.items()):
        p = cluster.partition(key)
        # At least one replica stays where it is (unless it must go): moving a partition whole
        # co-locates it with the others moved alongside, and when one of their brokers fails its
        # partitions' first followers are all among the few others.
        if key not in violating and not any(s in strays for s, _, _ in entries) and len(p.replicas) > 1:
            prog.row({v: 1.0 for _, _, v in entries}, -INF, len(p.replicas) - 1 - moved.get(key, 0))
        for d in sorted({d for _, d, _ in entries}):
            prog.row({v: 1.0 for _, dd, v in entries if dd == d}, -INF, 1.0)
        if f.racks_n:
            for rack in sorted({cluster.racks[b] for b in targets}, key=str):
                staying = sum(1 for b in p.replicas if cluster.racks.get(b) == rack)
                terms: dict[int, float] = {}
                for s, d, v in entries:
                    change = (cluster.racks.get(d) == rack) - (cluster.racks.get(s) == rack)
                    if change:
                        terms[v] = terms.get(v, 0.0) + change
                if terms or staying > f.caps[key]:
                    prog.row(terms, -INF, f.caps[key] - staying)
    try:
        # Within 1%: the objective is mostly the bytes a balance needs whatever moves them, and
        # choosing which few large partitions carry them is a knapsack whose bound closes slowly
        # (at 0.1% a 120-partition cluster took a minute, for three partitions' worth).
        values = milp.solve(prog, gap=PLACEMENT_GAP, nodes=500)
    except RuntimeError as err:
        raise PlanError(f"no placement satisfies the constraints ({err})") from None
    return {(k, s): d for (k, s), c in moves.items() for d, v in c.items() if values[v] > 0.5}


# What moving a partition costs besides its bytes, in the placement program's units (a broker's
# share of bytes is ~1000): about two average replicas' bytes on the bench clusters, so that the
# bytes a balance needs are carried by fewer, larger partitions.
PARTITION_MOVED = 10.0
PLACEMENT_GAP = 1e-2


# ------------------------------------------------------------------ 2. leader order
def _leadership_spreads(cluster: Cluster, targets: set[int]) -> tuple[int, int]:
    """(leader spread, worst spread with one broker down): what the order stage minimises."""
    return spread(leaders(cluster, targets)), broker_down_spread(cluster, targets)


def _balanced_choice(options: list[tuple[object, list[int], list[float]]], base: dict[int, int],
                     brokers: list[int]) -> dict[object, int]:
    """For each item (key, brokers it may go to, the cost of each), one broker, so that
    base[b] + items given to b spreads as evenly as possible over `brokers` (most minus fewest),
    then at the least cost. A transportation problem: its LP is nearly integral, so fast."""
    prog = milp.Program()
    weight = 4.0 * (1 + sum(max(c) for _, _, c in options))   # any spread gain beats every cost
    given: dict[int, dict[int, float]] = {b: {} for b in brokers}
    chosen = []
    for key, allowed, costs in options:
        vs = {b: prog.binary(cost) for b, cost in zip(allowed, costs)}
        prog.row(dict.fromkeys(vs.values(), 1.0), 1.0, 1.0)
        for b, v in vs.items():
            if b in given:
                given[b][v] = 1.0
        chosen.append((key, vs))
    top, bottom = prog.var(weight, -INF), prog.var(-weight, -INF)
    for b in brokers:
        prog.row(given[b] | {top: -1.0}, -INF, -base.get(b, 0))
        prog.row(given[b] | {bottom: -1.0}, -base.get(b, 0), INF)
    values = milp.solve(prog, gap=1e-9)
    return {key: next(b for b, v in vs.items() if values[v] > 0.5) for key, vs in chosen}


def _tie(b: int, replicas: tuple[int, ...]) -> float:
    return 1e-4 * sorted(replicas).index(b) / len(replicas)


def order(cluster: Cluster, targets: set[int], before: Cluster) -> Cluster:
    """Each partition's replicas ordered so that preferred leaders spread evenly over `targets`
    (a balanced choice of leaders), then so that the partitions each broker leads go, should it
    fail, to followers that keep the survivors even (a balanced choice of first followers per
    broker: the broker-down criterion, each failure a problem of its own). Changes to the
    present order cost, so an order already as even is kept."""
    if not cluster.partitions:
        return cluster
    present = {p.key: before.partition(p.key).replicas for p in cluster.partitions}
    pairs = sum(len(p.replicas) * (len(p.replicas) - 1) for p in cluster.partitions)
    ordered = _order_exact(cluster, targets, present) if pairs <= EXACT_ORDER_PAIRS else \
        _order_staged(cluster, targets, present)
    # Keep the present order unless the new one spreads leadership strictly better.
    new, old = _leadership_spreads(ordered, targets), _leadership_spreads(cluster, targets)
    return ordered if sum(new) < sum(old) else cluster


EXACT_ORDER_PAIRS = 400   # (leader, first follower) choices up to which one program orders all
ORDER_PASSES = 5          # orderings of a plan from its own order, until one changes nothing


def _order_exact(cluster: Cluster, targets: set[int], present: dict) -> Cluster:
    """One program over every partition's (leader, first follower) pair: the least sum of the
    leader spread and the worst broker-down spread, exactly; slow beyond small clusters."""
    prog = milp.Program()
    weight = 4.0 * len(cluster.partitions) + 4   # any spread gain outweighs every order change
    led: dict[int, dict[int, float]] = {b: {} for b in targets}
    follows: dict[tuple[int, int], dict[int, float]] = {}
    picks = []
    for p in cluster.partitions:
        old = present[p.key]
        heads = [(a, f) for a in p.replicas for f in p.replicas if f != a] if len(p.replicas) > 1 \
            else [(p.replicas[0], None)]
        choices = {}
        for a, f in heads:
            cost = (a != old[0]) * 2.0 + (len(old) > 1 and f != old[1]) * 1.0 + _tie(a, p.replicas) \
                + (_tie(f, p.replicas) / 8 if f is not None else 0.0)
            v = choices[(a, f)] = prog.binary(cost)
            if a in led:
                led[a][v] = 1.0
            if f is not None:
                follows.setdefault((a, f), {})[v] = 1.0
        prog.row(dict.fromkeys(choices.values(), 1.0), 1.0, 1.0)
        picks.append((p, choices))
    lmax, lmin = prog.var(weight), prog.var(-weight)
    for b in sorted(targets):
        prog.row(led[b] | {lmax: -1.0}, -INF, 0.0)
        prog.row(led[b] | {lmin: -1.0}, 0.0, INF)
    worst = prog.var(weight)
    for down in sorted(targets):
        dmax, dmin = prog.var(), prog.var(0.0, -INF)
        for x in sorted(targets - {down}):
            terms = dict(led[x])
            for v in follows.get((down, x), {}):
                terms[v] = terms.get(v, 0.0) + 1.0
            prog.row(terms | {dmax: -1.0}, -INF, 0.0)
            prog.row(terms | {dmin: -1.0}, 0.0, INF)
        prog.row({worst: 1.0, dmax: -1.0, dmin: 1.0}, 0.0, INF)
    values = milp.solve(prog, gap=1e-9, nodes=100_000)
    result = []
    for p, choices in picks:
        a, f = next(pair for pair, v in choices.items() if values[v] > 0.5)
        head = [a] + ([f] if f is not None else [])
        result.append(replace(p, replicas=tuple(head + [b for b in p.replicas if b not in head])))
    return Cluster(cluster.racks, tuple(result))


def _order_staged(cluster: Cluster, targets: set[int], present: dict) -> Cluster:
    """Leaders first (the least leader spread), then, for each broker separately, the first
    followers of the partitions it leads (the least spread among survivors should it fail)."""
    brokers = sorted(targets)
    lead = _balanced_choice([(p.key, list(p.replicas),
                              [float(a != present[p.key][0]) + _tie(a, p.replicas) for a in p.replicas])
                             for p in cluster.partitions], {}, brokers)
    led = {b: 0 for b in brokers}
    for a in lead.values():
        if a in led:
            led[a] += 1
    follow: dict[tuple[str, int], int] = {}
    for down in brokers:
        mine = [p for p in cluster.partitions if lead[p.key] == down and len(p.replicas) > 1]
        if not mine:
            continue
        survivors = [b for b in brokers if b != down]
        base = {b: led[b] for b in survivors}
        options = []
        for p in mine:
            rest = [b for b in p.replicas if b != down]
            old = present[p.key]
            options.append((p.key, rest, [float(len(old) < 2 or old[:2] != (down, f)) + _tie(f, p.replicas)
                                          for f in rest]))
        follow.update(_balanced_choice(options, base, survivors))
    result = []
    for p in cluster.partitions:
        head = [lead[p.key]] + ([follow[p.key]] if p.key in follow else [])
        result.append(replace(p, replicas=tuple(head + [b for b in p.replicas if b not in head])))
    return Cluster(cluster.racks, tuple(result))
