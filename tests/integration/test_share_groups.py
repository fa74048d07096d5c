"""Share groups (KIP-932) with Kafka's own KafkaShareConsumer 4.3.1, on kcoord and on the reference
Kafka 4.3.1 side by side: each scenario runs on both brokers at once (JVM workers of
tests/integration/java/KcoordShareWorker.java through kcoord.testing.share_workers), checks what a
share group promises on each, and checks that both brokers delivered, acknowledged and redelivered
the same records the same number of times.

What a record's value asks its worker to do: "release..." release it, "reject..." reject it,
"hold..." keep it past its lock, anything else accept it. Each group reads from the earliest
offset (the per-group share.auto.offset.reset; Kafka's default, latest, would skip whatever was
produced before the group's share-partition state was initialised). Lock durations are per group
(share.record.lock.duration.ms) under a broker minimum lowered to 1 s on both brokers.
Kafka's side is a reference Kafka of the module's own (xdist group "share-kafka")."""
from __future__ import annotations

import collections
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from kcoord.testing.brokers import alter_resource_configs, create_topic
from kcoord.testing.share_workers import ShareWorkers

GROUP_RESOURCE = 32
SHARE_BROKER_CONFIG = {"group.share.min.record.lock.duration.ms": "1000"}
EXPLICIT = {"share.acknowledgement.mode": "explicit", "max.poll.records": "5"}
pytestmark = [pytest.mark.integration, pytest.mark.kcoord(kafka_config=SHARE_BROKER_CONFIG)]


@pytest.fixture(scope="module")
def share_kafka():
    from kcoord.testing.plugin import REFERENCE_KAFKA_CONFIG
    from kcoord.testing.reference_kafka import ReferenceKafka

    kafka = ReferenceKafka({**REFERENCE_KAFKA_CONFIG, **SHARE_BROKER_CONFIG}).start()
    try:
        yield kafka
    finally:
        kafka.stop()


@pytest.fixture
def brokers(kcoord_server, share_kafka):
    return {"kcoord": kcoord_server.bootstrap, "kafka": share_kafka.bootstrap}


def on_both(brokers: dict[str, str], scenario, *args) -> dict[str, dict]:
    """`scenario(bootstrap, *args)` on both brokers at once; each one's outcome by broker name."""
    with ThreadPoolExecutor(len(brokers)) as pool:
        futures = {name: pool.submit(scenario, bootstrap, *args) for name, bootstrap in brokers.items()}
        return {name: f.result() for name, f in futures.items()}


def share_group(bootstrap: str, stem: str, lock_ms: int | None = None) -> tuple[str, str]:
    """A new topic of one partition and a new share group reading it from the earliest offset."""
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"share-{stem}-{suffix}", f"share-{stem}-group-{suffix}"
    create_topic(bootstrap, topic, 1)
    configs = [("share.auto.offset.reset", 0, "earliest")]
    if lock_ms is not None:
        configs.append(("share.record.lock.duration.ms", 0, str(lock_ms)))
    assert alter_resource_configs(bootstrap, GROUP_RESOURCE, group, configs) == ("NONE", None)
    return topic, group


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    """One batch per record, so the broker can hand them out record by record."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for v in values:
        producer.produce(topic, v.encode())
        producer.flush(30)
    assert producer.flush(30) == 0


def tally(workers: ShareWorkers) -> dict:
    """What the brokers must agree on: how often each record was delivered and how it ended."""
    deliveries = collections.Counter(value for _, _, _, value in workers.deliveries())
    acks = collections.Counter(f"{_value(workers, offset)} {kind}" for _, offset, kind in workers.acks())
    return {"deliveries": dict(sorted(deliveries.items())), "acks": dict(sorted(acks.items()))}


def _value(workers: ShareWorkers, offset: int) -> str:
    return next(v for _, o, _, v in workers.deliveries() if o == offset)


# ------------------------------------------------------------------------------- scenarios
def many_workers_one_partition(bootstrap: str) -> dict:
    topic, group = share_group(bootstrap, "many")
    values = [f"v{i:03}" for i in range(60)]
    with ShareWorkers(bootstrap, group, topic, EXPLICIT) as workers:
        # 100 ms a record: one worker alone would take 6 s for the 60, time the others' fetches
        # come in even under a full suite's load (at 30 ms one worker took all 60 in a run of
        # 2026-11-27).
        workers.add(3, process_ms="100")
        workers.wait_polling()
        produce(bootstrap, topic, values)
        workers.wait_for(lambda: len(workers.accepted()) >= len(values), "every record accepted")
        time.sleep(1.0)  # a record delivered twice would show by now
        taken = collections.Counter(w for w, *_ in workers.deliveries())
        return {**tally(workers), "workers_with_records": len(taken), "offsets": sorted(workers.accepted()),
                "failures": workers.commit_failures()}


def test_workers_share_one_partition_without_overlap(brokers):
    seen = on_both(brokers, many_workers_one_partition)
    for name, out in seen.items():
        assert out["offsets"] == list(range(60)), name
        assert set(out["deliveries"].values()) == {1}, (name, out["deliveries"])
        assert out["workers_with_records"] >= 2, (name, out)
        assert out["failures"] == [], (name, out["failures"])
    assert seen["kcoord"]["deliveries"] == seen["kafka"]["deliveries"]
    assert seen["kcoord"]["acks"] == seen["kafka"]["acks"]


def implicit_acknowledgement(bootstrap: str) -> dict:
    topic, group = share_group(bootstrap, "implicit")
    values = [f"v{i:03}" for i in range(30)]
    with ShareWorkers(bootstrap, group, topic, {"max.poll.records": "5"}) as workers:
        first, = workers.add(1)
        produce(bootstrap, topic, values)
        workers.wait_for(lambda: len(workers.deliveries()) >= len(values), "every record delivered")
        workers.stop(first)  # the close acknowledges the last poll's records
        later, = workers.add(1)
        produce(bootstrap, topic, ["after"])
        workers.wait_for(lambda: any(v == "after" for *_, v in workers.deliveries()), "the later record")
        return {"deliveries": collections.Counter(v for *_, v in workers.deliveries()),
                "later_worker_saw": sorted(v for w, _, _, v in workers.deliveries() if w == later.name)}


def test_implicit_acknowledgement_accepts_what_was_polled(brokers):
    seen = on_both(brokers, implicit_acknowledgement)
    for name, out in seen.items():
        assert set(out["deliveries"].values()) == {1}, (name, out)
        assert out["later_worker_saw"] == ["after"], (name, out)
    assert seen["kcoord"] == seen["kafka"]


def poison_and_reject(bootstrap: str) -> dict:
    topic, group = share_group(bootstrap, "poison")
    with ShareWorkers(bootstrap, group, topic, EXPLICIT) as workers:
        workers.add(1)
        produce(bootstrap, topic, ["v0", "release-poison", "v2", "reject-bad", "v4"])
        workers.wait_for(lambda: workers.accepted() >= {0, 2, 4}
                         and sum(v == "release-poison" for *_, v in workers.deliveries()) >= 5,
                         "the good records accepted, the poison delivered up to the limit")
        produce(bootstrap, topic, ["v5"])
        workers.wait_for(lambda: 5 in workers.accepted(), "a record after the poison")
        return {**tally(workers), "poison": [d for _, _, d, v in workers.deliveries() if v == "release-poison"]}


def test_a_poison_record_is_archived_after_the_delivery_limit(brokers):
    seen = on_both(brokers, poison_and_reject)
    for name, out in seen.items():
        # group.share.delivery.count.limit is 5: a record released 5 times is archived; a rejected
        # one is never delivered again; the records after them go on.
        assert out["poison"] == [1, 2, 3, 4, 5], (name, out)
        assert out["deliveries"]["reject-bad"] == 1, (name, out)
    assert seen["kcoord"] == seen["kafka"]


def killed_or_frozen(bootstrap: str, how: str, lock_ms: int) -> dict:
    topic, group = share_group(bootstrap, how, lock_ms=lock_ms)
    with ShareWorkers(bootstrap, group, topic, EXPLICIT) as workers:
        # The first 5 records are there before the stuck worker starts: its first fetch takes all
        # of them (max.poll.records 5) and it sits on the first. It is stopped before anything
        # else is produced, since its client's background fetches would take more meanwhile.
        produce(bootstrap, topic, [f"hold-{i}" for i in range(5)])
        stuck, = workers.add(1, hold_ms="600000")
        workers.wait_for(lambda: any(e["event"] == "record" for e in stuck.events()), "the stuck worker holds records")
        held_since = time.monotonic()
        getattr(workers, how)(stuck)                 # kill -9, or SIGSTOP
        stopped_at = time.monotonic()
        helper, = workers.add(1)                     # hold.ms 0: accepts everything it gets
        workers.wait_polling([helper])
        produce(bootstrap, topic, [f"next-{i}" for i in range(5)])

        def redelivered():
            return sorted(v for w, _, d, v in workers.deliveries() if w == helper.name and d == 2)
        workers.wait_for(redelivered, "a held record redelivered", timeout=lock_ms / 1000 + 30)
        back_at = time.monotonic()
        workers.wait_for(lambda: len(workers.accepted()) >= 10, "every record accepted", timeout=45)
        out = {**tally(workers), "redelivered": redelivered(), "back_after_taken": round(back_at - held_since, 1),
               "back_after_stopped": round(back_at - stopped_at, 1)}
        if how == "freeze":
            workers.kill(stuck)
        return out


def test_a_killed_workers_records_go_to_the_others_before_their_lock_ends(brokers):
    seen = on_both(brokers, killed_or_frozen, "kill", 60000)
    for name, out in seen.items():
        # The 5 records the dead worker held came to the helper as their second delivery, long
        # before their 60 s lock could have ended: the broker released them when its connection
        # closed.
        assert out["redelivered"] == [f"hold-{i}" for i in range(5)], (name, out)
        assert out["back_after_stopped"] < 60 - 15, (name, out)
    assert seen["kcoord"]["deliveries"] == seen["kafka"]["deliveries"]


def test_a_frozen_worker_keeps_its_records_until_their_lock_ends(brokers):
    seen = on_both(brokers, killed_or_frozen, "freeze", 20000)
    for name, out in seen.items():
        # Connected but silent (SIGSTOP): its records come back only once their 20 s lock, which
        # began before the stuck worker printed the first of them, has ended.
        assert out["redelivered"] == [f"hold-{i}" for i in range(5)], (name, out)
        assert out["back_after_taken"] >= 20 - 2, (name, out)
    assert seen["kcoord"]["deliveries"] == seen["kafka"]["deliveries"]


def renewing_worker(bootstrap: str) -> dict:
    topic, group = share_group(bootstrap, "renew", lock_ms=4000)
    with ShareWorkers(bootstrap, group, topic, EXPLICIT) as workers:
        slow, = workers.add(1, hold_ms="12000", renew_every_ms="1500")
        produce(bootstrap, topic, ["hold-slow"])
        workers.wait_for(lambda: workers.deliveries(), "the slow worker has the record")
        # Another worker, idle, that would get the record if its lock ran out.
        workers.wait_polling(workers.add(1))
        workers.wait_for(lambda: workers.accepted() >= {0}, "the record accepted", timeout=60)
        return {**tally(workers), "renewals": len(workers.acks("renew")), "failures": workers.commit_failures(),
                "slow_took": sorted(v for w, _, _, v in workers.deliveries() if w == slow.name)}


def test_a_worker_that_renews_keeps_its_record_past_the_lock(brokers):
    seen = on_both(brokers, renewing_worker)
    for name, out in seen.items():
        # Held 12 s under a 4 s lock, renewed every 1.5 s (KIP-1222): never delivered elsewhere.
        assert out["deliveries"]["hold-slow"] == 1, (name, out)
        assert out["renewals"] >= 5 and out["failures"] == [], (name, out)
        assert "hold-slow" in out["slow_took"], (name, out)
    assert seen["kcoord"]["deliveries"] == seen["kafka"]["deliveries"]


def librdkafka_share_consumers(bootstrap: str) -> dict:
    """Two confluent-kafka ShareConsumers (librdkafka's KIP-932 consumer) in explicit mode, each in
    a thread: every record accepted once, except one released on its first delivery."""
    import threading

    from confluent_kafka import AcknowledgeType, ShareConsumer

    topic, group = share_group(bootstrap, "librdkafka")
    values = [f"v{i:02}" for i in range(30)] + ["release-once"]
    produce(bootstrap, topic, values)
    seen: list[tuple[str, int, int, str]] = []
    accepted: set[int] = set()
    stop = threading.Event()
    lock = threading.Lock()

    def consume(name: str) -> None:
        consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
                                  "share.acknowledgement.mode": "explicit"})
        consumer.subscribe([topic])
        try:
            while not stop.is_set():
                for m in consumer.poll(0.2):
                    if m.error():
                        continue
                    value, count = m.value().decode(), m.delivery_count()
                    released = value.startswith("release") and count == 1
                    consumer.acknowledge(m, AcknowledgeType.RELEASE if released else AcknowledgeType.ACCEPT)
                    with lock:
                        seen.append((name, m.offset(), count, value))
                        if not released:
                            accepted.add(m.offset())
                consumer.commit_sync(30)
        finally:
            consumer.close()

    threads = [threading.Thread(target=consume, args=(f"c{i}",), daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 90
    while len(accepted) < len(values) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)  # a record delivered twice would show by now
    stop.set()
    for t in threads:
        t.join(60)
    return {"accepted": sorted(accepted), "deliveries": dict(sorted(collections.Counter(v for *_, v in seen).items())),
            "release_counts": [c for _, _, c, v in seen if v == "release-once"]}


def test_librdkafka_share_consumers_share_a_topic(brokers):
    seen = on_both(brokers, librdkafka_share_consumers)
    for name, out in seen.items():
        assert out["accepted"] == list(range(31)), (name, out)
        assert out["release_counts"] == [1, 2], (name, out)
        assert {v: n for v, n in out["deliveries"].items() if n != 1} == {"release-once": 2}, (name, out)
    assert seen["kcoord"] == seen["kafka"]
