"""Long-running coverage-guided fuzzing of request decoding and handling, with atheris.

    .venv/bin/pip install atheris          # needs clang/libFuzzer wheels; may not install everywhere
    .venv/bin/python fuzz/atheris_frames.py -max_total_time=3600 [corpus_dir]

Each input is one request payload. It is decoded; when it decodes, it is also
handed to a real in-process server's request path (`KafkaServer._handle`), so
handlers meet it too. Only the codec's own errors (which close the connection
in production) are expected; anything else is a finding. Seeds are the captured
client requests (tests/golden/captures). Without atheris the script replays the
seeds and random mutations of them for `--iterations`, so it stays runnable.
"""
from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.corpus import mutate, seed_requests  # noqa: E402
from kcoord.app import Kcoord  # noqa: E402
from kcoord.config import ServerConfig  # noqa: E402
from wire import codec  # noqa: E402
from wire.types import DecodeError  # noqa: E402

_loop = asyncio.new_event_loop()
_app: Kcoord | None = None


async def _start() -> Kcoord:
    app = Kcoord(ServerConfig(listen_port=0, initial_rebalance_delay_ms=0, auto_create_topics=False))
    await app.start()
    return app


class _FakeConnection:
    """Only what the request path reads from a connection."""
    id = 0
    host, port = "127.0.0.1", 0

    def __repr__(self):
        return "fuzz connection"


def one_input(data: bytes) -> None:
    try:
        codec.decode_request(data)
    except (DecodeError, codec.UnsupportedVersionError):
        return
    # A parked request (JoinGroup waiting for its rebalance) is cut after a short wait.
    task = _loop.create_task(_app.server._handle(_FakeConnection(), data))
    _loop.run_until_complete(asyncio.wait([task], timeout=0.05))
    if not task.done():
        task.cancel()
    elif task.exception() is not None:
        raise task.exception()


def main() -> None:
    global _app
    _app = _loop.run_until_complete(_start())
    try:
        import atheris
    except ImportError:
        iterations = int(sys.argv[sys.argv.index("--iterations") + 1]) if "--iterations" in sys.argv else 20000
        print(f"atheris is not installed: replaying seeds and {iterations} random mutations instead", flush=True)
        seeds, rnd = seed_requests(), random.Random(0)
        for payload in seeds:
            one_input(payload)
        for _ in range(iterations):
            one_input(mutate(rnd.choice(seeds), rnd, seeds))
        print("no findings")
        return
    corpus = [a for a in sys.argv[1:] if not a.startswith("-")]
    if corpus:
        for i, payload in enumerate(seed_requests()):
            (Path(corpus[0]) / f"seed-{i}").write_bytes(payload)
    atheris.instrument_all()
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
