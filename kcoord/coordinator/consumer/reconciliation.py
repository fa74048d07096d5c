"""A member's way from what it owns to its target assignment (Kafka's CurrentAssignmentBuilder).

A partition never has two owners: a member first gives up (revokes) what the target takes
from it, staying at its epoch meanwhile (UNREVOKED_PARTITIONS); only once its heartbeat no
longer reports those partitions does it move to the target epoch and receive new ones,
and only the ones no other member still holds (else UNRELEASED_PARTITIONS, until they are
released). `reconcile` is pure: it returns the member's next step, or the member unchanged.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterable

from kcoord.coordinator.consumer.group import ConsumerMember, MemberState, Partitions

# What a heartbeat says the member owns: topic id -> partitions; None: not reported
# (a partial heartbeat), which counts as still owning everything.
Owned = dict[str, frozenset[int]] | None


class FencedInUnknownState(Exception):
    """A member read back in a state this version does not know, still owning partitions."""


def _owns_any(owned: Owned, partitions: Partitions) -> bool:
    if owned is None:
        return True
    return any(p in partitions.get(topic_id, {}) for topic_id, ps in owned.items() for p in ps)


def _step(member: ConsumerMember, epoch: int, state: MemberState | None, assigned: Partitions,
          pending: Partitions) -> ConsumerMember:
    # The epoch moves with every step, its predecessor kept: a heartbeat whose answer was lost
    # may come once more with the previous epoch.
    return replace(member, member_epoch=epoch, previous_member_epoch=member.member_epoch,
                   state=member.state if state is None else state, assigned=assigned,
                   pending_revocation=pending)


def reconcile(member: ConsumerMember, target_epoch: int, target: dict[str, frozenset[int]],
              subscribed_topic_ids: set[str], owned: Owned, subscription_changed: bool,
              owner_of: Callable[[str, int], str | None]) -> ConsumerMember:
    """The member's next state towards `target` (its partitions in the group's target assignment
    of `target_epoch`); `owner_of` names the member holding a partition, if any."""
    if not subscription_changed and member.is_reconciled_to(target_epoch):
        return member
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next(member, member.member_epoch, target_epoch, target, subscribed_topic_ids, owned, owner_of)
        if subscription_changed:
            return _drop_unsubscribed(member, subscribed_topic_ids, owned)
        return member
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return _drop_unsubscribed(member, subscribed_topic_ids, owned) if subscription_changed else member
        return _next(member, member.member_epoch, target_epoch, target, subscribed_topic_ids, owned, owner_of)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, subscribed_topic_ids, owned, owner_of)
    # UNKNOWN: start again from nothing, but only once the member owns nothing.
    if owned is None or any(owned.values()):
        raise FencedInUnknownState()
    return _next(member, target_epoch, target_epoch, target, subscribed_topic_ids, owned, owner_of)


def _next(member: ConsumerMember, epoch: int, target_epoch: int, target: dict[str, frozenset[int]],
          subscribed: set[str], owned: Owned, owner_of: Callable[[str, int], str | None]) -> ConsumerMember:
    assigned: Partitions = {}
    revoking: Partitions = {}
    to_assign: dict[str, set[int]] = {}
    unreleased = False
    for topic_id in sorted(set(target) | set(member.assigned)):
        wanted = target.get(topic_id, frozenset()) if topic_id in subscribed else frozenset()
        current = member.assigned.get(topic_id, {})
        kept = {p: e for p, e in current.items() if p in wanted}
        gone = {p: e for p, e in current.items() if p not in wanted}
        new = set(wanted) - set(kept)
        # Held by another member: wait until it is released. (Held by this member can only mean
        # pending revocation here, and such a partition may be given straight back.)
        blocked = {p for p in new if owner_of(topic_id, p) not in (None, member.member_id)}
        if blocked:
            unreleased = True
            new -= blocked
        if kept:
            assigned[topic_id] = kept
        if gone:
            revoking[topic_id] = gone
        if new:
            to_assign[topic_id] = new
    if revoking and _owns_any(owned, revoking):
        return _step(member, epoch, MemberState.UNREVOKED_PARTITIONS, assigned, revoking)
    for topic_id, partitions in to_assign.items():
        assigned.setdefault(topic_id, {}).update({p: target_epoch for p in partitions})
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return _step(member, target_epoch, state, assigned, {})


def _drop_unsubscribed(member: ConsumerMember, subscribed: set[str], owned: Owned) -> ConsumerMember:
    """After a subscription change at an unchanged target: what is no longer subscribed is revoked."""
    if not subscribed and not member.pending_revocation:
        assigned: Partitions = {}
        revoking: Partitions = dict(member.assigned)
    else:
        assigned = {t: ps for t, ps in member.assigned.items() if t in subscribed}
        revoking = {t: dict(ps) for t, ps in member.pending_revocation.items()}
        for topic_id, ps in member.assigned.items():
            if topic_id not in subscribed:
                revoking.setdefault(topic_id, {}).update(ps)
    if assigned == member.assigned:
        return member
    if revoking and _owns_any(owned, revoking):
        return _step(member, member.member_epoch, MemberState.UNREVOKED_PARTITIONS, assigned, revoking)
    return _step(member, member.member_epoch, None, assigned, member.pending_revocation)


def owned_from_request(topic_partitions: Iterable[tuple[str, Iterable[int]]] | None) -> Owned:
    if topic_partitions is None:
        return None
    owned: dict[str, frozenset[int]] = {}
    for topic_id, partitions in topic_partitions:
        owned[topic_id] = owned.get(topic_id, frozenset()) | frozenset(partitions)
    return owned
