"""Classic group states, what each does, and the one table of allowed transitions
(Kafka's ClassicGroupState). Every change of `Group.state`, a reload from disk
included, goes through `check_transition`."""
from __future__ import annotations

import enum


class GroupState(enum.Enum):
    """A classic group's state. Each member's `note` says what a group in that state does with
    each request and timer, and where it goes next; `ALLOWED_FROM` is the same table as data."""

    EMPTY = ("Empty", """
        No members; the group may still hold committed offsets.
        - JoinGroup: a new member is added (v4+: first handed an id with MEMBER_ID_REQUIRED), and the
          group goes to PreparingRebalance with the initial rebalance delay
          (group.initial.rebalance.delay.ms, re-armed while members keep arriving). A known member id
          gets UNKNOWN_MEMBER_ID.
        - SyncGroup, Heartbeat: UNKNOWN_MEMBER_ID. LeaveGroup: UNKNOWN_MEMBER_ID per member.
        - OffsetCommit with generation -1 (admin, simple consumer): accepted.
        - DeleteGroups: allowed; offsets go with the group and it becomes Dead.
        - Retention check: offsets older than offsets.retention.minutes since the group went Empty
          are removed; once none remain the group becomes Dead.
        Next: PreparingRebalance (a member joins), Dead (deleted, or last offset expired).""")

    PREPARING_REBALANCE = ("PreparingRebalance", """
        A rebalance is collecting the members' JoinGroups; the join timer runs for the largest
        rebalance timeout of the members (or the initial delay when the group was Empty).
        - JoinGroup: parked until the round completes. A new static member with a known instance
          id replaces the old incarnation (whose parked requests get FENCED_INSTANCE_ID) and joins
          the round in progress.
        - The round completes early once every known member has rejoined and no member id handed
          out with MEMBER_ID_REQUIRED is pending (never during the initial delay); otherwise when
          the timer fires, when dynamic members that did not rejoin are removed (static ones stay).
        - SyncGroup: REBALANCE_IN_PROGRESS. Heartbeat: REBALANCE_IN_PROGRESS (the session is
          still reset). OffsetCommit by a member of the current generation: accepted.
        - LeaveGroup: the member is removed; the round may then complete.
        Next: CompletingRebalance (members remain: generation + 1, a protocol is chosen, the leader
        gets the member list), Empty (nobody rejoined: generation + 1), Dead.""")

    COMPLETING_REBALANCE = ("CompletingRebalance", """
        Join answers went out; waiting for the leader's SyncGroup with the assignment. A timer of
        the rebalance timeout removes members that never send SyncGroup.
        - SyncGroup: a follower's is parked; the leader's stores every assignment, answers all
          parked SyncGroups and makes the group Stable.
        - JoinGroup: a retry with unchanged metadata gets its join answer again; changed metadata
          starts a new rebalance (parked SyncGroups get REBALANCE_IN_PROGRESS). A known static
          instance with a new member id replaces the old one and starts a rebalance.
        - Heartbeat: NONE. OffsetCommit: REBALANCE_IN_PROGRESS.
        - LeaveGroup or a session timeout: the member is removed and a rebalance starts.
        Next: Stable (the leader's SyncGroup), PreparingRebalance (any member change), Dead.""")

    STABLE = ("Stable", """
        Every member has its assignment; heartbeats keep the sessions alive.
        - Heartbeat, OffsetCommit, SyncGroup (answered with the stored assignment): NONE for
          members of the current generation.
        - JoinGroup by a follower with unchanged metadata: answered at once, no rebalance. By the
          leader, or with changed metadata: a rebalance.
        - A static member rejoining with its instance id and a new (unknown) member id: the old
          member id is replaced by the new one and the assignment kept. If the selected protocol
          is unchanged there is NO rebalance: the new incarnation gets the current generation; a
          leader on JoinGroup v9+ gets skip_assignment and the member list, an older leader is
          told the old leader id so it acts as a follower. A protocol change starts a rebalance.
          The old member id is fenced from then on (FENCED_INSTANCE_ID).
        - LeaveGroup, a session timeout, a new member: a rebalance.
        Next: PreparingRebalance (any member change), Dead.""")

    DEAD = ("Dead", """
        The group is gone (deleted, or Empty with every offset expired) and leaves the coordinator's
        table; a later request with the same id starts a new group. A request that still finds it
        in flight gets COORDINATOR_NOT_AVAILABLE (OffsetDelete and DeleteGroups:
        GROUP_ID_NOT_FOUND).
        Next: none.""")

    def __new__(cls, value: str, note: str):
        obj = object.__new__(cls)
        obj._value_ = value
        obj.note = "\n".join(line.strip() and line[8:] for line in note.strip("\n").splitlines())
        return obj

    def __str__(self) -> str:
        return self.value


# target state -> states it may be entered from
ALLOWED_FROM: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.EMPTY, GroupState.COMPLETING_REBALANCE,
                                               GroupState.STABLE}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalStateTransition(RuntimeError):
    """A coordinator bug: a transition the table does not allow."""


def check_transition(group_id: str, current: GroupState, target: GroupState) -> None:
    if current not in ALLOWED_FROM[target]:
        raise IllegalStateTransition(f"group {group_id} cannot go from {current} to {target}")


# The states a group read back from disk starts in (no transition leads there: the group did not
# exist in memory): Empty, or Stable with its static members and their assignments.
LOADED_INTO: frozenset[GroupState] = frozenset({GroupState.EMPTY, GroupState.STABLE})


def check_load(group_id: str, target: GroupState) -> None:
    if target not in LOADED_INTO:
        raise IllegalStateTransition(f"group {group_id} cannot be loaded into {target}")
