"""Which `__consumer_offsets` partition holds a group's records: Kafka decides it with
`Utils.abs(groupId.hashCode()) % partitions`, kcoord with `offsets_partition_for`, an
emulation of Java's String.hashCode over UTF-16 code units. 1,000 group ids (ASCII,
non-ASCII in and beyond the Basic Multilingual Plane, tiny ones, and ids built to hash to
Integer.MIN_VALUE and its neighbours) each commit one offset as a simple group; the topic
is then read back partition by partition, on the reference Kafka and on kcoord alike, and
each group's OffsetCommit record must sit in the partition kcoord computes.
"""
from __future__ import annotations

import random
import time
import uuid

import pytest

from kcoord.coordinator.config import java_string_hash, offsets_partition_for
from kcoord.log import consumer_offsets as co
from kcoord.protocol_client import Connection
from kcoord.testing.brokers import create_topic, partitions, read_batches
from kcoord.testing.plugin import REFERENCE_KAFKA_CONFIG
from kcoord.testing.reference_kafka import ReferenceKafka
from wire.errors import ErrorCode

SEED = 24
COUNT = 1000
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
# Hashes at the edges of Utils.abs: MIN_VALUE (abs would overflow, Kafka maps it to 0), its
# neighbours, and the signs' edges.
EDGE_HASHES = (INT_MIN, INT_MIN + 1, INT_MIN + 50, -1, 0, 1, INT_MAX)
# Tiny ids Kafka accepts (only an empty group id is refused): lone whitespace, a NUL, one
# astral character (one surrogate pair), a single letter. Not prefixed, so shared by every
# run; their partition does not depend on what earlier runs committed.
TINY = (" ", "\t", "\n", "\x00", "-", "a", "é", "\uffff", "\U0001F600", "\U0010FFFF")
WINDOW = 100  # commits in flight on the connection at once
# Characters for the random ids: printable ASCII, BMP blocks (Latin-1, Greek, Cyrillic,
# Hebrew, CJK, Hangul, private use, the last BMP characters) and astral planes (SMP emoji
# and scripts, CJK extension B, supplementary private use).
ASCII = [chr(c) for c in range(0x20, 0x7F)]
BMP = [(0xA0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x5D0, 0x5EA), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3),
       (0xE000, 0xF8FF), (0xFF00, 0xFFFF)]
ASTRAL = [(0x10000, 0x1007F), (0x1F300, 0x1FAFF), (0x20000, 0x2A6DF), (0x100000, 0x10FFFD)]


def _solve(prefix: str, target: int) -> str:
    """`prefix` and seven more characters whose Java hashCode is `target`.

    hash(prefix + s) = hash(prefix) * 31^7 + sum(s[i] * 31^(6-i)) mod 2^32; with s[i] = '0' + d[i]
    the d[i] are the base-31 digits of what is left once the '0's are paid for (31^7 > 2^32,
    so seven digits reach every value)."""
    rest = (target - java_string_hash(prefix) * 31**7 - ord("0") * sum(31**k for k in range(7))) % 2**32
    digits = []
    for _ in range(7):
        rest, d = divmod(rest, 31)
        digits.append(d)
    return prefix + "".join(chr(ord("0") + d) for d in reversed(digits))


def _char(rng: random.Random, blocks) -> str:
    low, high = rng.choice(blocks)
    return chr(rng.randint(low, high))


def group_ids(prefix: str) -> list[str]:
    """COUNT distinct ids from SEED, each random one after `prefix`."""
    rng = random.Random(SEED)
    ids = list(TINY) + [_solve(prefix, h) for h in EDGE_HASHES]
    ids.append(prefix + "".join(_char(rng, BMP + ASTRAL) for _ in range(1000)))  # a long one
    kinds = [lambda: rng.choice(ASCII), lambda: _char(rng, BMP), lambda: _char(rng, ASTRAL),
             lambda: rng.choice((rng.choice(ASCII), _char(rng, BMP), _char(rng, ASTRAL)))]
    while len(ids) < COUNT:
        kind = kinds[len(ids) % len(kinds)]
        candidate = prefix + "".join(kind() for _ in range(rng.randint(1, 40)))
        if candidate not in ids:
            ids.append(candidate)
    return ids


def test_the_ids_cover_the_edges():
    ids = group_ids("p-")
    assert len(set(ids)) == COUNT
    hashes = {java_string_hash(g) for g in ids}
    assert set(EDGE_HASHES) <= hashes
    assert offsets_partition_for(_solve("p-", INT_MIN), 50) == 0
    assert sum(any(ord(c) > 0xFFFF for c in g) for g in ids) >= COUNT // 4  # surrogate pairs in Java


def _commit_all(bootstrap: str, topic: str, ids: list[str]) -> None:
    """One offset for each id as a simple group (generation -1, no member), pipelined over one
    connection to the broker, which is every group's coordinator."""
    with Connection.to(bootstrap, 30.0) as conn:
        # The first FindCoordinator creates __consumer_offsets; commits before it exists are refused.
        deadline = time.monotonic() + 30
        while conn.call(10, conn.version(10, 3), {"key": ids[0], "key_type": 0}).error_code:
            assert time.monotonic() < deadline, "FindCoordinator kept failing for 30 s"
            time.sleep(0.1)
        version = conn.version(8, 9, 2)  # 10 names topics by id
        failures = []
        for start in range(0, len(ids), WINDOW):
            window = ids[start:start + WINDOW]
            for n, group in enumerate(window):
                conn.send(8, version, {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                                       "group_instance_id": None, "topics": [
                                           {"name": topic, "partitions": [{"partition_index": 0,
                                                                           "committed_offset": start + n,
                                                                           "committed_leader_epoch": -1,
                                                                           "committed_metadata": ""}]}]})
            for group in window:
                _, answer = conn.receive(8, version)
                code = answer.topics[0].partitions[0].error_code
                if code:
                    failures.append((group, ErrorCode(code).name))
    assert not failures, f"{len(failures)} commits refused, the first: {failures[:5]}"


def _holders(bootstrap: str, ids: set[str]) -> tuple[int, dict[str, set[int]]]:
    """The topic's partition count, and group id -> the partitions holding its OffsetCommit records."""
    count = len(partitions(bootstrap, co.TOPIC))
    held: dict[str, set[int]] = {}
    for p in range(count):
        for batch in read_batches(bootstrap, co.TOPIC, p, 30.0):
            if batch.is_control:  # transaction markers of transactional offset commits
                continue
            for record in batch.records():
                key = co.decode_key_if_classic(record.key)
                if key and key["type"] == co.OFFSET_COMMIT_KEY and key["data"]["group"] in ids:
                    held.setdefault(key["data"]["group"], set()).add(p)
    return count, held


def _utf16(group: str) -> str:
    data = group.encode("utf-16-be")
    return " ".join(data[i:i + 2].hex() for i in range(0, len(data), 2))


@pytest.fixture(scope="module")
def kafka_50():
    """A reference Kafka of its own: the session's keeps __consumer_offsets at one partition
    (it loads fastest), where every group would sit in partition 0."""
    with ReferenceKafka({**REFERENCE_KAFKA_CONFIG, "offsets.topic.num.partitions": "50"}) as kafka:
        yield kafka


def test_kafka_holds_each_group_where_kcoord_computes(kafka_50):
    _check_placement(kafka_50.bootstrap, "the reference Kafka")


def test_kcoord_holds_each_group_where_it_computes(kcoord_server):
    _check_placement(kcoord_server.bootstrap, "kcoord")


def _check_placement(bootstrap: str, broker: str) -> None:
    run = uuid.uuid4().hex[:8]
    ids = group_ids(f"pl-{run}-")
    topic = f"pl-{run}"
    create_topic(bootstrap, topic)
    _commit_all(bootstrap, topic, ids)
    count, held = _holders(bootstrap, set(ids))
    assert count == 50  # offsets.topic.num.partitions: Kafka's default, kcoord's too
    wrong = [(g, held.get(g, set()), offsets_partition_for(g, count)) for g in ids
             if held.get(g) != {offsets_partition_for(g, count)}]
    assert not wrong, f"{len(wrong)} of {len(ids)} groups elsewhere than offsets_partition_for says:\n" + "\n".join(
        f"  {g[:60]!r} (UTF-16 {_utf16(g)[:120]}): {broker} holds it in {sorted(found)}, "
        f"kcoord computes {expected}" for g, found, expected in wrong[:20])
