"""Kafka framing: every request and response is a 4-byte big-endian size, then that many bytes."""
from __future__ import annotations

import asyncio
import struct

DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default

_SIZE = struct.Struct(">i")


class FrameError(ValueError):
    """A frame that cannot be read: the connection it came from must be closed."""


class FrameTooLarge(FrameError):
    """A frame over the size limit (Kafka's socket.request.max.bytes), which a server counts as a limit hit."""


def encode_frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


def check_size(size: int, max_size: int) -> None:
    if size < 0:
        raise FrameError(f"invalid negative frame size {size}")
    if size > max_size:
        raise FrameTooLarge(f"frame size {size} is larger than the maximum {max_size} "
                         f"(socket.request.max.bytes)")


async def read_frame(reader: asyncio.StreamReader, max_size: int = DEFAULT_MAX_FRAME_BYTES) -> bytes | None:
    """The next frame's payload, or None on a clean end of stream between frames."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as err:
        if not err.partial:
            return None
        raise FrameError(f"connection closed inside a frame size ({len(err.partial)} of 4 bytes)") from None
    size = _SIZE.unpack(head)[0]
    check_size(size, max_size)
    try:
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError as err:
        raise FrameError(f"connection closed inside a frame ({len(err.partial)} of {size} bytes)") from None


def split_frames(buf: bytes, max_size: int = DEFAULT_MAX_FRAME_BYTES) -> tuple[list[bytes], bytes]:
    """Complete frames in `buf`, and the incomplete rest."""
    frames = []
    pos = 0
    while len(buf) - pos >= 4:
        size = _SIZE.unpack_from(buf, pos)[0]
        check_size(size, max_size)
        if len(buf) - pos - 4 < size:
            break
        frames.append(bytes(buf[pos + 4:pos + 4 + size]))
        pos += 4 + size
    return frames, bytes(buf[pos:])
