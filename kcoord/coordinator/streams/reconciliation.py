"""A streams member's way from the tasks it owns to its target assignment (Kafka 4.3.1's streams
CurrentAssignmentBuilder).

A task never runs twice at once, and a process never holds a task both as active and as
standby: the member first gives up (revokes) what the target takes from it, staying at its
epoch meanwhile (UNREVOKED_TASKS); only once its heartbeat no longer reports those tasks does it
move to the target epoch and receive new ones, and only the ones no one else still holds
(else UNRELEASED_TASKS, until they are released). An active task is unreleased while any
process holds it as active, or this member's process holds it as standby or warm-up; a standby
or warm-up task while this member's process holds it in any role. `reconcile` is pure.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Mapping

from kcoord.coordinator.streams.group import MemberState, StreamsMember, TaskSets


class FencedInUnknownState(Exception):
    """A member in a state this coordinator does not know reported tasks: it must rejoin."""


def _difference(current: Mapping[str, object], target: Mapping[str, frozenset], unreleased) -> tuple:
    """(kept, pending revocation, pending assignment, any unreleased) for one kind of task."""
    kept, revoke, assign, held_elsewhere = {}, {}, {}, False
    for sid in {*current, *target}:
        have = set(current.get(sid, ()))
        want = set(target.get(sid, ()))
        if have & want:
            kept[sid] = have & want
        if have - want:
            revoke[sid] = have - want
        new = {p for p in want - have if not unreleased(sid, p)}
        held_elsewhere |= len(new) < len(want - have)
        if new:
            assign[sid] = new
    return kept, revoke, assign, held_elsewhere


def reconcile(member: StreamsMember, target_epoch: int, target: TaskSets, owned: TaskSets | None,
              active_owner: Callable[[str, int], str | None],
              standby_processes: Callable[[str, int], set[str]],
              warmup_processes: Callable[[str, int], set[str]]) -> StreamsMember:
    """The member's next step towards `target` (of `target_epoch`), or the member unchanged.
    `owned`: the tasks its heartbeat reported, None when it did not report them. The three
    lookups see the group as it was before this heartbeat's reconciliation."""
    if member.state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        epoch = member.member_epoch
    elif member.state is MemberState.UNREVOKED_TASKS:
        if owned is None or owned.contains_any(member.pending_revocation()):
            return member
        epoch = member.member_epoch + 1
    elif member.state is MemberState.UNRELEASED_TASKS:
        epoch = member.member_epoch
    else:
        if owned is None or not owned.is_empty():
            raise FencedInUnknownState()
        epoch = target_epoch
    process = member.process_id

    def active_unreleased(s: str, p: int) -> bool:
        return active_owner(s, p) is not None or process in standby_processes(s, p) or process in warmup_processes(s, p)

    def other_unreleased(s: str, p: int) -> bool:
        return active_owner(s, p) == process or process in standby_processes(s, p) or process in warmup_processes(s, p)

    a_kept, a_revoke, a_assign, a_held = _difference(member.active, target.active, active_unreleased)
    s_kept, s_revoke, s_assign, s_held = _difference(member.standby, target.standby, other_unreleased)
    w_kept, w_revoke, w_assign, w_held = _difference(member.warmup, target.warmup, other_unreleased)
    unreleased = a_held or s_held or w_held
    # Kept active tasks keep the epoch they were assigned in; new ones get the target's.
    active_kept = {s: {p: member.active[s][p] for p in ps} for s, ps in a_kept.items()}
    revoking = TaskSets.of(a_revoke, s_revoke, w_revoke)
    if not revoking.is_empty() and (owned is None or owned.contains_any(revoking)):
        return replace(member, state=MemberState.UNREVOKED_TASKS, **_epochs(member, epoch),
                       active=active_kept, standby=_frozen(s_kept), warmup=_frozen(w_kept),
                       pending_active={s: {p: member.active[s][p] for p in ps} for s, ps in a_revoke.items()},
                       pending_standby=_frozen(s_revoke), pending_warmup=_frozen(w_revoke))
    if a_assign or s_assign or w_assign:
        active = {s: dict(ps) for s, ps in active_kept.items()}
        for s, ps in a_assign.items():
            active.setdefault(s, {}).update({p: target_epoch for p in ps})
        return replace(member, state=MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE,
                       **_epochs(member, target_epoch), active=active,
                       standby=_frozen(_merge(s_kept, s_assign)), warmup=_frozen(_merge(w_kept, w_assign)),
                       pending_active={}, pending_standby={}, pending_warmup={})
    return replace(member, state=MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE,
                   **_epochs(member, target_epoch), active=active_kept, standby=_frozen(s_kept),
                   warmup=_frozen(w_kept), pending_active={}, pending_standby={}, pending_warmup={})


def _epochs(member: StreamsMember, epoch: int) -> dict:
    # Kafka's updateMemberEpoch: the previous epoch becomes the current one even when it stays.
    return {"member_epoch": epoch, "previous_member_epoch": member.member_epoch}


def _frozen(tasks: Mapping[str, set]) -> dict[str, frozenset]:
    return {s: frozenset(ps) for s, ps in tasks.items() if ps}


def _merge(a: Mapping[str, set], b: Mapping[str, set]) -> dict[str, set]:
    return {s: set(a.get(s, ())) | set(b.get(s, ())) for s in {*a, *b}}


def owned_from_request(active, standby, warmup) -> TaskSets | None:
    """The tasks a heartbeat reports ([{subtopology_id, partitions}] each); None unless all three
    are given (Kafka requires all or none)."""
    if active is None or standby is None or warmup is None:
        return None

    def tasks(items) -> dict[str, set]:
        out: dict[str, set] = {}
        for t in items:
            out.setdefault(t["subtopology_id"], set()).update(t["partitions"])
        return out
    return TaskSets.of(tasks(active), tasks(standby), tasks(warmup))

