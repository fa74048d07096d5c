"""How `kcoord reassign apply` shows its progress: one plain line per batch (a log, a pipe), or,
on a terminal, the same lines with a bar below them, redrawn while a batch copies."""
from __future__ import annotations

from typing import TextIO

from kcoord.reassign.apply import Progress, Start, Summary

NAMED = 4   # partitions a batch line names before it counts the rest


def human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _partitions(keys) -> str:
    names = [f"{t}-{p}" for t, p in keys]
    shown = " ".join(names[:NAMED])
    return shown + (f" and {len(names) - NAMED} more" if len(names) > NAMED else "")


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def started_line(s: Start) -> str:
    left = s.batches - s.batches_before
    if not left:
        return f"nothing to move: every partition of the plan ({s.partitions}) is on its target"
    if s.resumed:
        head = (f"resuming: {s.done} of {_plural(s.partitions, 'partition')} on their targets, "
                f"{_plural(s.batches_before, 'batch', 'batches')} done before, {s.under_way} under way; ")
    else:
        head = f"applying {s.partitions - s.done} of {_plural(s.partitions, 'partition')}: "
    throttle = "no throttle" if s.throttle is None else \
        f"throttle {s.throttle} B/s on brokers {','.join(map(str, s.throttled_brokers))}"
    return head + f"{_plural(left, 'batch', 'batches')} left, {human_bytes(s.bytes_total)} to copy, {throttle}"


def batch_line(p: Progress) -> str:
    return (f"batch {p.batch}/{p.batches} done: {_partitions(p.batch_partitions)}; "
            f"{p.partitions_done}/{p.partitions} partitions, {human_bytes(p.bytes_done)} of "
            f"{human_bytes(p.bytes_total)} copied")


def summary_line(s: Summary) -> str:
    return (f"reassignment complete: {_plural(s.partitions, 'partition')} on their targets "
            f"({s.moved} moved by this apply in {_plural(s.batches, 'batch', 'batches')}, "
            f"{human_bytes(s.bytes_copied)} copied); throttles cleared on brokers "
            f"{','.join(map(str, s.cleared_brokers))}"
            + (f" and topics {','.join(s.cleared_topics)}" if s.cleared_topics else ""))


class Lines:
    """One line when the apply starts and one per finished batch."""
    live = False

    def __init__(self, out: TextIO):
        self.out = out

    def started(self, start: Start) -> None:
        self.line(started_line(start))

    def progress(self, progress: Progress) -> None:
        pass

    def batch_done(self, progress: Progress) -> None:
        self.line(batch_line(progress))

    def line(self, text: str) -> None:
        print(text, file=self.out, flush=True)


class Bar(Lines):
    """The lines, and below them a bar of the plan's partitions and this apply's bytes, redrawn
    in place on every poll."""
    live = True
    WIDTH = 30
    ERASE = "\r\x1b[K"   # back to the line's start, clear to its end

    def progress(self, p: Progress) -> None:
        fraction = p.bytes_done / p.bytes_total if p.bytes_total else p.partitions_done / max(p.partitions, 1)
        filled = min(self.WIDTH, int(fraction * self.WIDTH))
        self.out.write(f"{self.ERASE}[{'#' * filled}{'.' * (self.WIDTH - filled)}] "
                       f"{p.partitions_done}/{p.partitions} partitions  {human_bytes(p.bytes_done)} of "
                       f"{human_bytes(p.bytes_total)}  batch {p.batch}/{p.batches}")
        self.out.flush()

    def line(self, text: str) -> None:
        self.out.write(self.ERASE)
        super().line(text)
