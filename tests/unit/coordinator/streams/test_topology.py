"""A streams group's topology configured against the topics, as Kafka 4.3.1 configures it.

Every status detail and every order below was read off Kafka 4.3.1's own InternalTopicManager
run on the same topology and topics (its group-coordinator jar), so the strings and the order
of topics in them are Kafka's, not a paraphrase.
"""
from __future__ import annotations

import pytest

from kcoord.coordinator.streams.topology import (
    REGEX_UNSUPPORTED, ConfiguredSubtopology, CopartitionGroup, HeartbeatStatus, StreamsTopology, Subtopology,
    TopicInfo, TopologyRejected, configure, endpoint_to_partitions,
)
from wire.errors import ErrorCode


def topic(name, partitions=0, replication_factor=0, **configs):
    return TopicInfo(name, partitions, replication_factor, tuple(configs.items()))


def sub(sid, sources=(), changelogs=(), sinks=(), repartition=(), groups=()):
    return Subtopology(sid, tuple(sources), (), tuple(changelogs), tuple(sinks), tuple(repartition), tuple(groups))


def topology(*subtopologies, epoch=0):
    return StreamsTopology(epoch, {s.subtopology_id: s for s in subtopologies})


def group(sources=(), repartition=()):
    return CopartitionGroup(tuple(sources), (), tuple(repartition))


def failed(configured, status):
    assert configured.error is not None and configured.error.status == status, configured.error
    assert not configured.is_ready() and configured.subtopologies is None
    assert configured.internal_topics_to_create == {}
    return configured.error.message


# -- the number of tasks and the repartition topics ------------------------------------------

def test_a_subtopology_has_as_many_tasks_as_its_largest_source_topic_has_partitions():
    configured = configure(topology(sub("0", ["small", "large"])), {"small": 3, "large": 5, "other": 9})
    assert configured.is_ready() and configured.error is None
    assert configured.subtopologies == {"0": ConfiguredSubtopology(5, ("small", "large"), {}, {})}
    describer = configured.describer()
    assert describer.subtopologies() == ["0"]
    assert describer.max_num_input_partitions("0") == 5 and not describer.is_stateful("0")
    with pytest.raises(KeyError, match="Topology does not contain subtopology 9"):
        describer.max_num_input_partitions("9")


CHAIN = topology(
    sub("0", ["in"], sinks=["app-KSTREAM-MAP-0000000001-repartition"]),
    sub("1", repartition=[topic("app-KSTREAM-MAP-0000000001-repartition")],
        sinks=["app-KSTREAM-FILTER-0000000004-repartition"]),
    sub("2", repartition=[topic("app-KSTREAM-FILTER-0000000004-repartition", replication_factor=3)],
        changelogs=[topic("app-counts-changelog", **{"cleanup.policy": "compact"}), topic("app-totals-changelog")]),
    epoch=1)


def test_repartition_topics_down_a_chain_get_the_upstream_source_topics_partitions_and_are_asked_for():
    configured = configure(CHAIN, {"in": 4})
    # Only internal topics missing: configured, but not ready until they exist.
    assert configured.error.status == HeartbeatStatus.MISSING_INTERNAL_TOPICS == 3
    # Kafka's HashMap order: app-totals before app-counts.
    assert configured.error.message == (
        "Internal topics are missing: app-totals-changelog, app-counts-changelog, "
        "app-KSTREAM-MAP-0000000001-repartition and 1 additional topics")
    assert not configured.is_ready() and configured.epoch == 1
    assert [s.number_of_tasks for s in configured.subtopologies.values()] == [4, 4, 4]
    assert configured.subtopologies["2"].state_changelog_topics == {"app-totals-changelog": 4,
                                                                     "app-counts-changelog": 4}
    assert configured.internal_topics_to_create == {
        "app-totals-changelog": TopicInfo("app-totals-changelog", 4, -1, ()),
        "app-counts-changelog": TopicInfo("app-counts-changelog", 4, -1, (("cleanup.policy", "compact"),)),
        "app-KSTREAM-MAP-0000000001-repartition": TopicInfo("app-KSTREAM-MAP-0000000001-repartition", 4, -1, ()),
        "app-KSTREAM-FILTER-0000000004-repartition": TopicInfo("app-KSTREAM-FILTER-0000000004-repartition", 4, 3, ()),
    }


def test_once_the_internal_topics_exist_the_topology_is_ready():
    topics = {"in": 4, "app-totals-changelog": 4, "app-counts-changelog": 4,
              "app-KSTREAM-MAP-0000000001-repartition": 4, "app-KSTREAM-FILTER-0000000004-repartition": 4}
    configured = configure(CHAIN, topics)
    assert configured.is_ready() and configured.internal_topics_to_create == {}
    assert configured.subtopology_ids() == ["0", "1", "2"]
    assert configured.is_stateful("2") and not configured.is_stateful("0")


def test_a_repartition_topic_gets_the_most_partitions_its_writer_reads_unless_the_topology_fixes_it():
    t = topology(sub("0", ["a", "b"], sinks=["r", "fixed"]),
                 sub("1", repartition=[topic("r")]), sub("2", repartition=[topic("fixed", 2)]))
    configured = configure(t, {"a": 2, "b": 6})
    assert configured.internal_topics_to_create["r"].partitions == 6
    assert configured.internal_topics_to_create["fixed"].partitions == 2
    assert configured.subtopologies["2"].number_of_tasks == 2


def test_an_existing_internal_topic_with_other_partitions_is_incorrectly_partitioned():
    t = topology(sub("0", ["in"], changelogs=[topic("app-store-changelog")]))
    message = failed(configure(t, {"in": 4, "app-store-changelog": 2}), HeartbeatStatus.INCORRECTLY_PARTITIONED_TOPICS)
    assert message == "Existing topic app-store-changelog has different number of partitions: expected 4, found 2"


def test_a_changelog_has_one_partition_per_task_and_more_than_three_missing_are_summarized():
    names = [f"app-{w}-changelog" for w in ("alpha", "beta", "gamma", "delta", "epsilon")]
    configured = configure(topology(sub("0", ["in"], changelogs=[topic(n) for n in names])), {"in": 2})
    assert configured.error.message == ("Internal topics are missing: app-gamma-changelog, app-delta-changelog, "
                                        "app-beta-changelog and 2 additional topics")
    assert {n: t.partitions for n, t in configured.internal_topics_to_create.items()} == dict.fromkeys(names, 2)


# -- co-partitioning ---------------------------------------------------------------------------

def test_copartitioned_source_topics_with_different_partition_counts_are_refused():
    t = topology(sub("0", ["right", "left"], groups=[group([0, 1])]))
    message = failed(configure(t, {"left": 2, "right": 3}), HeartbeatStatus.INCORRECTLY_PARTITIONED_TOPICS)
    assert message == "Following topics do not have the same number of partitions: [{left=2, right=3}]"


def test_copartitioned_repartition_topics_all_get_the_largest_count():
    t = topology(sub("0", ["a"], sinks=["r1"]), sub("1", ["b"], sinks=["r2"]),
                 sub("2", repartition=[topic("r1"), topic("r2")], groups=[group([], [0, 1])]))
    configured = configure(t, {"a": 2, "b": 5})
    assert configured.error.message == "Internal topics are missing: r2, r1"
    assert configured.subtopologies["2"].repartition_source_topics == {"r2": 5, "r1": 5}
    assert configured.subtopologies["2"].number_of_tasks == 5


def test_a_repartition_topic_copartitioned_with_a_source_topic_takes_its_count():
    t = topology(sub("0", ["a"], sinks=["r"]), sub("1", ["b"], repartition=[topic("r")], groups=[group([0], [0])]))
    configured = configure(t, {"a": 5, "b": 3})
    assert configured.internal_topics_to_create["r"].partitions == 3
    assert configured.subtopologies["1"].number_of_tasks == 3


def test_a_fixed_repartition_topic_copartitioned_with_a_source_topic_of_other_count_is_refused():
    t = topology(sub("0", ["a"], sinks=["r"]), sub("1", ["b"], repartition=[topic("r", 4)], groups=[group([0], [0])]))
    message = failed(configure(t, {"a": 5, "b": 3}), HeartbeatStatus.INCORRECTLY_PARTITIONED_TOPICS)
    assert message == ("Number of partitions [4] of repartition topic [r] doesn't match number of partitions [3] "
                       "of the source topic.")


def test_copartitioned_fixed_repartition_topics_of_different_counts_are_refused():
    t = topology(sub("0", ["a"], sinks=["r1", "r2"]),
                 sub("1", repartition=[topic("r1", 2), topic("r2", 3)], groups=[group([], [0, 1])]))
    message = failed(configure(t, {"a": 1}), HeartbeatStatus.INCORRECTLY_PARTITIONED_TOPICS)
    assert message == "Following topics do not have the same number of partitions: [{r1=2, r2=3}]"


# -- missing source topics and invalid topologies ----------------------------------------------

def test_missing_source_topics_are_listed_sorted_three_at_most():
    t = topology(sub("0", ["orders", "clicks", "users"]), sub("1", ["payments", "a", "present"]))
    message = failed(configure(t, {"present": 1}), HeartbeatStatus.MISSING_SOURCE_TOPICS)
    assert message == "Source topics a, clicks, orders and 2 additional topics are missing."
    assert failed(configure(topology(sub("0", ["gone"])), {}), 1) == "Source topics gone are missing."


@pytest.mark.parametrize("subtopologies, error, message", [
    ([sub("0", ["in"]), sub("1", repartition=[topic("x")], sinks=["y"]), sub("2", repartition=[topic("y")], sinks=["x"])],
     ErrorCode.STREAMS_INVALID_TOPOLOGY, "Failed to compute number of partitions for all repartition topics. "
     "There may be loops in the topology that cannot be resolved."),
    ([sub("0", ["in"], repartition=[topic("orphan")])],
     ErrorCode.STREAMS_INVALID_TOPOLOGY, "Failed to compute number of partitions for all repartition topics, "
     "because a repartition source topic is never used as a sink topic."),
    ([sub("0", ["in"]), sub("1")], ErrorCode.STREAMS_INVALID_TOPOLOGY, "No source topics found for subtopology 1"),
    ([sub("0", ["in"], changelogs=[topic("bad name")])], ErrorCode.INVALID_TOPIC_EXCEPTION,
     "Topic name is invalid: 'bad name' contains one or more characters other than ASCII alphanumerics, '.', '_' "
     "and '-'"),
    ([sub("0", ["in"], groups=[group([3])])], ErrorCode.UNKNOWN_SERVER_ERROR, None),
], ids=["loop", "never-written", "no-source", "illegal-name", "bad-index"])
def test_what_kafka_refuses_with_an_error_fails_the_heartbeat(subtopologies, error, message):
    with pytest.raises(TopologyRejected) as refused:
        configure(topology(*subtopologies), {"in": 1})
    assert (refused.value.error, refused.value.message) == (error, message)


def test_what_the_request_checks_before_configuration():
    t = topology(sub("0", ["in"], changelogs=[topic("app-store-changelog", 3)]))
    assert t.changelog_partitions_problem() == ("Changelog topic app-store-changelog must have an undefined "
                                                "partition count, but it is set to 3.")
    assert CHAIN.changelog_partitions_problem() is None
    regex = StreamsTopology(0, {"0": Subtopology("0", (), ("in.*",))})
    assert regex.uses_source_topic_regex() and not CHAIN.uses_source_topic_regex()
    assert REGEX_UNSUPPORTED == "Regular expressions for source topics are not supported yet."
    with pytest.raises(TopologyRejected) as refused:
        StreamsTopology.from_request({"epoch": -1, "subtopologies": []})
    assert refused.value.error == ErrorCode.UNKNOWN_SERVER_ERROR


# -- the request and the record ----------------------------------------------------------------

REQUEST = {"epoch": 2, "subtopologies": [
    {"subtopology_id": "1", "source_topics": ["b"], "source_topic_regex": [], "repartition_sink_topics": [],
     "state_changelog_topics": [{"name": "app-s-changelog", "partitions": 0, "replication_factor": 0,
                                 "topic_configs": [{"key": "cleanup.policy", "value": "compact"}]}],
     "repartition_source_topics": [{"name": "app-r-repartition", "partitions": 0, "replication_factor": 3,
                                    "topic_configs": []}],
     "copartition_groups": [{"source_topics": [0], "source_topic_regex": [], "repartition_source_topics": [0]}]},
    {"subtopology_id": "0", "source_topics": ["a"], "source_topic_regex": [], "state_changelog_topics": [],
     "repartition_sink_topics": ["app-r-repartition"], "repartition_source_topics": [], "copartition_groups": []},
]}


def test_the_request_becomes_the_record_and_back():
    t = StreamsTopology.from_request(REQUEST)
    assert list(t.subtopologies) == ["1", "0"]  # as the member sent them
    assert t.subtopologies["1"].state_changelog_topics == (topic("app-s-changelog", **{"cleanup.policy": "compact"}),)
    assert t.subtopologies["1"].copartition_groups == (group([0], [0]),)
    record = t.as_record()
    assert record == {"epoch": 2, "subtopologies": [
        {"subtopology_id": "1", "source_topics": ["b"], "source_topic_regex": [],
         "state_changelog_topics": [{"name": "app-s-changelog", "partitions": 0, "replication_factor": 0,
                                     "topic_configs": {"cleanup.policy": "compact"}}],
         "repartition_sink_topics": [],
         "repartition_source_topics": [{"name": "app-r-repartition", "partitions": 0, "replication_factor": 3,
                                        "topic_configs": {}}],
         "copartition_groups": [{"source_topics": [0], "source_topic_regex": [], "repartition_source_topics": [0]}]},
        {"subtopology_id": "0", "source_topics": ["a"], "source_topic_regex": [], "state_changelog_topics": [],
         "repartition_sink_topics": ["app-r-repartition"], "repartition_source_topics": [],
         "copartition_groups": []}]}
    assert StreamsTopology.from_record(record) == t
    assert t.required_topics() == {"a", "b", "app-s-changelog", "app-r-repartition"}


def test_a_record_topology_configures_as_the_request_did():
    t = StreamsTopology.from_record(StreamsTopology.from_request(REQUEST).as_record())
    configured = configure(t, {"a": 4, "b": 4})
    assert configured.internal_topics_to_create["app-r-repartition"] == TopicInfo("app-r-repartition", 4, 3, ())
    assert list(configured.subtopologies) == ["0", "1"]  # sorted by id, as Kafka's TreeMap


# -- which partitions a member's tasks cover (interactive queries) ------------------------------

def test_endpoint_to_partitions_lists_each_tasks_source_topics_in_kafkas_order():
    t = topology(sub("0", ["orders"], sinks=["rekeyed-repartition"]),
                 sub("1", ["pageviews", "in", "users"], repartition=[topic("rekeyed-repartition")]))
    topics = {"orders": 3, "pageviews": 3, "in": 3, "users": 2, "rekeyed-repartition": 3}
    configured = configure(t, topics)
    assert configured.is_ready()
    covered = endpoint_to_partitions({"1": [2, 0, 1], "0": [1]}, {"1": [2]}, configured, topics)
    assert covered == {
        "active": [("orders", [1]),
                   # users has 2 partitions for 3 tasks: the lowest task ids, as Kafka.
                   ("pageviews", [0, 1, 2]), ("in", [0, 1, 2]), ("rekeyed-repartition", [0, 1, 2]),
                   ("users", [0, 1])],
        # As Kafka: one task id is listed as such, even past the end of a smaller topic.
        "standby": [("pageviews", [2]), ("in", [2]), ("rekeyed-repartition", [2]), ("users", [2])],
    }
