"""Drive a live kcoord (or any Kafka listener) with mutated frames.

Many connections at once; each sends a batch of mutated frames back to back,
half-closes, and reads what comes back until the server closes. A frame counts
as consumed when the server answered it, or when the server closed the
connection on it (a malformed frame closes its own connection, as in Kafka).
"""
from __future__ import annotations

import asyncio
import random
import struct
from dataclasses import dataclass

from fuzz.corpus import mixed_frame, templates


@dataclass
class BlastStats:
    frames_sent: int = 0
    frames_consumed: int = 0
    responses: int = 0
    closed_by_server: int = 0
    stalled: int = 0          # sessions cut by our timeout (e.g. a parked JoinGroup)


async def _session(host, port, seeds, temps, rnd, byte_level, batch, stats: BlastStats, read_timeout: float):
    frames = [mixed_frame(seeds, temps, rnd, byte_level) for _ in range(batch)]
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(b"".join(frames))
        writer.write_eof()
        stats.frames_sent += batch
        answered = 0
        buf = b""
        try:
            async with asyncio.timeout(read_timeout):
                while True:
                    chunk = await reader.read(65536)
                    if not chunk:
                        break
                    buf += chunk
                    while len(buf) >= 4:
                        size = struct.unpack_from(">i", buf)[0]
                        if len(buf) < 4 + size:
                            break
                        buf = buf[4 + size:]
                        answered += 1
        except TimeoutError:
            stats.stalled += 1
        except ConnectionError:
            pass
        stats.responses += answered
        consumed = answered
        if answered < batch:
            stats.closed_by_server += 1
            consumed += 1
        stats.frames_consumed += min(consumed, batch)
    finally:
        writer.transport.abort()


async def blast(host: str, port: int, seeds: list[bytes], frames: int, concurrency: int = 32,
                batch: int = 64, seed: int = 0, read_timeout: float = 2.0, byte_level: float = 0.05) -> BlastStats:
    """Until the server has consumed `frames` mutated frames, over `concurrency` parallel connections."""
    stats = BlastStats()
    rnd = random.Random(seed)
    temps = templates(seeds)

    async def worker():
        while stats.frames_consumed < frames:
            await _session(host, port, seeds, temps, rnd, byte_level, batch, stats, read_timeout)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return stats
