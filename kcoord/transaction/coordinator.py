"""The transactions of one `__transaction_state` partition, on the broker leading it: Kafka's
TransactionCoordinator and TransactionMetadata transitions, as plain synchronous logic.

Every transition is written to the partition (`write`: the record of the new state) before it
takes effect, so a write that fails leaves the state as it was and the client gets an error.
Ending a transaction writes PrepareCommit/PrepareAbort, then the markers to every partition in
it (`write_markers`), then CompleteCommit/CompleteAbort. Kafka sends the markers from a
channel after answering; here they are written in the same operation unless a partition
cannot take one (no leader): then the transaction stays in its Prepare state, answering
CONCURRENT_TRANSACTIONS as Kafka does meanwhile, and the markers are retried.

Transaction version 2 (KIP-890) is the client's: EndTxn v5+ bumps the producer epoch at every
end (and returns it), partitions and the group's offsets partition are added implicitly by
Produce and TxnOffsetCommit. The coordinator's own aborts (timeouts, fencing) follow the
finalized transaction.version, as Kafka's follow its server TV.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Callable, Iterable

from kcoord.transaction.state import (MAX_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TransactionMetadata,
                                      TxnState)
from wire.errors import ErrorCode

log = logging.getLogger("kcoord.transaction")


class TxnError(Exception):
    def __init__(self, code: ErrorCode):
        self.code = code
        super().__init__(code.name)


@dataclass(frozen=True)
class TxnConfig:
    max_timeout_ms: int = 900000                 # transaction.max.timeout.ms
    abort_interval_ms: int = 10000               # transaction.abort.timed.out.transaction.cleanup.interval.ms
    id_expiration_ms: int = 604800000            # transactional.id.expiration.ms
    expiration_interval_ms: int = 3600000        # transaction.remove.expired.transaction.cleanup.interval.ms
    marker_retry_ms: int = 100


class TransactionCoordinator:
    def __init__(self, partition: int, coordinator_epoch: int, now_ms: Callable[[], int], config: TxnConfig,
                 next_producer_id: Callable[[], int], write: Callable[[TransactionMetadata], None],
                 write_markers: Callable[[TransactionMetadata, bool, int], set],
                 server_version: Callable[[], int], on_event: Callable[..., None] | None = None,
                 remove: Callable[[str], None] | None = None):
        self.partition = partition
        self.coordinator_epoch = coordinator_epoch
        self.now_ms = now_ms
        self.config = config
        self.next_producer_id = next_producer_id
        self._write = write                   # raises OSError: nothing changes
        # (metadata, commit, producer epoch) -> the partitions whose marker could not be written
        self._write_markers = write_markers
        self.server_version = server_version   # the finalized transaction.version
        self.on_event = on_event or (lambda *a, **k: None)
        self._remove = remove                 # writes an id's tombstone; raises OSError
        self.txns: dict[str, TransactionMetadata] = {}
        # transactional id -> (commit, partitions still without a marker)
        self.pending_markers: dict[str, tuple[bool, set]] = {}

    # ---------------------------------------------------------------- persistence
    def _apply(self, new: TransactionMetadata) -> None:
        """Write `new`, then hold it; an OSError becomes COORDINATOR_NOT_AVAILABLE with nothing changed."""
        new.last_update_ms = max(new.last_update_ms, 0)
        # As Kafka's prepareTransitionTo: the previous producer id of every new state is the
        # id held before it (a new transactional id's own).
        current = self.txns.get(new.transactional_id)
        new.prev_producer_id = new.producer_id if current is None else current.producer_id
        try:
            self._write(new)
        except OSError as err:
            log.warning("writing transaction %s to __transaction_state-%d failed: %s",
                        new.transactional_id, self.partition, err)
            raise TxnError(ErrorCode.COORDINATOR_NOT_AVAILABLE) from None
        self.txns[new.transactional_id] = new

    def replay(self, metas: Iterable[TransactionMetadata]) -> None:
        """Load: the latest record of each id (a tombstone is left out by the caller)."""
        for meta in metas:
            self.txns[meta.transactional_id] = meta

    def finish_loaded(self) -> None:
        """Kafka's load: a transaction found in a Prepare state gets its markers (again) and completes."""
        for meta in list(self.txns.values()):
            if meta.state.preparing:
                self._send_markers(meta, meta.state is TxnState.PREPARE_COMMIT)

    # --------------------------------------------------------------- InitProducerId
    def init_producer_id(self, transactional_id: str, timeout_ms: int,
                         expected: tuple[int, int] | None) -> tuple[ErrorCode, int, int]:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        now = self.now_ms()
        meta = self.txns.get(transactional_id)
        try:
            if meta is None:
                meta = TransactionMetadata(transactional_id, self.next_producer_id(), NO_PRODUCER_EPOCH, timeout_ms,
                                           last_update_ms=now)
            if transactional_id in self.pending_markers:
                raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
            if expected is not None and not (
                    meta.producer_epoch == NO_PRODUCER_EPOCH or expected[0] == meta.producer_id
                    or (expected[0] == meta.prev_producer_id and expected[1] >= MAX_EPOCH - 1)):
                raise TxnError(ErrorCode.PRODUCER_FENCED)
            if meta.state.preparing:
                raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
            if meta.state is TxnState.ONGOING:
                # Fence the producer: its transaction is aborted at a bumped epoch, and the
                # client, told CONCURRENT_TRANSACTIONS, retries and bumps the epoch once more.
                self._end(meta, commit=False, version=self.server_version(), fence=True, now=now)
                raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
            new = meta.copy()
            new.timeout_ms, new.start_ms, new.last_update_ms = timeout_ms, -1, now
            new.state, new.partitions = TxnState.EMPTY, set()
            if meta.epoch_exhausted and (expected is None or expected[1] == meta.producer_epoch):
                new.producer_id, new.producer_epoch = self.next_producer_id(), 0
                new.last_producer_epoch = NO_PRODUCER_EPOCH
            elif expected is None:
                new.producer_epoch, new.last_producer_epoch = meta.producer_epoch + 1, NO_PRODUCER_EPOCH
            elif meta.producer_epoch == NO_PRODUCER_EPOCH or expected[1] == meta.producer_epoch:
                new.producer_epoch, new.last_producer_epoch = meta.producer_epoch + 1, meta.producer_epoch
            elif expected[1] == meta.last_producer_epoch:
                pass   # a retry of a bump that succeeded: the same epoch again
            else:
                raise TxnError(ErrorCode.PRODUCER_FENCED)
            self._apply(new)
        except TxnError as err:
            return err.code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        self.on_event("transaction_initialized", transactional_id, producer_id=new.producer_id,
                      producer_epoch=new.producer_epoch)
        return ErrorCode.NONE, new.producer_id, new.producer_epoch

    # ---------------------------------------------------------------- adding partitions
    def _check_producer(self, meta: TransactionMetadata | None, producer_id: int, producer_epoch: int) -> None:
        if meta is None:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if meta.transactional_id in self.pending_markers:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if meta.producer_id != producer_id:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if meta.producer_epoch != producer_epoch:
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        if meta.state.preparing:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)

    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[tuple[str, int]], client_version: int) -> ErrorCode:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        partitions = set(partitions)
        meta = self.txns.get(transactional_id)
        try:
            self._check_producer(meta, producer_id, producer_epoch)
            if meta.state is TxnState.ONGOING and partitions <= meta.partitions:
                return ErrorCode.NONE
            now = self.now_ms()
            new = meta.copy()
            if meta.state is not TxnState.ONGOING:
                new.start_ms = now
                self.on_event("transaction_started", transactional_id, producer_id=producer_id,
                              producer_epoch=producer_epoch)
            new.state, new.last_update_ms, new.client_version = TxnState.ONGOING, now, client_version
            new.partitions |= partitions
            self._apply(new)
        except TxnError as err:
            return err.code
        return ErrorCode.NONE

    def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
               partitions: Iterable[tuple[str, int]]) -> dict:
        """Kafka's verification (KIP-890 part 1): each partition NONE if it is in the ongoing
        transaction, TRANSACTION_ABORTABLE if not; or one error for all of them."""
        partitions = list(partitions)
        if not transactional_id:
            return {p: ErrorCode.INVALID_REQUEST for p in partitions}
        meta = self.txns.get(transactional_id)
        error = None
        if meta is None or meta.producer_id != producer_id:
            error = ErrorCode.INVALID_PRODUCER_ID_MAPPING
        elif meta.producer_epoch != producer_epoch:
            error = ErrorCode.PRODUCER_FENCED
        elif meta.state.preparing:
            error = ErrorCode.CONCURRENT_TRANSACTIONS
        if error is not None:
            return {p: error for p in partitions}
        return {p: ErrorCode.NONE if p in meta.partitions else ErrorCode.TRANSACTION_ABORTABLE for p in partitions}

    # ---------------------------------------------------------------- ending
    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                client_version: int) -> tuple[ErrorCode, int, int]:
        """EndTxn: (error, producer id, epoch); the id and epoch are the ones a TV2 client goes on with."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        meta = self.txns.get(transactional_id)
        if meta is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        try:
            if client_version >= 2:
                done = self._end_v2(meta, producer_id, producer_epoch, commit, client_version)
            else:
                done = self._end_v1(meta, producer_id, producer_epoch, commit)
        except TxnError as err:
            return err.code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if client_version >= 2:
            return ErrorCode.NONE, done.producer_id, done.producer_epoch
        return ErrorCode.NONE, NO_PRODUCER_ID, NO_PRODUCER_EPOCH

    def _invalid(self, meta: TransactionMetadata, commit: bool) -> TxnError:
        log.info("transactional id %s is %s: %s refused", meta.transactional_id, meta.state.state_name,
                 "commit" if commit else "abort")
        return TxnError(ErrorCode.INVALID_TXN_STATE)

    def _end_v1(self, meta, producer_id, producer_epoch, commit) -> TransactionMetadata:
        if meta.producer_id != producer_id:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if producer_epoch != meta.producer_epoch:
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        if meta.transactional_id in self.pending_markers:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        state = meta.state
        if state is TxnState.ONGOING:
            return self._end(meta, commit, version=0, fence=False, now=self.now_ms())
        if state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            if commit == (state is TxnState.COMPLETE_COMMIT):
                return meta
            raise self._invalid(meta, commit)
        if state.preparing:
            if commit == (state is TxnState.PREPARE_COMMIT):
                raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
            raise self._invalid(meta, commit)
        raise self._invalid(meta, commit)

    def _end_v2(self, meta, producer_id, producer_epoch, commit, client_version) -> TransactionMetadata:
        if meta.transactional_id in self.pending_markers:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        retry_on_overflow = (meta.prev_producer_id == producer_id and producer_epoch == MAX_EPOCH - 1
                             and meta.producer_epoch == 0)
        retry_on_bump = meta.producer_epoch == producer_epoch + 1
        state = meta.state
        if state in (TxnState.ONGOING, TxnState.EMPTY):
            valid = producer_epoch == meta.producer_epoch
        elif state.preparing:
            valid = retry_on_bump
        else:
            valid = retry_on_bump or retry_on_overflow or producer_epoch == meta.producer_epoch
        is_retry = retry_on_bump or retry_on_overflow
        if meta.producer_id != producer_id and not retry_on_overflow:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if not valid:
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        now = self.now_ms()
        if state is TxnState.ONGOING:
            return self._end(meta, commit, version=client_version, fence=False, now=now)
        if state is TxnState.COMPLETE_COMMIT:
            if commit:
                if is_retry:
                    return meta
                raise self._invalid(meta, commit)
            if is_retry:
                raise self._invalid(meta, commit)
            return self._end(meta, False, version=client_version, fence=False, now=now, empty=True)
        if state is TxnState.COMPLETE_ABORT:
            if commit:
                raise self._invalid(meta, commit)
            if is_retry:
                return meta
            return self._end(meta, False, version=client_version, fence=False, now=now, empty=True)
        if state.preparing:
            if commit == (state is TxnState.PREPARE_COMMIT):
                raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
            raise self._invalid(meta, commit)
        if state is TxnState.EMPTY and not commit:
            return self._end(meta, False, version=client_version, fence=False, now=now, empty=True)
        raise self._invalid(meta, commit)

    def _end(self, meta: TransactionMetadata, commit: bool, version: int, fence: bool, now: int,
             empty: bool = False) -> TransactionMetadata:
        """Write Prepare{Commit,Abort} (bumping the epoch where TV2 or a fence says so), then the
        markers, then Complete{Commit,Abort}. Returns the state the client goes on from."""
        prepare = meta.copy()
        prepare.state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        rotate_to = NO_PRODUCER_ID
        if version >= 2:
            if meta.epoch_exhausted:
                rotate_to = self.next_producer_id()
            if not (meta.producer_epoch == MAX_EPOCH and not commit):
                prepare.producer_epoch = meta.producer_epoch + 1
            prepare.last_producer_epoch = meta.producer_epoch
        elif fence:
            prepare.producer_epoch = min(meta.producer_epoch + 1, MAX_EPOCH)
            prepare.last_producer_epoch = NO_PRODUCER_EPOCH
        prepare.next_producer_id = rotate_to
        prepare.client_version = version
        prepare.last_update_ms = now
        if empty:
            prepare.start_ms = now
        self._apply(prepare)
        outcome = "commit" if commit else "abort"
        self.on_event("transaction_ending", meta.transactional_id, producer_id=prepare.producer_id,
                      producer_epoch=prepare.producer_epoch, result=outcome, fenced=fence,
                      partitions=len(prepare.partitions))
        self._send_markers(prepare, commit)
        return self.txns[meta.transactional_id]

    def _send_markers(self, prepare: TransactionMetadata, commit: bool) -> None:
        remaining = set(prepare.partitions)
        if remaining:
            remaining = set(self._write_markers(prepare, commit, prepare.producer_epoch))
        if remaining:
            self.pending_markers[prepare.transactional_id] = (commit, remaining)
            return
        self._complete(prepare)

    def retry_markers(self) -> None:
        """Write the markers partitions could not take before; complete what is then done."""
        for transactional_id, (commit, remaining) in list(self.pending_markers.items()):
            meta = self.txns.get(transactional_id)
            if meta is None or not meta.state.preparing:
                self.pending_markers.pop(transactional_id, None)
                continue
            probe = meta.copy()
            probe.partitions = remaining
            left = set(self._write_markers(probe, commit, meta.producer_epoch))
            if left:
                self.pending_markers[transactional_id] = (commit, left)
            else:
                self.pending_markers.pop(transactional_id, None)
                self._complete(meta)

    def _complete(self, prepare: TransactionMetadata) -> None:
        done = prepare.copy()
        commit = prepare.state is TxnState.PREPARE_COMMIT
        done.state = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        if prepare.client_version >= 2 and prepare.next_producer_id != NO_PRODUCER_ID:
            done.prev_producer_id = prepare.producer_id
            done.producer_id, done.producer_epoch = prepare.next_producer_id, 0
        done.next_producer_id = NO_PRODUCER_ID
        done.partitions = set()
        done.last_update_ms = self.now_ms()
        try:
            self._apply(done)
        except TxnError:
            # The markers are in the partitions; the Complete record is written again at the
            # next load (a Prepare state found then sends the markers again, harmlessly).
            self.pending_markers[prepare.transactional_id] = (commit, set())
            return
        self.on_event("transaction_completed", prepare.transactional_id, producer_id=prepare.producer_id,
                      producer_epoch=prepare.producer_epoch, result="commit" if commit else "abort")

    # ---------------------------------------------------------------- timeouts
    def abort_timed_out(self) -> list[str]:
        """Abort, fencing the producer, every Ongoing transaction older than its timeout."""
        now = self.now_ms()
        aborted = []
        for meta in list(self.txns.values()):
            if (meta.state is TxnState.ONGOING and meta.transactional_id not in self.pending_markers
                    and meta.start_ms + meta.timeout_ms < now):
                log.info("transaction of %s (producer %d epoch %d) timed out after %d ms: aborting it",
                         meta.transactional_id, meta.producer_id, meta.producer_epoch, meta.timeout_ms)
                self.on_event("transaction_timed_out", meta.transactional_id, producer_id=meta.producer_id,
                              producer_epoch=meta.producer_epoch)
                try:
                    self._end(meta, commit=False, version=self.server_version(), fence=True, now=now)
                except TxnError:
                    continue
                aborted.append(meta.transactional_id)
        return aborted

    def expire_ids(self) -> list[str]:
        """Kafka's transactional id expiration: an id whose last transaction ended (or that never
        began one) more than transactional.id.expiration.ms ago is forgotten, its record
        tombstoned; its next InitProducerId starts afresh."""
        limit = self.now_ms() - self.config.id_expiration_ms
        expired = []
        for meta in list(self.txns.values()):
            if (meta.state.complete and meta.last_update_ms <= limit
                    and meta.transactional_id not in self.pending_markers and self._remove is not None):
                try:
                    self._remove(meta.transactional_id)
                except OSError as err:
                    log.warning("expiring transactional id %s failed: %s", meta.transactional_id, err)
                    continue
                del self.txns[meta.transactional_id]
                expired.append(meta.transactional_id)
        if expired:
            log.info("expired %d transactional ids of __transaction_state-%d", len(expired), self.partition)
        return expired

    # ---------------------------------------------------------------- admin
    def describe(self, transactional_id: str) -> dict:
        # A refusal carries the message's defaults (0s), as Kafka sets only the id and the error.
        entry = {"error_code": ErrorCode.NONE, "transactional_id": transactional_id, "transaction_state": "",
                 "transaction_timeout_ms": 0, "transaction_start_time_ms": 0, "producer_id": 0,
                 "producer_epoch": 0, "topics": []}
        if not transactional_id:
            entry["error_code"] = ErrorCode.INVALID_REQUEST
            return entry
        meta = self.txns.get(transactional_id)
        if meta is None or meta.state is TxnState.DEAD:
            entry["error_code"] = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
            return entry
        topics: dict[str, list[int]] = {}
        for topic, partition in sorted(meta.partitions):
            topics.setdefault(topic, []).append(partition)
        entry.update(transaction_state=meta.state.state_name, transaction_timeout_ms=meta.timeout_ms,
                     transaction_start_time_ms=meta.start_ms, producer_id=meta.producer_id,
                     producer_epoch=meta.producer_epoch,
                     topics=[{"topic": t, "partitions": ps} for t, ps in topics.items()])
        return entry

    def list(self, producer_ids: set, states: set, min_duration_ms: int, regex: re.Pattern | None) -> list[dict]:
        """ListTransactions' rows here: `states` by name, `min_duration_ms` -1 for any, `regex`
        matched against the whole id (Java's Matcher.matches)."""
        now = self.now_ms()
        out = []
        for meta in self.txns.values():
            if meta.state is TxnState.DEAD:
                continue
            if producer_ids and meta.producer_id not in producer_ids:
                continue
            if states and meta.state.state_name not in states:
                continue
            if min_duration_ms >= 0 and now - meta.start_ms <= min_duration_ms:
                continue
            if regex is not None and not regex.fullmatch(meta.transactional_id):
                continue
            out.append({"transactional_id": meta.transactional_id, "producer_id": meta.producer_id,
                        "transaction_state": meta.state.state_name})
        return out

    def max_producer_id(self) -> int:
        return max((max(m.producer_id, m.prev_producer_id, m.next_producer_id) for m in self.txns.values()),
                   default=NO_PRODUCER_ID)
