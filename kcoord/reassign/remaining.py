"""What of a reassignment plan is left to do on a cluster as it is now, and in which batches;
or, as one line (PlanError), why the plan no longer matches the cluster.

Each partition of the plan is
- DONE: its replicas are the plan's target and no reassignment of it is under way;
- UNDER_WAY: a reassignment to the target is under way (an interrupted apply's, or anyone's):
  it is waited for, never submitted again;
- TO_MOVE: its replicas are those the plan recorded when it was made (with the base check off,
  any replicas but the target).
Anything else means the cluster moved away from the plan since it was made (another
reassignment, a partition or broker gone): the plan is stale and nothing of it is applied.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kcoord.reassign.model import Plan, PlanError, check_assignment

DONE, UNDER_WAY, TO_MOVE = "done", "under way", "to move"

Key = tuple[str, int]


@dataclass(frozen=True)
class Ongoing:
    """A reassignment under way, as ListPartitionReassignments reports it."""
    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def target(self) -> tuple[int, ...]:
        # Kafka lists the target first, then the replicas it removes once the added ones are in sync.
        return tuple(b for b in self.replicas if b not in self.removing)


@dataclass(frozen=True)
class Observed:
    """The cluster as Metadata and ListPartitionReassignments show it."""
    brokers: frozenset[int]
    replicas: dict[Key, tuple[int, ...]]
    ongoing: dict[Key, Ongoing] = field(default_factory=dict)
    cluster_id: str | None = None


def _names(replicas) -> str:
    return "[" + ", ".join(map(str, replicas)) + "]"


def status(plan: Plan, seen: Observed, check_base: bool = True) -> dict[Key, str]:
    """Each planned partition's status, in the plan's order; PlanError, one line, when the
    plan cannot be applied to the cluster as it is."""
    if plan.cluster_id and seen.cluster_id and plan.cluster_id != seen.cluster_id:
        raise PlanError(f"the plan was made against cluster {plan.cluster_id}, not this one ({seen.cluster_id})")
    check_assignment(plan.targets, set(seen.replicas), set(seen.brokers))
    if plan.log_dirs:
        (topic, partition), dirs = min(plan.log_dirs.items())
        raise PlanError(f"the plan puts {topic}-{partition} in log directories {list(dirs)}: apply moves replicas "
                        "between brokers only (kafka-reassign-partitions moves them between directories)")
    if check_base and plan.made_against is None:
        raise PlanError("the plan has no record of the replicas it was made against (kcoord reassign plan writes "
                        "one); --no-base-check applies it to the cluster as it is")
    out = {}
    for key, target in plan.targets.items():
        name = f"{key[0]}-{key[1]}"
        ongoing = seen.ongoing.get(key)
        if ongoing is not None:
            if ongoing.target != target:
                raise PlanError(f"{name} is being reassigned to {_names(ongoing.target)}, not to the plan's "
                                f"{_names(target)}: the cluster changed since the plan was made")
            out[key] = UNDER_WAY
            continue
        now = seen.replicas[key]
        if now == target:
            out[key] = DONE
            continue
        if check_base:
            base = plan.made_against.get(key)
            if base is None:
                raise PlanError(f"the plan's record of the replicas it was made against lacks {name}; "
                                "--no-base-check applies it to the cluster as it is")
            if now != base:
                raise PlanError(f"{name} is on {_names(now)}, not on {_names(base)} as when the plan was made, "
                                f"nor on its target {_names(target)}: the cluster changed since; plan again")
        out[key] = TO_MOVE
    return out


def batches(statuses: dict[Key, str], size: int, interrupted: list[Key] = ()) -> list[list[Key]]:
    """The batches left, in order. First the partitions of an interrupted batch not yet done,
    with any other reassignment of the plan under way (all finished before anything new
    starts); then the partitions still to move, `size` at a time in the plan's order: the
    order the operator reviewed, the same on every run, whatever sizes the partitions grow to."""
    first = [k for k in interrupted if statuses.get(k, DONE) != DONE]
    first += [k for k, s in statuses.items() if s == UNDER_WAY and k not in first]
    rest = [k for k, s in statuses.items() if s == TO_MOVE and k not in first]
    out = [first] if first else []
    return out + [rest[i:i + size] for i in range(0, len(rest), size)]
