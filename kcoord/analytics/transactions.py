"""From one transactional id's time-ordered journal events to its transactions.

Plain Python over one transactional id at a time, like rebalances.py: Spark runs it per id. A
transaction opens at its first partition (`transaction_started`; an ended transaction with none,
at its `transaction_ending`) and closes when its markers are written (`transaction_completed`):
committed, aborted, or timed out when the coordinator aborted it for its timeout
(`transaction_timed_out` before its end). One still unfinished when the input ends is open.
"""
from __future__ import annotations

INITIALIZED = "transaction_initialized"
STARTED = "transaction_started"
TIMED_OUT = "transaction_timed_out"
ENDING = "transaction_ending"
COMPLETED = "transaction_completed"
KINDS = (INITIALIZED, STARTED, TIMED_OUT, ENDING, COMPLETED)

OUTCOMES = ("committed", "aborted", "timed_out", "open")

TRANSACTION_FIELDS = ["transactional_id", "seq", "producer_id", "producer_epoch", "start_ms", "end_ms",
                      "duration_ms", "outcome", "partitions"]

# Within one millisecond a transaction starts, times out, ends and completes in this order.
_ORDER = {INITIALIZED: 0, STARTED: 1, TIMED_OUT: 2, ENDING: 3, COMPLETED: 4}


def transactions_for_id(events) -> list[dict]:
    events = sorted(events, key=lambda e: (e["time_ms"], _ORDER.get(e["kind"], 5)))
    out: list[dict] = []
    cur: dict | None = None
    for e in events:
        kind = e["kind"]
        if kind not in _ORDER or kind == INITIALIZED:
            continue
        if cur is None:
            cur = dict.fromkeys(TRANSACTION_FIELDS)
            cur.update(transactional_id=e["transactional_id"], seq=len(out) + 1, producer_id=e.get("producer_id"),
                       producer_epoch=e.get("generation"), start_ms=e["time_ms"], _timed_out=False, _result=None)
        if kind == TIMED_OUT:
            cur["_timed_out"] = True
        elif kind == ENDING:
            cur["_result"] = e.get("result")
            cur["partitions"] = e.get("txn_partitions")
        elif kind == COMPLETED:
            result = e.get("result") or cur["_result"]
            cur.update(end_ms=e["time_ms"], duration_ms=e["time_ms"] - cur["start_ms"],
                       outcome="timed_out" if cur["_timed_out"] else "committed" if result == "commit" else "aborted")
            out.append(_finish(cur))
            cur = None
    if cur is not None:
        cur["outcome"] = "open"
        out.append(_finish(cur))
    return out


def _finish(t: dict) -> dict:
    del t["_timed_out"], t["_result"]
    return t

