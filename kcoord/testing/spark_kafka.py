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
import fcntl
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from kcoord.testing.reference_kafka import JDK_HINT, _mvn_error

POM = Path(__file__).with_name("spark-kafka") / "pom.xml"
MARKER = ".fetched"
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
    root = os.environ.get("KCOORD_KAFKA_CACHE") or Path.home() / ".cache" / "kcoord"
    return Path(root) / f"spark-kafka-{version or spark_version()}"


def _require(tool: str, hint: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise SparkKafkaUnavailable(f"`{tool}` not found on PATH: {hint}")
    return path


def fetch(version: str | None = None) -> Path:
    """The directory of the connector's jars, fetched with Maven the first time (~15 MB)."""
    version = version or spark_version()
    home = cache_dir(version)
    jars = home / "jars"
    if (home / MARKER).exists() and jars.is_dir():
        return jars
    _require("java", JDK_HINT)
    mvn = _require("mvn", "Maven fetches Spark's Kafka connector: apt-get install maven")
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second process waits for the first fetch
        if (home / MARKER).exists() and jars.is_dir():
            return jars
        # Fetched into a scratch directory, renamed into place, marker last: an
        # interrupted fetch never looks complete.
        partial = home / f"jars.partial-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        cmd = [mvn, "-q", "-B", "-Dstyle.color=never", f"-Dspark.version={version}",
               "dependency:copy-dependencies", f"-DoutputDirectory={partial}", "-DincludeScope=runtime",
               "-f", str(POM)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=home)
        except subprocess.TimeoutExpired:
            shutil.rmtree(partial, ignore_errors=True)
            raise SparkKafkaUnavailable(f"mvn did not fetch {CONNECTOR} {version} within 15 minutes: "
                                        f"check access to Maven Central") from None
        if proc.returncode != 0 or not any(partial.glob(f"{CONNECTOR}-*.jar")):
            shutil.rmtree(partial, ignore_errors=True)
            raise SparkKafkaUnavailable(
                f"mvn could not fetch {CONNECTOR} {version} ({POM}): {_mvn_error(proc.stdout + proc.stderr)}")
        shutil.rmtree(jars, ignore_errors=True)
        partial.rename(jars)
        (home / MARKER).write_text(f"{version}\n")
    return jars


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
