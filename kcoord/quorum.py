"""Who is in the controller quorum: what DescribeQuorum answers (`kafka-metadata-quorum
describe --status/--replication`).

A Kafka cluster's controllers replicate the metadata log, `__cluster_metadata`, with KRaft:
the voters elect a leader, and brokers follow the log as observers. kcoord keeps no such log
and holds no elections, but the quorum it would have is well defined: every broker is also a
controller and votes, the active controller leads. `describe` is the one place that says so.

The metadata log it describes holds one record, the feature levels kcoord runs at
(kcoord.features, at offset FINALIZED_FEATURES_EPOCH): its end and high watermark are 1 and
never move, since kcoord writes its metadata changes to its data dir rather than to a
replicated log (docs/deviations.md, "DescribeQuorum"). Every replica lives in the same
process and so has always caught up.
"""
from __future__ import annotations

from dataclasses import dataclass

from kcoord import broker_config, features

TOPIC = "__cluster_metadata"
PARTITION = 0
# The leader's epoch: one election, the node's own when it started.
LEADER_EPOCH = 1
LOG_END_OFFSET = features.FINALIZED_FEATURES_EPOCH + 1


@dataclass(frozen=True)
class Endpoint:
    listener: str     # the listener's name, e.g. PLAINTEXT
    host: str
    port: int


@dataclass(frozen=True)
class Replica:
    node_id: int
    log_end_offset: int
    # Where the node is reached as a controller (DescribeQuorum v2's Nodes): a voter's only.
    endpoints: tuple[Endpoint, ...] = ()


@dataclass(frozen=True)
class Quorum:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[Replica, ...]
    observers: tuple[Replica, ...]


def describe(broker) -> Quorum:
    """The quorum `broker` belongs to. kcoord's brokers are combined broker and controller nodes,
    as a small Kafka cluster's often are: every broker votes, the active controller (the lowest
    broker the quorum counts in, kcoord.cluster) leads, and none only observes. A node has no
    listener of its own for controllers, so its endpoint is the one clients use."""
    listener = broker_config.BY_NAME["listeners"].value(broker.config).partition("://")[0]
    cluster = broker.cluster
    if cluster is None:
        node = broker.node()
        me = Replica(broker.node_id, LOG_END_OFFSET, (Endpoint(listener, node["host"], node["port"]),))
        return Quorum(leader_id=me.node_id, leader_epoch=LEADER_EPOCH, high_watermark=LOG_END_OFFSET,
                      voters=(me,), observers=())
    voters = tuple(Replica(n.node_id, LOG_END_OFFSET, (Endpoint(listener, *n.advertised),))
                   for n in sorted(cluster.nodes.values(), key=lambda n: n.node_id))
    return Quorum(leader_id=cluster.controller_id, leader_epoch=cluster.controller_epoch,
                  high_watermark=LOG_END_OFFSET, voters=voters, observers=())
