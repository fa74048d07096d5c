"""Run the conformance scenarios against a broker and report scenario x client.

The JSON report (`kcoord check --json`), stable across releases:

    {"bootstrap": "HOST:PORT", "passed": true|false,
     "results": [{"scenario": str, "client": "raw"|"kafka-python"|"aiokafka"|"confluent"|"java"|"java4",
                  "status": "pass"|"fail"|"skip"|"error", "observed": str, "expected": str,
                  "seconds": float}]}
"""
from __future__ import annotations

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

from kcoord.conformance import raw_scenarios, streams_check_scenarios, txn_check_scenarios
from kcoord.conformance.rawclient import parse_bootstrap

# "java" is kafka-clients 3.9.1, "java4" kafka-clients 4.3.1 (kcoord.conformance.javaclient).
CLIENTS = ("kafka-python", "aiokafka", "confluent", "java", "java4")
SCENARIO_TIMEOUT = 120.0
# The "raw" rows: the group scenarios, then the transactions' and the streams groups' (kept apart from
# raw_scenarios.SCENARIOS, which tests/conformance/test_differential.py compares transcript by transcript
# with the reference Kafka).
RAW_SCENARIOS = {**raw_scenarios.SCENARIOS, **txn_check_scenarios.SCENARIOS, **streams_check_scenarios.SCENARIOS}


@dataclass
class Result:
    scenario: str
    client: str
    status: str
    observed: str
    expected: str
    seconds: float


async def _run_raw(bootstrap: str, names: list[str]) -> list[Result]:
    host, port = parse_bootstrap(bootstrap)
    broker = raw_scenarios.Broker(host, port)
    await broker.probe()

    async def one(name):
        start = time.monotonic()
        try:
            out = await asyncio.wait_for(RAW_SCENARIOS[name](broker), SCENARIO_TIMEOUT)
            status = "skip" if out.skipped else "pass" if out.passed else "fail"
            observed, expected = out.observed, out.expected
        except raw_scenarios.Unsupported as err:
            status, observed, expected = "skip", str(err), ""
        except asyncio.TimeoutError:
            status, observed, expected = "fail", f"no answer within {SCENARIO_TIMEOUT:.0f}s", ""
        except AssertionError as err:  # a step before the checked one went wrong
            status, observed, expected = "fail", str(err), "every step succeeds"
        except Exception as err:  # a broker that breaks the protocol is a failure, reported, not a crash
            status, observed, expected = "error", f"{type(err).__name__}: {err}", ""
        return Result(name, "raw", status, observed, expected, round(time.monotonic() - start, 2))

    # Each scenario uses its own groups: they run side by side to bound the
    # wall time on brokers with an initial rebalance delay.
    return list(await asyncio.gather(*(one(n) for n in names)))


def run_check(bootstrap: str, clients: list[str], scenarios: list[str] | None = None) -> list[Result]:
    raw_names = [n for n in RAW_SCENARIOS if scenarios is None or n in scenarios]
    results = asyncio.run(_run_raw(bootstrap, raw_names)) if raw_names else []
    if clients:
        from kcoord.conformance import client_scenarios

        for name, fn in client_scenarios.SCENARIOS.items():
            if scenarios is not None and name not in scenarios:
                continue
            # The clients of one scenario run side by side, each on its own topic and groups.
            with ThreadPoolExecutor(len(clients)) as pool:
                results.extend(pool.map(lambda client: _run_client(fn, name, bootstrap, client), clients))
    return results


def client_scenarios_skip():
    from kcoord.conformance.client_scenarios import NoTopicCreation
    return NoTopicCreation


_MODULES = {"kafka-python": "kafka", "aiokafka": "aiokafka", "confluent": "confluent_kafka"}


def client_missing(client: str) -> str | None:
    """Why `client` cannot run here (with how to install it), or None."""
    import importlib.util

    if client in ("java", "java4"):
        from kcoord.conformance import javaclient
        try:
            javaclient.build_dir(javaclient.CLIENT_VERSIONS[client])
        except Exception as err:
            return str(err)
        return None
    if importlib.util.find_spec(_MODULES[client]) is None:
        return f"{client} is not installed: pip install 'kcoord[check]'"
    return None


def _run_client(fn, name: str, bootstrap: str, client: str) -> Result:
    start = time.monotonic()
    missing = client_missing(client)
    if missing:
        return Result(name, client, "error", missing, "", 0.0)
    try:
        out = fn(bootstrap, client)
        status = "skip" if out.skipped else "pass" if out.passed else "fail"
        observed, expected = out.observed, out.expected
    except client_scenarios_skip() as err:
        status, observed, expected = "skip", str(err), ""
    except Exception as err:
        status, observed, expected = "error", f"{type(err).__name__}: {err}"[:300], ""
    return Result(name, client, status, observed, expected, round(time.monotonic() - start, 2))


def all_scenarios() -> list[str]:
    from kcoord.conformance import client_scenarios

    return [*RAW_SCENARIOS, *client_scenarios.SCENARIOS]


def report_json(bootstrap: str, results: list[Result]) -> str:
    return json.dumps({"bootstrap": bootstrap, "passed": passed(results),
                       "results": [asdict(r) for r in results]}, indent=1)


def passed(results: list[Result]) -> bool:
    return all(r.status in ("pass", "skip") for r in results)


def report_table(results: list[Result]) -> str:
    rows = [("scenario", "client", "result", "time", "observed", "Kafka expects")]
    for r in results:
        rows.append((r.scenario, r.client, r.status.upper(), f"{r.seconds:.1f}s", r.observed,
                     "(same)" if r.status == "pass" else r.expected))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row[:5], widths)) + "  " + row[5] for row in rows]
    ok = sum(r.status == "pass" for r in results)
    lines.append(f"\n{ok} passed, {sum(r.status == 'skip' for r in results)} skipped, "
                 f"{sum(r.status in ('fail', 'error') for r in results)} failed")
    return "\n".join(lines)
