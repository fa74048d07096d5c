"""Timing parity: the same group scenarios on the reference Apache Kafka and on kcoord, side by side.

    .venv/bin/python bench/timing_parity.py [--clients kafka-python,aiokafka,confluent,java]
                                            [--members 1,4,16] [--delays 0,3000] [--repeat 3]
                                            [--only 'join 16,crash'] [--json]

Both brokers run in this process's run, with the same broker configs (`--config` keys,
Kafka names): group.initial.rebalance.delay.ms as given, group.min.session.timeout.ms=1000.
Every figure is the median of `--repeat` runs, from the moment the scenario's action
starts to the moment the stock clients' own rebalance callbacks show the outcome:

  * join N:    N member processes start together -> every partition of a 16-partition topic
               owned by exactly one member and every member owns some (N = 16 owns one each);
  * join N, consumer protocol: the same with group.protocol=consumer (KIP-848; java4 and
               confluent only), the brokers' consumer-protocol configs at Kafka's defaults
               (5 s heartbeat interval, assignment interval 1 s), the topic first known to
               the group coordinator (kcoord.testing.consumer_groups.create_topic);
  * static restart: a static member (session 10 s) is killed and started again with its
               instance id -> it owns its partitions again (no rebalance on either broker);
  * crash:     one of two members is killed (session 6 s) -> the survivor owns everything;
  * leave:     one of two members closes (LeaveGroup) -> the survivor owns everything.

Member processes are kcoord.conformance's drivers (one process per member: a JVM for Java),
so process start-up is inside "join" on both brokers alike. Rows differing by over 10% and
200 ms are flagged with `*`; bench/RESULTS.md explains them.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import platform
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rebalance import _local_process  # noqa: E402

from kcoord.conformance.client_scenarios import _owned, _settle, _stop_all, _wait  # noqa: E402
from kcoord.conformance.members import CONSUMER_PROTOCOL_CLIENTS, Member  # noqa: E402

PARTITIONS = 16
TIMEOUT = 120.0


@contextlib.contextmanager
def kcoord_broker(config: dict[str, str]):
    args = [a for k, v in config.items() for a in ("--config", f"{k}={v}")]
    with _local_process(lambda port: [sys.executable, "-m", "kcoord", "serve", "--listen", f"127.0.0.1:{port}",
                                      "--log-level", "WARNING", *args]) as bootstrap:
        yield bootstrap


@contextlib.contextmanager
def kafka_broker(config: dict[str, str]):
    from kcoord.testing.reference_kafka import ReferenceKafka

    with ReferenceKafka(config=config) as kafka:
        yield kafka.bootstrap


def _create_topic(bootstrap: str, topic: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()


def _names(tag: str) -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:8]
    return f"parity-{tag}-{suffix}", f"parity-{tag}-{suffix}"


def _complete(members: list[Member]) -> bool:
    owned = [_owned(m) for m in members]
    flat = [p for ps in owned for p in ps]
    return all(owned) and sorted(flat) == list(range(PARTITIONS))


def join_n(bootstrap: str, client: str, n: int, group_protocol: str = "classic") -> float:
    topic, group = _names(f"join{n}")
    if group_protocol == "consumer":
        from kcoord.testing.consumer_groups import create_topic

        create_topic(bootstrap, topic, PARTITIONS)
    else:
        _create_topic(bootstrap, topic)
    start = time.monotonic()
    members = [Member(client, bootstrap, topic, group, session_ms=10000, group_protocol=group_protocol)
               for _ in range(n)]
    try:
        if not _wait(lambda: _complete(members), TIMEOUT):
            return float("nan")
        return time.monotonic() - start
    finally:
        _stop_all(*members)


def _pair(bootstrap: str, client: str, tag: str, session_ms: int, static: bool) -> tuple[list[Member], str, str]:
    topic, group = _names(tag)
    _create_topic(bootstrap, topic)
    a = Member(client, bootstrap, topic, group, session_ms=session_ms, instance_id="parity-a" if static else None)
    _wait(lambda: _complete([a]), TIMEOUT)
    _settle(a)
    b = Member(client, bootstrap, topic, group, session_ms=session_ms, instance_id="parity-b" if static else None)
    if not _wait(lambda: _complete([a, b]), TIMEOUT):
        raise RuntimeError(f"{client}: two members never shared {topic}")
    _settle(a, b)
    return [a, b], topic, group


def static_restart(bootstrap: str, client: str) -> float:
    (a, b), topic, group = _pair(bootstrap, client, "static", 10000, static=True)
    restarted = None
    try:
        before = _owned(b)
        start = time.monotonic()
        b.kill()
        restarted = Member(client, bootstrap, topic, group, session_ms=10000, instance_id="parity-b")
        ok = _wait(lambda: _owned(restarted) == before, TIMEOUT)
        return time.monotonic() - start if ok else float("nan")
    finally:
        _stop_all(*(m for m in (a, b, restarted) if m is not None))


def survivor_takes_all(bootstrap: str, client: str, how: str) -> float:
    (a, b), _, _ = _pair(bootstrap, client, how, 6000, static=False)
    try:
        start = time.monotonic()
        b.kill() if how == "crash" else b.stop()
        ok = _wait(lambda: _owned(a) == set(range(PARTITIONS)), TIMEOUT)
        return time.monotonic() - start if ok else float("nan")
    finally:
        _stop_all(a, b)


def measurements(clients, sizes):
    for client in clients:
        for n in sizes:
            yield f"join {n}", client, lambda b, c=client, n=n: join_n(b, c, n)
            if client in CONSUMER_PROTOCOL_CLIENTS:
                yield f"join {n}, consumer protocol", client, lambda b, c=client, n=n: join_n(b, c, n, "consumer")
        yield "static restart", client, lambda b, c=client: static_restart(b, c)
        yield "crash (session 6 s)", client, lambda b, c=client: survivor_takes_all(b, c, "crash")
        yield "leave", client, lambda b, c=client: survivor_takes_all(b, c, "leave")


def _median(values):
    good = [v for v in values if v == v]
    return statistics.median(good) if good else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", default="kafka-python,aiokafka,confluent,java,java4")
    ap.add_argument("--members", default="1,4,16")
    ap.add_argument("--delays", default="0,3000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default=None, help="comma-separated scenarios to run, e.g. 'join 16,crash'")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    only = [o.strip() for o in a.only.split(",")] if a.only else None
    clients = [c for c in a.clients.split(",") if c]
    sizes = [int(n) for n in a.members.split(",") if n]
    rows = []
    for delay in (int(d) for d in a.delays.split(",")):
        config = {"group.initial.rebalance.delay.ms": str(delay), "group.min.session.timeout.ms": "1000"}
        # One broker of each kind per delay; scenarios alternate between them so that any
        # drift of the machine's load falls on both alike.
        with kafka_broker(config) as kafka, kcoord_broker(config) as kcoord:
            for what, client, fn in measurements(clients, sizes):
                if only and not any(what.startswith(o) for o in only):
                    continue
                runs = {"kafka": [], "kcoord": []}
                for _ in range(a.repeat):
                    for name, bootstrap in (("kafka", kafka), ("kcoord", kcoord)):
                        try:
                            runs[name].append(fn(bootstrap))
                        except Exception as exc:  # a failed run is reported, not hidden
                            print(f"# {what} {client} on {name}: {exc}", file=sys.stderr)
                            runs[name].append(float("nan"))
                row = {"delay_ms": delay, "scenario": what, "client": client,
                       "kafka_s": _median(runs["kafka"]), "kcoord_s": _median(runs["kcoord"]),
                       "runs": runs}
                rows.append(row)
                if not a.json:
                    _print_row(row)
    if a.json:
        print(json.dumps({"machine": f"{platform.node()} {platform.machine()}", "rows": rows}, indent=1))


def _print_row(row) -> None:
    k, c = row["kafka_s"], row["kcoord_s"]
    diff = c - k
    flag = "*" if abs(diff) > 0.2 and abs(diff) > 0.1 * max(k, 1e-9) else " "
    print(f"{row['delay_ms']:>5} ms  {row['scenario']:<32} {row['client']:<13} kafka {k:7.2f}s  "
          f"kcoord {c:7.2f}s  {diff:+6.2f}s {flag}", flush=True)


if __name__ == "__main__":
    main()
