"""Java collection iteration orders, emulated.

Kafka's server assignors walk `HashMap`s and `HashSet`s, so which member or partition
comes first (and so who keeps what) depends on Java's hash codes and table sizes. To give
exactly Kafka's assignment, kcoord walks the same keys in the same order:

* a `HashMap`/`HashSet` iterates its table bucket by bucket; a bucket holds its keys in
  insertion order (a resize splits buckets without reordering them). The bucket of a key
  is `(h ^ (h >>> 16)) & (capacity - 1)` with `h` its `hashCode()`;
* `new HashMap<>()` starts at 16 buckets and doubles when it holds more than 3/4 of that;
  `new HashSet<>(collection)` starts at `max(size / .75f + 1, 16)` rounded up to a power
  of two; `new HashMap<>(n)` at `n` rounded up to a power of two.

Not emulated: a bucket of 8 or more keys in a table of 64 or more buckets becomes a tree
whose insertion order differs (it needs 8 colliding keys: not a case of real groups).
"""
from __future__ import annotations

import base64
import uuid
from typing import Hashable, Iterable, Sequence, TypeVar

K = TypeVar("K", bound=Hashable)

_MASK = 0xFFFFFFFF


def _int32(v: int) -> int:
    v &= _MASK
    return v - (1 << 32) if v & 0x80000000 else v


def string_hash(s: str) -> int:
    """java.lang.String.hashCode (over UTF-16 code units)."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK
    return _int32(h)


def integer_hash(i: int) -> int:
    return _int32(i)


def uuid_bits(topic_id: str) -> tuple[int, int]:
    """(most, least) significant bits of a Kafka topic id: its base64url form (22
    characters, as Kafka prints it) or a dashed UUID."""
    if len(topic_id) == 22:
        raw = base64.urlsafe_b64decode(topic_id + "==")
    else:
        raw = uuid.UUID(topic_id).bytes
    return int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big")


def kafka_uuid_string(value: uuid.UUID) -> str:
    """A UUID as Kafka prints it (org.apache.kafka.common.Uuid.toString)."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def uuid_hash(topic_id: str) -> int:
    """org.apache.kafka.common.Uuid.hashCode."""
    msb, lsb = uuid_bits(topic_id)
    x = msb ^ lsb
    return _int32((x >> 32) ^ (x & _MASK))


def string_compare_key(s: str) -> bytes:
    """A sort key ordering strings as java.lang.String.compareTo does (by UTF-16 code unit)."""
    return s.encode("utf-16-be", "surrogatepass")


def _spread(h: int) -> int:
    h &= _MASK
    return h ^ (h >> 16)


def table_size_for(n: int) -> int:
    cap = 1
    while cap < n:
        cap <<= 1
    return max(cap, 1)


def grown_capacity(size: int, initial: int = 16) -> int:
    """The table size of a HashMap that started at `initial` buckets after `size` puts."""
    cap = initial
    while size > cap * 3 // 4:
        cap <<= 1
    return cap


def copy_capacity(size: int) -> int:
    """The table size of `new HashSet<>(collection)` / `new HashMap<>(map)` of `size` elements."""
    return grown_capacity(size, table_size_for(max(size * 4 // 3 + 1, 16)))


def presized_capacity(n: int, size: int) -> int:
    """The table size of `new HashMap<>(n)` after `size` puts."""
    return grown_capacity(size, table_size_for(max(n, 1)))


def iteration_order(keys: Sequence[K], hash_of, capacity: int) -> list[K]:
    """`keys` (distinct, in insertion order) as a Java hash table of `capacity` buckets walks them."""
    mask = capacity - 1
    indexed = [(_spread(hash_of(k)) & mask, i, k) for i, k in enumerate(keys)]
    indexed.sort(key=lambda t: (t[0], t[1]))
    return [k for _, _, k in indexed]


def hashmap_order(keys: Sequence[K], hash_of) -> list[K]:
    """Keys put one by one into `new HashMap<>()`."""
    return iteration_order(keys, hash_of, grown_capacity(len(keys)))


def hashset_copy_order(keys: Sequence[K], hash_of) -> list[K]:
    """`new HashSet<>(keys)`."""
    return iteration_order(keys, hash_of, copy_capacity(len(keys)))


def partitions_order(partitions: Iterable[int]) -> list[int]:
    """A record's partition list read back as `new HashSet<>(list)`: a set is taken as
    listed in ascending order, a list or tuple in its order."""
    seq = sorted(partitions) if isinstance(partitions, (set, frozenset)) else list(partitions)
    capacity = copy_capacity(len(seq))  # sized by the list, duplicates included
    return iteration_order(list(dict.fromkeys(seq)), integer_hash, capacity)
