"""DescribeQuorum: the controller quorum of kcoord.quorum, as `kafka-metadata-quorum describe` reads it."""
import time
import uuid

from kcoord import quorum
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.security.acls import cluster_allowed
from wire.errors import ErrorCode

# Kafka's Errors messages, which its answers carry (v2+).
_UNKNOWN_PARTITION = "This server does not host this topic-partition."
_CLUSTER_DENIED = "Cluster authorization failed."
# kraft.version 0: voters have no directory ids (KIP-853), and Kafka sends the zero UUID.
_NO_DIRECTORY = uuid.UUID(int=0)


def _asks_for_the_metadata_partition(req) -> bool:
    # Kafka's raft client answers only a request for exactly this one partition.
    return (len(req.topics) == 1 and req.topics[0].topic_name == quorum.TOPIC
            and len(req.topics[0].partitions) == 1
            and req.topics[0].partitions[0].partition_index == quorum.PARTITION)


def _replica(r: quorum.Replica, now_ms: int) -> dict:
    # Every replica shares kcoord's process: each has caught up at this very moment, as Kafka
    # reports its leader.
    return {"replica_id": r.node_id, "replica_directory_id": _NO_DIRECTORY, "log_end_offset": r.log_end_offset,
            "last_fetch_timestamp": now_ms, "last_caught_up_timestamp": now_ms}


async def describe_quorum(ctx, req):
    if not cluster_allowed(ctx, "Describe"):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": _CLUSTER_DENIED,
                "topics": [], "nodes": []}
    if not _asks_for_the_metadata_partition(req):
        return {"error_code": ErrorCode.NONE, "error_message": "", "nodes": [], "topics": [
            {"topic_name": t.topic_name, "partitions": [
                {"partition_index": p.partition_index, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                 "error_message": _UNKNOWN_PARTITION} for p in t.partitions]} for t in req.topics]}
    q = quorum.describe(ctx.broker)
    now_ms = int(time.time() * 1000)
    partition = {"partition_index": quorum.PARTITION, "error_code": ErrorCode.NONE, "error_message": "",
                 "leader_id": q.leader_id, "leader_epoch": q.leader_epoch, "high_watermark": q.high_watermark,
                 "current_voters": [_replica(r, now_ms) for r in q.voters],
                 "observers": [_replica(r, now_ms) for r in q.observers]}
    nodes = [{"node_id": r.node_id, "listeners": [{"name": e.listener, "host": e.host, "port": e.port}
                                                  for e in r.endpoints]} for r in q.voters]
    return {"error_code": ErrorCode.NONE, "error_message": "", "nodes": nodes,
            "topics": [{"topic_name": quorum.TOPIC, "partitions": [partition]}]}


DESCRIPTOR = ApiDescriptor(
    ApiKey.DESCRIBE_QUORUM, 0, 2, describe_quorum,
    "every broker a voter, the active controller the leader; a metadata log of one record "
    "(docs/operations.md#the-controller-quorum); needs Describe on the cluster with ACLs on",
    version_notes={1: "replicas' last fetch and caught-up times", 2: "the voters' endpoints; directory ids (none)"})
