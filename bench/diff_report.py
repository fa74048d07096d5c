"""Differential report: every `kcoord check` scenario on Apache Kafka and on kcoord through
recording proxies, transcripts compared; prints scenario x client x delay.

    python bench/diff_report.py [--delays 0,3000] [--clients kafka-python,aiokafka,confluent,java|none]
                                [--scenarios NAME,...] [--parallel 2] [--transcripts DIR]
                                [--kafka HOST:PORT --kcoord HOST:PORT]   # brokers already running (one delay)

Without --kafka/--kcoord it starts, per delay, the reference Kafka (kcoord.testing.reference_kafka,
group.initial.rebalance.delay.ms=DELAY, group.min.session.timeout.ms=1000) and an in-process kcoord.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kcoord.conformance import differential  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--delays", default="0,3000")
    ap.add_argument("--clients", default="kafka-python,aiokafka,confluent,java")
    ap.add_argument("--scenarios", default=None)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--transcripts", default=None, metavar="DIR", help="keep both transcripts of every row")
    ap.add_argument("--kafka", default=None)
    ap.add_argument("--kcoord", default=None)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    clients = [] if a.clients == "none" else a.clients.split(",")
    scenarios = a.scenarios.split(",") if a.scenarios else None
    rows = []
    start = time.monotonic()
    for delay in [int(d) for d in a.delays.split(",")]:
        began = time.monotonic()
        if a.kafka and a.kcoord:
            results = differential.run_differential(a.kafka, a.kcoord, clients, scenarios, a.parallel)
        else:
            from kcoord.testing.plugin import start_server
            from kcoord.testing.reference_kafka import ReferenceKafka

            with ReferenceKafka({"group.initial.rebalance.delay.ms": str(delay),
                                 "group.min.session.timeout.ms": "1000"}) as kafka:
                server = start_server(initial_rebalance_delay_ms=delay)
                try:
                    results = differential.run_differential(kafka.bootstrap, server.bootstrap, clients, scenarios,
                                                            a.parallel)
                finally:
                    server.stop()
        if a.transcripts:
            differential.save_transcripts(results, a.transcripts, suffix=f".delay{delay}")
        print(f"delay {delay} ms: {time.monotonic() - began:.0f}s", file=sys.stderr, flush=True)
        rows += [(delay, r) for r in results]
    if a.json:
        print(json.dumps([{"delay_ms": d, **r.row()} for d, r in rows], indent=1))
    else:
        print(differential.report_table(rows))
        for d, r in rows:
            if r.verdict in ("differs", "error"):
                print(f"\n== {r.scenario} [{r.client}] delay {d} ms\n{r.detail or r.summary}")
    print(f"total {time.monotonic() - start:.0f}s", file=sys.stderr)
    problems = [p for delay in {d for d, _ in rows} for p in
                differential.unexpected([r for d, r in rows if d == delay], delay)]
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
