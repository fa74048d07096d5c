"""Transactional scenarios (kcoord.conformance.txn_scenarios) through a recording proxy in front
of Apache Kafka and in front of kcoord, their transcripts compared exchange by exchange.

    with ProxyThread() as proxies:
        result = run_scenario("txn-end-v5", kafka_bootstrap, kcoord_bootstrap, proxies)
    assert not result.divergences, result.report()

Unlike the group scenarios' comparison (kcoord.conformance.transcript.compare), which pairs
connections and lets periodic traffic vary, a transactional scenario is one connection sending
one request at a time, with its preparation (and every wait for markers to land) off the
record: the two transcripts must match request for request, every field of every answer,
after transcript's normalisation (names, member ids, addresses, timestamps, error messages)
and two of their own: producer ids are each broker's to allocate and are compared as the
order in which they first appeared (pid1, pid2, ...), and a Produce request's records as
their batches' producer, epoch, sequence and count.
"""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from kcoord.conformance import transcript
from kcoord.conformance.rawclient import SETUP_CLIENT_ID
from kcoord.conformance.recorder import ProxyThread, bytes_of
from kcoord.conformance.txn_scenarios import SCENARIOS, TxnSession
from kcoord.protocol_client import Connection
from kcoord.testing.brokers import create_topic
from wire import records as R
from wire.errors import ErrorCode as E

API_VERSIONS = 18
TRANSACTION_APIS = frozenset({"InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit"})
RETRIABLE = frozenset({E.CONCURRENT_TRANSACTIONS, E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR,
                       E.COORDINATOR_NOT_AVAILABLE})
SHOWN = 6  # differing exchanges a report shows: past the first few, one difference usually shifts the rest


@dataclass
class Difference:
    index: int
    path: str
    kafka: object
    kcoord: object
    kafka_exchange: str
    kcoord_exchange: str

    def line(self) -> str:
        return (f"[{self.index}] {self.path}: kafka={transcript._short(self.kafka, 80)} "
                f"kcoord={transcript._short(self.kcoord, 80)}\n    kafka:  {self.kafka_exchange}\n"
                f"    kcoord: {self.kcoord_exchange}")


@dataclass
class TxnResult:
    scenario: str
    kafka_error: str | None
    kcoord_error: str | None
    kafka_problems: list[str]
    kcoord_problems: list[str]
    differences: list[Difference] = field(default_factory=list)
    kafka_transcript: list = field(default_factory=list)
    kcoord_transcript: list = field(default_factory=list)

    def report(self) -> str:
        lines = [f"{self.scenario}:"]
        for broker, err, problems in (("Kafka", self.kafka_error, self.kafka_problems),
                                      ("kcoord", self.kcoord_error, self.kcoord_problems)):
            if err:
                lines.append(f"  the scenario failed on {broker}: {err}")
            lines += [f"  on {broker}: {p}" for p in problems]
        lines += ["  " + d.line() for d in self.differences[:SHOWN]]
        if len(self.differences) > SHOWN:
            lines.append(f"  ... and {len(self.differences) - SHOWN} more exchanges differ")
        return "\n".join(lines)


def _producer_ids(value, pids: dict[int, str], key: str = ""):
    """Producer ids renamed in order of appearance, record batches summarised."""
    if isinstance(value, dict):
        if key == "records" and bytes_of(value) is not None:
            return [{"producer_id": _pid(b.producer_id, pids), "producer_epoch": b.producer_epoch,
                     "base_sequence": b.base_sequence, "records": b.records_count,
                     "transactional": b.is_transactional, "control": b.is_control}
                    for b in R.iter_batches(bytes_of(value), validate_crc=False)]
        return {k: _producer_ids(v, pids, k) for k, v in value.items()}
    if isinstance(value, list):
        if key == "producer_id_filters":
            return [_pid(v, pids) for v in value]
        return [_producer_ids(v, pids, key) for v in value]
    if key.endswith("producer_id") and isinstance(value, int):
        return _pid(value, pids)
    return value


def _pid(value: int, pids: dict[int, str]):
    if value < 0:
        return value
    return pids.setdefault(value, f"pid{len(pids) + 1}")


def normalise(exchanges: list[dict], apis: frozenset[str] | None = None) -> list[dict]:
    """The recorded exchanges in order, ApiVersions left out (capabilities differ by design), or
    only those of `apis` (names and producer ids then numbered as they appear among them)."""
    kept = [json.loads(json.dumps(e)) for e in sorted(exchanges, key=lambda e: e["seq"])
            if e.get("client_id") != SETUP_CLIENT_ID and e.get("api_key") != API_VERSIONS
            and (apis is None or e.get("api") in apis)]
    renamer = transcript._Renamer(kept)
    pids: dict[int, str] = {}
    out = []
    for e in kept:
        item = {"api": e.get("api"), "version": e.get("version"), "request": e.get("request"),
                "response": e.get("response")}
        for k in ("request_error", "response_error", "no_response", "unanswered"):
            if k in e:
                item[k] = e[k]
        item = transcript._clean(_producer_ids(item, pids), renamer, False)
        _hash_ordered_topics(item)
        out.append(item)
    return out


def _by_name(topics) -> list:
    for t in topics or []:
        if isinstance(t.get("results_by_partition"), list):
            t["results_by_partition"].sort(key=lambda p: p.get("partition_index", 0))
    return sorted(topics or [], key=lambda t: t.get("name") or "")


def _hash_ordered_topics(item: dict) -> None:
    """Kafka collects AddPartitionsToTxn's and WriteTxnMarkers' partition errors in hash maps:
    the order of their topics is no answer."""
    resp = item["response"]
    if not isinstance(resp, dict):
        return
    if item["api"] == "WriteTxnMarkers":
        for marker in resp.get("markers") or []:
            marker["topics"] = _by_name(marker.get("topics"))
    elif item["api"] == "AddPartitionsToTxn":
        if "results_by_topic_v3_and_below" in resp:
            resp["results_by_topic_v3_and_below"] = _by_name(resp["results_by_topic_v3_and_below"])
        for txn in resp.get("results_by_transaction") or []:
            txn["topic_results"] = _by_name(txn.get("topic_results"))


def _brief(item: dict | None) -> str:
    if item is None:
        return "<none>"
    return f"{item['api']} v{item['version']} -> {json.dumps(item.get('response'), sort_keys=True)[:300]}"


def _retried(item: dict) -> bool:
    """An answer a client retries after a pause: how often it comes is timing (the markers of the
    previous transaction still on their way, a coordinator still loading)."""
    return bool(set(_codes(item.get("response"))) & RETRIABLE)


def _codes(value) -> list[int]:
    if isinstance(value, dict):
        return [c for k, v in value.items()
                for c in ([v] if k.endswith("error_code") and isinstance(v, int) else _codes(v))]
    if isinstance(value, list):
        return [c for v in value for c in _codes(v)]
    return []


def client_items(exchanges: list[dict], apis: frozenset[str]) -> list[dict]:
    """A client's exchanges of `apis`, normalised, without retried answers and their repeats."""
    out: list[dict] = []
    for item in normalise(exchanges, apis):
        if not _retried(item) and (not out or out[-1] != item):
            out.append(item)
    return out


def compare(kafka: list[dict], kcoord: list[dict], apis: frozenset[str] | None = None) -> list[Difference]:
    """Each exchange that differs (first differing field), in order; with `apis`, only those,
    as a client sends them (client_items)."""
    if apis is None:
        a, b = normalise(kafka), normalise(kcoord)
    else:
        a, b = client_items(kafka, apis), client_items(kcoord, apis)
    out = []
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        d = transcript._diff(x, y, "") if x is not None and y is not None else ("exchange", _brief(x), _brief(y))
        if d:
            path, va, vb = d
            out.append(Difference(i, path.lstrip(".") or "exchange", va, vb, _brief(x), _brief(y)))
    return out


def _run_once(name: str, upstream: str, proxies: ProxyThread) -> tuple[str | None, list[str], list]:
    p = proxies.proxy(upstream)
    error, problems = None, []
    try:
        with Connection.to(p.bootstrap, 30.0, client_id="kcoord-check") as conn:
            session = TxnSession(conn, upstream)
            try:
                SCENARIOS[name](session)
            except Exception as err:
                error = f"{type(err).__name__}: {err}"
            problems = session.problems
    finally:
        proxies.close_proxy(p)
    return error, problems, p.transcript.sorted()


def run_scenario(name: str, kafka: str, kcoord: str, proxies: ProxyThread) -> TxnResult:
    """`name` on both brokers side by side, compared."""
    with ThreadPoolExecutor(2) as pool:
        kf = pool.submit(_run_once, name, kafka, proxies)
        cf = pool.submit(_run_once, name, kcoord, proxies)
        (ke, kp, kt), (ce, cp, ct) = kf.result(), cf.result()
    return TxnResult(name, ke, ce, kp, cp, compare(kt, ct), kt, ct)


# ------------------------------------------------------------------ a real transactional producer
def confluent_transactions(bootstrap: str, upstream: str) -> str | None:
    """confluent-kafka (librdkafka) through `bootstrap`: a transaction with records and a group's
    offsets committed, then one aborted. None, or what went wrong."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic, group = TxnSession.name("topic"), TxnSession.name("group")
    create_topic(upstream, topic, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": TxnSession.name("txn"),
                         "client.id": "kcoord-check-confluent", "linger.ms": 0})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        producer.init_transactions(30)
        for commit in (True, False):
            producer.begin_transaction()
            for i in range(3):
                producer.produce(topic, value=f"v{i}".encode(), partition=0)
            producer.flush(30)
            producer.send_offsets_to_transaction([TopicPartition(topic, 0, 3 if commit else 6)],
                                                 consumer.consumer_group_metadata(), 30)
            if commit:
                producer.commit_transaction(30)
            else:
                producer.abort_transaction(30)
    except Exception as err:
        return f"{type(err).__name__}: {err}"
    finally:
        consumer.close()
    return None


def run_client(kafka: str, kcoord: str, proxies: ProxyThread) -> TxnResult:
    """confluent_transactions on both brokers, their transaction APIs compared."""
    def once(upstream):
        p = proxies.proxy(upstream)
        try:
            return confluent_transactions(p.bootstrap, upstream), p.transcript.sorted()
        finally:
            proxies.close_proxy(p)

    with ThreadPoolExecutor(2) as pool:
        kf, cf = pool.submit(once, kafka), pool.submit(once, kcoord)
        (ke, kt), (ce, ct) = kf.result(), cf.result()
    return TxnResult("client:confluent-transactions", ke, ce, [], [], compare(kt, ct, TRANSACTION_APIS), kt, ct)
