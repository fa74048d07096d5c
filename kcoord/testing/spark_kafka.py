"""Spark's real Kafka source and sink (spark-sql-kafka-0-10), for tests against kcoord
and the reference Kafka.

    python -m kcoord.testing.spark_kafka fetch     # what `make install-test` runs
    spark = spark_session()                        # local[2] SparkSession with the connector
    spark.read.format("kafka").option("kafka.bootstrap.servers", b).option("subscribe", t).load()

The connector's jars (and what they need: kafka-clients, commons-pool2, ...) are fetched
with Maven once into ~/.cache/kcoord/spark-kafka-VERSION/jars (root directory: env
KCOORD_KAFKA_CACHE; version: pyspark's, or env KCOORD_SPARK_VERSION). Spark gets only the
jars pyspark does not ship itself: a second copy of scala-library, snappy or lz4 at another
version on the driver's classpath is a conflict, not a help. Anything missing raises
SparkKafkaUnavailable with one line saying what to install or do.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from kcoord.testing import jvm, maven

POM = Path(__file__).with_name("spark-kafka") / "pom.xml"
MARKER = maven.MARKER
CONNECTOR = "spark-sql-kafka-0-10_2.13"


class SparkKafkaUnavailable(RuntimeError):
    """Spark's Kafka connector cannot run here; the message says what to install or do."""


def spark_version() -> str:
    if os.environ.get("KCOORD_SPARK_VERSION"):
        return os.environ["KCOORD_SPARK_VERSION"]
    try:
        import pyspark
    except ImportError:
        raise SparkKafkaUnavailable("pyspark is not installed: pip install -e '.[analytics]' "
                                    "(or `make install-test`)") from None
    return pyspark.__version__


def cache_dir(version: str | None = None) -> Path:
    return maven.cache_root() / f"spark-kafka-{version or spark_version()}"


def fetch(version: str | None = None) -> Path:
    """The directory of the connector's jars, fetched with Maven the first time (~15 MB)."""
    version = version or spark_version()
    return jvm.fetch_jars(cache_dir(version), "jars", POM, {"spark.version": version}, f"{CONNECTOR}-*.jar",
                          f"{CONNECTOR} {version}", SparkKafkaUnavailable)


_VERSIONED = re.compile(r"^(?P<artifact>.+?)-\d+\.\d+(?:\.\d+)?(?:[-.]\w+)*\.jar$")


def _artifact(jar_name: str) -> str:
    """'kafka-clients-3.9.1.jar' -> 'kafka-clients'; 'zstd-jni-1.5.6-9.jar' -> 'zstd-jni';
    'spark-sql-kafka-0-10_2.13-4.0.1.jar' -> 'spark-sql-kafka-0-10_2.13'."""
    m = _VERSIONED.match(jar_name)
    return m.group("artifact") if m else jar_name


def pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def jars(version: str | None = None) -> list[Path]:
    """The fetched jars pyspark lacks (the connector, the token provider, kafka-clients,
    commons-pool2), fetching first if needed."""
    shipped = {_artifact(p.name) for p in pyspark_jars().glob("*.jar")}
    return sorted(p for p in fetch(version).glob("*.jar") if _artifact(p.name) not in shipped)


def spark_session(app_name: str = "kcoord-spark-kafka", master: str = "local[2]", **conf):
    """A small local SparkSession that has the Kafka connector: each start costs many
    CPU-seconds, so tests share one per module. An active session without the connector
    (started elsewhere in this process) is stopped first: spark.jars only applies to a new
    SparkContext."""
    paths = ",".join(str(p) for p in jars())
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and active.sparkContext.getConf().get("spark.jars", "") != paths:
        active.stop()
    b = (SparkSession.builder.master(master).appName(app_name)
         .config("spark.jars", paths)
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.default.parallelism", "2")
         .config("spark.driver.memory", "768m")
         .config("spark.driver.extraJavaOptions", " ".join(jvm.LEAN))  # the driver is the executors too
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true"))
    for key, value in conf.items():
        b = b.config(key, value)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="spark-kafka", description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", default=None, help="Spark version (default: pyspark's)")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("fetch", help="fetch the connector's jars into the cache once (what make install-test runs)")
    args = ap.parse_args(argv)
    try:
        found = fetch(args.version)
        extra = jars(args.version) if args.version is None else sorted(found.glob("*.jar"))
        print(f"Spark Kafka connector {args.version or spark_version()}: {len(extra)} jars for Spark in {found}")
        return 0
    except SparkKafkaUnavailable as err:
        print(f"spark-kafka: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
