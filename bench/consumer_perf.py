"""Kafka's own consumer benchmark, kafka-consumer-perf-test, on kcoord and on the reference Kafka.

    .venv/bin/python bench/consumer_perf.py [--records 200000] [--size 100] [--partitions 6]
                                            [--repeat 3] [--json]

Both brokers run in this run: kcoord as `kcoord serve` in its own process (in memory, no
data dir, as Kafka's log is in the page cache for such a run), Kafka 4.3.1 as the single
KRaft node `make install-test` fetched. The same records (confluent-kafka's producer,
`--size` bytes each, spread over `--partitions` partitions) go to each, then the tool
(org.apache.kafka.tools.ConsumerPerformance, one JVM per run, in a group) reads them all
`--repeat` times, each time with a new group from the earliest offset. Printed: the
median of the tool's own figures (MB/s, records/s, its rebalance and fetch times) and
kcoord's ratio to Kafka. The tool's JVM start is outside its figures; both brokers and the
tool share the machine's cores.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import platform
import statistics
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rebalance import _local_process  # noqa: E402

from kcoord.testing.brokers import create_topic  # noqa: E402
from kcoord.testing.kafka_tools import run_tool  # noqa: E402

FIGURES = ["MB.sec", "nMsg.sec", "rebalance.time.ms", "fetch.time.ms", "fetch.MB.sec", "fetch.nMsg.sec"]


@contextlib.contextmanager
def kcoord_broker():
    with _local_process(lambda port: [sys.executable, "-m", "kcoord", "serve", "--listen", f"127.0.0.1:{port}",
                                      "--log-level", "WARNING"]) as bootstrap:
        yield bootstrap


@contextlib.contextmanager
def kafka_broker():
    from kcoord.testing.reference_kafka import ReferenceKafka

    with ReferenceKafka() as kafka:
        yield kafka.bootstrap


def produce(bootstrap: str, topic: str, records: int, size: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 262144,
                         "queue.buffering.max.messages": 1000000})
    value = b"x" * size
    failed = []
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, key=str(i).encode(),
                                 on_delivery=lambda err, _m: err is not None and failed.append(err))
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10000 == 0:
            producer.poll(0)
    if producer.flush(120) or failed:
        raise RuntimeError(f"producing to {bootstrap} failed: {failed[:3]}")


def figures(stdout: str) -> dict[str, float]:
    """The tool's one result line, by its header's names."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    header = next(i for i, line in enumerate(lines) if line.startswith("start.time"))
    names = [n.strip() for n in lines[header].split(",")]
    values = [v.strip() for v in lines[header + 1].split(",")]
    return {n: float(v) for n, v in zip(names, values) if n in FIGURES or n == "data.consumed.in.nMsg"}


def measure(bootstrap: str, args) -> dict[str, float]:
    topic = f"perf-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, args.partitions)
    produce(bootstrap, topic, args.records, args.size)
    runs = []
    for _ in range(args.repeat):
        r = run_tool("consumer-perf-test", bootstrap, "--topic", topic, "--group", f"g-{uuid.uuid4().hex[:8]}",
                     "--num-records", str(args.records), "--timeout", "60000", timeout=300)
        if r.code != 0:
            raise RuntimeError(f"consumer-perf-test on {bootstrap} exited {r.code}: {r.stderr[-500:]}")
        f = figures(r.stdout)
        if f["data.consumed.in.nMsg"] < args.records:
            raise RuntimeError(f"consumer-perf-test on {bootstrap} read {f['data.consumed.in.nMsg']:.0f} records")
        runs.append(f)
    return {name: statistics.median(run[name] for run in runs) for name in FIGURES}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    results = {}
    with kcoord_broker() as bootstrap:
        results["kcoord"] = measure(bootstrap, args)
    with kafka_broker() as bootstrap:
        results["kafka"] = measure(bootstrap, args)
    if args.json:
        print(json.dumps(results))
        return 0
    print(f"kafka-consumer-perf-test, {args.records} records of {args.size} B over {args.partitions} partitions, "
          f"median of {args.repeat} ({platform.node()}, {platform.machine()})")
    print(f"{'figure':<20}{'kcoord':>12}{'Kafka 4.3.1':>14}{'kcoord/Kafka':>14}")
    for name in FIGURES:
        k, ref = results["kcoord"][name], results["kafka"][name]
        ratio = f"{k / ref:.2f}" if ref else "-"
        print(f"{name:<20}{k:>12.1f}{ref:>14.1f}{ratio:>14}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
