"""Differential transcripts: the normaliser/comparator on hand-made transcripts, the
recording proxy with a real client, and every `kcoord check` scenario run on the
reference Apache Kafka and on kcoord with their transcripts compared."""
from __future__ import annotations

import copy
import time

import pytest

from kcoord.conformance import differential, transcript
from kcoord.conformance.members import CONSUMER_PROTOCOL_CLIENTS
from kcoord.conformance.recorder import ProxyThread, jsonable
from wire import codec

JOIN, SYNC, HEARTBEAT, FIND, API_VERSIONS, METADATA, FETCH = 11, 14, 12, 10, 18, 3, 1
_seq = iter(range(1, 10**6))


def ex(conn, api_key, version, request, response, client="kcoord-check", seq=None):
    return {"conn": conn, "seq": seq or next(_seq), "t_ms": 0, "client_id": client,
            "api": {JOIN: "JoinGroup", SYNC: "SyncGroup", HEARTBEAT: "Heartbeat", FIND: "FindCoordinator",
                    API_VERSIONS: "ApiVersions", METADATA: "Metadata", FETCH: "Fetch"}[api_key],
            "api_key": api_key, "version": version, "request": request, "response": response}


def _assignment(partitions: list[int]) -> dict:
    body = codec.compiled_message("ConsumerProtocolAssignment", 0).encode(
        {"assigned_partitions": [{"topic": "kcoord-check-t-0000abcd", "partitions": partitions}], "user_data": None})
    return jsonable(b"\x00\x00" + body)


def one_member_run(member_id: str, group: str, generation: int = 1, heartbeats: int = 3,
                   join_error: int = 0, fetches: int = 2, node=("127.0.0.1", 9092, 1)) -> list[dict]:
    host, port, node_id = node
    out = [ex(1, API_VERSIONS, 3, {}, {"error_code": 0, "api_keys": [{"api_key": 11, "max_version": 9}]}),
           ex(1, FIND, 3, {"key": group, "key_type": 0},
              {"throttle_time_ms": 7, "error_code": 0, "error_message": None, "node_id": node_id,
               "host": host, "port": port}),
           ex(2, JOIN, 5, {"group_id": group, "member_id": "", "protocol_type": "consumer", "protocols": []},
              {"error_code": join_error, "generation_id": generation, "protocol_name": "range",
               "leader": member_id, "member_id": member_id,
               "members": [{"member_id": member_id, "group_instance_id": None, "metadata": jsonable(b"")}]}),
           ex(2, SYNC, 3, {"group_id": group, "generation_id": generation, "member_id": member_id,
                           "assignments": [{"member_id": member_id, "assignment": _assignment([0, 1])}]},
              {"error_code": 0, "assignment": _assignment([0, 1])})]
    for i in range(heartbeats):
        out.append(ex(2, HEARTBEAT, 3, {"group_id": group, "generation_id": generation, "member_id": member_id},
                      {"throttle_time_ms": i, "error_code": 0}))
        if i < fetches:
            out.append(ex(3, FETCH, 12, {"max_wait_ms": 500}, {"error_code": 0, "session_id": 1000 + i}))
    return out


# ---------------------------------------------------------------- comparator unit tests
def test_member_ids_node_identity_and_timing_noise_are_not_divergences():
    kafka = one_member_run("kafka-python-3.0.12-4b8d7c0e-1111", "kcoord-check-single-1a2b3c4d", heartbeats=2,
                           fetches=2, node=("10.0.0.5", 9092, 1))
    kcoord = one_member_run("kafka-python-3.0.12-ffff0000-2222", "kcoord-check-single-deadbeef", heartbeats=7,
                            fetches=5, node=("127.0.0.1", 40000, 0))
    result = transcript.compare(kafka, kcoord)
    assert result.verdict == "identical", result.divergence and result.divergence.describe()


def test_a_different_error_code_is_reported_with_its_path():
    kafka = one_member_run("m-aaaa", "kcoord-check-x-00000001")
    kcoord = one_member_run("m-bbbb", "kcoord-check-x-00000002", join_error=27)
    result = transcript.compare(kafka, kcoord)
    assert result.verdict == "differs"
    d = result.divergence
    assert (d.connection, d.index, d.path, d.kafka, d.kcoord) == ("kcoord-check#1", 0, "response.error_code", 0, 27)
    assert any(line.startswith(">0: JoinGroup v5 error_code=27") for line in d.kcoord_context)
    assert "kcoord-check#1[0] response.error_code: kafka=0 kcoord=27" == d.summary()


def test_a_different_generation_is_reported():
    kafka = one_member_run("m-aaaa", "kcoord-check-x-00000001", generation=1)
    kcoord = one_member_run("m-bbbb", "kcoord-check-x-00000002", generation=2)
    d = transcript.compare(kafka, kcoord).divergence
    assert (d.index, d.path, d.kafka, d.kcoord) == (0, "request.generation_id", 1, 2) or \
        (d.index, d.path) == (0, "response.generation_id")


def test_a_heartbeat_error_inside_a_periodic_run_is_a_divergence():
    kafka = one_member_run("m-aaaa", "kcoord-check-x-00000001", heartbeats=4)
    kcoord = one_member_run("m-bbbb", "kcoord-check-x-00000002", heartbeats=4)
    next(e for e in reversed(kcoord) if e["api_key"] == HEARTBEAT)["response"]["error_code"] = 27
    d = transcript.compare(kafka, kcoord).divergence
    assert d is not None and d.path.startswith("distinct") and d.connection == "kcoord-check#1"


def test_a_successful_heartbeat_before_the_rebalance_is_timing_not_a_divergence():
    # The other member's heartbeat reached Kafka after the rejoin, and kcoord before it.
    kafka = one_member_run("m-aaaa", "kcoord-check-x-00000001", heartbeats=3, fetches=0)
    kcoord = one_member_run("m-bbbb", "kcoord-check-x-00000002", heartbeats=4, fetches=0)
    for run, hb in ((kafka, 0), (kcoord, 1)):
        [e for e in run if e["api_key"] == HEARTBEAT][hb]["response"]["error_code"] = 27
        del run[[i for i, e in enumerate(run) if e["api_key"] == HEARTBEAT][hb] + 1:]
    assert transcript.compare(kafka, kcoord).verdict == "identical"
    for e in kcoord:
        if e["api_key"] == HEARTBEAT and e["response"]["error_code"] == 27:
            e["response"]["error_code"] = 25
    assert transcript.compare(kafka, kcoord).divergence is not None


def test_a_consumer_assignment_is_decoded_and_compared():
    kafka = one_member_run("m-aaaa", "kcoord-check-x-00000001")
    kcoord = one_member_run("m-bbbb", "kcoord-check-x-00000002")
    sync = next(e for e in kcoord if e["api_key"] == SYNC)
    sync["response"]["assignment"] = _assignment([0])
    sync["request"]["assignments"][0]["assignment"] = _assignment([0])
    # One member only: which member got the partitions is no coin toss, so even the
    # loose comparison must see the lost partition.
    result = transcript.compare(kafka, kcoord)
    assert result.verdict == "differs"
    d = result.divergence
    assert d.path.startswith("request.assignments") and '"partitions": [0, 1]' in d.kafka \
        and '"partitions": [0]' in d.kcoord


def test_which_connection_finds_the_coordinator_is_timing_but_its_answer_is_not():
    kafka = one_member_run("m-aaaa", "kcoord-check-x-00000001")
    kcoord = one_member_run("m-bbbb", "kcoord-check-x-00000002")
    find = next(e for e in kcoord if e["api_key"] == FIND)
    find["conn"] = 2  # asked on the member's own connection this time
    assert transcript.compare(kafka, kcoord).verdict == "identical"
    find["response"]["error_code"] = 15
    d = transcript.compare(kafka, kcoord).divergence
    assert d is not None and d.path == "FindCoordinator"


def test_member_list_order_and_connection_order_do_not_matter():
    kafka = one_member_run("m-aaaa", "kcoord-check-x-00000001")
    kcoord = copy.deepcopy(kafka)
    join = next(e for e in kafka if e["api_key"] == JOIN)
    join["response"]["members"].append({"member_id": "m-zzzz", "group_instance_id": None, "metadata": jsonable(b"")})
    kjoin = next(e for e in kcoord if e["api_key"] == JOIN)
    kjoin["response"]["members"].insert(0, {"member_id": "m-yyyy", "group_instance_id": None,
                                            "metadata": jsonable(b"")})
    for e in kcoord:  # the proxy numbered the sockets differently
        e["conn"] = {1: 7, 2: 5, 3: 6}[e["conn"]]
    assert transcript.compare(kafka, kcoord).verdict == "identical"


def test_a_missing_non_group_api_version_is_a_divergence_but_its_count_is_not():
    kafka = one_member_run("m-aaaa", "kcoord-check-x-00000001", fetches=3)
    kcoord = one_member_run("m-bbbb", "kcoord-check-x-00000002", fetches=1)
    assert transcript.compare(kafka, kcoord).verdict == "identical"
    for e in kcoord:
        if e["api_key"] == FETCH:
            e["version"] = 11
    d = transcript.compare(kafka, kcoord).divergence
    assert d.path == "other_apis" and d.kafka == [("Fetch", 12)] and d.kcoord == [("Fetch", 11)]


# ---------------------------------------------------------------- the proxy with a real client
def consumer_protocol_run(member_id: str, group: str, steady: int, fetch_after: int, epoch: int = 2) -> list[dict]:
    """A consumer-protocol member's coordinator connection: a join, `steady` acknowledging
    heartbeats, an OffsetFetch after the `fetch_after`-th heartbeat, a leave."""
    def hb(member_epoch, answer_epoch, assignment):
        e = ex(2, FIND, 1, {"group_id": group, "member_id": member_id, "member_epoch": member_epoch},
               {"error_code": 0, "member_id": member_id, "member_epoch": answer_epoch, "assignment": assignment})
        e.update(api="ConsumerGroupHeartbeat", api_key=68)
        return e

    beats = [hb(0, epoch, {"topic_partitions": [{"topic_id": "x", "partitions": [0, 1]}]})]
    beats += [hb(epoch, epoch, None) for _ in range(steady)] + [hb(-1, -1, None)]
    fetch = ex(2, FIND, 9, {"group_id": group}, {"error_code": 0})
    fetch.update(api="OffsetFetch", api_key=9)
    return beats[:fetch_after] + [fetch] + beats[fetch_after:]


def test_consumer_protocol_heartbeats_compare_as_the_states_they_went_through():
    # How many steady heartbeats, and where the OffsetFetch fell among them, is timing.
    kafka = consumer_protocol_run("m-aaaa", "kcoord-check-x-00000001", steady=4, fetch_after=1)
    kcoord = consumer_protocol_run("m-bbbb", "kcoord-check-x-00000002", steady=1, fetch_after=2)
    assert transcript.compare(kafka, kcoord).verdict == "identical"
    # A different epoch in any answer is not.
    other = consumer_protocol_run("m-bbbb", "kcoord-check-x-00000002", steady=1, fetch_after=2, epoch=3)
    d = transcript.compare(kafka, other).divergence
    assert d is not None and d.path.startswith("distinct") and "member_epoch" in d.path


def _cgh(member_id, group, epoch, answer_epoch, assignment=None, owned=None):
    e = ex(2, FIND, 1, {"group_id": group, "member_id": member_id, "member_epoch": epoch, "topic_partitions": owned},
           {"error_code": 0, "member_id": member_id, "member_epoch": answer_epoch, "assignment": assignment})
    e.update(api="ConsumerGroupHeartbeat", api_key=68)
    return e


def leave_one_run(member_id: str, group: str, keep_alive_at_3: bool, answer_at_3: int = 3) -> list[dict]:
    """The remaining member of kip848-leave-one: epoch 2, given less at 3, all again at 4."""
    some = {"topic_partitions": [{"topic_id": "x", "partitions": [0, 1]}]}
    every = {"topic_partitions": [{"topic_id": "x", "partitions": [0, 1, 2]}]}
    run = [_cgh(member_id, group, 0, 2, every), _cgh(member_id, group, 2, 2, owned=[0, 1, 2]),
           _cgh(member_id, group, 2, 2, some), _cgh(member_id, group, 2, 3, owned=[0, 1])]
    if keep_alive_at_3:
        run.append(_cgh(member_id, group, 3, answer_at_3))
    return run + [_cgh(member_id, group, 3, 4, every), _cgh(member_id, group, 4, 4, owned=[0, 1, 2]),
                  _cgh(member_id, group, -1, -1)]


def test_a_consumer_protocol_keep_alive_between_two_changes_is_timing():
    # Seen under load: the remaining member's timer fired once at epoch 3 on one broker only,
    # before the other member's leave moved the group on.
    kafka = leave_one_run("m-aaaa", "kcoord-check-x-00000001", keep_alive_at_3=True)
    kcoord = leave_one_run("m-bbbb", "kcoord-check-x-00000002", keep_alive_at_3=False)
    assert transcript.compare(kafka, kcoord).verdict == "identical"
    # A keep-alive answered with another epoch says something, and is compared.
    moved = leave_one_run("m-bbbb", "kcoord-check-x-00000002", keep_alive_at_3=True, answer_at_3=4)
    d = transcript.compare(kafka, moved).divergence
    assert d is not None and d.path.startswith("distinct")


def _sgh(member_id: str, group: str, epoch: int, answer_epoch: int, status: list[str], active=None) -> dict:
    e = ex(2, FIND, 0, {"group_id": group, "member_id": member_id, "member_epoch": epoch, "active_tasks": []},
           {"error_code": 0, "member_id": member_id, "member_epoch": answer_epoch, "active_tasks": active,
            "status": [{"status_code": {"delay": 5, "missing": 1}[s], "status_detail": s} for s in status]})
    e.update(api="StreamsGroupHeartbeat", api_key=88)
    return e


def test_a_streams_heartbeat_held_only_by_the_initial_delay_is_timing():
    # Seen in CI: kcoord heard "delayed" alone once the source topic existed, before the
    # initial delay ended; the reference Kafka's topic creation outlasted the delay.
    def run(member_id, group, between):
        out = [_sgh(member_id, group, 0, 1, ["delay", "missing"], active=[]),
               _sgh(member_id, group, 1, 1, ["delay", "missing"])]
        if between:
            out.append(_sgh(member_id, group, 1, 1, ["delay"]))
        return out + [_sgh(member_id, group, 1, 3, [], active=[{"subtopology_id": "0", "partitions": [0, 1]}])]

    kafka = run("m-aaaa", "kcoord-check-x-00000001", between=False)
    assert transcript.compare(kafka, run("m-bbbb", "kcoord-check-x-00000002", between=True)).verdict == "identical"
    # A status that is not a delay still says something.
    missing_only = run("m-bbbb", "kcoord-check-x-00000002", between=False)
    missing_only.insert(2, _sgh("m-bbbb", "kcoord-check-x-00000002", 1, 1, ["missing"]))
    assert transcript.compare(kafka, missing_only).verdict == "differs"


def _shgh(member_id: str, group: str, epoch: int, answer_epoch: int, partitions=None) -> dict:
    e = ex(2, FIND, 1, {"group_id": group, "member_id": member_id, "member_epoch": epoch,
                        "subscribed_topic_names": ["t"] if epoch == 0 else None},
           {"error_code": 0, "member_id": member_id, "member_epoch": answer_epoch, "heartbeat_interval_ms": 5000,
            "assignment": None if partitions is None else {"topic_partitions": [{"topic_id": "x",
                                                                                 "partitions": partitions}]}})
    e.update(api="ShareGroupHeartbeat", api_key=76)
    return e


def test_share_heartbeats_while_the_share_state_initialises_are_timing():
    # Kafka answers a join with no partitions and gives them once it has initialised the
    # share-partition state, asynchronously: how many keep-alives come between is timing.
    def run(member_id, group, waiting, first=2):
        out = [_shgh(member_id, group, 0, first, [])]
        out += [_shgh(member_id, group, first, first) for _ in range(waiting)]
        return out + [_shgh(member_id, group, first, first + 1, [0, 1]), _shgh(member_id, group, first + 1, -1)]

    kafka = run("m-aaaa", "kcoord-check-x-00000001", waiting=1)
    assert transcript.compare(kafka, run("m-bbbb", "kcoord-check-x-00000002", waiting=6)).verdict == "identical"
    # The empty assignment heard first is not timing, and neither is the epoch it came with.
    group = "kcoord-check-x-00000002"
    at_once = [_shgh("m-bbbb", group, 0, 2, [0, 1]), _shgh("m-bbbb", group, 2, -1)]
    assert transcript.compare(kafka, at_once).verdict == "differs"
    assert transcript.compare(kafka, run("m-bbbb", group, waiting=1, first=1)).verdict == "differs"


def test_share_group_start_offsets_differ_even_loosely():
    # The loose comparison forgets which member got which partitions; a start offset is no such thing.
    def run(member_id, group, start):
        e = ex(2, FIND, 1, {"groups": [{"group_id": group, "topics": None}]},
               {"groups": [{"group_id": group, "error_code": 0, "topics": [{"topic_name": "t", "topic_id": "x",
                            "partitions": [{"partition_index": 0, "start_offset": start, "lag": 1,
                                            "error_code": 0}]}]}]})
        e.update(api="DescribeShareGroupOffsets", api_key=90)
        return [_shgh(member_id, group, 0, 2, [0]), e]

    kafka = run("m-aaaa", "kcoord-check-x-00000001", 0)
    assert transcript.compare(kafka, run("m-bbbb", "kcoord-check-x-00000002", 0)).verdict == "identical"
    assert transcript.compare(kafka, run("m-bbbb", "kcoord-check-x-00000002", 2)).verdict == "differs"


def test_setup_connections_are_left_out():
    kafka = one_member_run("m-aaaa", "kcoord-check-x-00000001")
    kcoord = one_member_run("m-bbbb", "kcoord-check-x-00000002")
    kcoord.append(ex(9, JOIN, 5, {"group_id": "kcoord-topic-ready-x", "member_id": ""}, {"error_code": 79},
                     client="kcoord-check-setup"))
    assert transcript.compare(kafka, kcoord).verdict == "identical"


def test_proxy_records_a_kafka_python_consumer_and_keeps_it_on_the_proxy(kcoord_server):
    from kafka import KafkaConsumer, KafkaProducer

    with ProxyThread() as proxies:
        p = proxies.proxy(kcoord_server.bootstrap)
        producer = KafkaProducer(bootstrap_servers=p.bootstrap)
        producer.send("recorded", b"hello").get(30)
        producer.close()
        consumer = KafkaConsumer("recorded", group_id="recorded-group", auto_offset_reset="earliest",
                                 bootstrap_servers=p.bootstrap, consumer_timeout_ms=30000)
        assert next(iter(consumer)).value == b"hello"
        consumer.close()
        exchanges = p.transcript.sorted()
        proxy_port = p.address[1]
    apis = [e["api"] for e in exchanges]
    assert "JoinGroup" in apis and "SyncGroup" in apis and "LeaveGroup" in apis
    join = next(e for e in exchanges if e["api"] == "JoinGroup" and e["response"]["error_code"] == 0)
    assert join["request"]["group_id"] == "recorded-group" and join["response"]["generation_id"] >= 1
    assert join["response"]["leader"] == join["response"]["member_id"]
    sync = [e for e in exchanges if e["api"] == "SyncGroup"][-1]
    assert transcript.decode_consumer("assignment", bytes.fromhex(sync["response"]["assignment"]["$bytes"])) \
        ["assigned_partitions"] == [{"topic": "recorded", "partitions": [0]}]
    assert all("request_error" not in e and "response_error" not in e for e in exchanges)
    # The transcript keeps what the broker said (its own address); the client was told
    # the proxy's, so every broker it knows is the proxy.
    finds = [e for e in exchanges if e["api"] == "FindCoordinator"]
    upstream_port = int(kcoord_server.bootstrap.rsplit(":", 1)[1])
    assert finds and all(c["port"] == upstream_port
                         for f in finds for c in f["response"].get("coordinators") or [f["response"]])
    assert {b.port for b in consumer._client.cluster.brokers()} == {proxy_port}
    assert len({e["conn"] for e in exchanges}) >= 2


# ---------------------------------------------------------------- kcoord vs Apache Kafka
DELAYS = (0, 3000)
CLIENTS = ("kafka-python", "aiokafka", "confluent", "java", "java4")


@pytest.fixture(scope="module", params=DELAYS, ids=lambda d: f"delay{d}")
def broker_pair(request):
    from kcoord.testing.plugin import start_server
    from kcoord.testing.reference_kafka import ReferenceKafka

    delay = request.param
    # Streams groups wait as long as classic ones here (Kafka's default is 3 s for both): one
    # pair runs the streams scenarios without the delay, the other with it.
    with ReferenceKafka({"group.initial.rebalance.delay.ms": str(delay),
                         "group.streams.initial.rebalance.delay.ms": str(delay),
                         "group.min.session.timeout.ms": "1000"}) as kafka:
        server = start_server(initial_rebalance_delay_ms=delay, group_streams_initial_rebalance_delay_ms=delay,
                              group_min_session_timeout_ms=1000)
        try:
            yield delay, kafka.bootstrap, server.bootstrap
        finally:
            server.stop()


def _differential(broker_pair, scenarios, clients):
    delay, kafka, kcoord = broker_pair
    start = time.monotonic()
    results = differential.run_differential(kafka, kcoord, list(clients), scenarios)
    print(f"\n{differential.report_table([(delay, r) for r in results])}\n"
          f"wall time {time.monotonic() - start:.0f}s")
    # A stock client's own timing (kafka-python rejoining once more as a follower, say) can
    # make one run of a client scenario differ although both brokers answered alike: a client
    # row that differs is run again, up to twice, and only a difference that every run shows
    # fails the test (kafka-python's extra rejoin on the reference Kafka's side came back on a
    # single rerun in a full run of 2026-11-24). A raw row's requests are the scenario's, so it
    # is rerun only when it differs inside a member's collapsed heartbeats: which states a
    # member hears depends on when the reference Kafka's own topic creation lands against the
    # initial rebalance delay (in a loaded CI run of 2026-11-26 its changelog topic took longer
    # than the 3 s delay, and its member heard one more state on the way to the same end).
    for i, r in enumerate(results):
        for attempt in (1, 2):
            if not differential.unexpected([r], delay) or (r.client == "raw" and not _in_heartbeats(r)):
                break
            print(f"rerunning {r.scenario} [{r.client}] ({attempt} of 2): {r.summary}")
            again = [] if r.client == "raw" else [r.client]
            r = results[i] = differential.run_differential(kafka, kcoord, again, [r.scenario])[0]
    problems = differential.unexpected(results, delay)
    assert not problems, "\n\n".join(problems)


def _in_heartbeats(r) -> bool:
    """Whether a row's first divergence is inside a collapsed heartbeats item."""
    return r.path.startswith("distinct")


def test_raw_scenarios_kcoord_vs_kafka(broker_pair):
    from kcoord.conformance import raw_scenarios

    _differential(broker_pair, list(raw_scenarios.SCENARIOS), [])


CLIENT_ROWS = [(s, c) for s in ("client:consume-in-group", "client:leave-one-rebalance",
                                "client:static-restart-no-rebalance", "client:static-leader-restart-no-rebalance")
               for c in CLIENTS] + [
    (s, c) for s in ("client:kip848-consume-in-group", "client:kip848-leave-one", "client:kip848-static-restart")
    for c in CONSUMER_PROTOCOL_CLIENTS]


@pytest.mark.parametrize("scenario", sorted({s for s, _ in CLIENT_ROWS}))
def test_client_scenarios_kcoord_vs_kafka(broker_pair, scenario):
    _differential(broker_pair, [scenario], [c for s, c in CLIENT_ROWS if s == scenario])
