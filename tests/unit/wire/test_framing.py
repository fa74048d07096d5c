import asyncio
import struct

import pytest

from wire.framing import FrameError, encode_frame, read_frame, split_frames


def _reader(data: bytes) -> asyncio.StreamReader:
    r = asyncio.StreamReader()
    r.feed_data(data)
    r.feed_eof()
    return r


async def test_frames_and_clean_eof():
    r = _reader(encode_frame(b"abc") + encode_frame(b""))
    assert await read_frame(r) == b"abc"
    assert await read_frame(r) == b""
    assert await read_frame(r) is None


@pytest.mark.parametrize("data,match", [
    (struct.pack(">i", -1), "negative"),
    (struct.pack(">i", 101), "larger than the maximum 100"),
    (b"\x00\x00", "inside a frame size"),
    (struct.pack(">i", 10) + b"abc", "3 of 10 bytes"),
])
async def test_bad_frames(data, match):
    with pytest.raises(FrameError, match=match):
        await read_frame(_reader(data), max_size=100)


def test_split_frames():
    frames, rest = split_frames(encode_frame(b"a") + encode_frame(b"bc") + b"\x00\x00\x00\x05ab")
    assert frames == [b"a", b"bc"] and rest == b"\x00\x00\x00\x05ab"


def test_an_oversized_frame_is_told_apart_from_other_frame_errors():
    from wire.framing import FrameTooLarge, check_size

    with pytest.raises(FrameTooLarge):
        check_size(11, 10)
    with pytest.raises(FrameError) as err:
        check_size(-1, 10)
    assert not isinstance(err.value, FrameTooLarge)
