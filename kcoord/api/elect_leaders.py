"""ElectLeaders: preferred or unclean leader elections, as Kafka's controller runs them
(`kafka-leader-election`): per partition NONE, ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE
or ELIGIBLE_LEADERS_NOT_AVAILABLE; with no partitions named, every partition, answering only
those whose leader was not already the one wanted."""
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.security.acls import cluster_allowed
from wire.errors import ErrorCode

PREFERRED, UNCLEAN = 0, 1
# Kafka's Errors messages, which its answers carry.
_MESSAGES = {
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
}


def _result(cluster, topic: str, partition: int, preferred: bool) -> tuple[ErrorCode, str | None]:
    if cluster.topics.partition(topic, partition) is None:
        what = f"No such topic as {topic}" if cluster.topics.get(topic) is None \
            else f"No such partition as {topic}-{partition}"
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, what
    name = cluster.elect(topic, partition, preferred, reason=("preferred" if preferred else "unclean")
                         + " leader election (ElectLeaders)")
    if name is None:
        return ErrorCode.NONE, None
    return ErrorCode[name], _MESSAGES.get(ErrorCode[name])


def _failed(version, body, code):
    """Every partition named fails with `code` (no partitions: an empty list), as Kafka answers."""
    message = "Cluster authorization failed." if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED else None
    results = [{"topic": t.topic, "partition_result": [{"partition_id": p, "error_code": code,
                                                        "error_message": message} for p in t.partitions]}
               for t in body.topic_partitions or ()]
    answer = {"throttle_time_ms": 0, "replica_election_results": results}
    if version >= 1:  # v0 has no top-level error: the partitions say it
        answer["error_code"] = code
    return answer


async def elect_leaders(ctx, req):
    election = req.get("election_type", PREFERRED)
    if not cluster_allowed(ctx, "Alter"):
        return _failed(ctx.api_version, req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if election not in (PREFERRED, UNCLEAN):
        return _failed(ctx.api_version, req, ErrorCode.INVALID_REQUEST)
    cluster = ctx.broker.cluster
    preferred = election == PREFERRED
    results = []
    if req.topic_partitions is None:
        for topic in list(cluster.topics.topics.values()):
            partitions = []
            for p in topic.partitions:
                code, message = _result(cluster, topic.name, p.index, preferred)
                if code != ErrorCode.ELECTION_NOT_NEEDED:
                    partitions.append({"partition_id": p.index, "error_code": code, "error_message": message})
            results.append({"topic": topic.name, "partition_result": partitions})
    else:
        for t in req.topic_partitions:
            partitions = []
            for index in t.partitions:
                code, message = _result(cluster, t.topic, index, preferred)
                partitions.append({"partition_id": index, "error_code": code, "error_message": message})
            results.append({"topic": t.topic, "partition_result": partitions})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "replica_election_results": results}


DESCRIPTOR = ApiDescriptor(
    ApiKey.ELECT_LEADERS, 0, 2, elect_leaders,
    "preferred and unclean leader elections over the brokers (docs/cluster.md); needs Alter on the cluster "
    "with ACLs on",
    version_notes={1: "the election type (KIP-460): unclean elects any running replica of a leaderless partition",
                   2: "flexible versions"},
    error_response=_failed)
