"""Kafka Streams at the reference Kafka's version, for the exactly_once_v2 tests.

    python -m kcoord.testing.streams fetch          # what `make install-test` runs

The jars (kafka-streams, its kafka-clients and RocksDB, slf4j with log4j) are fetched with
Maven once into ~/.cache/kcoord/streams-VERSION/libs (root directory: env KCOORD_KAFKA_CACHE;
version: the reference Kafka's, env KCOORD_KAFKA_VERSION), from kcoord/testing/streams/pom.xml.
A cache of their own rather than the reference Kafka's: a cache fetched before Streams was
wanted is complete by its marker and would never fetch Streams. Missing Java or Maven raise
StreamsUnavailable with one line saying what to install.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kcoord.testing import jvm, maven
from kcoord.testing.reference_kafka import kafka_version

POM = Path(__file__).with_name("streams") / "pom.xml"


class StreamsUnavailable(jvm.JavaUnavailable):
    """Kafka Streams cannot run here; the message says what to install or do."""


def cache_dir(version: str | None = None) -> Path:
    return maven.cache_root() / f"streams-{version or kafka_version()}"


def fetch(version: str | None = None) -> Path:
    """The directory of Streams' jars, fetched with Maven the first time; offline once fetched."""
    version = version or kafka_version()
    return jvm.fetch_jars(cache_dir(version), "libs", POM, {"kafka.version": version}, "kafka-streams-*.jar",
                          f"Kafka Streams {version}", StreamsUnavailable)


def classpath(version: str | None = None) -> str:
    """A java -cp value with Streams' jars, fetching them first if needed."""
    return f"{fetch(version)}/*"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="streams", description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", default=None, help="Kafka version (default: the reference Kafka's)")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("fetch", help="fetch Streams' jars into the cache once (what make install-test runs)")
    args = ap.parse_args(argv)
    try:
        libs = fetch(args.version)
    except StreamsUnavailable as err:
        print(f"streams: {err}", file=sys.stderr)
        return 1
    print(f"Kafka Streams {args.version or kafka_version()}: {len(list(libs.glob('*.jar')))} jars in {libs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
