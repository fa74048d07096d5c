"""Run `kcoord check` against the reference Kafka and the peers installable here: kcoord,
Apache Kafka (kcoord.testing.reference_kafka), Tansu, librdkafka's mock cluster, franz-go's kfake.

    .venv/bin/python bench/check_peers.py [--clients kafka-python,confluent] [--peers kcoord,kafka] [--json]

Prints each peer's table (the comparison in bench/RESULTS.md comes from this script).
"""
from __future__ import annotations

import argparse
import contextlib
import subprocess
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rebalance import kcoord_peer, kfake_peer, tansu_peer  # noqa: E402

from kcoord.conformance import check  # noqa: E402


_MOCK = """
import sys, time
from confluent_kafka import Producer
keeper = Producer({"test.mock.num.brokers": 1})
broker = next(iter(keeper.list_topics(timeout=10).brokers.values()))
print(f"{broker.host}:{broker.port}", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def librdkafka_mock_peer():
    # In its own process: the mock cluster asserts (aborts) on some requests, which
    # must end the peer, not the checker.
    proc = subprocess.Popen([sys.executable, "-c", _MOCK], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def reference_kafka_peer():
    from kcoord.testing.reference_kafka import ReferenceKafka

    # Kafka's own default initial delay, as kcoord_peer(3000) uses.
    with ReferenceKafka(config={"group.initial.rebalance.delay.ms": "3000"}) as kafka:
        yield kafka.bootstrap


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", default="kafka-python,aiokafka,confluent,java")
    ap.add_argument("--peers", default="kcoord,kafka,tansu,librdkafka-mock,kfake")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    peers = {"kcoord": lambda: kcoord_peer(3000), "kafka": reference_kafka_peer, "tansu": tansu_peer,
             "librdkafka-mock": librdkafka_mock_peer, "kfake": kfake_peer}
    clients = [c for c in a.clients.split(",") if c and c != "none"]
    out = {}
    for name in a.peers.split(","):
        # Raw and client scenarios each get a fresh peer: a peer that dies on a raw
        # request (librdkafka's mock asserts on some) still shows how clients fare.
        with peers[name]() as bootstrap:
            results = check.run_check(bootstrap, [], list(check.raw_scenarios.SCENARIOS))
        if clients:
            with peers[name]() as bootstrap:
                results += check.run_check(bootstrap, clients, [s for s in check.all_scenarios()
                                                                 if s.startswith("client:")])
        out[name] = json.loads(check.report_json(bootstrap, results))
        if not a.json:
            print(f"\n## {name}\n")
            print(check.report_table(results), flush=True)
    if a.json:
        print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
