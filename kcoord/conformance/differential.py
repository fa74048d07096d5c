"""Differential runs: each `kcoord check` scenario through a recording proxy in front of
Apache Kafka and in front of kcoord, transcripts compared (kcoord.conformance.transcript).

    results = run_differential(kafka_bootstrap, kcoord_bootstrap, clients=["kafka-python"])
    print(report_table(results))

The Kafka and kcoord runs of one scenario go side by side (fresh random groups and
topics each), and raw scenarios all run at once, as `kcoord check` runs them.
"""
from __future__ import annotations

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from kcoord.conformance import raw_scenarios, transcript
from kcoord.conformance.check import SCENARIO_TIMEOUT, client_missing
from kcoord.conformance.recorder import ProxyThread, RecordingProxy, Transcript
from kcoord.conformance.rawclient import parse_bootstrap

# (scenario, client, delay_ms or None for any) -> the divergence that is known, and why.
# `path` must occur in the first divergence's summary; `doc` is its docs/deviations.md entry.
KNOWN_DIVERGENCES: dict[tuple[str, str, int | None], dict] = {}


@dataclass
class DiffResult:
    scenario: str
    client: str
    verdict: str            # identical | equivalent | differs | error
    summary: str            # first divergence in one line ("" when identical)
    detail: str             # first divergence with context
    kafka_status: str       # the scenario's own pass/fail on each broker
    kcoord_status: str
    seconds: float
    kafka_transcript: list | None = None
    kcoord_transcript: list | None = None
    path: str = ""          # where in its exchange the first divergence is ("" when none)

    def row(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if not k.endswith("_transcript")}


def _status(out) -> str:
    return "skip" if out.skipped else "pass" if out.passed else "fail"


async def _raw_once(name: str, upstream: tuple[str, int]) -> tuple[str, list]:
    t = Transcript(keep=True)
    proxy = RecordingProxy(upstream, t)
    host, port = await proxy.start()
    try:
        broker = raw_scenarios.Broker(host, port)
        await broker.probe()
        try:
            out = await asyncio.wait_for(raw_scenarios.SCENARIOS[name](broker), SCENARIO_TIMEOUT)
            status = f"{_status(out)}: {out.observed}"
        except raw_scenarios.Unsupported as err:
            status = f"skip: {err}"
        except asyncio.TimeoutError:
            status = f"fail: no answer within {SCENARIO_TIMEOUT:.0f}s"
        except Exception as err:
            status = f"error: {type(err).__name__}: {err}"
    finally:
        await proxy.close()
    return status, t.sorted()


async def _run_raw(kafka: tuple[str, int], kcoord: tuple[str, int], names: list[str]) -> list[DiffResult]:
    async def one(name):
        start = time.monotonic()
        (ks, kt), (cs, ct) = await asyncio.gather(_raw_once(name, kafka), _raw_once(name, kcoord))
        return _result(name, "raw", ks, cs, kt, ct, time.monotonic() - start)

    return list(await asyncio.gather(*(one(n) for n in names)))


def _result(name, client, ks, cs, kt, ct, seconds) -> DiffResult:
    try:
        cmp = transcript.compare(kt, ct)
    except Exception as err:  # a comparator bug must show in the table, not hide the other rows
        return DiffResult(name, client, "error", f"comparison failed: {type(err).__name__}: {err}", "",
                          ks, cs, round(seconds, 1), kt, ct)
    d = cmp.divergence
    differs = d is not None and cmp.verdict == "differs"
    summary = d.summary() if differs else ""
    detail = d.describe() if d is not None else ""
    return DiffResult(name, client, cmp.verdict, summary, detail, ks, cs, round(seconds, 1), kt, ct,
                      path=d.path if differs else "")


def _client_once(fn, upstream: str, client: str, proxies: ProxyThread) -> tuple[str, list]:
    from kcoord.conformance.client_scenarios import NoTopicCreation

    p = proxies.proxy(upstream)
    try:
        try:
            out = fn(p.bootstrap, client)
            status = f"{_status(out)}: {out.observed}"
        except NoTopicCreation as err:
            status = f"skip: {err}"
        except Exception as err:
            status = f"error: {type(err).__name__}: {err}"[:300]
    finally:
        proxies.close_proxy(p)
    return status, p.transcript.sorted()


def _run_client(name: str, client: str, kafka: str, kcoord: str, proxies: ProxyThread) -> DiffResult:
    from kcoord.conformance import client_scenarios

    start = time.monotonic()
    missing = client_missing(client)
    if missing:
        return DiffResult(name, client, "error", missing, "", "", "", 0.0)
    fn = client_scenarios.SCENARIOS[name]
    with ThreadPoolExecutor(2) as pool:
        kf = pool.submit(_client_once, fn, kafka, client, proxies)
        cf = pool.submit(_client_once, fn, kcoord, client, proxies)
        (ks, kt), (cs, ct) = kf.result(), cf.result()
    return _result(name, client, ks, cs, kt, ct, time.monotonic() - start)


def run_differential(kafka_bootstrap: str, kcoord_bootstrap: str, clients: list[str],
                     scenarios: list[str] | None = None, parallel: int = 2,
                     transcripts_dir: str | None = None) -> list[DiffResult]:
    """Every selected scenario on both brokers, compared; `parallel` (scenario, client) pairs of
    client scenarios at once (each pair runs its Kafka and kcoord side by side)."""
    raw_names = [n for n in raw_scenarios.SCENARIOS if scenarios is None or n in scenarios]
    results: list[DiffResult] = []
    if raw_names:
        results += asyncio.run(_run_raw(parse_bootstrap(kafka_bootstrap), parse_bootstrap(kcoord_bootstrap),
                                        raw_names))
    if clients:
        from kcoord.conformance import client_scenarios

        jobs = [(n, c) for n in client_scenarios.SCENARIOS if scenarios is None or n in scenarios for c in clients]
        with ProxyThread() as proxies, ThreadPoolExecutor(max(1, parallel)) as pool:
            results += list(pool.map(lambda j: _run_client(j[0], j[1], kafka_bootstrap, kcoord_bootstrap, proxies),
                                     jobs))
    if transcripts_dir:
        save_transcripts(results, transcripts_dir)
    return results


def save_transcripts(results: list[DiffResult], directory: str, suffix: str = "") -> None:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for r in results:
        stem = f"{r.scenario.replace(':', '_')}.{r.client}{suffix}"
        for side, t in (("kafka", r.kafka_transcript), ("kcoord", r.kcoord_transcript)):
            if t is not None:
                (out / f"{stem}.{side}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in t))


def known(scenario: str, client: str, delay_ms: int | None) -> dict | None:
    return (KNOWN_DIVERGENCES.get((scenario, client, delay_ms))
            or KNOWN_DIVERGENCES.get((scenario, client, None)))


def unexpected(results: list[DiffResult], delay_ms: int | None) -> list[str]:
    """What makes a differential run fail: a divergence not listed, or a listed one that
    changed or vanished (so the list stays true)."""
    problems = []
    for r in results:
        # The scenario's own verdict counts too: Kafka is the judge of its expectation.
        for broker, status in (("the reference Kafka", r.kafka_status), ("kcoord", r.kcoord_status)):
            if status.split(":", 1)[0] not in ("pass", "skip"):
                problems.append(f"{r.scenario} [{r.client}] @{delay_ms}ms: the scenario's check says {status} "
                                f"on {broker}")
        k = known(r.scenario, r.client, delay_ms)
        if k is None:
            if r.verdict in ("differs", "error"):
                problems.append(f"{r.scenario} [{r.client}] @{delay_ms}ms {r.verdict}: {r.summary}\n{r.detail}")
        elif r.verdict != "differs" or k["path"] not in r.summary:
            problems.append(f"{r.scenario} [{r.client}] @{delay_ms}ms is listed in KNOWN_DIVERGENCES "
                            f"({k['doc']}: {k['path']}) but got {r.verdict}: {r.summary or '(no divergence)'}")
    return problems


def report_table(rows: list[tuple[int | None, DiffResult]]) -> str:
    """scenario x client x delay: verdict and the first divergence."""
    table = [("scenario", "client", "delay", "verdict", "time", "first divergence")]
    for delay, r in rows:
        k = known(r.scenario, r.client, delay)
        verdict = r.verdict + (" (known)" if k and r.verdict == "differs" else "")
        table.append((r.scenario, r.client, "-" if delay is None else f"{delay}ms", verdict, f"{r.seconds:.0f}s",
                      r.summary))
    widths = [max(len(row[i]) for row in table) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row[:5], widths)) + "  " + row[5] for row in table]
    n = len(rows)
    same = sum(r.verdict in ("identical", "equivalent") for _, r in rows)
    lines.append(f"\n{same}/{n} identical or equivalent, {n - same} differ")
    return "\n".join(lines)
