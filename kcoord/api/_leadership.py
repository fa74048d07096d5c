"""Which broker may serve a partition's reads and writes, as Kafka's ReplicaManager decides.

Shared by the handlers of Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords
and DescribeProducers: a request that reaches a broker not leading the partition gets
NOT_LEADER_OR_FOLLOWER (a client with old metadata then refreshes it), and a client that
names a leader epoch other than the partition's gets FENCED_LEADER_EPOCH (older) or
UNKNOWN_LEADER_EPOCH (newer) first, as Kafka checks the epoch before leadership.
"""
from __future__ import annotations

from wire.errors import ErrorCode


def serving_error(broker, partition, current_epoch: int = -1, followers_too: bool = False) -> ErrorCode | None:
    """The error this broker answers for `partition`, or None if it serves it. `current_epoch`:
    the leader epoch the client believes in (-1: not given). `followers_too`: a consumer's Fetch
    v11+, which Kafka lets any in-sync replica answer (KIP-392)."""
    node = broker.node_id
    if node not in partition.replicas:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if current_epoch != -1:
        fenced = partition.epoch_error(current_epoch)
        if fenced is not None:
            return ErrorCode[fenced]
    if partition.leader == node or (followers_too and node in partition.isr and partition.leader >= 0):
        return None
    return ErrorCode.NOT_LEADER_OR_FOLLOWER


def current_leader(partition) -> dict:
    """The leader and epoch a NOT_LEADER_OR_FOLLOWER answer names (KIP-951), so the client can go
    there without a Metadata round trip."""
    return {"leader_id": partition.leader, "leader_epoch": partition.leader_epoch}


def node_endpoints(broker, leaders) -> list[dict]:
    """The addresses of the brokers named as current leaders (KIP-951's NodeEndpoints)."""
    out = []
    for node_id in sorted({n for n in leaders if n >= 0}):
        node = broker.describe(node_id)
        if node is not None:
            out.append(node)
    return out
