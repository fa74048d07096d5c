"""Java collection iteration orders, emulated.

Kafka's server assignors walk `HashMap`s and `HashSet`s, so which member or partition
comes first (and so who keeps what) depends on Java's hash codes and table sizes. To give
exactly Kafka's assignment, kcoord walks the same keys in the same order:

* a `HashMap`/`HashSet` iterates its table bucket by bucket. The bucket of a key is
  `(h ^ (h >>> 16)) & (capacity - 1)` with `h` its `hashCode()`; `put` appends a new key
  to its bucket, `computeIfAbsent` puts it first; a resize splits buckets without
  reordering them;
* `new HashMap<>()` starts at 16 buckets and doubles when it holds more than 3/4 of that
  (`put` checks after adding, `computeIfAbsent` before, on every call);
  `new HashSet<>(collection)` starts at `max(size / .75f + 1, 16)` rounded up to a power
  of two; `new HashMap<>(n)` at `n` rounded up to a power of two.

A bucket that grows past 8 keys doubles a table under 64 buckets (emulated); in a larger
table it becomes a tree, whose order is not emulated (9 keys in one bucket of 64 or more:
e.g. one member holding partitions p, p + 64, ..., p + 512 of a topic).
"""
from __future__ import annotations

import base64
import uuid
from typing import Any, Callable, Generic, Hashable, Iterable, Sequence, TypeVar

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


class RecordPartitions(frozenset):
    """An assignor's partitions of one topic for one member, which also knows the order
    Kafka would list them in the target assignment record (`record_order`). Passed back
    as a member's current assignment, that order is used."""

    record_order: tuple[int, ...]

    def __new__(cls, ordered: Iterable[int]):
        ordered = tuple(ordered)
        self = super().__new__(cls, ordered)
        self.record_order = ordered
        return self

    def __reduce__(self):
        return (RecordPartitions, (self.record_order,))


def record_list(partitions: Iterable[int]) -> list[int]:
    """A member's partitions of a topic as its record lists them: RecordPartitions in their
    record order, another set ascending, a list or tuple as it is."""
    order = getattr(partitions, "record_order", None)
    if order is not None:
        return list(order)
    return sorted(partitions) if isinstance(partitions, (set, frozenset)) else list(partitions)


TREEIFY_THRESHOLD = 8
MIN_TREEIFY_CAPACITY = 64


class JavaHashTable:
    """The keys of a java.util.HashMap/HashSet, bucket by bucket as Java keeps them.
    `capacity` None is `new HashMap<>()`, a number `new HashMap<>(number)`. `add` is
    put/HashSet.add (a new key goes to the end of its bucket, the table grows after);
    `add_first` is computeIfAbsent (a new key goes to the head of its bucket, the table
    grows before, when it already holds more than its threshold)."""

    def __init__(self, hash_of, capacity: int | None = None, keys: Iterable = ()):
        self.hash_of = hash_of
        self.threshold = 0 if capacity is None else table_size_for(max(capacity, 1))
        self.table: list[list] | None = None
        self.size = 0
        for k in keys:
            self.add(k)

    @classmethod
    def copy_of(cls, hash_of, keys: Sequence) -> "JavaHashTable":
        """`new HashSet<>(collection)`: sized by the collection, duplicates included."""
        return cls(hash_of, max(len(keys) * 4 // 3 + 1, 16), keys)

    def _index(self, key, capacity: int) -> int:
        return _spread(self.hash_of(key)) & (capacity - 1)

    def _resize(self) -> None:
        old_cap = len(self.table) if self.table is not None else 0
        new_threshold = 0
        if old_cap > 0:
            new_cap = old_cap * 2
            if old_cap >= 16:
                new_threshold = self.threshold * 2
        elif self.threshold > 0:
            new_cap = self.threshold
        else:
            new_cap, new_threshold = 16, 12
        if new_threshold == 0:
            new_threshold = int(new_cap * 0.75)
        table: list[list] = [[] for _ in range(new_cap)]
        if self.table is not None:
            for bucket in self.table:  # a split keeps each bucket's order
                for key in bucket:
                    table[self._index(key, new_cap)].append(key)
        self.table, self.threshold = table, new_threshold

    def _treeify(self) -> None:
        """A long bucket: Java doubles a table under 64 buckets instead of making the bucket
        a tree (a tree's order is not emulated: see the module's docstring)."""
        assert self.table is not None
        if len(self.table) < MIN_TREEIFY_CAPACITY:
            self._resize()

    def _bucket(self, key) -> list:
        assert self.table is not None
        return self.table[self._index(key, len(self.table))]

    def __contains__(self, key) -> bool:
        return self.table is not None and key in self._bucket(key)

    def add(self, key) -> None:
        if self.table is None:
            self._resize()
        bucket = self._bucket(key)
        if key in bucket:
            return
        bucket.append(key)
        if len(bucket) > TREEIFY_THRESHOLD:
            self._treeify()
        self.size += 1
        if self.size > self.threshold:
            self._resize()

    def add_first(self, key) -> None:
        if self.size > self.threshold or self.table is None:
            self._resize()
        bucket = self._bucket(key)
        if key in bucket:
            return
        bucket.insert(0, key)
        if len(bucket) > TREEIFY_THRESHOLD - 1:
            self._treeify()
        self.size += 1

    def discard(self, key) -> None:
        if key in self:
            self._bucket(key).remove(key)
            self.size -= 1

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        return iter([k for bucket in self.table or () for k in bucket])


def hashmap_order(keys: Sequence[K], hash_of) -> list[K]:
    """Keys put one by one into `new HashMap<>()`."""
    return list(JavaHashTable(hash_of, None, keys))


def hashset_copy_order(keys: Sequence[K], hash_of) -> list[K]:
    """`new HashSet<>(keys)` (sized by `keys`, duplicates included)."""
    return list(JavaHashTable.copy_of(hash_of, keys))


def partitions_order(partitions: Iterable[int]) -> list[int]:
    """A record's partition list read back as `new HashSet<>(list)` (see record_list)."""
    return hashset_copy_order(record_list(partitions), integer_hash)


class TimelineHashTable:
    """The latest view of Kafka's TimelineHashMap (org.apache.kafka.timeline), which holds a
    group's members: Fibonacci hashing of `hashCode()` into at least 2 slots, doubled when
    one more key would fill 3/4; a slot keeps its keys in insertion order (a replaced key
    keeps its place, a rehash keeps the order) and is walked backwards.

    Kafka's coordinator puts the group's members, walked in this order, into the HashMap
    its assignors see, then the member that is joining: so mirror the group's member map
    here (add on join, remove on leave) and pass the assignor the members in
    `list(table)` order, the joining member last."""

    _FIBONACCI = -7046029254386353131

    def __init__(self, hash_of, expected_size: int = 0):
        self.hash_of = hash_of
        minimum = -(-expected_size * 4 // 3)  # ceil(expected / 0.75)
        self.slots: list[list] = [[] for _ in range(max(2, table_size_for(minimum) if minimum > 0 else 0))]
        self.size = 0

    def _slot(self, key, slots: int) -> int:
        shift = 65 - slots.bit_length()
        product = (self.hash_of(key) * self._FIBONACCI) & 0xFFFFFFFFFFFFFFFF
        return product >> shift

    def add(self, key) -> None:
        """put: a new key is appended to its slot; a present one keeps its place."""
        if (self.size + 1) * 0.75 > len(self.slots):
            old, self.slots = self.slots, [[] for _ in range(len(self.slots) * 2)]
            for slot in old:
                for k in slot:
                    self.slots[self._slot(k, len(self.slots))].append(k)
        slot = self.slots[self._slot(key, len(self.slots))]
        if key not in slot:
            slot.append(key)
            self.size += 1

    def remove(self, key) -> None:
        slot = self.slots[self._slot(key, len(self.slots))]
        if key in slot:
            slot.remove(key)
            self.size -= 1

    def __contains__(self, key) -> bool:
        return key in self.slots[self._slot(key, len(self.slots))]

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        return iter([k for slot in self.slots for k in reversed(slot)])


T = TypeVar("T")


class JavaPriorityQueue(Generic[T]):
    """java.util.PriorityQueue: a binary heap in an array. Which of equal elements `poll`
    returns depends on the order they were added and polled in, not on a tie-breaker, so
    Kafka's choice among equally loaded processes or members is only reproduced by
    sifting exactly as Java does. `key` is read at every comparison (Java's comparator
    reads the element's current state), so change an element only while it is out of the
    queue."""

    def __init__(self, key: Callable[[T], Any], items: Iterable[T] = ()):
        self.key = key
        self.queue: list[T] = []
        for item in items:  # addAll: one add after another, not a heapify
            self.add(item)

    def add(self, item: T) -> None:
        queue, key = self.queue, self.key
        k = len(queue)
        queue.append(item)
        item_key = key(item)
        while k > 0:
            parent = (k - 1) >> 1
            if item_key >= key(queue[parent]):
                break
            queue[k] = queue[parent]
            k = parent
        queue[k] = item

    def poll(self) -> T | None:
        queue, key = self.queue, self.key
        if not queue:
            return None
        result = queue[0]
        last = queue.pop()
        n = len(queue)
        if n:
            k, half, last_key = 0, n >> 1, key(last)
            while k < half:
                child = 2 * k + 1
                right = child + 1
                if right < n and key(queue[child]) > key(queue[right]):
                    child = right
                if last_key <= key(queue[child]):
                    break
                queue[k] = queue[child]
                k = child
            queue[k] = last
        return result

    def __len__(self) -> int:
        return len(self.queue)


def java_int_div(a: int, b: int) -> int:
    """Java's `a / b` on ints: truncated towards zero, wrapped to 32 bits."""
    q = abs(a) // abs(b)
    return _int32(q if (a >= 0) == (b > 0) else -q)


def java_int_rem(a: int, b: int) -> int:
    """Java's `a % b` on ints: the sign of the dividend."""
    return _int32(a - java_int_div(a, b) * b)


def java_int(v: int) -> int:
    """An int computation's result as Java's 32-bit arithmetic wraps it."""
    return _int32(v)
