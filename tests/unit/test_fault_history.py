"""The fault injector's request history: the latest requests, numbered, oldest first."""
from kcoord.faults.injector import RequestHistory


def test_the_history_numbers_its_requests_and_keeps_only_the_latest():
    history = RequestHistory(3)
    assert list(history) == [] and len(history) == 0
    history.append(1, 12, "g1")
    history.append(2, 8, None)
    assert list(history) == [(1, 12, "g1"), (2, 8, None)]
    for seq, key in ((3, 11), (4, 14), (5, 12)):
        history.append(seq, key, f"g{seq}")
    assert len(history) == 3
    assert list(history) == [(3, 11, "g3"), (4, 14, "g4"), (5, 12, "g5")]   # 1 and 2 fell out
