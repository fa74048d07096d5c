"""Durable state: an append-only, checksummed, compacted log under `--data-dir`."""
from kcoord.storage.durable_state import DurableState
from kcoord.storage.record_log import FSYNC_POLICIES, RecordLog

__all__ = ["DurableState", "RecordLog", "FSYNC_POLICIES"]
