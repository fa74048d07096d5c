"""A cluster as the planner sees it: brokers with racks, and partitions with their replica
lists (the first is the preferred leader), sizes in bytes and in-sync replicas."""
from __future__ import annotations

from dataclasses import dataclass, field, replace


class PlanError(Exception):
    """Input the planner cannot work with (an unknown broker, an impossible rack constraint,
    a plan that no longer matches the cluster); the text is the one line to print."""


@dataclass(frozen=True)
class Partition:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    size: int = 0                      # bytes, the largest any replica reports
    isr: tuple[int, ...] | None = None  # None: every replica in sync

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)


@dataclass(frozen=True)
class Cluster:
    racks: dict[int, str | None]       # every broker id -> its rack (None: no rack)
    partitions: tuple[Partition, ...] = field(default_factory=tuple)

    def __post_init__(self):
        object.__setattr__(self, "partitions", tuple(sorted(self.partitions, key=lambda p: p.key)))

    def partition(self, key: tuple[str, int]) -> Partition:
        return self._by_key[key]

    @property
    def _by_key(self) -> dict[tuple[str, int], Partition]:
        cached = self.__dict__.get("_index")
        if cached is None:
            cached = {p.key: p for p in self.partitions}
            object.__setattr__(self, "_index", cached)
        return cached

    def holders(self) -> set[int]:
        """Brokers holding at least one replica."""
        return {b for p in self.partitions for b in p.replicas}

    def topics(self, names: set[str] | None) -> "Cluster":
        """The cluster reduced to the partitions of `names` (None: all)."""
        if names is None:
            return self
        return Cluster(self.racks, tuple(p for p in self.partitions if p.topic in names))

    def with_assignment(self, assignment: dict[tuple[str, int], tuple[int, ...]]) -> "Cluster":
        """The cluster once `assignment` (partition -> new replica list) is carried out: every
        replica in sync, sizes unchanged. PlanError if it names a partition or broker this
        cluster lacks."""
        check_assignment(assignment, set(self._by_key), set(self.racks))
        return Cluster(self.racks, tuple(
            replace(p, replicas=tuple(assignment[p.key]), isr=None) if p.key in assignment else p
            for p in self.partitions))

    def assignment(self) -> dict[tuple[str, int], tuple[int, ...]]:
        return {p.key: p.replicas for p in self.partitions}


def check_assignment(assignment: dict[tuple[str, int], tuple[int, ...]], partitions: set[tuple[str, int]],
                     brokers: set[int]) -> None:
    """PlanError if `assignment` names a partition not among `partitions`, a broker not among
    `brokers`, or gives a partition an empty or repeated replica list."""
    unknown = sorted(set(assignment) - partitions)
    if unknown:
        t, p = unknown[0]
        raise PlanError(f"the plan names partition {t}-{p}, which the cluster does not have")
    for (t, p), replicas in sorted(assignment.items()):
        strangers = [b for b in replicas if b not in brokers]
        if strangers:
            raise PlanError(f"the plan puts {t}-{p} on broker {strangers[0]}, which the cluster does not have")
        if len(set(replicas)) != len(replicas) or not replicas:
            raise PlanError(f"the plan gives {t}-{p} the replica list {list(replicas)}: empty or repeated")


def by_topic(keys) -> dict[str, list[int]]:
    """(topic, partition) pairs as topic -> its partitions, both sorted: the shape of the
    per-topic lists Kafka's requests take."""
    out: dict[str, list[int]] = {}
    for t, p in sorted(keys):
        out.setdefault(t, []).append(p)
    return out


def changed(before: Cluster, after: Cluster) -> dict[tuple[str, int], tuple[int, ...]]:
    """Partition -> new replica list, for each partition whose list (or its order) differs."""
    old = before.assignment()
    return {k: r for k, r in after.assignment().items() if old.get(k) != r}


RECORD_KEY = "kcoord"   # the top-level key of the plan's record; Kafka's tool ignores it


@dataclass(frozen=True)
class Plan:
    """A reassignment plan as read from its JSON: each partition's target, in the file's order,
    and, when `kcoord reassign plan` wrote it, the replicas each had when it was planned."""
    targets: dict[tuple[str, int], tuple[int, ...]]
    made_against: dict[tuple[str, int], tuple[int, ...]] | None = None
    cluster_id: str | None = None
    log_dirs: dict[tuple[str, int], tuple[str, ...]] = field(default_factory=dict)   # those not all "any"


def reassignment_json(assignment: dict[tuple[str, int], tuple[int, ...]],
                      made_against: dict[tuple[str, int], tuple[int, ...]] | None = None,
                      cluster_id: str | None = None) -> dict:
    """Kafka's reassignment JSON, as kafka-reassign-partitions --execute reads it; with
    `made_against`, also a record of each moved partition's replicas before the plan (and the
    cluster's id), under a key Kafka's tool ignores, so that `kcoord reassign apply` can tell a
    plan the cluster has moved away from."""
    doc = {"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": list(r), "log_dirs": ["any"] * len(r)}
        for (t, p), r in sorted(assignment.items())]}
    if made_against is not None:
        doc[RECORD_KEY] = {"cluster_id": cluster_id, "made_against": [
            {"topic": t, "partition": p, "replicas": list(made_against[(t, p)])} for t, p in sorted(assignment)]}
    return doc


def _replica_lists(entries) -> dict[tuple[str, int], tuple[int, ...]]:
    result = {}
    for e in entries:
        key = (str(e["topic"]), int(e["partition"]))
        if key in result:
            raise PlanError(f"the plan names {key[0]}-{key[1]} twice")
        result[key] = tuple(int(b) for b in e["replicas"])
    return result


def parse_plan(text: str) -> Plan:
    """The plan in Kafka's reassignment JSON, with kcoord's record if it has one; PlanError if
    it is not such a JSON."""
    import json

    try:
        doc = json.loads(text)
        targets = _replica_lists(doc["partitions"])
        log_dirs = {(str(e["topic"]), int(e["partition"])): tuple(map(str, e["log_dirs"]))
                    for e in doc["partitions"] if any(d != "any" for d in e.get("log_dirs") or ())}
        record = doc.get(RECORD_KEY)
        if record is None:
            return Plan(targets, log_dirs=log_dirs)
        cluster_id = record.get("cluster_id")
        return Plan(targets, _replica_lists(record["made_against"]),
                    None if cluster_id is None else str(cluster_id), log_dirs)
    except PlanError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise PlanError(f"not Kafka's reassignment JSON ({{\"version\":1,\"partitions\":[...]}}): {err}") \
            from None


def parse_reassignment_json(text: str) -> dict[tuple[str, int], tuple[int, ...]]:
    """Partition -> replica list from Kafka's reassignment JSON; PlanError if it is not one."""
    return parse_plan(text).targets
