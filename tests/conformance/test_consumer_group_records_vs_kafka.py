"""kcoord's consumer group records in __consumer_offsets (KIP-848: record types 3, 5, 6, 7, 8, 16)
and streams group records (KIP-1071: 17, 19-23) read back by Kafka 4.3.1's own generated record
classes: every record parses exactly, and says what the coordinator holds; streams records are
also written back by Kafka's classes to the very bytes kcoord wrote."""
import subprocess
from pathlib import Path

from kcoord.conformance.javaclient import program_command
from kcoord.coordinator.consumer.snapshot import snapshot
from kcoord.log.consumer_offsets import consumer_group_records
from kcoord.testing import reference_kafka
from tests.unit.coordinator.consumer_harness import ConsumerHarness, Topics

SOURCE = Path(__file__).with_name("java") / "KcoordConsumerGroupRecords.java"


def _read_with_kafka(records, *args: str) -> list[str]:
    text = "".join(f"{k.hex()} {'-' if v is None else v.hex()}\n" for k, v in records)
    proc = subprocess.run(program_command(SOURCE, "consumer-group-records", reference_kafka.classpath(), *args),
                          input=text, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.splitlines()


def test_kafka_reads_kcoords_consumer_group_records():
    h = ConsumerHarness(Topics(t=4, u=2))
    h.hb("m1", 0, topics=("t", "u"), instance="i-1", rack="r1", assignor="range")
    h.hb("m2", 0, topics=("t",), regex="u.*")
    h.advance(0)  # the regex resolved in the background
    h.hb("m1", 2, owned={"t": [0, 1, 2, 3], "u": [0, 1]}, partial=True, instance="i-1")  # revoking
    first = snapshot(h.group())
    h.hb("m2", -1, owned=None, partial=True)
    second = snapshot(h.group())
    records = consumer_group_records(first, "g", None) + consumer_group_records(second, "g", first) \
        + consumer_group_records(None, "g", second)
    lines = _read_with_kafka(records)
    assert len(lines) == len(records) and not [line for line in lines if line.startswith("ERROR")], lines
    m1 = h.group().members["m1"]
    assert any(line.startswith("ConsumerGroupMemberMetadataKey(groupId='g', memberId='m1')")
               and "instanceId='i-1', rackId='r1'" in line and "serverAssignor='range'" in line for line in lines)
    assert any(line.startswith("ConsumerGroupMemberMetadataKey(groupId='g', memberId='m2')")
               and "subscribedTopicRegex='u.*'" in line for line in lines)
    assert any(line.startswith("ConsumerGroupCurrentMemberAssignmentKey(groupId='g', memberId='m1')")
               and f"memberEpoch={first['members'][0]['member_epoch']}" in line and "state=1" in line
               for line in lines), (m1, lines)
    # m2's regex, resolved: its topics; with m2 gone nobody subscribes to it, and it is tombstoned.
    assert any(line.startswith("ConsumerGroupRegularExpressionKey(groupId='g', regularExpression='u.*') ")
               and "(topics=[u], version=0, timestamp=" in line for line in lines), lines
    assert "ConsumerGroupRegularExpressionKey(groupId='g', regularExpression='u.*') -" in lines
    # m2 left: its three records are tombstoned; the deleted group's metadata records too.
    assert "ConsumerGroupCurrentMemberAssignmentKey(groupId='g', memberId='m2') -" in lines
    assert lines[-2:] == ["ConsumerGroupTargetAssignmentMetadataKey(groupId='g') -", "ConsumerGroupMetadataKey(groupId='g') -"]


def test_kafka_reads_a_classic_members_metadata():
    """A classic member of a consumer group (online migration): ClassicMemberMetadata (tag 0 of
    type 5) with its session timeout and protocols, as Kafka's classes read it."""
    from tests.unit.coordinator.test_migration import join, subscription
    h = ConsumerHarness(Topics(t=4))
    h.hb("m1", 0)
    member_id = join(h, protocols=[("range", subscription()), ("roundrobin", subscription())]).result.member_id
    lines = _read_with_kafka(consumer_group_records(snapshot(h.group()), "g", None))
    assert not [line for line in lines if line.startswith("ERROR")], lines
    meta = next(line for line in lines
                if line.startswith(f"ConsumerGroupMemberMetadataKey(groupId='g', memberId='{member_id}')"))
    assert "classicMemberMetadata=ClassicMemberMetadata(sessionTimeoutMs=10000, supportedProtocols=[" \
           "ClassicProtocol(name='range', " in meta and "ClassicProtocol(name='roundrobin', " in meta, meta
    plain = next(line for line in lines
                 if line.startswith("ConsumerGroupMemberMetadataKey(groupId='g', memberId='m1')"))
    assert "classicMemberMetadata=null" in plain, plain


def test_kafka_reads_and_writes_back_kcoords_streams_group_records():
    """Every streams record type, with tags present and absent (validated topology epoch,
    assignment timestamp, active tasks' epochs), a user endpoint at the top of its uint16 port,
    and the tombstones of a member gone and of the group deleted."""
    import copy

    from kcoord.log.consumer_offsets import streams_group_records
    from tests.unit.storage.test_streams_group_records import snapshot

    first = snapshot()
    second = copy.deepcopy(first)
    del second["members"]["m2"], second["target"]["members"]["m2"]
    second["metadata"].update(epoch=6, validated_topology_epoch=-1, last_assignment_configs={})
    second["target"]["assignment_timestamp_ms"] = 0
    second["members"]["m1"]["assignment"]["active"]["2"] = {}   # a subtopology without partitions
    records = (streams_group_records(first, "app", None) + streams_group_records(second, "app", first)
               + streams_group_records(None, "app", second))
    lines = _read_with_kafka(records, "exact")
    assert len(lines) == len(records) and not [line for line in lines if line.startswith("ERROR")], lines
    assert any(line.startswith("StreamsGroupMemberMetadataKey(groupId='app', memberId='m1')")
               and "userEndpoint=Endpoint(host='app-1.local', port=65535)" in line
               and "clientTags=[KeyValue(key='az', value='a'), KeyValue(key='zone', value='b')" in line
               for line in lines), lines
    assert any(line.startswith("StreamsGroupCurrentMemberAssignmentKey(groupId='app', memberId='m1')")
               and "TaskIds(subtopologyId='0', partitions=[0, 2], assignmentEpochs=[5, 4])" in line
               for line in lines), lines
    assert any(line.startswith("StreamsGroupMetadataKey(groupId='app')") and "validatedTopologyEpoch=1" in line
               and "lastAssignmentConfigs=[LastAssignmentConfig(key='num.standby.replicas', value='1')]" in line
               for line in lines), lines
    assert "StreamsGroupCurrentMemberAssignmentKey(groupId='app', memberId='m2') -" in lines
    assert lines[-2:] == ["StreamsGroupMetadataKey(groupId='app') -", "StreamsGroupTopologyKey(groupId='app') -"]
