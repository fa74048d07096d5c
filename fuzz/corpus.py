"""Seed requests (real traffic captured from kafka-python, aiokafka, confluent-kafka
and the Java client in tests/golden/captures, and the transaction APIs those captures lack)
and cheap mutations of them."""
from __future__ import annotations

import json
import random
import struct
from pathlib import Path

CAPTURES = Path(__file__).resolve().parent.parent / "tests" / "golden" / "captures"

# Values that sit on boundaries of Kafka's length and count fields.
INTERESTING_INT16 = [0, 1, -1, 0x7FFF, -0x8000, 0xFF]
INTERESTING_INT32 = [0, 1, -1, 0x7FFFFFFF, -0x80000000, 0xFFFF, 0x10000, 255, 256]


# The transaction APIs (issue 25), which no captured client sent, as a producer and
# kafka-transactions send them; names come from the mutation pools below, so what a mutated
# request opens stays bounded.
TRANSACTION_API_KEYS = (22, 24, 25, 26, 27, 28, 57, 61, 65, 66)


def transaction_requests() -> list[bytes]:
    """One request of each version that matters of every transaction API (without a size prefix)."""
    from wire import codec
    from wire import records as R

    txn, pid = {"transactional_id": "fuzz", "producer_id": 1000, "producer_epoch": 0}, 1000
    topics = [{"name": "fuzz", "partitions": [0, 1]}]
    batch = R.build_batch([(b"k", b"v", 0)], producer_id=pid, producer_epoch=0, base_sequence=0, transactional=True)
    offsets = [{"name": "fuzz", "partitions": [{"partition_index": 0, "committed_offset": 5,
                                                "committed_leader_epoch": -1, "committed_metadata": ""}]}]
    bodies = [
        (22, 1, {"transactional_id": "fuzz", "transaction_timeout_ms": 60000}),
        (22, 5, {"transactional_id": "fuzz", "transaction_timeout_ms": 60000, "producer_id": -1,
                 "producer_epoch": -1}),
        (22, 6, {"transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": pid, "producer_epoch": 0}),
        (24, 3, {"v3_and_below_transactional_id": "fuzz", "v3_and_below_producer_id": pid,
                 "v3_and_below_producer_epoch": 0, "v3_and_below_topics": topics}),
        (24, 5, {"transactions": [{**txn, "verify_only": True, "topics": topics}]}),
        (25, 4, {**txn, "group_id": "fuzz-group"}),
        (26, 4, {**txn, "committed": True}),
        (26, 5, {**txn, "committed": False}),
        (27, 1, {"markers": [{"producer_id": pid, "producer_epoch": 0, "transaction_result": False,
                              "topics": [{"name": "fuzz", "partition_indexes": [0]}], "coordinator_epoch": 0}]}),
        (28, 3, {**txn, "group_id": "fuzz-group", "generation_id": -1, "member_id": "", "group_instance_id": None,
                 "topics": offsets}),
        (28, 5, {**txn, "group_id": "fuzz-group", "generation_id": 1, "member_id": "a", "group_instance_id": None,
                 "topics": offsets}),
        (57, 1, {"timeout_ms": 1000, "validate_only": True, "feature_updates": [
            {"feature": "transaction.version", "max_version_level": 2, "upgrade_type": 1}]}),
        (61, 0, {"topics": [{"name": "fuzz", "partition_indexes": [0]}]}),
        (65, 0, {"transactional_ids": ["fuzz", "a"]}),
        (66, 2, {"state_filters": ["Ongoing"], "producer_id_filters": [pid], "duration_filter": -1,
                 "transactional_id_pattern": "fu.*"}),
        (0, 11, {"transactional_id": "fuzz", "acks": -1, "timeout_ms": 1000,
                 "topic_data": [{"name": "fuzz", "partition_data": [{"index": 0, "records": batch}]}]}),
    ]
    return [codec.encode_request(key, version, {"correlation_id": 1, "client_id": "fuzz-txn"}, body)
            for key, version, body in bodies]


def seed_requests() -> list[bytes]:
    """Every captured request payload (without its size prefix), and the transaction requests."""
    seeds = []
    for path in sorted(CAPTURES.glob("*.jsonl")):
        with open(path, encoding="utf-8") as f:
            for line in f:
                event = json.loads(line)
                if event["dir"] == "request":
                    seeds.append(bytes.fromhex(event["hex"]))
    if not seeds:
        raise RuntimeError(f"no captured requests under {CAPTURES}")
    return seeds + transaction_requests()


def mutate(payload: bytes, rnd: random.Random, seeds: list[bytes] | None = None) -> bytes:
    """One mutation, chosen at random: flips, boundary integers, truncation, growth, splicing."""
    data = bytearray(payload)
    choice = rnd.random()
    if choice < 0.30 and data:
        for _ in range(rnd.randint(1, 4)):
            data[rnd.randrange(len(data))] ^= 1 << rnd.randrange(8)
    elif choice < 0.45 and len(data) >= 2:
        pos = rnd.randrange(len(data) - 1)
        struct.pack_into(">h", data, pos, rnd.choice(INTERESTING_INT16) if rnd.random() < 0.8 else
                         rnd.randint(-0x8000, 0x7FFF))
    elif choice < 0.60 and len(data) >= 4:
        pos = rnd.randrange(len(data) - 3)
        struct.pack_into(">i", data, pos, rnd.choice(INTERESTING_INT32) if rnd.random() < 0.8 else
                         rnd.randint(-0x80000000, 0x7FFFFFFF))
    elif choice < 0.72:
        del data[rnd.randrange(len(data) + 1):]
    elif choice < 0.80:
        data += rnd.randbytes(rnd.randint(1, 64))
    elif choice < 0.88 and seeds:
        other = rnd.choice(seeds)
        cut = rnd.randrange(len(data) + 1)
        data = data[:cut] + other[rnd.randrange(len(other) + 1):]
    elif choice < 0.94 and len(data) >= 4:
        # Another API key or version under the same body.
        struct.pack_into(">hh", data, 0, rnd.randrange(-2, 80), rnd.randrange(-2, 20))
    else:
        data = bytearray(rnd.randbytes(rnd.randint(0, 48)))
    return bytes(data)


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def mutated_frame(seeds: list[bytes], rnd: random.Random) -> bytes:
    """A size-prefixed mutated request; now and then the size prefix itself lies."""
    payload = mutate(rnd.choice(seeds), rnd, seeds)
    if rnd.random() < 0.01:
        return struct.pack(">i", rnd.choice([-1, -0x80000000, len(payload) + rnd.randint(1, 100),
                                             0x7FFFFFFF])) + payload
    return frame(payload)


# ---- structure-aware mutation: decode a seed, change values, re-encode -------------------------
# Values come from small pools so that what a fuzzed request legitimately creates (a group
# named by the fuzzer, a committed offset) stays bounded in number: a memory leak then shows.
_STRINGS = ["", "a", "fuzz", "fuzz-group", "\u00e9\u4e2d\U0001f600", "x" * 300, "golden-java", "-1"]
_INTS = [0, 1, -1, 2, 3, 100, 0x7FFF, -0x8000, 0x7FFFFFFF, -0x80000000, 2**63 - 1, -(2**63)]


class Template:
    """A decoded seed request."""

    def __init__(self, payload: bytes):
        from wire import codec

        req = codec.decode_request(payload)
        self.api_key, self.api_version = req.api_key, req.api_version
        self.header = {"correlation_id": req.correlation_id, "client_id": req.client_id}
        self.body = req.body


def templates(seeds: list[bytes]) -> list[Template]:
    out = []
    for payload in seeds:
        try:
            out.append(Template(payload))
        except Exception:
            pass
    return out


def _mutate_value(value, rnd: random.Random, rate: float):
    if isinstance(value, dict):
        return type(value)({k: _mutate_value(v, rnd, rate) for k, v in value.items()})
    if isinstance(value, list):
        items = [_mutate_value(v, rnd, rate) for v in value]
        if items and rnd.random() < rate:
            roll = rnd.random()
            if roll < 0.4:
                items.pop(rnd.randrange(len(items)))
            elif roll < 0.8:
                items.append(rnd.choice(items))
            else:
                items = []
        return items
    if rnd.random() >= rate:
        return value
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return rnd.choice(_INTS) if rnd.random() < 0.7 else value + rnd.randint(-3, 3)
    if isinstance(value, str):
        return rnd.choice(_STRINGS)
    if isinstance(value, (bytes, bytearray)):
        if value and rnd.random() < 0.6:
            return mutate(bytes(value), rnd)
        return rnd.randbytes(rnd.randint(0, 32))
    if value is None:
        return rnd.choice(_STRINGS) if rnd.random() < 0.5 else None
    return value


def mutate_structured(template: Template, rnd: random.Random) -> bytes | None:
    """The template with some values changed, re-encoded; None when a value does not fit its type."""
    from wire import codec

    body = _mutate_value(template.body, rnd, rate=0.15)
    header = {"correlation_id": rnd.randint(-2**31, 2**31 - 1),
              "client_id": template.header["client_id"] if rnd.random() < 0.9 else rnd.choice(_STRINGS)}
    try:
        return codec.encode_request(template.api_key, template.api_version, header, body)
    except Exception:
        return None


def mixed_frame(seeds: list[bytes], temps: list[Template], rnd: random.Random, byte_level: float = 0.1) -> bytes:
    """Mostly structure-aware mutations (they reach the handlers), some byte-level ones (the decoder)."""
    if rnd.random() >= byte_level:
        for _ in range(4):
            payload = mutate_structured(rnd.choice(temps), rnd)
            if payload is not None:
                return frame(payload)
    return mutated_frame(seeds, rnd)
