"""`kcoord report`: the PySpark job.

Inputs are listed and sniffed on the driver (journal or Kafka server.log, gzip
or not); Spark reads and parses them in parallel, computes rebalances per
group, writes Parquet tables and hands small aggregates to the HTML report.

A journal topic (`kcoord serve --journal-topic`) is read with Spark's Kafka source:
once, earliest to latest (`run_report`), or as a structured stream that rewrites the
tables and the report after every micro-batch (`run_follow`). Its record values are
the file journal's lines, so they go through the very same parser.
"""
from __future__ import annotations

import gzip
import logging
import os
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from kcoord.analytics import events as ev
from kcoord.analytics import rebalances as rb
from kcoord.analytics import share as sh
from kcoord.analytics import streams as st
from kcoord.analytics import transactions as tx


def list_inputs(inputs) -> list[tuple[str, str]]:
    """[(path, 'journal'|'kafka-log')] for every non-empty file under `inputs`."""
    files: list[Path] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            files += sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith("."))
        elif p.is_file():
            files.append(p)
        else:
            raise FileNotFoundError(f"input not found: {item}")
    out = []
    for f in files:
        first = _first_line(f)
        if first is not None:
            out.append((str(f.resolve()), ev.sniff_kind(first)))
    return out


def _first_line(path: Path) -> str | None:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.strip():
                    return line
    except (OSError, EOFError):
        return None
    return None


def parse_time(text: str | None) -> int | None:
    if text is None:
        return None
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def _parse_partition(kind):
    def run(lines):
        skips: dict[str, int] = {}
        for row in ev.parse_lines(lines, kind, "kcoord", skips):
            yield row
        for reason, n in skips.items():
            yield ev.event(0, kind, None, "", "_skip", reason=reason, commits=n)
    return run


def spark_session(master: str = "local[*]", app_name: str = "kcoord-report", shuffle_partitions: int | None = 8,
                  kafka_connector: bool = False, driver_java_options: tuple[str, ...] = ()):
    """kafka_connector: with Spark's Kafka source (its jars fetched with Maven once, see
    kcoord.testing.spark_kafka; SparkKafkaUnavailable says what is missing).
    driver_java_options: the driver JVM's options (in local mode, the executors' JVM too)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    b = SparkSession.builder
    if kafka_connector:
        from kcoord.testing.spark_kafka import jars

        b = b.config("spark.jars", ",".join(str(p) for p in jars()))
    b = (b.master(master).appName(app_name)
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")  # _Progress prints ours, one line per stage
         .config("spark.sql.session.timeZone", "UTC"))
    if shuffle_partitions is not None:
        b = b.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    if driver_java_options:
        b = b.config("spark.driver.extraJavaOptions", " ".join(driver_java_options))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class _Progress:
    """Prints Spark's task progress while a job runs (long inputs take minutes)."""

    def __init__(self, sc, out=sys.stderr, every: float = 2.0):
        self.sc, self.out, self.every = sc, out, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)

    def _run(self):
        tracker = self.sc.statusTracker()
        while not self._stop.wait(self.every):
            for sid in tracker.getActiveStageIds():
                info = tracker.getStageInfo(sid)
                if info is not None and info.numTasks:
                    print(f"[report] stage {sid}: {info.numCompletedTasks}/{info.numTasks} tasks", file=self.out,
                          flush=True)


def event_schema():
    from pyspark.sql.types import IntegerType, LongType, MapType, StringType, StructField, StructType

    ints = {"generation", "members", "partition", "txn_partitions"}
    longs = {"time_ms", "commits", "producer_id"}
    maps = {"counts": MapType(StringType(), LongType())}
    return StructType([StructField(f, maps.get(f) or (LongType() if f in longs else IntegerType() if f in ints
                                                      else StringType()))
                       for f in ev.FIELDS])


def rebalance_schema():
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    longs = {"start_ms", "end_ms", "duration_ms"}
    ints = {"seq", "generation_from", "generation_to", "restarts", "members_before", "members_after",
            "members_affected", "joined", "left", "failed"}
    return StructType([StructField(f, LongType() if f in longs else IntegerType() if f in ints else StringType())
                       for f in rb.REBALANCE_FIELDS])


OFFSETS_TOPIC = "__consumer_offsets"


def topic_lines(spark, bootstrap: str, topic: str):
    """A journal topic's record values, earliest to latest, as an RDD of journal lines."""
    df = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    return _values(df)


def offsets_topic_rows(spark, bootstrap: str, topic: str = "__consumer_offsets"):
    """`__consumer_offsets` (Kafka's or kcoord's), earliest to latest, as an RDD of event
    tuples (kcoord.analytics.offsets_topic): each Spark partition decodes its own records
    with Kafka's schemas, nothing but the rows is collected.

    Spark's offset reader on an AdminClient (its default since 3.4) leaves internal topics out
    whatever the option, `subscribe` or `assign`: it would read none of `__consumer_offsets`,
    on Kafka as on kcoord. So the partitions are assigned and read with its consumer-based
    reader (spark.sql.streaming.kafka.useDeprecatedOffsetFetching, set for this read only); the
    decoded rows are persisted (memory and disk, on the executors) while it is set.

    Each Spark partition decodes one topic partition, and the decoded rows are then coalesced
    to the session's parallelism: a broker's 50 mostly empty partitions would otherwise be 50
    tasks in every stage of the report (on a 2-core local session, ~100 s of task overhead for
    a few hundred rows)."""
    import json

    from kcoord.protocol_client import Admin

    with Admin(bootstrap, timeout=10.0) as admin:
        partitions = admin.topic_partitions(topic)
    if not partitions:
        raise ValueError(f"{bootstrap} has no {topic} yet (a broker creates it when a group first looks up its "
                         f"coordinator)")
    from pyspark import StorageLevel

    conf = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"
    before = spark.conf.get(conf, None)
    spark.conf.set(conf, "true")
    try:
        df = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("assign", json.dumps({topic: partitions}))
              .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
        rows = (df.selectExpr("key", "value", "partition", "topic", "unix_millis(timestamp) AS ts_ms").rdd
                .mapPartitions(_decode_offsets_partition)
                .coalesce(spark.sparkContext.defaultParallelism).persist(StorageLevel.MEMORY_AND_DISK))
        rows.count()
    finally:
        if before is None:
            spark.conf.unset(conf)
        else:
            spark.conf.set(conf, before)
    return rows


def _decode_offsets_partition(rows):
    from kcoord.analytics.offsets_topic import rows_from_records

    skips: dict[str, int] = {}
    for row in rows_from_records(((r[0], r[1], r[2], r[3], r[4]) for r in rows), skips):
        yield tuple(row[f] for f in ev.FIELDS)
    for reason, n in skips.items():
        yield tuple(ev.event(0, "offsets_topic", None, "", "_skip", reason=reason, commits=n)[f] for f in ev.FIELDS)


def _values(df):
    # A null value (a tombstone someone produced) is no journal line: skipped like a blank one.
    return df.selectExpr("CAST(value AS STRING) AS line").rdd.map(lambda r: r[0] or "")


def compute(spark, files: list[tuple[str, str]], *, journal_lines=None, offsets_rows=None, since_ms=None,
            until_ms=None):
    """Returns (events_df, rebalances_df, hourly_df, skips dict). `journal_lines`: an RDD of
    journal lines read from elsewhere than files (a journal topic); `offsets_rows`: an RDD of
    event tuples read from `__consumer_offsets` (offsets_topic_rows)."""
    events, _losses, skips = parse_inputs(spark, files, journal_lines=journal_lines, offsets_rows=offsets_rows,
                                          since_ms=since_ms, until_ms=until_ms)
    rebalances, hourly = rebalance_tables(spark, events)
    return events, rebalances, hourly, skips


def parse_inputs(spark, files: list[tuple[str, str]], *, journal_lines=None, offsets_rows=None, since_ms=None,
                 until_ms=None):
    """(events_df, losses_df, skips dict): the events of every input, the times a broker was lost
    as (broker, time_ms) (kcoord.analytics.failover), and the lines skipped, by reason."""
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    rdds = []
    for kind in ("journal", "kafka-log"):
        paths = [p for p, k in files if k == kind]
        if paths:
            rdds.append(sc.textFile(",".join(paths)).mapPartitions(_parse_partition(kind)))
    if journal_lines is not None:
        rdds.append(journal_lines.mapPartitions(_parse_partition("journal")))
    rdds = [r.map(lambda r: tuple(r[f] for f in ev.FIELDS)) for r in rdds]
    if offsets_rows is not None:
        rdds.append(offsets_rows)
    if not rdds:
        raise ValueError("no input lines")
    parsed = sc.union(rdds) if len(rdds) > 1 else rdds[0]
    all_rows = spark.createDataFrame(parsed, event_schema()).cache()
    skips = {r["reason"]: r["n"] for r in all_rows.where(F.col("kind") == "_skip")
             .groupBy("reason").agg(F.sum("commits").alias("n")).collect()}
    events = all_rows.where(~F.col("kind").isin("_skip", ev.BROKER_DISCONNECTED))
    losses = all_rows.where(F.col("kind") == ev.BROKER_DISCONNECTED).select("broker", "time_ms")
    if since_ms is not None:
        events = events.where(F.col("time_ms") >= since_ms)
    if until_ms is not None:
        events = events.where(F.col("time_ms") < until_ms)
    events = events.withColumn("time", F.timestamp_millis("time_ms")).cache()
    return events, losses, skips


def rebalance_tables(spark, events):
    """(rebalances_df, hourly_df) from the events."""
    from pyspark.sql import functions as F

    membership = events.where((F.col("kind") != "offset_commits") & F.col("transactional_id").isNull()).drop("time")
    rebalances_rdd = (membership.rdd.map(lambda r: (r["group_id"], r.asDict()))
                      .groupByKey()
                      .flatMap(lambda kv: rb.rebalances_for_group(kv[1]))
                      .map(lambda r: tuple(r[f] for f in rb.REBALANCE_FIELDS)))
    rebalances = (spark.createDataFrame(rebalances_rdd, rebalance_schema())
                  .withColumn("start", F.timestamp_millis("start_ms"))
                  .withColumn("end", F.timestamp_millis("end_ms"))).cache()

    from pyspark.sql.types import LongType, StringType, StructField, StructType
    # Rebalances read from __consumer_offsets have no start: no stop-the-world time either.
    slices = rebalances.where(F.col("end_ms").isNotNull() & F.col("start_ms").isNotNull()).rdd.flatMap(
        lambda r: rb.hourly_slices({"group_id": r["group_id"], "start_ms": r["start_ms"], "end_ms": r["end_ms"]}))
    stw = spark.createDataFrame(slices, StructType([StructField("group_id", StringType()),
                                                    StructField("hour_ms", LongType()),
                                                    StructField("stw_ms", LongType())]))
    stw = stw.groupBy("group_id", "hour_ms").agg(F.sum("stw_ms").alias("stop_the_world_ms"))
    hour = F.col("time_ms") - F.col("time_ms") % rb.HOUR_MS
    # counted in the hour they began, or ended when only that is known (__consumer_offsets)
    began = F.coalesce(F.col("start_ms"), F.col("end_ms"))
    started = (rebalances.withColumn("hour_ms", began - began % rb.HOUR_MS)
               .groupBy("group_id", "hour_ms").agg(F.count("*").alias("rebalances")))
    commits = (events.where(F.col("kind") == "offset_commits").withColumn("hour_ms", hour)
               .groupBy("group_id", "hour_ms").agg(F.sum("commits").alias("offset_commits")))
    static = (events.where(F.col("kind") == "static_rejoin_no_rebalance").withColumn("hour_ms", hour)
              .groupBy("group_id", "hour_ms").agg(F.count("*").alias("static_rejoins_without_rebalance")))
    hourly = (stw.join(started, ["group_id", "hour_ms"], "full").join(commits, ["group_id", "hour_ms"], "full")
              .join(static, ["group_id", "hour_ms"], "full")
              .na.fill(0, ["stop_the_world_ms", "rebalances", "offset_commits", "static_rejoins_without_rebalance"])
              .withColumn("hour", F.timestamp_millis("hour_ms"))
              .orderBy("group_id", "hour_ms")).cache()
    return rebalances, hourly


def transactions_table(spark, events):
    """One row per transaction (kcoord.analytics.transactions), per transactional id on the executors."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    longs = {"producer_id", "start_ms", "end_ms", "duration_ms"}
    ints = {"seq", "producer_epoch", "partitions"}
    schema = StructType([StructField(f, LongType() if f in longs else IntegerType() if f in ints else StringType())
                         for f in tx.TRANSACTION_FIELDS])
    rows = (events.where(F.col("transactional_id").isNotNull()).drop("time").rdd
            .map(lambda r: (r["transactional_id"], r.asDict())).groupByKey()
            .flatMap(lambda kv: tx.transactions_for_id(kv[1]))
            .map(lambda t: tuple(t[f] for f in tx.TRANSACTION_FIELDS)))
    return (spark.createDataFrame(rows, schema).withColumn("start", F.timestamp_millis("start_ms"))
            .withColumn("end", F.timestamp_millis("end_ms"))).cache()


def streams_groups_table(spark, events):
    """One row per streams group (kcoord.analytics.streams), per group on the executors."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    longs, strings = {"first_ms", "last_ms"}, {"group_id", "sources"}
    schema = StructType([StructField(f, LongType() if f in longs else StringType() if f in strings else IntegerType())
                         for f in st.STREAMS_GROUP_FIELDS])
    rows = (events.where(F.col("group_id").isNotNull() & (F.col("kind") != "offset_commits")).drop("time").rdd
            .map(lambda r: (r["group_id"], r.asDict())).groupByKey()
            .map(lambda kv: st.streams_group_row(kv[1])).filter(lambda row: row is not None)
            .map(lambda row: tuple(row[f] for f in st.STREAMS_GROUP_FIELDS)))
    return spark.createDataFrame(rows, schema).orderBy("group_id").cache()


def share_tables(spark, events):
    """(share_groups_df, share_minutely_df): one row per share group and one per share group and
    minute (kcoord.analytics.share), per group on the executors."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    def schema(fields):
        return StructType([StructField(f, StringType() if f == "group_id" else LongType()) for f in fields])

    by_group = (events.where(F.col("group_id").isNotNull() & (F.col("kind") != "offset_commits")).drop("time").rdd
                .map(lambda r: (r["group_id"], r.asDict())).groupByKey().cache())
    groups = (by_group.map(lambda kv: sh.share_group_row(kv[1])).filter(lambda row: row is not None)
              .map(lambda row: tuple(row[f] for f in sh.SHARE_GROUP_FIELDS)))
    minutes = (by_group.flatMap(lambda kv: sh.share_minutely_rows(kv[1]))
               .map(lambda row: tuple(row[f] for f in sh.SHARE_MINUTELY_FIELDS)))
    return (spark.createDataFrame(groups, schema(sh.SHARE_GROUP_FIELDS)).orderBy("group_id").cache(),
            spark.createDataFrame(minutes, schema(sh.SHARE_MINUTELY_FIELDS))
            .withColumn("minute", F.timestamp_millis("minute_ms")).orderBy("group_id", "minute_ms").cache())


def transactions_summary(transactions) -> dict:
    """The counts by outcome, per transactional id, and (20,000 at most) the transactions."""
    rows = [r.asDict() for r in transactions.drop("start", "end").orderBy("transactional_id", "start_ms")
            .limit(20_000).collect()]
    from pyspark.sql import functions as F

    counts = {o: 0 for o in tx.OUTCOMES}
    for r in transactions.groupBy("outcome").count().collect():
        counts[r["outcome"]] = r["count"]
    per_id = (transactions.groupBy("transactional_id")
              .agg(F.count("*").alias("opened"),
                   *(F.sum(F.when(F.col("outcome") == o, 1).otherwise(0)).alias(o) for o in tx.OUTCOMES),
                   F.sum("duration_ms").alias("total_ms"), F.max("duration_ms").alias("max_ms"))
              .orderBy(F.desc("opened"), "transactional_id").limit(50).collect())
    return {"count": sum(counts.values()), "outcomes": counts, "per_id": [r.asDict() for r in per_id],
            "transactions": rows}


def window_schema():
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    from kcoord.analytics import failover as fo

    longs = {"start_ms", "end_ms", "duration_ms"}
    return StructType([StructField(f, LongType() if f in longs else IntegerType() if f == "partition" else StringType())
                       for f in fo.WINDOW_FIELDS])


def failover_windows(spark, events, losses):
    """The failover windows (kcoord.analytics.failover) as a DataFrame: per group on the executors,
    then, on the driver (there are few), the starts that need evidence from other groups' records."""
    from pyspark.sql import functions as F

    from kcoord.analytics import failover as fo

    moved = events.where(F.col("kind").isin(*fo.KINDS)).select("group_id").distinct()
    windows = (events.join(moved, "group_id", "left_semi").drop("time").rdd
               .map(lambda r: (r["group_id"], r.asDict())).groupByKey()
               .flatMap(lambda kv: fo.windows_for_group(kv[1])).collect())
    windows.sort(key=lambda w: (w["group_id"], w["source"], w["end_ms"] if w["end_ms"] is not None else 1 << 62))
    restarts, loads = fo.restart_loads(windows)
    restart_starts = {}
    if restarts:
        parts = (events.select("group_id", "time_ms", "kind", "source").rdd
                 .mapPartitions(lambda rows: [fo.last_records_before(restarts, fo.journal_times(rows, loads))])
                 .collect())
        restart_starts = fo.carry_forward(restarts, fo.merge(parts, max))
    pending = fo.lost_pending(windows)
    lost_at = {}
    if pending:
        queries = [q for _, q in pending]
        parts = losses.rdd.mapPartitions(lambda rows: [fo.first_losses(queries, rows)]).collect()
        lost_at = {pending[j][0]: t for j, t in fo.merge(parts, min).items()}
    rows = [tuple(w[f] for f in fo.WINDOW_FIELDS) for w in fo.refine_starts(windows, restart_starts, lost_at)]
    return (spark.createDataFrame(rows, window_schema())
            .withColumn("start", F.timestamp_millis("start_ms"))
            .withColumn("end", F.timestamp_millis("end_ms")))


def connect_schemas():
    from pyspark.sql.types import (ArrayType, BooleanType, IntegerType, LongType, StringType, StructField,
                                   StructType)

    from kcoord.analytics import connect as cx

    def kind(f):
        if f in cx.LIST_FIELDS:
            return ArrayType(StringType())
        if f in ("time_ms", "unassigned_ms", "from_ms", "to_ms"):
            return LongType()
        if f == "settled":
            return BooleanType()
        if f in ("rebalance_seq", "round", "generation", "workers", "tasks_held", "tasks_assigned", "delay_ms"):
            return IntegerType()
        return StringType()
    return (StructType([StructField(f, kind(f)) for f in cx.ROUND_FIELDS]),
            StructType([StructField(f, kind(f)) for f in cx.HOLDING_FIELDS]))


def connect_tables(spark, files, journal_lines=None):
    """(connect_rounds, connect_holdings) DataFrames from the journal's Connect records
    (kcoord.analytics.connect): per group, on the executors."""
    from kcoord.analytics import connect as cx

    sc = spark.sparkContext
    rdds = []
    paths = [p for p, k in files if k == "journal"]
    if paths:
        rdds.append(sc.textFile(",".join(paths)))
    if journal_lines is not None:
        rdds.append(journal_lines)
    rows = (sc.union(rdds) if len(rdds) > 1 else rdds[0] if rdds else sc.emptyRDD())
    rows = (rows.map(cx.parse_line).filter(lambda x: x is not None).groupByKey()
            .flatMap(lambda kv: _tagged(cx.rounds_for_group(kv[1]))).cache())
    round_schema, holding_schema = connect_schemas()
    rounds = spark.createDataFrame(rows.filter(lambda t: t[0] == "r").map(
        lambda t: tuple(t[1][f] for f in cx.ROUND_FIELDS)), round_schema)
    holdings = spark.createDataFrame(rows.filter(lambda t: t[0] == "h").map(
        lambda t: tuple(t[1][f] for f in cx.HOLDING_FIELDS)), holding_schema)
    return rounds, holdings


def _tagged(pair):
    rounds, holdings = pair
    return [("r", r) for r in rounds] + [("h", h) for h in holdings]


def summarise(events, rebalances, hourly) -> dict:
    from pyspark.sql import functions as F

    done = rebalances.where(F.col("duration_ms").isNotNull())
    return {
        "events": events.count(),
        "groups": events.where(F.col("group_id").isNotNull()).select("group_id").distinct().count(),
        "rebalances": [r.asDict() for r in rebalances.drop("start", "end").orderBy("group_id", "start_ms")
                       .limit(50_000).collect()],
        "rebalance_count": rebalances.count(),
        "top_groups": [r.asDict() for r in done.groupBy("group_id")
                       .agg(F.sum("duration_ms").alias("total_ms"), F.count("*").alias("rebalances"),
                            F.max("duration_ms").alias("max_ms"))
                       .orderBy(F.desc("total_ms")).limit(20).collect()],
        "top_members": [r.asDict() for r in rebalances.where(F.col("trigger_client").isNotNull())
                        .groupBy("trigger_client", "cause").agg(F.count("*").alias("rebalances"))
                        .orderBy(F.desc("rebalances")).limit(20).collect()],
        "causes": {r["cause"] or "unknown": r["n"] for r in rebalances.groupBy("cause").agg(F.count("*").alias("n")).collect()},
        "static_avoided": [r.asDict() for r in events.where(F.col("kind") == "static_rejoin_no_rebalance")
                           .groupBy("group_id").agg(F.count("*").alias("rejoins")).orderBy(F.desc("rejoins"))
                           .limit(20).collect()],
        "hourly_top": [r.asDict() for r in hourly.orderBy(F.desc("stop_the_world_ms")).drop("hour")
                       .limit(20).collect()],
    }


def failover_summary(windows) -> dict:
    """The failover windows' count, the longest one's duration and (20,000 at most) the windows."""
    from pyspark.sql import functions as F

    stats = windows.agg(F.count("*").alias("n"), F.max("duration_ms").alias("longest")).collect()[0]
    return {"count": stats["n"], "longest_ms": stats["longest"],
            "windows": [r.asDict() for r in windows.drop("start", "end").orderBy("group_id", "end_ms")
                        .limit(20_000).collect()]}


def run_report(inputs, out_dir, *, master: str = "local[*]", since: str | None = None, until: str | None = None,
               kafka: str | None = None, topic: str | None = None, offsets_topic: bool = False, spark=None,
               stream=sys.stderr) -> int:
    """Files `inputs`, the journal topic `topic` on `kafka` and/or (`offsets_topic`, or `topic`
    named __consumer_offsets) `kafka`'s __consumer_offsets, read once, into `out_dir`."""
    t0 = time.monotonic()
    if topic == OFFSETS_TOPIC:
        topic, offsets_topic = None, True
    files = list_inputs(inputs)
    if files or not kafka:
        size = sum(os.path.getsize(p) for p, _ in files)
        print(f"[report] {len(files)} input files ({size / 1e6:.1f} MB): "
              f"{sum(k == 'journal' for _, k in files)} journals, "
              f"{sum(k == 'kafka-log' for _, k in files)} broker logs", file=stream, flush=True)
    if kafka and topic:
        print(f"[report] journal topic {topic} on {kafka}, earliest to latest", file=stream, flush=True)
    if kafka and offsets_topic:
        print(f"[report] {OFFSETS_TOPIC} on {kafka}, earliest to latest", file=stream, flush=True)
    if not files and not kafka:
        print("[report] nothing to read", file=stream)
        return 1
    spark, own = _session(spark, master, kafka is not None)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    try:
        with _Progress(spark.sparkContext, stream):
            lines = topic_lines(spark, kafka, topic) if kafka and topic else None
            stored = offsets_topic_rows(spark, kafka) if kafka and offsets_topic else None
            summary = _write_outputs(spark, out, files, lines, since, until,
                                     inputs=len(files) + bool(lines) + bool(stored), offsets_rows=stored)
    finally:
        if own:
            spark.stop()
    _print_done(summary, out, stream, f"{time.monotonic() - t0:.1f}s")
    return 0


def run_follow(kafka: str, topic: str, out_dir, *, master: str = "local[*]", since: str | None = None,
               until: str | None = None, interval_s: float = 5.0, max_batches: int | None = None,
               stop: threading.Event | None = None, spark=None, stream=sys.stderr) -> int:
    """Keep `out_dir`'s tables and report current with the journal topic, until `stop` is set
    (or `max_batches` micro-batches with records have been handled).

    Each micro-batch's lines are kept under DIR/_follow/lines (one directory per batch id, so
    a batch Spark replays after a failure overwrites its own copy), and the tables are then
    computed again from every line kept: a rebalance may begin in one batch and end in the
    next, and recomputing is what keeps the output equal to a batch report of the same lines.
    The stream's checkpoint (DIR/_follow/checkpoint) makes a restart resume where it stopped."""
    stop = stop or threading.Event()
    out = Path(out_dir)
    lines_dir, checkpoint = out / "_follow" / "lines", out / "_follow" / "checkpoint"
    lines_dir.mkdir(parents=True, exist_ok=True)
    spark, own = _session(spark, master, True)
    handled = {"batches": 0}
    busy = threading.Lock()   # held while a batch runs

    def on_batch(batch, batch_id):
        with busy:
            _follow_batch(batch, batch_id)

    def _follow_batch(batch, batch_id):
        t0 = time.monotonic()
        batch.selectExpr("CAST(value AS STRING) AS line").write.mode("overwrite").parquet(
            str(lines_dir / f"batch={batch_id}"))
        lines = spark.read.parquet(str(lines_dir)).select("line").rdd.map(lambda r: r[0] or "")
        summary = _write_outputs(spark, out, [], lines, since, until, inputs=1)
        # Every batch computes the tables anew: the previous batch's cached copies only fill memory.
        spark.catalog.clearCache()
        handled["batches"] += 1
        _print_done(summary, out, stream, f"batch {batch_id}, {time.monotonic() - t0:.1f}s")

    print(f"[report] following journal topic {topic} on {kafka} (checkpoint {checkpoint}); "
          f"SIGINT or SIGTERM stops", file=stream, flush=True)
    query = None
    try:
        source = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka)
                  .option("subscribe", topic).option("startingOffsets", "earliest").load())
        query = (source.writeStream.foreachBatch(on_batch).option("checkpointLocation", str(checkpoint))
                 .trigger(processingTime=f"{interval_s} seconds").start())
        while query.isActive and not stop.is_set():
            if max_batches is not None and handled["batches"] >= max_batches:
                break
            query.awaitTermination(0.5)
        failure = query.exception()
        if failure is not None:
            print(f"[report] the stream failed: {str(failure).splitlines()[0]}", file=stream, flush=True)
            return 1
    finally:
        if query is not None and query.isActive:
            _stop_between_batches(query, busy)
        if own:
            spark.stop()
    print(f"[report] stopped after {handled['batches']} batches", file=stream, flush=True)
    return 0


def _stop_between_batches(query, busy: threading.Lock) -> None:
    """Stop the stream once the batch in flight is done: stopping interrupts a running batch,
    which py4j then logs as an error with a Java stack trace. A batch that begins in between is
    still interrupted; its offsets are not committed to the checkpoint, so a restart does it
    again, and the interruption is expected: py4j's log is quiet while the stream stops."""
    with busy:
        pass
    py4j = logging.getLogger("py4j.clientserver")
    level = py4j.level
    py4j.setLevel(logging.CRITICAL)
    try:
        query.stop()
    finally:
        py4j.setLevel(level)


def _session(spark, master: str, kafka_connector: bool):
    """(session, whether we own it). An active session is used and left running: a caller in
    the same process (a test, a notebook) started it and will stop it."""
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        if spark is not None:
            return spark, False
        return spark_session(master, kafka_connector=kafka_connector), True
    return spark, False


def _write_outputs(spark, out: Path, files, lines, since, until, inputs: int, offsets_rows=None) -> dict:
    from kcoord.analytics.html import write_report

    events, losses, skips = parse_inputs(spark, files, journal_lines=lines, offsets_rows=offsets_rows,
                                         since_ms=parse_time(since), until_ms=parse_time(until))
    rebalances, hourly = rebalance_tables(spark, events)
    events.write.mode("overwrite").parquet(str(out / "events"))
    rebalances.write.mode("overwrite").parquet(str(out / "rebalances"))
    hourly.write.mode("overwrite").parquet(str(out / "group_hourly"))
    windows = failover_windows(spark, events, losses)
    windows.write.mode("overwrite").parquet(str(out / "failover_windows"))
    summary = summarise(events, rebalances, hourly)
    summary["failover"] = failover_summary(windows)
    transactions = transactions_table(spark, events)
    transactions.write.mode("overwrite").parquet(str(out / "transactions"))
    summary["transactions"] = transactions_summary(transactions)
    streams_groups = streams_groups_table(spark, events)
    streams_groups.write.mode("overwrite").parquet(str(out / "streams_groups"))
    summary["streams_groups"] = [r.asDict() for r in streams_groups.limit(1000).collect()]
    share_groups, share_minutely = share_tables(spark, events)
    share_groups.write.mode("overwrite").parquet(str(out / "share_groups"))
    share_minutely.write.mode("overwrite").parquet(str(out / "share_minutely"))
    summary["share_groups"] = [r.asDict() for r in share_groups.limit(1000).collect()]
    summary["share_minutely"] = [r.asDict() for r in share_minutely.drop("minute").limit(20_000).collect()]
    connect_rounds, connect_holdings = connect_tables(spark, files, lines)
    since_ms, until_ms = parse_time(since), parse_time(until)
    if since_ms is not None:
        connect_rounds = connect_rounds.where(connect_rounds.time_ms >= since_ms)
    if until_ms is not None:
        connect_rounds = connect_rounds.where(connect_rounds.time_ms < until_ms)
    connect_rounds.write.mode("overwrite").parquet(str(out / "connect_rounds"))
    connect_holdings.write.mode("overwrite").parquet(str(out / "connect_holdings"))
    summary["connect"] = {"rounds": [r.asDict() for r in connect_rounds.orderBy("group_id", "time_ms")
                                     .limit(20_000).collect()],
                          "holdings": [r.asDict() for r in connect_holdings.limit(100_000).collect()]}
    summary["skips"] = skips
    summary["inputs"] = inputs
    write_report(summary, out / "report.html")
    return summary


def _print_done(summary: dict, out: Path, stream, took: str) -> None:
    skips = summary["skips"]
    print(f"[report] {summary['events']} events, {summary['rebalance_count']} rebalances in {summary['groups']} "
          f"groups; skipped {sum(skips.values())} lines {dict(skips) if skips else ''}; {took}; "
          f"{summary['failover']['count']} failover windows; {summary['transactions']['count']} transactions; "
          f"{len(summary['streams_groups'])} streams groups; {len(summary['share_groups'])} share groups; "
          f"wrote {out}/{{events,rebalances,group_hourly,failover_windows,transactions,streams_groups,"
          f"share_groups,share_minutely,connect_rounds,connect_holdings}} and "
          f"{out / 'report.html'}", file=stream, flush=True)
