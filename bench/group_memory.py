"""Bytes kcoord's coordinator holds per idle group and per idle member (Python heap, tracemalloc).

Builds Stable groups on the real (asyncio) timer, no sockets: the coordinator's own state only,
session timers included,
then measures: empty groups with one committed offset each, and Stable groups of N
members. Prints a table; nothing is asserted.

    python bench/group_memory.py [--groups 2000] [--members 1 4 16]
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kcoord.coordinator import (  # noqa: E402
    AsyncioTimer, CoordinatorConfig, GroupCoordinator, JoinRequest, OffsetCommitPartition, OffsetCommitRequest,
    SyncRequest,
)
from wire.errors import ErrorCode  # noqa: E402

METADATA = bytes(64)      # a consumer's subscription of a few topics
ASSIGNMENT = bytes(64)


class _Topics:
    def partition_exists(self, topic, partition):
        return True


def _coordinator() -> GroupCoordinator:
    return GroupCoordinator(AsyncioTimer(), CoordinatorConfig(initial_rebalance_delay_ms=0), _Topics())


def _stable_group(core: GroupCoordinator, group_id: str, members: int) -> None:
    answers: dict[int, object] = {}

    def join(i, member_id=""):
        core.join_group(JoinRequest(group_id, member_id, None, "consumer", [("range", METADATA)], 45000, 300000,
                                    f"client-{i}", "/127.0.0.1"), lambda r, i=i: answers.__setitem__(i, r))

    for i in range(members):
        join(i)
    for i in range(members):  # KIP-394: rejoin with the handed-out id; the last one completes the round
        join(i, answers.pop(i).member_id)
    results = list(answers.values())
    assert all(r.error == ErrorCode.NONE for r in results), results
    leader = results[0].leader_id
    generation = results[0].generation_id
    assignments = {r.member_id: ASSIGNMENT for r in results}
    for r in sorted(results, key=lambda r: r.member_id != leader):
        core.sync_group(SyncRequest(group_id, r.member_id, generation,
                                    assignments=assignments if r.member_id == leader else {}), lambda _: None)


def _measure(build) -> int:
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    keep = build()
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del keep
    return used


async def _main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=2000)
    ap.add_argument("--members", type=int, nargs="+", default=[1, 4, 16])
    args = ap.parse_args()

    def empty_groups():
        core = _coordinator()
        for g in range(args.groups):
            core.commit_offsets(OffsetCommitRequest(f"g{g}", "", -1, None, [OffsetCommitPartition("t", 0, 42)]))
        return core

    rows = [("Empty group with 1 committed offset", _measure(empty_groups) / args.groups)]
    per_group = {}
    for n in args.members:
        def stable(n=n):
            core = _coordinator()
            for g in range(args.groups):
                _stable_group(core, f"g{g}", n)
            return core
        per_group[n] = _measure(stable) / args.groups
        rows.append((f"Stable group of {n} member(s)", per_group[n]))
    if len(args.members) > 1:
        lo, hi = min(args.members), max(args.members)
        rows.append(("each further idle member (with its session timer)", (per_group[hi] - per_group[lo]) / (hi - lo)))
    print(f"coordinator heap per group ({args.groups} groups, 64-byte metadata and assignment, Python "
          f"{sys.version.split()[0]})")
    print(f"{'what':<52} {'bytes':>8}")
    for what, size in rows:
        print(f"{what:<52} {size:>8.0f}")


def main() -> None:
    asyncio.run(_main())


if __name__ == "__main__":
    main()
