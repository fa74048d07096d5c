"""One share-partition: the records of a topic partition as one share group delivers them
(KIP-932), the state machine of Kafka 4.3.1's SharePartition over an injected timer.

Records from the start offset on are in flight: each is AVAILABLE, ACQUIRED by a member for the
lock duration, ACKNOWLEDGED or ARCHIVED. In-flight records are held in batches, as acquired
(one per log batch run, split at `batch_size`); a batch whose records part ways (a subset
acknowledged, a record_limit acquisition) tracks each offset on its own from then on. Offsets
past the last in-flight one are new: acquiring them reads the log.

- acquire: AVAILABLE (and new) records become ACQUIRED by the member, their delivery count
  bumped, locked until now + the lock duration; at most `share.partition.max.record.locks`
  records are in flight at once, `max_records` is a soft limit in batch_optimized mode (whole
  log batches) and a hard one in record_limit mode (KIP-1206). A record on its last delivery
  goes out alone, and records redelivered half the limit or more go out in halving numbers
  (Kafka's throttling, so one poison record does not archive its neighbours).
- acknowledge: accept -> ACKNOWLEDGED, release -> AVAILABLE, reject and gap -> ARCHIVED, renew
  (KIP-1222) -> a new lock; all or nothing per partition.
- a lock expiring, or the member leaving, makes the records AVAILABLE again without a further
  delivery count; at the delivery count limit they are ARCHIVED instead.
- the start offset moves over a prefix of ACKNOWLEDGED/ARCHIVED records, or to the log start
  offset when records are deleted below it.

Every change of a record's persisted state is noted (`take_changes`) for the share coordinator;
ACQUIRED is persisted as AVAILABLE, so records acquired before a crash are delivered again.
Acknowledging, releasing and expiring return how many records each did what to (a Counter), for
the manager's events; the partition publishes nothing itself.
"""
from __future__ import annotations

import bisect
import collections
import enum
import math
from dataclasses import dataclass, field
from typing import Callable

from kcoord.coordinator.clock import Timer
from kcoord.share import records as SR
from wire import records as R
from wire.errors import ErrorCode


class RecordState(enum.IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


TERMINAL = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
ACK_STATES = {GAP: RecordState.ARCHIVED, ACCEPT: RecordState.ACKNOWLEDGED, RELEASE: RecordState.AVAILABLE,
              REJECT: RecordState.ARCHIVED}
# What an acknowledgement of each type is counted as (`acknowledge`'s Counter).
ACK_COUNTS = {GAP: "gaps", ACCEPT: "accepted", RELEASE: "released", REJECT: "rejected", RENEW: "renewed"}
MIN_THROTTLE_DELIVERY_LIMIT = 2
NO_MEMBER = ""


class ShareError(Exception):
    """An acknowledgement Kafka refuses: its error code for the partition and message."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class AckBatch:
    """One AcknowledgementBatch of a request."""
    first_offset: int
    last_offset: int
    types: list[int]       # one for the whole range, or one per offset


@dataclass
class Acquired:
    """One AcquiredRecords entry of a ShareFetch response."""
    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass
class ShareSettings:
    """The group's settings a share-partition reads at each operation (they may be altered)."""
    lock_duration_ms: int = 30000
    delivery_count_limit: int = 5
    max_record_locks: int = 2000
    read_committed: bool = False
    renew_enabled: bool = True


@dataclass
class _State:
    """An in-flight record's (or whole batch's) state: Kafka's InFlightState."""
    state: RecordState
    delivery_count: int
    member_id: str = NO_MEMBER
    deadline_ms: int = -1          # of its lock, while ACQUIRED

    def copy(self) -> "_State":
        return _State(self.state, self.delivery_count, self.member_id, self.deadline_ms)


@dataclass
class _InFlight:
    first: int
    last: int
    whole: _State | None                         # the batch's state, until its offsets part ways
    offsets: dict[int, _State] | None = None     # offset -> state, in offset order

    def split(self) -> None:
        if self.offsets is None:
            self.offsets = {o: self.whole.copy() for o in range(self.first, self.last + 1)}
            self.whole = None

    def states(self):
        """(first, last, state) runs of this batch."""
        if self.offsets is None:
            yield self.first, self.last, self.whole
        else:
            for offset, state in self.offsets.items():
                yield offset, offset, state


@dataclass
class _Fetched:
    """A log batch read for an acquisition."""
    base: int
    last: int
    raw: bytes
    control: bool
    producer_id: int
    transactional: bool
    abort_marker: bool = False


@dataclass
class AcquireResult:
    records: bytes = b""
    acquired: list[Acquired] = field(default_factory=list)


class SharePartition:
    def __init__(self, group_id: str, topic: str, log, timer: Timer, settings: Callable[[], ShareSettings],
                 start_offset: int, state_batches: list[SR.StateBatch] = (), on_available: Callable[[], None] = None):
        self.group_id = group_id
        self.topic = topic
        self.log = log                      # kcoord.log.partition.Partition
        self.timer = timer
        self.settings = settings
        self.start_offset = start_offset
        self._batches: list[_InFlight] = []
        self._firsts: list[int] = []        # parallel to _batches, for bisect
        self._changes: list[tuple[int, int]] = []
        self._timer_key = f"share-lock-{group_id}-{topic}-{log.index}-{id(self)}"
        self._next_deadline = math.inf
        self.on_available = on_available    # records may have become acquirable (release, expiry)
        # Persists (and reports) what a lock expiry changed: called with the partition and, per
        # member whose locks expired, the Counter `expire_locks` returns.
        self.on_expired: Callable[[SharePartition, dict[str, collections.Counter]], None] | None = None
        for b in state_batches:
            if b.last_offset < start_offset:
                continue
            first = max(b.first_offset, start_offset)
            state = RecordState(b.delivery_state) if b.delivery_state != RecordState.ACQUIRED else RecordState.AVAILABLE
            self._insert(_InFlight(first, b.last_offset, _State(state, b.delivery_count)))
        self._move_start_offset()

    # ------------------------------------------------------------ views
    @property
    def end_offset(self) -> int:
        """The last in-flight offset (start offset - 1 when none is)."""
        return self._batches[-1].last if self._batches else self.start_offset - 1

    def in_flight_count(self) -> int:
        return sum(b.last - max(b.first, self.start_offset) + 1 for b in self._batches if b.last >= self.start_offset)

    def delivery_complete_count(self) -> int:
        return sum(last - max(first, self.start_offset) + 1 for b in self._batches for first, last, s in b.states()
                   if s.state in TERMINAL and last >= self.start_offset)

    def record_states(self) -> list[tuple[int, int, RecordState, int, str]]:
        """(first, last, state, delivery count, member) runs of every in-flight record, for tests and describe."""
        return [(f, l, s.state, s.delivery_count, s.member_id) for b in self._batches for f, l, s in b.states()
                if l >= self.start_offset]

    def state_batches(self) -> list[SR.StateBatch]:
        """The whole persisted state: every in-flight run, ACQUIRED as AVAILABLE."""
        return _coalesce([(max(f, self.start_offset), l, s) for b in self._batches for f, l, s in b.states()
                          if l >= self.start_offset])

    def lag(self) -> int:
        """Records from the start offset not yet delivered for good (Kafka's share-partition lag)."""
        return max(self.log.high_watermark - self.start_offset - self.delivery_complete_count(), 0)

    def next_fetch_offset(self) -> int:
        for b in self._batches:
            for first, last, s in b.states():
                if s.state is RecordState.AVAILABLE and last >= self.start_offset:
                    return max(first, self.start_offset)
        return self.end_offset + 1

    def acquirable(self) -> bool:
        """Whether an acquisition now could find a record."""
        self._follow_log_start()
        offset = self.next_fetch_offset()
        end = self.log.last_stable_offset if self.settings().read_committed else self.log.high_watermark
        return offset < end and (offset <= self.end_offset or self.in_flight_count() < self.settings().max_record_locks)

    # ------------------------------------------------------------ acquire
    def acquire(self, member_id: str, max_records: int, batch_size: int, record_limit: bool,
                max_bytes: int) -> AcquireResult:
        settings = self.settings()
        if max_records <= 0:
            return AcquireResult()
        self._follow_log_start()
        fetch_offset = self.next_fetch_offset()
        if settings.read_committed:
            blob, aborted = self.log.read_committed(fetch_offset, max_bytes)
        else:
            blob, aborted = self.log.read(fetch_offset, max_bytes), []
        fetched = _parse(blob)
        if not fetched or fetched[-1].last < self.start_offset:
            return AcquireResult()
        last_to_acquire = fetched[-1].last
        room = min(max_records, settings.max_record_locks - self.in_flight_count())
        if room <= 0:
            if fetch_offset > self.end_offset:
                return AcquireResult()
            # Acquiring in between the in-flight batches adds no record in flight.
            room = min(max_records, self.end_offset - fetch_offset + 1)
            last_to_acquire = min(last_to_acquire, self.end_offset)
        now = self.timer.now_ms()
        deadline = now + settings.lock_duration_ms
        out: list[Acquired] = []
        count = 0
        stop = False
        offset = max(fetched[0].base, self.start_offset)
        i = max(bisect.bisect_right(self._firsts, offset) - 1, 0)
        while i < len(self._batches) and count < room:
            b = self._batches[i]
            i += 1
            if b.first > last_to_acquire:
                break
            if b.last < offset:
                continue
            if offset < b.first:   # records between in-flight batches (persisted state had a gap): new ones
                got = self._acquire_new(member_id, fetched, offset, b.first - 1, batch_size, room - count,
                                        record_limit, deadline)
                i = bisect.bisect_right(self._firsts, b.first)
                out += got
                count += _records(got)
                if count >= room:
                    break
            offset = b.last + 1
            throttled = self._throttled(b, settings)
            if throttled and count > 0:
                stop = True
                break
            full = b.first >= fetched[0].base and b.last <= last_to_acquire
            if not full or b.offsets is not None or throttled or (record_limit and b.last - b.first + 1 > room - count):
                if b.offsets is None and b.whole.state is not RecordState.AVAILABLE:
                    continue
                b.split()
                got = self._acquire_offsets(member_id, b, fetched[0].base, last_to_acquire, room - count,
                                            record_limit, settings, deadline)
                out += got
                count += _records(got)
                if throttled and got:
                    stop = True
                    break
                continue
            if b.whole.state is not RecordState.AVAILABLE:
                continue
            b.whole = _State(RecordState.ACQUIRED, b.whole.delivery_count + 1, member_id, deadline)
            out.append(Acquired(b.first, b.last, b.whole.delivery_count))
            count += b.last - b.first + 1
        if not stop and count < room and offset <= last_to_acquire:
            out += self._acquire_new(member_id, fetched, max(offset, self.end_offset + 1), last_to_acquire,
                                     batch_size, room - count, record_limit, deadline)
        if settings.read_committed and aborted:
            out = self._drop_aborted(fetched, aborted, out)
        if out:
            self._arm(deadline)
        covering = [f.raw for f in fetched if any(a.first_offset <= f.last and a.last_offset >= f.base for a in out)]
        return AcquireResult(b"".join(covering), out)

    def _acquire_new(self, member_id, fetched, first, last, batch_size, room, record_limit, deadline) -> list[Acquired]:
        """New records in [first, last] (only offsets the fetched batches hold), as Kafka's
        acquireNewBatchRecords: whole log batches up to `room` records, split at `batch_size`."""
        covering = [f for f in fetched if f.last >= first and f.base <= last]
        if not covering:
            return []
        first = max(first, covering[0].base)
        last = min(last, covering[-1].last)
        if room < last - first + 1:
            # Whole log batches: the one holding the room's last offset ends the acquisition.
            target = first + room - 1
            last = min(next((f.last for f in covering if f.last >= target), last), last)
        ranges = []
        start = first
        if not record_limit and last - first + 1 > batch_size:
            for f in covering:
                if f.base > last:
                    break
                if f.base - start >= batch_size:
                    ranges.append((start, f.base - 1))
                    start = f.base
        ranges.append((start, last))
        if record_limit and last - first + 1 > room:
            b = _InFlight(first, last, _State(RecordState.ACQUIRED, 1, member_id, deadline))
            b.offsets = {o: (_State(RecordState.ACQUIRED, 1, member_id, deadline) if o < first + room
                             else _State(RecordState.AVAILABLE, 0)) for o in range(first, last + 1)}
            b.whole = None
            self._insert(b)
            return [Acquired(first, first + room - 1, 1)]
        for lo, hi in ranges:
            self._insert(_InFlight(lo, hi, _State(RecordState.ACQUIRED, 1, member_id, deadline)))
        if record_limit:
            lo, hi = ranges[0]
            return [Acquired(lo, hi, 1)]
        return [Acquired(lo, hi, 1) for lo, hi in ranges]

    def _acquire_offsets(self, member_id, b, first, last, room, record_limit, settings, deadline) -> list[Acquired]:
        """AVAILABLE offsets of a batch tracked per offset, contiguous ones with one delivery count
        as one range (ShareFetchUtils.accumulateAcquiredRecords)."""
        limit = settings.delivery_count_limit
        throttle_at = _throttle_limit(limit)
        cap = -1
        taken = 0
        got: list[Acquired] = []
        for offset, s in b.offsets.items():
            if offset < first or offset < self.start_offset:
                continue
            if offset > last:
                break
            if s.state is not RecordState.AVAILABLE:
                continue
            if limit > 2 and s.delivery_count == limit - 1 and taken:
                break   # its last delivery goes alone
            if s.delivery_count >= throttle_at and cap < 0:
                cap = max(1, len(b.offsets) >> (s.delivery_count - throttle_at + 1))
            s.state, s.delivery_count, s.member_id, s.deadline_ms = (RecordState.ACQUIRED, s.delivery_count + 1,
                                                                      member_id, deadline)
            taken += 1
            prev = got[-1] if got else None
            if prev and prev.last_offset + 1 == offset and prev.delivery_count == s.delivery_count:
                prev.last_offset = offset
            else:
                got.append(Acquired(offset, offset, s.delivery_count))
            if limit > 2 and s.delivery_count == limit:
                break
            if record_limit and taken == room:
                break
            if 0 < cap == taken:
                break
        return got

    def _throttled(self, b: _InFlight, settings: ShareSettings) -> bool:
        at = _throttle_limit(settings.delivery_count_limit)
        return max((s.delivery_count for _, _, s in b.states() if s.state is RecordState.AVAILABLE), default=0) >= at

    def _drop_aborted(self, fetched, aborted, out: list[Acquired]) -> list[Acquired]:
        """read_committed: the data batches of aborted transactions are ARCHIVED, not delivered."""
        starts = sorted((first, pid) for pid, first in aborted)
        active: set[int] = set()
        archive = []
        for f in fetched:
            while starts and starts[0][0] <= f.last:
                active.add(starts.pop(0)[1])
            if f.control:
                if f.abort_marker:
                    active.discard(f.producer_id)
            elif f.transactional and f.producer_id in active:
                archive.append((f.base, f.last))
        if not archive:
            return out
        for lo, hi in archive:
            self._set_states(lo, hi, lambda s: s.state is RecordState.ACQUIRED, RecordState.ARCHIVED)
        kept = []
        for a in out:
            pieces = [(a.first_offset, a.last_offset)]
            for lo, hi in archive:
                pieces = [p for x, y in pieces for p in ((x, min(y, lo - 1)), (max(x, hi + 1), y)) if p[0] <= p[1]]
            kept += [Acquired(x, y, a.delivery_count) for x, y in pieces]
        self._move_start_offset()
        return kept

    # ------------------------------------------------------------ acknowledge
    def acknowledge(self, member_id: str, batches: list[AckBatch]) -> collections.Counter:
        """Apply a request's acknowledgements of this partition, all or none (ShareError); the
        records acknowledged, by ACK_COUNTS name, and "archived": those released at the delivery
        count limit."""
        settings = self.settings()
        undo: list[tuple[_InFlight, _State | None, dict | None]] = []
        changes_before = len(self._changes)
        renewed = False
        counts = collections.Counter()
        try:
            for ack in batches:
                renewed |= self._acknowledge_batch(member_id, ack, settings, undo, counts)
        except ShareError:
            for b, whole, offsets in reversed(undo):
                b.whole, b.offsets = whole, offsets
            del self._changes[changes_before:]
            raise
        if renewed:
            self._arm(self.timer.now_ms() + settings.lock_duration_ms)
        self._move_start_offset()
        if any(t == RELEASE for ack in batches for t in ack.types):
            self._tell_available()
        return counts

    def _acknowledge_batch(self, member_id, ack: AckBatch, settings, undo, counts: collections.Counter) -> bool:
        if ack.last_offset < self.start_offset:
            # As Kafka: every offset of it is already acknowledged or archived; nothing to do, no error.
            return False
        types = ack.types
        per_offset = len(types) > 1
        j = bisect.bisect_right(self._firsts, ack.first_offset) - 1
        if j < 0:
            if not (ack.first_offset < self.start_offset <= ack.last_offset):
                raise ShareError(ErrorCode.INVALID_RECORD_STATE,
                                 "Batch record not found. The request batch offsets are not found in the cache.")
            j = max(bisect.bisect_right(self._firsts, self.start_offset) - 1, 0)
        end = bisect.bisect_right(self._firsts, ack.last_offset)
        sub = self._batches[j:end]
        if not sub or sub[-1].last < ack.first_offset:
            raise ShareError(ErrorCode.INVALID_REQUEST,
                             "Batch record not found. The first offset in request is past acquired records.")
        if ack.last_offset > sub[-1].last:
            raise ShareError(ErrorCode.INVALID_REQUEST,
                             "Batch record not found. The last offset in request is past acquired records.")
        renewed = False
        for b in sub:
            if b.last < self.start_offset:
                continue
            undo.append((b, b.whole.copy() if b.whole else None,
                         None if b.offsets is None else {o: s.copy() for o, s in b.offsets.items()}))
            if b.offsets is None:
                if b.whole.member_id == NO_MEMBER:
                    raise ShareError(ErrorCode.INVALID_RECORD_STATE,
                                     "The batch cannot be acknowledged. The batch is not in the acquired state.")
                if b.whole.member_id != member_id:
                    raise ShareError(ErrorCode.INVALID_RECORD_STATE, "Member is not the owner of batch record")
            full = b.first >= ack.first_offset and b.last <= ack.last_offset
            if not full or b.offsets is not None or per_offset or b.first < self.start_offset:
                if b.offsets is None and b.whole.state is not RecordState.ACQUIRED:
                    raise ShareError(ErrorCode.INVALID_RECORD_STATE,
                                     "The batch cannot be acknowledged. The subset batch is not in the acquired state.")
                b.split()
                for offset, s in b.offsets.items():
                    if offset < ack.first_offset or offset < self.start_offset:
                        continue
                    if offset > ack.last_offset:
                        break
                    if s.state is not RecordState.ACQUIRED:
                        raise ShareError(ErrorCode.INVALID_RECORD_STATE,
                                         "The offset cannot be acknowledged. The offset is not acquired.")
                    if s.member_id != member_id:
                        raise ShareError(ErrorCode.INVALID_RECORD_STATE, "Member is not the owner of offset")
                    kind = types[offset - ack.first_offset] if per_offset else types[0]
                    renewed |= self._apply(s, kind, offset, offset, settings, counts)
            else:
                if b.whole.state is not RecordState.ACQUIRED:
                    raise ShareError(ErrorCode.INVALID_RECORD_STATE,
                                     "The batch cannot be acknowledged. The batch is not in the acquired state.")
                renewed |= self._apply(b.whole, types[0], b.first, b.last, settings, counts)
        return renewed

    def _apply(self, s: _State, kind: int, first: int, last: int, settings: ShareSettings,
               counts: collections.Counter) -> bool:
        if kind == RENEW:
            if not settings.renew_enabled:
                raise ShareError(ErrorCode.INVALID_RECORD_STATE,
                                 "The record state is invalid. Renew acknowledgements are not enabled for the group.")
            s.deadline_ms = self.timer.now_ms() + settings.lock_duration_ms
            counts["renewed"] += last - first + 1
            return True
        target = ACK_STATES.get(kind)
        if target is None:
            raise ShareError(ErrorCode.INVALID_REQUEST, f"Unknown acknowledge type id: {kind}")
        counts[ACK_COUNTS[kind]] += last - first + 1
        if self._release(s, target, settings) is not target:
            counts["archived"] += last - first + 1
        self._changes.append((first, last))
        return False

    @staticmethod
    def _release(s: _State, target: RecordState, settings: ShareSettings) -> RecordState:
        """A transition out of ACQUIRED with no further delivery counted (InFlightState.tryUpdateState
        with NO_OP): back to AVAILABLE unless the delivery count limit is reached. The state it took."""
        if target is RecordState.AVAILABLE and s.delivery_count >= settings.delivery_count_limit:
            target = RecordState.ARCHIVED
        s.state, s.member_id, s.deadline_ms = target, NO_MEMBER, -1
        return target

    # ------------------------------------------------------------ release, expiry
    def release_member(self, member_id: str) -> collections.Counter:
        """The member's acquired records become AVAILABLE again (ARCHIVED at the limit): how many
        ("records") and how many of them were archived (empty when it held none)."""
        return self._release_where(lambda s: s.member_id == member_id).get(member_id, collections.Counter())

    def expire_locks(self) -> dict[str, collections.Counter]:
        """Records whose lock has expired become AVAILABLE again (ARCHIVED at the limit): per member
        that held them, how many and how many of them were archived."""
        now = self.timer.now_ms()
        return self._release_where(lambda s: 0 <= s.deadline_ms <= now)

    def _release_where(self, which) -> dict[str, collections.Counter]:
        settings = self.settings()
        released: dict[str, collections.Counter] = {}
        for b in self._batches:
            if b.offsets is None and b.first < self.start_offset <= b.last and b.whole.state is RecordState.ACQUIRED:
                b.split()
            for first, last, s in b.states():
                if s.state is RecordState.ACQUIRED and which(s) and last >= self.start_offset:
                    counts = released.setdefault(s.member_id, collections.Counter())
                    counts["records"] += last - first + 1
                    if self._release(s, RecordState.AVAILABLE, settings) is RecordState.ARCHIVED:
                        counts["archived"] += last - first + 1
                    self._changes.append((first, last))
        if released:
            self._move_start_offset()
            self._tell_available()
        return released

    def _arm(self, deadline: int) -> None:
        if deadline < self._next_deadline:
            self._next_deadline = deadline
            self.timer.schedule(self._timer_key, deadline - self.timer.now_ms(), self._locks_due)

    def _locks_due(self) -> None:
        self._next_deadline = math.inf
        expired = self.expire_locks()
        pending = [s.deadline_ms for b in self._batches for _, _, s in b.states() if s.deadline_ms >= 0]
        if pending:
            self._arm(min(pending))
        if expired and self.on_expired is not None:
            self.on_expired(self, expired)

    def close(self) -> None:
        self.timer.cancel(self._timer_key)

    # ------------------------------------------------------------ start offset
    def _move_start_offset(self) -> None:
        """Past the ACKNOWLEDGED/ARCHIVED prefix; whole batches of it leave the cache."""
        start = self.start_offset
        for b in self._batches:
            if b.last < start:
                continue
            runs = list(b.states())
            stop = False
            for first, last, s in runs:
                if last < start:
                    continue
                if s.state not in TERMINAL:
                    stop = True
                    break
                start = last + 1
            if stop:
                break
        if start == self.start_offset:
            return
        self.start_offset = start
        keep = bisect.bisect_right([b.last for b in self._batches], start - 1)
        del self._batches[:keep]
        del self._firsts[:keep]
        self._changes.append((start, start - 1))   # only the start offset

    def _follow_log_start(self) -> None:
        """Records deleted below the start offset (DeleteRecords): the start offset follows the log
        start, the AVAILABLE records below it are ARCHIVED."""
        log_start = self.log.log_start_offset
        if log_start <= self.start_offset:
            return
        if not self._batches or log_start > self.end_offset:
            self._batches.clear()
            self._firsts.clear()
            self.start_offset = log_start
            self._changes.append((log_start, log_start - 1))
            return
        self._set_states(self.start_offset, log_start - 1, lambda s: s.state is RecordState.AVAILABLE,
                         RecordState.ARCHIVED)
        self.start_offset = log_start
        self._changes.append((log_start, log_start - 1))
        self._move_start_offset()

    def set_start_offset(self, offset: int) -> None:
        """AlterShareGroupOffsets: start afresh at `offset` (the group has no member)."""
        self._batches.clear()
        self._firsts.clear()
        self.start_offset = offset
        self._changes.append((offset, offset - 1))

    def _set_states(self, first, last, which, target: RecordState) -> None:
        for b in self._batches:
            if b.last < first or b.first > last:
                continue
            if b.first < first or b.last > last:
                b.split()
            for lo, hi, s in b.states():
                if first <= lo and hi <= last and which(s):
                    s.state, s.member_id, s.deadline_ms = target, NO_MEMBER, -1
                    self._changes.append((lo, hi))

    # ------------------------------------------------------------ persistence
    def take_changes(self) -> tuple[bool, list[SR.StateBatch]]:
        """(whether anything changed, the state batches that did) since the last call."""
        if not self._changes:
            return False, []
        changed = self._changes
        self._changes = []
        runs = []
        for b in self._batches:
            for lo, hi, s in b.states():
                if hi < self.start_offset:
                    continue
                for x, y in changed:
                    a, z = max(lo, x, self.start_offset), min(hi, y)
                    if a <= z:
                        runs.append((a, z, s))
        runs.sort(key=lambda r: r[0])
        unique = []
        for r in runs:
            if unique and r[0] <= unique[-1][1]:
                continue
            unique.append(r)
        return True, _coalesce(unique)

    # ------------------------------------------------------------ internals
    def _insert(self, b: _InFlight) -> None:
        i = bisect.bisect_left(self._firsts, b.first)
        self._batches.insert(i, b)
        self._firsts.insert(i, b.first)

    def _tell_available(self) -> None:
        if self.on_available is not None:
            self.on_available()


def _throttle_limit(limit: int) -> int:
    return max(MIN_THROTTLE_DELIVERY_LIMIT, math.ceil(limit / 2))


def _coalesce(runs) -> list[SR.StateBatch]:
    out: list[SR.StateBatch] = []
    for first, last, s in runs:
        state = SR.AVAILABLE if s.state is RecordState.ACQUIRED else int(s.state)
        prev = out[-1] if out else None
        if prev and prev.last_offset + 1 == first and (prev.delivery_state, prev.delivery_count) == (state, s.delivery_count):
            out[-1] = SR.StateBatch(prev.first_offset, last, state, s.delivery_count)
        else:
            out.append(SR.StateBatch(first, last, state, s.delivery_count))
    return out


def _records(acquired: list[Acquired]) -> int:
    return sum(a.last_offset - a.first_offset + 1 for a in acquired)


def _parse(blob: bytes) -> list[_Fetched]:
    out = []
    for b in R.iter_batches(blob, validate_crc=False):
        abort = False
        if b.is_control:
            try:
                abort = not R.parse_marker(b)[0]
            except R.RecordsError:
                pass
        out.append(_Fetched(b.base_offset, b.last_offset, b.raw, b.is_control, b.producer_id,
                            b.is_transactional, abort))
    return out
