"""A transactional id's state, as Kafka's TransactionMetadata keeps it."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767


class TxnState(enum.Enum):
    """Kafka's TransactionState: (id in TransactionLogValue, name admin APIs show)."""
    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def state_name(self) -> str:
        return self.value[1]

    @classmethod
    def from_id(cls, ident: int) -> "TxnState":
        for s in cls:
            if s.id == ident:
                return s
        raise ValueError(f"unknown transaction state id {ident}")

    @classmethod
    def by_name(cls, name: str) -> "TxnState | None":
        return next((s for s in cls if s.state_name == name), None)

    @property
    def preparing(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    @property
    def complete(self) -> bool:
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    partitions: set = field(default_factory=set)    # (topic, partition)
    start_ms: int = -1
    last_update_ms: int = -1
    client_version: int = 0                          # the transaction.version the client runs

    @property
    def epoch_exhausted(self) -> bool:
        # Kafka keeps the last epoch for the bump a fence or a TV2 end needs.
        return self.producer_epoch >= MAX_EPOCH - 1

    def copy(self) -> "TransactionMetadata":
        c = TransactionMetadata(**{k: getattr(self, k) for k in self.__dataclass_fields__})
        c.partitions = set(self.partitions)
        return c
