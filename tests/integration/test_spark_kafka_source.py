"""Spark's real Kafka source and sink (spark-sql-kafka-0-10 at pyspark's version) against
kcoord and the reference Kafka.

Every test runs on both brokers and compares exact rows, (partition, offset, key, value,
timestamp), with what was produced. One SparkSession serves the module: its start costs
more CPU than all the reads together. kcoord.testing.spark_kafka fetches the connector.
"""
from __future__ import annotations

import json
import shutil
import time
import uuid

import pytest

from kcoord.testing.brokers import create_topic, end_offsets


# An hour ago, to the second. Kafka deletes a segment whose newest record is older than
# retention.ms (7 days) at its next retention check (every 5 min), the active segment too, so
# records stamped years ago vanish from the reference Kafka mid-test; one more than
# log.message.timestamp.after.max.ms (1 h) ahead would be refused.
BASE_TS = (int(time.time()) - 3600) * 1000
CODECS = ("gzip", "snappy", "lz4", "zstd")


@pytest.fixture(scope="module")
def spark():
    if shutil.which("java") is None:
        pytest.fail("Spark's Kafka source needs Java 17+ on PATH (apt-get install openjdk-17-jre-headless)")
    from kcoord.testing.spark_kafka import SparkKafkaUnavailable, spark_session

    from pyspark.sql import SparkSession

    # A worker that ran the analytics modules first holds their session-wide SparkSession:
    # Spark's builder hands that one back, and stopping it here would kill it under them.
    earlier = SparkSession.getActiveSession()
    try:
        session = spark_session()
    except SparkKafkaUnavailable as err:
        pytest.fail(f"{err} (`make install-test` fetches it)")
    yield session
    if earlier is None:
        session.stop()


def _name(stem: str) -> str:
    # The reference Kafka lives for the whole session: every test names its own topics.
    return f"{stem}-{uuid.uuid4().hex[:8]}"


def _topic(broker, stem: str, partitions: int = 3) -> str:
    topic = _name(stem)
    create_topic(broker.bootstrap, topic, partitions)
    return topic


def produce(bootstrap: str, topic: str, rows, client: str = "confluent", compression: str = "none") -> None:
    """rows: (partition, key, value, timestamp_ms), sent in order by one producer."""
    if client == "confluent":
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "compression.type": compression,
                      "enable.idempotence": True})
        failed = []  # a record librdkafka gives up on leaves the queue too: flush() alone does not tell

        def delivered(err, msg):
            if err is not None:
                failed.append((msg.partition(), str(err)))
        for partition, key, value, ts in rows:
            p.produce(topic, key=key.encode(), value=value.encode(), partition=partition, timestamp=ts,
                      on_delivery=delivered)
        assert p.flush(30) == 0 and not failed, failed
    else:
        from kafka import KafkaProducer

        p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, max_in_flight_requests_per_connection=1,
                          compression_type=None if compression == "none" else compression)
        sent = [p.send(topic, key=key.encode(), value=value.encode(), partition=partition, timestamp_ms=ts)
                for partition, key, value, ts in rows]
        p.flush()
        for future in sent:
            future.get(timeout=30)  # raises what failed the send
        p.close()


def make_rows(partitions: int, per_partition: int, tag: str = "", start: int = 0):
    """Known records, timestamps rising by one second per record in each partition."""
    return [(p, f"k{tag}{p}-{i}", f"v{tag}{p}-{i}", BASE_TS + (p * 100_000) + i * 1000)
            for i in range(start, start + per_partition) for p in range(partitions)]


def expected(rows, first_offset: dict[int, int] | None = None):
    """(partition, offset, key, value, timestamp) of `rows` on a fresh topic (offsets by order)."""
    nxt = dict(first_offset or {})
    out = set()
    for partition, key, value, ts in rows:
        offset = nxt.get(partition, 0)
        nxt[partition] = offset + 1
        out.add((partition, offset, key, value, ts))
    return out


ROW = ["partition", "offset", "CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value",
       "unix_millis(timestamp) AS ts"]


def rows_of(df) -> list[tuple]:
    return [tuple(r) for r in df.selectExpr(*ROW).collect()]


def read(spark, bootstrap: str, **options):
    """The rows of a batch read."""
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value if isinstance(value, str) else json.dumps(value))
    return rows_of(reader.load())


# ---- batch reads ----

def test_batch_reads_earliest_to_latest(spark, broker_any):
    topic = _topic(broker_any, "sk-batch")
    rows = make_rows(3, 10)
    produce(broker_any.bootstrap, topic, rows)
    got = read(spark, broker_any.bootstrap, subscribe=topic, startingOffsets="earliest",
               endingOffsets="latest")
    assert len(got) == len(rows)
    assert set(got) == expected(rows)


def test_batch_offsets_as_json(spark, broker_any):
    topic = _topic(broker_any, "sk-json")
    rows = make_rows(3, 10)
    produce(broker_any.bootstrap, topic, rows)
    # -2 is earliest, -1 latest
    got = read(spark, broker_any.bootstrap, subscribe=topic,
               startingOffsets={topic: {"0": 2, "1": -2, "2": 5}},
               endingOffsets={topic: {"0": 8, "1": -1, "2": 7}})
    bounds = {0: (2, 8), 1: (0, 10), 2: (5, 7)}
    want = {r for r in expected(rows) if bounds[r[0]][0] <= r[1] < bounds[r[0]][1]}
    assert set(got) == want and len(got) == len(want)


def test_batch_offsets_by_timestamp(spark, broker_any):
    topic = _topic(broker_any, "sk-ts")
    rows = make_rows(3, 10)
    produce(broker_any.bootstrap, topic, rows)
    all_rows = expected(rows)
    ts = lambda p, i: BASE_TS + p * 100_000 + i * 1000  # noqa: E731  the i-th record's timestamp
    # Between two records' timestamps: the first record at or after it starts (and ends) the range.
    start = {str(p): ts(p, 3) - 500 for p in range(3)}
    end = {str(p): ts(p, 7) for p in range(3)}
    got = read(spark, broker_any.bootstrap, subscribe=topic,
               startingOffsetsByTimestamp={topic: start}, endingOffsetsByTimestamp={topic: end})
    want = {r for r in all_rows if 3 <= r[1] < 7}
    assert set(got) == want and len(got) == len(want)

    # One timestamp for every partition: partition 0's records from the 6th, 1's and 2's all.
    got = read(spark, broker_any.bootstrap, subscribe=topic, startingTimestamp=str(ts(0, 5)))
    want = {r for r in all_rows if r[0] != 0 or r[1] >= 5}
    assert set(got) == want and len(got) == len(want)


def test_subscribe_pattern_and_assign(spark, broker_any):
    prefix = _name("sk-pat")
    a, b = f"{prefix}-a", f"{prefix}-b"
    create_topic(broker_any.bootstrap, a, 2)
    create_topic(broker_any.bootstrap, b, 3)
    rows_a, rows_b = make_rows(2, 5, "a"), make_rows(3, 4, "b")
    produce(broker_any.bootstrap, a, rows_a)
    produce(broker_any.bootstrap, b, rows_b)
    # Every record is in before Spark looks (once, on Kafka, Spark's pattern read missed b's partition 2).
    assert (end_offsets(broker_any.bootstrap, a), end_offsets(broker_any.bootstrap, b)) == (
        {0: 5, 1: 5}, {0: 4, 1: 4, 2: 4})

    reader = (spark.read.format("kafka").option("kafka.bootstrap.servers", broker_any.bootstrap)
              .option("subscribePattern", f"{prefix}-.*"))
    got = [tuple(r) for r in reader.load().selectExpr("topic", *ROW).collect()]
    want = {(a, *r) for r in expected(rows_a)} | {(b, *r) for r in expected(rows_b)}
    assert set(got) == want and len(got) == len(want)

    got = read(spark, broker_any.bootstrap, assign={b: [0, 2]})
    want = {r for r in expected(rows_b) if r[0] in (0, 2)}
    assert set(got) == want and len(got) == len(want)


def test_kafka_group_id_option(spark, broker_any):
    topic = _topic(broker_any, "sk-gid")
    rows = make_rows(3, 6)
    produce(broker_any.bootstrap, topic, rows)
    group = _name("sk-gid-group")
    got = read(spark, broker_any.bootstrap, subscribe=topic, **{"kafka.group.id": group})
    assert set(got) == expected(rows) and len(got) == len(rows)


def test_batch_read_committed_skips_aborted_transactions(spark, broker_any):
    from tests.integration.txn_clients import txn_session, wait_stable, write_transactions

    topic = _topic(broker_any, "sk-txn", 2)
    with txn_session("confluent") as s:
        producer = s.producer(broker_any.bootstrap, f"tx-{topic}")
        try:
            # The last transaction is aborted: the latest offsets Spark reads up to end in a marker.
            written = write_transactions(producer, topic, [0, 1], [(True, 3), (False, 2), (True, 2), (False, 1)])
        finally:
            producer.close()
    wait_stable(broker_any.bootstrap, topic, [0, 1])
    reader = (spark.read.format("kafka").option("kafka.bootstrap.servers", broker_any.bootstrap)
              .option("subscribe", topic).option("kafka.isolation.level", "read_committed"))
    got = [tuple(r) for r in reader.load().selectExpr("partition", "offset", "value").collect()]
    assert sorted((p, o, bytes(v)) for p, o, v in got) == sorted((p, o, v) for p, o, v, commit in written if commit)
    # read_uncommitted, Spark's default, reads the aborted records too: the option is what hides them.
    everything = read(spark, broker_any.bootstrap, subscribe=topic)
    assert len(everything) == len(written)


# ---- structured streaming ----

def _stream(spark, bootstrap: str, topic: str, **options):
    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load().selectExpr(*ROW)


def _run_available_now(df, out: str, checkpoint: str, timeout: float = 90):
    query = (df.writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    assert query.awaitTermination(timeout), "the availableNow query did not finish"
    assert query.exception() is None
    return query


def test_streaming_restarts_from_its_checkpoint(spark, broker_any, tmp_path):
    topic = _topic(broker_any, "sk-stream")
    first = make_rows(3, 5)
    produce(broker_any.bootstrap, topic, first)
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")

    query = _run_available_now(_stream(spark, broker_any.bootstrap, topic), out, checkpoint)
    assert sum(p["numInputRows"] for p in query.recentProgress) == len(first)
    assert sorted(rows_of_parquet(spark, out)) == sorted(expected(first))

    more = make_rows(3, 4, start=5)
    produce(broker_any.bootstrap, topic, more)
    query = _run_available_now(_stream(spark, broker_any.bootstrap, topic), out, checkpoint)
    # Only the new records: the restarted query resumed at the checkpoint's offsets.
    assert sum(p["numInputRows"] for p in query.recentProgress) == len(more)
    assert sorted(rows_of_parquet(spark, out)) == sorted(expected(first + more))


def rows_of_parquet(spark, path: str) -> list[tuple]:
    return [tuple(r) for r in spark.read.parquet(path).select("partition", "offset", "key", "value", "ts").collect()]


def test_streaming_max_offsets_per_trigger(spark, broker_any, tmp_path):
    topic = _topic(broker_any, "sk-maxoff")
    rows = make_rows(3, 10)
    produce(broker_any.bootstrap, topic, rows)
    df = _stream(spark, broker_any.bootstrap, topic, maxOffsetsPerTrigger="10")
    query = _run_available_now(df, str(tmp_path / "out"), str(tmp_path / "checkpoint"))
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert len(sizes) >= 3 and max(sizes) <= 10 and sum(sizes) == len(rows)
    assert sorted(rows_of_parquet(spark, str(tmp_path / "out"))) == sorted(expected(rows))


def test_deprecated_offset_fetching_joins_consumer_groups(spark, broker_any, tmp_path):
    """spark.sql.streaming.kafka.useDeprecatedOffsetFetching=true: each query's driver
    subscribes with a KafkaConsumer in a group of its own (a source option of that name is
    ignored: it is a SQL conf). Two queries run at once in this application."""
    topic = _topic(broker_any, "sk-depr")
    rows = make_rows(3, 6)
    produce(broker_any.bootstrap, topic, rows)
    prefix = _name("sk-depr-group")
    spark.conf.set("spark.sql.streaming.kafka.useDeprecatedOffsetFetching", "true")
    try:
        queries = []
        for i in range(2):
            df = _stream(spark, broker_any.bootstrap, topic, groupIdPrefix=f"{prefix}-{i}")
            queries.append(df.writeStream.format("parquet").option("path", str(tmp_path / f"out{i}"))
                           .option("checkpointLocation", str(tmp_path / f"checkpoint{i}"))
                           .trigger(availableNow=True).start())
        for q in queries:
            assert q.awaitTermination(120), "the availableNow query did not finish"
            assert q.exception() is None
    finally:
        spark.conf.unset("spark.sql.streaming.kafka.useDeprecatedOffsetFetching")
    for i in range(2):
        assert sorted(rows_of_parquet(spark, str(tmp_path / f"out{i}"))) == sorted(expected(rows))
    if broker_any.kind == "kcoord":
        events = [e for e in list(broker_any.app.recorded_events) if e.group_id.startswith(prefix)]
        for i in range(2):
            kinds = {str(e.kind) for e in events if e.group_id.startswith(f"{prefix}-{i}-")}
            assert {"member_joined", "join_completed", "assignment_received", "stable"} <= kinds, kinds
        assert len({e.group_id for e in events}) == 2


# ---- the Kafka sink ----

def test_write_to_kafka_and_read_back(spark, broker_any):
    topic = _topic(broker_any, "sk-write")
    data = [(f"wk{i}", f"wv{i}", i % 3) for i in range(24)]
    before = int(time.time() * 1000)
    # One Spark partition in key order: each Kafka partition receives its records in order.
    (spark.createDataFrame(data, "key string, value string, partition int").coalesce(1)
     .write.format("kafka").option("kafka.bootstrap.servers", broker_any.bootstrap).option("topic", topic).save())
    after = int(time.time() * 1000)
    got = read(spark, broker_any.bootstrap, subscribe=topic)
    want = {(p, off, k, v) for p in range(3)
            for off, (k, v, _) in enumerate(r for r in data if r[2] == p)}
    assert {r[:4] for r in got} == want and len(got) == len(want)
    assert all(before <= r[4] <= after for r in got)


# ---- compressed record batches ----

@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
def test_reads_compressed_batches(spark, broker_any, client):
    topic = _topic(broker_any, f"sk-codec-{client}", len(CODECS))
    rows = []
    for p, codec in enumerate(CODECS):
        mine = [r for r in make_rows(len(CODECS), 8, codec) if r[0] == p]
        produce(broker_any.bootstrap, topic, mine, client=client, compression=codec)
        rows += mine
    if broker_any.kind == "kcoord":  # the batches really are compressed, one codec per partition
        stored = broker_any.app.broker.topics.get(topic).partitions
        from wire.records import iter_batches
        for p, codec in enumerate(CODECS):
            names = {b.compression_name for sb in stored[p].batches for b in iter_batches(sb.data)}
            assert names == {codec}
    got = read(spark, broker_any.bootstrap, subscribe=topic)
    assert set(got) == expected(rows) and len(got) == len(rows)
    # A timestamp inside a compressed batch: the broker decompresses it to find the record.
    start = {str(p): BASE_TS + p * 100_000 + 3 * 1000 for p in range(len(CODECS))}
    got = read(spark, broker_any.bootstrap, subscribe=topic, startingOffsetsByTimestamp={topic: start})
    want = {r for r in expected(rows) if r[1] >= 3}
    assert set(got) == want and len(got) == len(want)


def test_streaming_resumes_after_the_leaders_broker_is_killed(spark, tmp_path):
    """kcoord with three brokers (docs/cluster.md): a stream's checkpointed query reads a
    replicated topic, the broker leading it is killed (kill -9: its partitions move once its
    session times out), more records arrive through the new leaders, and the query run again
    from its checkpoint reads exactly those. Spark's executors fetch through Kafka's Java
    client, which the failover scenarios (test_coordinator_failover.py) also run against the
    three-node reference Kafka; Spark itself runs here on kcoord's cluster only, its session
    being this module's."""
    from kcoord.testing.failover import KcoordCluster, _leaders

    with KcoordCluster(broker_session_timeout_ms=3000) as cluster:
        topic = _name("sk-failover")
        cluster.create_topic(topic, 3)
        first = make_rows(3, 5)
        produce(cluster.bootstrap, topic, first)
        out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
        query = _run_available_now(_stream(spark, cluster.bootstrap, topic), out, checkpoint)
        assert sum(p["numInputRows"] for p in query.recentProgress) == len(first)
        victim = _leaders(cluster.bootstrap, topic)[0]
        cluster.kill(victim)
        more = make_rows(3, 4, start=5)
        produce(cluster.bootstrap, topic, more)   # retried until the partitions' new leaders take them
        assert victim not in _leaders(cluster.bootstrap, topic).values()
        query = _run_available_now(_stream(spark, cluster.bootstrap, topic), out, checkpoint)
        assert sum(p["numInputRows"] for p in query.recentProgress) == len(more)
        assert sorted(rows_of_parquet(spark, out)) == sorted(expected(first + more))
