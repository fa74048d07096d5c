"""A static consumer that commits ever-growing offsets for its partitions, for the kill -9 test.

    python -m tests.integration.committer --bootstrap B --topic T --group G --instance-id I

Prints one JSON line per acknowledged commit: {"topic", "partition", "offset"}. Commits that
fail (the server was killed mid-request) are retried with the next offset; only
acknowledged ones are printed. Stops on SIGTERM.
"""
from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time

stop = threading.Event()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--instance-id", required=True)
    ap.add_argument("--session-ms", type=int, default=10000)
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # kafka-python's own account (joins, heartbeat failures, rejoins) on stderr: the kill -9 test
    # shows its tail when the group does not settle.
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    from kafka import KafkaConsumer
    from kafka.structs import OffsetAndMetadata

    from kcoord.conformance.member import subscribe_kafka_python

    c = KafkaConsumer(bootstrap_servers=a.bootstrap, group_id=a.group, group_instance_id=a.instance_id,
                      session_timeout_ms=a.session_ms, heartbeat_interval_ms=1000, enable_auto_commit=False,
                      reconnect_backoff_ms=50, reconnect_backoff_max_ms=500, request_timeout_ms=5000,
                      retry_backoff_ms=100)
    # Not c.subscribe(): see subscribe_kafka_python (a leader of this test has gone silent for a session).
    subscribe_kafka_python(c, [a.topic])
    offset = 0
    while not stop.is_set():
        try:
            c.poll(timeout_ms=100)
            assigned = c.assignment()
            if not assigned:
                continue
            offset += 1
            c.commit({tp: OffsetAndMetadata(offset, "", -1) for tp in assigned})
        except Exception as exc:  # the server is down or restarting: try again
            print(json.dumps({"event": "error", "error": type(exc).__name__}), flush=True)
            time.sleep(0.1)
            continue
        for tp in assigned:
            print(json.dumps({"topic": tp.topic, "partition": tp.partition, "offset": offset}), flush=True)
        time.sleep(0.02)
    c.close(autocommit=False)


if __name__ == "__main__":
    main()
