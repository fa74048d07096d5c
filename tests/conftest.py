"""How the suite is spread over pytest-xdist workers (`make test` runs
`-n 5 --dist loadgroup --no-loadscope-reorder`), and what a parallel run needs.

Two things decide the wall time of a parallel run on a 2-core machine:

* Expensive shared things start once, not once per worker: tests that need the same
  JVM (the session's reference Kafka, a differential module's broker pair for one
  initial delay, the analytics modules' Spark session) form one group, which one worker
  runs on one JVM (`xdist_group` marks count too).
* The longest units start first (longest-processing-time-first): xdist hands out work
  in collection order, and a four-minute test picked up last runs alone at the end.
  ESTIMATES holds what each long unit took in a `-n 4` run on the 2-core test VM; the
  rest keep their collection order behind them.

Serially (`make test PYTEST_ARGS=-n0`) the groups mean nothing and only the order changes.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

from kcoord.testing.plugin import _broker_choice

# Hypothesis fails an example that takes over 200 ms of wall time (a "deadline"), a
# property of how loaded the machine is, not of the code: with four workers on two
# cores a 0.2 ms decode was measured at 277 ms. The examples and their checks stay.
settings.register_profile("kcoord", deadline=None)
settings.load_profile("kcoord")

# Seconds a unit (a test, by nodeid prefix, or a group) took in a `-n 4` run on the 2-core
# VM (2026-11-23; the groups' figures from a full run of 2026-11-26 where they had grown).
ESTIMATES = {
    "reference-kafka": 850,      # broker_any[kafka] tests: client matrix, Java admin, tools, system-test scenarios,
                                  # idempotent producers through the dropping proxy (~20 s), dynamic broker configs (~5 s),
                                  # __consumer_offsets (test_consumer_offsets_topic.py, ~45 s); the transaction modules:
                                  # Java (~75 s serially), Streams exactly-once (~21 s), the Python clients (~22 s),
                                  # kafka-transactions (~8 s), __transaction_state (~12 s), the differential scenarios
                                  # (~7 s), 2026-11-26; kafka-streams-groups on a streams group (~36 s serially)
    "differential-delay0": 195,   # raw (all at once, streams-* included: ~11 s) + 4 client scenarios x 5 clients
                                  # on one Kafka/kcoord pair
    "differential-delay3000": 255,
    "spark": 500,                 # Spark start-up, journal scenarios with real clients, five reports, a follow run,
                                  # __consumer_offsets of kcoord and of a reference Kafka (~55 s serially, a
                                  # streams group on each included), a three-broker kcoord's failovers
                                  # (test_report_failover.py, ~25 s serially), confluent-kafka transactions
                                  # (test_report_transactions.py), the Connect journal's report (~10 s): 245 s
                                  # serially, 381 s before the lean driver JVM and the coalesced offsets rows
                                  # (2026-11-26); 780 was the -n 4 figure then, scaled by 245/381
    "spark-source": 190,          # Spark's Kafka source on kcoord and on a reference Kafka of its own
    "assignors-kafka": 40,        # test_assignors_vs_kafka.py: ~2,000 problems through one JVM running Kafka's assignors;
                                  # test_task_assignor_vs_kafka.py: ~1,600 through another running its StickyTaskAssignor (~5 s);
                                  # test_simple_assignor_vs_kafka.py: ~1,900 share-group problems (~5 s)
    "acl-kafka": 110,             # test_acl_scram_admin.py, test_topic_acls.py (~50 s): reference Kafkas with an authorizer
    "connect": 600,               # test_connect.py: Connect clusters (3-4 worker JVMs) on kcoord, then on a
                                  # reference Kafka of its own, eager and sessioned (166 s serially; 270 s in a
                                  # full run with the 35 s delay, 2026-11-27), rolling restart (73 s), kcoord
                                  # restarted under workers x2 (62 s), 2026-11-24
    "reference-kafka-cluster": 500,  # the three-node reference Kafka (reference_kafka_cluster): start ~12 s, the smoke
                                     # test's kill, restart and controlled shutdown ~25 s (~40 s serially, 2026-11-26);
                                     # `kcoord partition balance` against a controlled shutdown, then the restart ~20 s;
                                     # the failover scenarios, each on a three-broker kcoord and then on the cluster,
                                     # through the cluster proxy (serially, kcoord / Kafka: rolling bounce 18-25 / 62-70 s,
                                     # kill 34-81 / 35-51 s, parked join 10-18 / 16-28 s; 2026-11-26), Connect [kafka]
                                     # ~40 s, leadership answers ~25 s, the cluster tools ~25 s, kafka-reassign-partitions
                                     # on both ~40 s (2026-11-26, under load), `kcoord reassign apply` and
                                     # --execute of a kcoord plan ~10 s; the group's files ran 6 min serially
    "streams-kafka": 185,         # test_streams_groups.py [kafka]: streams groups (KIP-1071) with Kafka Streams JVMs on a
                                  # Kafka of their own with 20 s streams sessions: scale out/in, kills, restarts, a
                                  # standby's promotion, a classic static restart (~200 s serially, 2026-11-26)
    "share-kafka": 120,           # test_share_groups.py: KafkaShareConsumer/librdkafka scenarios, each on kcoord and on
                                  # the module's own reference Kafka at once (~95 s on Kafka alone, 2026-11-26)
    "consumer-kafka": 180,        # the [kafka] cases of the consumer group protocol modules (KIP-848) on a Kafka of
                                  # their own with short consumer sessions: scenarios with java4/confluent members,
                                  # raw ConsumerGroupHeartbeat cases
    # overlay2 storage since 2026-11-27 (64 s alone; 168-240 s on vfs)
    "tests/docker/test_compose_up.py::test_static_members_restart_in_compose_without_a_rebalance": 150,
    "tests/integration/test_group_lifecycle.py::test_unknown_group_ids_leave_nothing_behind": 110,
    # kafka-share-groups (one ToolSession JVM) on a share group of two KafkaShareConsumer JVMs (~10 s, 2026-11-27)
    "tests/integration/test_share_groups_tool.py::test_share_groups_tool_lists_describes_resets_and_deletes[kcoord]": 15,
    "tests/fuzz/test_live_fuzz.py::test_100k_mutated_frames_against_a_live_server": 184,
    "tests/conformance/test_check_kcoord.py::test_kcoord_check_passes_against_kcoord": 90,
    "tests/integration/test_group_scenarios.py::test_sixteen_members[java": 54,
    "tests/integration/test_streams_groups.py::test_classic_streams_app_static_restart_and_kill[kcoord]": 40,
    "tests/integration/test_streams_eos.py::test_exactly_once_v2_counts_survive_a_killed_instance[kcoord]": 30,
    # kcoord only, no JVM shared: two Kafka Streams JVMs each on a kcoord of its own (~22 s and ~30 s serially, 2026-11-26)
    "tests/integration/test_streams_groups_durability.py::test_a_streams_group_comes_back_as_it_was_after_kill_9": 40,
    "tests/integration/test_streams_groups_durability.py::test_a_streams_group_rides_through_a_kill_of_its_coord": 50,
    "tests/integration/test_reference_kafka.py::test_an_": 48,  # start and stop brokers of their own
    "tests/integration/test_durable_state.py::test_kill_9_twenty_times": 37,
    "tests/integration/test_group_scenarios.py::test_duplicate_instance_id_fences_the_older_member[java": 30,
    "tests/integration/test_security.py::test_kafka_python_wrong_password_is_rejected": 30,
    "tests/integration/test_java_admin_spark.py::test_spark_deprecated_offset_fetching_drivers_rebalance": 31,
    "tests/unit/wire/test_differential_kio.py::test_same_bytes_as_kio[3v13res]": 26,
    "tests/fuzz/test_frame_fuzz.py::test_mutated_captured_requests_decode_or_fail_cleanly": 23,
}

SPARK_MODULES = ("tests/analytics/test_report_journal.py", "tests/analytics/test_report_kafka_logs.py",
                 "tests/analytics/test_report_kafka_topic.py", "tests/analytics/test_report_offsets_topic.py",
                 "tests/analytics/test_report_failover.py", "tests/analytics/test_report_transactions.py",
                 "tests/analytics/test_report_connect.py")
# One Spark session for both brokers' cases: the module's worker starts a reference Kafka of its
# own rather than joining the long "reference-kafka" group with a Spark JVM beside it.
SPARK_SOURCE_MODULE = "tests/integration/test_spark_kafka_source.py"
# The consumer group protocol (KIP-848) modules: their [kafka] cases run on a reference Kafka of
# their own (short consumer-group session timeouts; the `consumer_protocol_kafka` fixture below).
CONSUMER_PROTOCOL_MODULES = ("tests/integration/test_consumer_protocol.py",
                             "tests/conformance/test_consumer_protocol_raw.py")
# The streams group scenarios (KIP-1071): their [kafka] cases run on the module's own reference
# Kafka (short streams-group sessions: `streams_groups_kafka` in the module).
STREAMS_GROUP_MODULES = ("tests/integration/test_streams_groups.py",)


def _uses_session_kafka(item, broker_choice: str) -> bool:
    if "reference_kafka" in item.fixturenames:
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("broker_any") == "kafka":
        return True
    return broker_choice == "kafka" and "broker" in item.fixturenames


def _group(item, broker_choice: str) -> str | None:
    module = item.nodeid.split("::", 1)[0]
    if module in SPARK_MODULES:
        return "spark"
    if module == SPARK_SOURCE_MODULE:
        return "spark-source"
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "broker_pair" in callspec.params:  # test_differential's module-scoped pair
        return f"differential-delay{callspec.params['broker_pair']}"
    if "share_kafka" in item.fixturenames:  # test_share_groups.py's own reference Kafka
        return "share-kafka"
    if "reference_kafka_cluster" in item.fixturenames or (  # one three-node cluster for all of them
            callspec is not None and callspec.params.get("cluster") == "kafka"):
        return "reference-kafka-cluster"
    if _uses_session_kafka(item, broker_choice):
        if module in STREAMS_GROUP_MODULES:
            return "streams-kafka"
        return "consumer-kafka" if module in CONSUMER_PROTOCOL_MODULES else "reference-kafka"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    choice = _broker_choice(config)
    groups = {}
    for item in items:
        group = _group(item, choice)
        if group is None:  # a test's own xdist_group mark counts as under plain loadgroup
            group = next((str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                          for m in item.iter_markers("xdist_group")), None)
        if group is not None:
            item.stash[_UNIT] = group
            groups[item.nodeid] = group
    share = os.environ.get(GROUPS_ENV)
    worker = getattr(config, "workerinput", {}).get("workerid")
    if share and worker:
        (Path(share) / f"{worker}.json").write_text(json.dumps(groups))


_UNIT = pytest.StashKey[str]()
GROUPS_ENV = "KCOORD_XDIST_GROUPS"


# xdist's --dist loadgroup puts "@group" at the end of a test's nodeid to send it with its
# group, and pytest 9 no longer lets a plugin change a nodeid: the groups are ignored and
# every worker starts its own JVMs. So the workers, which collect, write down the group
# of each test (above), and the controller, which only sees nodeids, schedules a group as
# one unit from that.
@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist", "no") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    share = Path(os.environ[GROUPS_ENV])

    class GroupScheduling(LoadScopeScheduling):
        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:  # every worker has collected by the time scopes are asked for
                self._groups = {}
                for path in share.glob("*.json"):
                    self._groups.update(json.loads(path.read_text()))
            return self._groups.get(nodeid, nodeid)

    return GroupScheduling(config, log)


def _order(item) -> tuple[bool, float]:
    """Groups first, then single tests; each longest first.

    Groups first because xdist gives a worker a second unit while its first has two or
    fewer tests pending: a worker that starts on one long test would hold a whole group
    back behind it."""
    group = item.stash.get(_UNIT, None)
    if group is not None:
        return True, ESTIMATES.get(group, 0)
    return False, max((secs for key, secs in ESTIMATES.items() if item.nodeid.startswith(key)), default=0)


class _LongestFirst:
    # A hook of its own: it must run after pytest has put the tests of a module-scoped
    # parameter together (a plain hook), and one conftest holds one implementation per hook.
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        items.sort(key=_order, reverse=True)  # stable: a group stays together, in its order


def pytest_configure(config):
    config.pluginmanager.register(_LongestFirst(), "kcoord-longest-first")
    if not hasattr(config, "workerinput") and config.getoption("dist", "no") == "loadgroup" and GROUPS_ENV not in os.environ:
        # Set before xdist starts the workers, which inherit it.
        config.stash[_SHARE] = tempfile.mkdtemp(prefix="kcoord-xdist-groups-")
        os.environ[GROUPS_ENV] = config.stash[_SHARE]


_SHARE = pytest.StashKey[str]()


def pytest_unconfigure(config):
    share = config.stash.get(_SHARE, None)
    if share is not None:
        shutil.rmtree(share, ignore_errors=True)
        os.environ.pop(GROUPS_ENV, None)


@pytest.fixture(scope="session")
def consumer_protocol_kafka():
    """A reference Kafka for the consumer group protocol modules (CONSUMER_PROTOCOL_MODULES): the
    session Kafka's settings plus short consumer-group sessions and heartbeats
    (kcoord.testing.consumer_groups.CONSUMER_PROTOCOL_CONFIG), which a module passes to kcoord too.
    The modules make it their `reference_kafka`, so `broker_any[kafka]` runs on it."""
    from kcoord.testing.consumer_groups import CONSUMER_PROTOCOL_CONFIG
    from kcoord.testing.plugin import REFERENCE_KAFKA_CONFIG
    from kcoord.testing.reference_kafka import ReferenceKafka

    kafka = ReferenceKafka({**REFERENCE_KAFKA_CONFIG, **CONSUMER_PROTOCOL_CONFIG}).start()
    try:
        yield kafka
    finally:
        kafka.stop()
