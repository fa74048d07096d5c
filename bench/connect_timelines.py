"""Kafka Connect workers' assignment timelines on kcoord and on the reference Kafka, side by side.

    .venv/bin/python bench/connect_timelines.py [--out docs/img] [--protocols eager,sessioned]

For each protocol and each broker (kcoord as `kcoord serve`, Kafka 4.3.1 as one KRaft node,
both with group.initial.rebalance.delay.ms 0): 3 distributed workers run 2
VerifiableSourceConnectors of 4 tasks; a 4th worker joins; then one worker is killed
(SIGKILL) and stays away: the follower running the most, as in tests/integration/test_connect.py. Which worker runs which task, and when, is read from each worker's
own log ("Joined group at generation G ... got assignment"), the same on both brokers (Kafka
writes no journal), and drawn with `kcoord report`'s Connect timeline (one row per task, a
colour per worker, a dotted line per round, red where workers were told to wait). Writes
OUT/connect-PROTOCOL-BROKER.png and prints the rounds per step.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rebalance import _local_process  # noqa: E402

from kcoord.analytics.connect import timeline_figure  # noqa: E402
from kcoord.testing.connect import ConnectCluster, verifiable_source_config  # noqa: E402

CONNECTORS = {"src-a": 4, "src-b": 4}
SESSION_MS = 6_000
MAX_DELAY_MS = 10_000
BROKER_CONFIG = {"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000"}


@contextlib.contextmanager
def kcoord_broker():
    args = [a for k, v in BROKER_CONFIG.items() for a in ("--config", f"{k}={v}")]
    with _local_process(lambda port: [sys.executable, "-m", "kcoord", "serve", "--listen", f"127.0.0.1:{port}",
                                      "--log-level", "WARNING", *args]) as bootstrap:
        yield bootstrap


@contextlib.contextmanager
def kafka_broker():
    from kcoord.testing.reference_kafka import ReferenceKafka

    with ReferenceKafka(config=BROKER_CONFIG) as kafka:
        yield kafka.bootstrap


def _ms(at: str) -> int:
    return int(datetime.strptime(at, "%Y-%m-%d %H:%M:%S,%f").timestamp() * 1000)


def holdings(cluster: ConnectCluster, ended: dict[str, int], end_ms: int) -> tuple[list[dict], list[dict]]:
    """(holdings, rounds) in the report's shapes: a worker holds a task from the assignment line
    that lists it until its next line that does not, or until it was killed."""
    group = cluster.group_id
    held, rounds = [], {}
    for w in cluster.workers:
        current: dict[str, int] = {}
        for a in w.assignments():
            t = _ms(a.at)
            rounds.setdefault(a.generation, {"group_id": group, "time_ms": t, "delay_ms": 0})
            r = rounds[a.generation]
            r["time_ms"], r["delay_ms"] = min(r["time_ms"], t), max(r["delay_ms"], a.delay)
            now = set(a.tasks)
            for task in [k for k in current if k not in now]:
                held.append({"group_id": group, "task": task, "worker": w.worker_id,
                             "from_ms": current.pop(task), "to_ms": t})
            for task in now - set(current):
                current[task] = t
        for task, since in current.items():
            held.append({"group_id": group, "task": task, "worker": w.worker_id, "from_ms": since,
                         "to_ms": ended.get(w.name, end_ms)})
    return held, sorted(rounds.values(), key=lambda r: r["time_ms"])


def scenario(bootstrap: str, protocol: str, workdir: Path) -> tuple[list[dict], list[dict], list[str]]:
    steps = []
    with ConnectCluster(bootstrap, protocol=protocol, session_timeout_ms=SESSION_MS, max_delay_ms=MAX_DELAY_MS,
                        workdir=workdir) as cluster:
        def step(label, fn, workers, **kw):
            before = len(cluster.generations())
            began = time.monotonic()
            fn()
            sample = cluster.wait_running(CONNECTORS, workers=workers, label=label, timeout=120, stable_for=2.0, **kw)
            steps.append(f"{label}: {len(cluster.generations()) - before} rounds, {time.monotonic() - began:.1f} s")
            return sample

        def start():
            cluster.add_workers(3)
            for name, tasks in CONNECTORS.items():
                cluster.create_connector(name, verifiable_source_config(f"{cluster.group_id}-{name}", tasks))

        ended: dict[str, int] = {}
        step("3 workers start", start, 3)
        sample = step("a 4th joins", lambda: cluster.add_worker(), 4)
        victim = cluster.follower_with_tasks(sample)

        def kill():
            cluster.kill(victim)
            ended[victim.name] = int(time.time() * 1000)
        step("one is killed", kill, 3)
        time.sleep(2)
        held, rounds = holdings(cluster, ended, int(time.time() * 1000))
    return held, rounds, steps


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "img"))
    p.add_argument("--protocols", default="eager,sessioned")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import tempfile

    for protocol in args.protocols.split(","):
        for name, broker in (("kcoord", kcoord_broker), ("kafka", kafka_broker)):
            with broker() as bootstrap, tempfile.TemporaryDirectory() as tmp:
                held, rounds, steps = scenario(bootstrap, protocol, Path(tmp))
            label = "kcoord" if name == "kcoord" else "Kafka 4.3.1"
            fig = timeline_figure(held, rounds, held[0]["group_id"],
                                  title=f"{protocol} on {label}: 3 workers, a 4th joins, one killed")
            path = out / f"connect-{protocol}-{name}.png"
            fig.savefig(path, dpi=80, bbox_inches="tight")
            print(f"{protocol} on {label}: " + "; ".join(steps) + f" -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
