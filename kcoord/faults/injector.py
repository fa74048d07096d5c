"""Fault injection: rules that make requests fail, stall or lose their connection.

A rule matches requests (api key, and optionally group id, member id, client id,
version) and fires `once`, `times` N, on `every` Nth match, or for `seconds` S
after it was added. Actions:

  error         answer with `error` instead of handling the request; the body is
                the one Kafka sends for that error at that api/version
  delay         handle the request, `delay_ms` late
  drop_before   close the connection without handling the request
  drop_after    handle the request, then close the connection without answering
  unavailable   the coordinator switch (COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR /
                COORDINATOR_LOAD_IN_PROGRESS) for `group` (or all groups) while the
                rule lives; FindCoordinator honours it too
  expire_member expire the requesting (or the rule's) member now, then handle
  rebalance     force a rebalance of the request's (or the rule's) group now, then handle
  stop_broker   a controlled shutdown of a broker (kcoord.cluster.controls): the one that received
                the request, `broker` ID, or `broker` "coordinator" (the one coordinating the
                request's group). The broker that received it takes the request down with it,
                unanswered; another broker's stop is waited for, then the request is handled
  kill_broker   likewise, a kill -9: the listener and its connections are reset at once

`unavailable` needs no request to match: it applies from the moment it is added.
A rule that could fire on no request as written is refused when it is given, with one line
saying why (`FaultRuleError`); one that can fire on some requests only (an `error` for an
api whose early versions have no error for a whole request) matches only those.
The server calls `FaultInjector.note` on every request (its number and group in the history) and
`FaultInjector.around` only while rules exist: with none, a request builds nothing here.
"""
from __future__ import annotations

import asyncio
import collections
import functools
import itertools
import json
import logging
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Awaitable, Callable

from kcoord.api import NoErrorResponse, named_group, registry
from wire import codec, specs
from wire.errors import ErrorCode
from wire.types import Message

log = logging.getLogger("kcoord.faults")

BROKER_ACTIONS = ("stop_broker", "kill_broker")
ACTIONS = ("error", "delay", "drop_before", "drop_after", "unavailable", "expire_member", "rebalance",
           *BROKER_ACTIONS)
COORDINATOR = "coordinator"   # a broker rule's `broker`: whichever coordinates the request's group
UNAVAILABLE_ERRORS = (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                      ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
_ids = itertools.count(1)
# The requests `history` keeps: enough for a test to see what a client did after a fault it
# just fired, without holding ~150 bytes for each of the last 100,000 requests of a busy server.
HISTORY_REQUESTS = 20000


class RequestHistory:
    """The (number, API key, group) of the latest requests, iterated oldest first.

    Two rings of shared objects (API keys are small ints, group ids interned strings) and the
    latest number, from which the others follow: the numbers are consecutive. A tuple and an
    int per request held ~150 bytes each, ~3 MiB for a full window."""

    def __init__(self, size: int):
        self._keys: collections.deque = collections.deque(maxlen=size)
        self._groups: collections.deque = collections.deque(maxlen=size)
        self._last = 0

    def append(self, seq: int, api_key: int, group: str | None) -> None:
        self._keys.append(api_key)
        self._groups.append(group)
        self._last = seq

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self):
        first = self._last - len(self._keys) + 1
        return zip(itertools.count(first), list(self._keys), list(self._groups))


class FaultRuleError(ValueError):
    pass


def _api_key(value) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, int):
        return value
    text = str(value)
    if text.lstrip("-").isdigit():
        return int(text)
    served = registry().values()
    for descriptor in served:
        if descriptor.name.lower() == text.lower():
            return int(descriptor.key)
    raise FaultRuleError(f"unknown api {value!r} (a key number or one of {', '.join(d.name for d in served)})")


def _broker(value) -> int | str | None:
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    if text.lower() == COORDINATOR:
        return COORDINATOR
    raise FaultRuleError(f"broker={value!r}: a broker's node id, or {COORDINATOR} (the request's group's)")


def _error_code(value) -> ErrorCode:
    if isinstance(value, int) or str(value).lstrip("-").isdigit():
        return ErrorCode(int(value))
    try:
        return ErrorCode[str(value).upper()]
    except KeyError:
        raise FaultRuleError(f"unknown error code {value!r}") from None


@dataclass
class FaultRule:
    action: str
    api: int | None = None
    group: str | None = None
    member: str | None = None
    client: str | None = None
    version: int | None = None
    error: ErrorCode | None = None
    delay_ms: int = 0
    # stop_broker/kill_broker: a node id, COORDINATOR, or None (the broker that received the request).
    broker: int | str | None = None
    # How it fires: `times` matches (once = 1), every `every`th match, or for `seconds`.
    times: int | None = None
    every: int | None = None
    seconds: float | None = None
    id: int = field(default_factory=lambda: next(_ids))
    matched: int = 0
    fired: int = 0
    created: float = field(default_factory=time.monotonic)

    @classmethod
    def from_dict(cls, spec: dict) -> "FaultRule":
        spec = dict(spec)
        unknown = set(spec) - {"action", "api", "group", "member", "client", "version", "error", "delay_ms",
                               "broker", "once", "times", "every", "seconds"}
        if unknown:
            raise FaultRuleError(f"unknown rule fields {sorted(unknown)}")
        action = spec.get("action") or ("error" if "error" in spec else "delay" if "delay_ms" in spec else None)
        if action not in ACTIONS:
            raise FaultRuleError(f"action must be one of {', '.join(ACTIONS)} (got {action!r})")
        times = spec.get("times")
        if spec.get("once") in (True, "true", "1", 1, ""):
            times = 1
        rule = cls(action=action, api=_api_key(spec.get("api")), group=spec.get("group"),
                   member=spec.get("member"), client=spec.get("client"),
                   version=None if spec.get("version") in (None, "") else int(spec["version"]),
                   error=None if spec.get("error") in (None, "") else _error_code(spec["error"]),
                   delay_ms=int(spec.get("delay_ms") or 0), broker=_broker(spec.get("broker")),
                   times=None if times in (None, "") else int(times),
                   every=None if spec.get("every") in (None, "") else int(spec["every"]),
                   seconds=None if spec.get("seconds") in (None, "") else float(spec["seconds"]))
        if rule.action == "error" and rule.error is None:
            raise FaultRuleError("action 'error' needs an error code (error=NOT_COORDINATOR)")
        if rule.action == "unavailable":
            rule.error = rule.error or ErrorCode.COORDINATOR_NOT_AVAILABLE
            if rule.error not in UNAVAILABLE_ERRORS:
                raise FaultRuleError(f"unavailable takes one of {[e.name for e in UNAVAILABLE_ERRORS]}")
        if rule.action == "delay" and rule.delay_ms <= 0:
            raise FaultRuleError("action 'delay' needs delay_ms > 0")
        if rule.broker is not None and rule.action not in BROKER_ACTIONS:
            raise FaultRuleError(f"broker={rule.broker} names the broker {' or '.join(BROKER_ACTIONS)} acts on; "
                                 f"{rule.action} acts on no broker")
        if rule.times is None and rule.every is None and rule.seconds is None and rule.action != "unavailable":
            rule.times = 1  # a rule with no duration fires once
        rule._refuse_if_it_cannot_fire()
        return rule

    def _refuse_if_it_cannot_fire(self) -> None:
        """FaultRuleError, saying why, for a rule no request could ever make fire."""
        for name in ("times", "every"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise FaultRuleError(f"{name}={value} would never fire: it counts matches from 1")
        if self.seconds is not None and self.seconds <= 0:
            raise FaultRuleError(f"seconds={self.seconds:g} would never fire: the rule would end as it is added")
        if self.action == "unavailable" and self.api is None:
            # The coordinator switch matches no request: request filters and counts cannot apply.
            given = [name if name != "times" else "times (or once)"
                     for name in ("member", "client", "version", "times", "every") if getattr(self, name) is not None]
            if given:
                raise FaultRuleError(f"unavailable with no api is the coordinator switch for group= (or every "
                                     f"group) while the rule lives; it cannot take {', '.join(given)} "
                                     f"(name an api to fail only matching requests)")
            return
        served = registry()
        if self.api is not None and self.api not in served:
            raise FaultRuleError(f"api {self.api} is not served: its requests close the connection before any "
                                 f"rule sees them")
        scope = served[self.api].name if self.api is not None else "any api"
        candidates = [(d, v) for d in ([served[self.api]] if self.api is not None else served.values())
                      for v in range(d.min_version, d.max_version + 1) if self.version in (None, v)]
        if self.version is not None:
            scope += f" v{self.version}"
            if not candidates:
                d = served.get(self.api)
                raise FaultRuleError(f"{scope} is not served" + (f" (v{d.min_version}-v{d.max_version})" if d else ""))
        needs = []
        if self.group is not None:
            needs.append((lambda d, v: d.groups is not None, f"names no group, so group={self.group} never matches"))
        if self.member is not None:
            needs.append((lambda d, v: _has_member_id(d.key, v),
                          f"carries no member_id, so member={self.member} never matches"))
        if self.action in ("error", "unavailable"):
            needs.append((lambda d, v: can_fail(d.key, v),
                          f"has no answer that fails a whole request (its errors are per topic or partition), "
                          f"so {self.action} {self.error.name} cannot be answered: use drop_before, drop_after "
                          f"or delay"))
        elif self.action == "expire_member":
            needs.append((lambda d, v: d.groups is not None and _has_member_id(d.key, v),
                          "names no group with a member_id, so expire_member has no member to expire"))
        elif self.action == "rebalance":
            needs.append((lambda d, v: d.groups is not None, "names no group, so rebalance has none to rebalance"))
        elif self.broker == COORDINATOR:
            needs.append((lambda d, v: d.groups is not None,
                          f"names no group, so {self.action} has no coordinator to act on (broker=coordinator)"))
        for need, why in needs:
            candidates = [(d, v) for d, v in candidates if need(d, v)]
            if not candidates:
                raise FaultRuleError(f"{scope} {why}")

    @classmethod
    def parse(cls, text: str) -> "FaultRule":
        """A rule from JSON (`{"api": "JoinGroup", ...}`) or `key=value,...` text (`once` alone counts)."""
        text = text.strip()
        if text.startswith("{"):
            return cls.from_dict(json.loads(text))
        spec = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            spec[key.strip().replace("-", "_")] = value.strip() if sep else True
        return cls.from_dict(spec)

    def to_dict(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if v is not None and k != "created"}
        if self.error is not None:
            out["error"] = self.error.name
        if self.api is not None:
            descriptor = registry().get(self.api)
            out["api_name"] = descriptor.name if descriptor else str(self.api)
        return out

    def expired(self, now: float) -> bool:
        if self.times is not None and self.fired >= self.times:
            return True
        return self.seconds is not None and now - self.created >= self.seconds

    def matches(self, api_key: int, api_version: int, client_id, group, member) -> bool:
        return ((self.api is None or self.api == api_key)
                and (self.version is None or self.version == api_version)
                and (self.client is None or self.client == client_id)
                and (self.group is None or self.group == group)
                and (self.member is None or self.member == member)
                and self._can_act_on(api_key, api_version, group, member))

    def _can_act_on(self, api_key: int, api_version: int, group, member) -> bool:
        """Whether the action can do what it says to this request: a rule waits for one it can
        act on rather than fire on one it cannot (counted, and doing nothing or breaking the
        connection)."""
        action = self.action
        if action in ("error", "unavailable"):
            return can_fail(api_key, api_version)
        if action == "expire_member":
            return group is not None and member is not None
        if action == "rebalance" or self.broker == COORDINATOR:
            return group is not None
        return True

    def take(self) -> bool:
        """Count a match; whether the rule fires on it."""
        self.matched += 1
        if self.every is not None and self.matched % self.every != 0:
            return False
        self.fired += 1
        return True


# api key -> whether its requests name their one group in `group_id`, filled on first sight.
class _OneGroupApis(dict):
    def __missing__(self, api_key):
        descriptor = registry().get(api_key)
        self[api_key] = named = descriptor is not None and descriptor.groups is named_group
        return named


_NAMES_ONE_GROUP = _OneGroupApis()


def request_group(api_key: int, api_version: int, body) -> str | None:
    """The group a rule's `group` is matched against: the first the request names."""
    descriptor = registry().get(api_key)
    if descriptor is None:
        return None
    if descriptor.groups is named_group:  # most group requests: no list built per request
        return body.get("group_id")
    groups = descriptor.group_ids(api_version, body)
    return groups[0] if groups else None


@functools.cache
def can_fail(api_key: int, api_version: int) -> bool:
    """Whether kcoord can answer a request of this api and version with an error for the whole
    request (ApiDescriptor.failure): Produce, Metadata and others answer errors per topic or
    partition only, and some apis only from a version on (Fetch from v7)."""
    descriptor = registry()[api_key]
    # A request with every field at its default: what the descriptor's groups and failure see.
    body = codec.decode_request(codec.encode_request(api_key, api_version, {"correlation_id": 0}, {})).body
    try:
        descriptor.failure(api_version, body, ErrorCode.UNKNOWN_SERVER_ERROR)
    except NoErrorResponse:
        return False
    return True


@functools.cache
def _has_member_id(api_key: int, api_version: int) -> bool:
    """Whether requests of this api and version carry the `member_id` a rule's `member` matches."""
    return any(f.attr == "member_id" and api_version in f.versions
               for f in specs.spec_for(api_key, "request").fields)


class FaultInjector:
    def __init__(self, coordinator=None, controls=None):
        self.coordinator = coordinator   # a CoordinatorService, for unavailable/expire/rebalance
        self.controls = controls         # kcoord.cluster.controls.ClusterControls, for stop/kill_broker
        self._controlling: set[asyncio.Task] = set()   # a broker control a rule started beside its request
        self.rules: list[FaultRule] = []
        self.fired_log: list[dict] = []  # what fired, in order (bounded)
        # What a client did after a fault: the latest requests.
        self.history = RequestHistory(HISTORY_REQUESTS)
        self._seq = 0

    # ------------------------------------------------------------ rules
    def add(self, rule: FaultRule | dict | str) -> FaultRule:
        if isinstance(rule, str):
            rule = FaultRule.parse(rule)
        elif isinstance(rule, dict):
            rule = FaultRule.from_dict(rule)
        else:
            rule._refuse_if_it_cannot_fire()  # from_dict and parse refuse such a rule themselves
        self.check(rule)
        self.rules.append(rule)
        if rule.action == "unavailable" and rule.api is None:
            self._switch(rule, on=True)
        log.info("fault rule %d added: %s", rule.id, rule.to_dict())
        return rule

    def check(self, rule: FaultRule) -> None:
        """FaultRuleError for a rule that could never fire on this server: a broker it does not have."""
        if rule.action not in BROKER_ACTIONS:
            return
        if self.controls is None:
            raise FaultRuleError(f"{rule.action}: this server has no broker controls")
        nodes = self.controls.cluster.nodes
        if isinstance(rule.broker, int) and rule.broker not in nodes:
            raise FaultRuleError(f"broker={rule.broker}: no such broker (brokers: {', '.join(map(str, nodes))})")

    def add_all(self, rules: list[FaultRule]) -> list[FaultRule]:
        """Every rule, or (one refused) none of them."""
        for rule in rules:
            self.check(rule)
        return [self.add(rule) for rule in rules]

    def remove(self, rule_id: int) -> bool:
        for rule in list(self.rules):
            if rule.id == rule_id:
                self._retire(rule)
                return True
        return False

    def clear(self) -> None:
        for rule in list(self.rules):
            self._retire(rule)

    def list(self) -> list[dict]:
        self._expire(time.monotonic())
        return [r.to_dict() for r in self.rules]

    def _retire(self, rule: FaultRule) -> None:
        if rule in self.rules:
            self.rules.remove(rule)
        if rule.action == "unavailable" and rule.api is None:
            self._switch(rule, on=False)

    def _switch(self, rule: FaultRule, on: bool) -> None:
        if self.coordinator is None:
            raise FaultRuleError("no coordinator to make unavailable")
        core = self.coordinator.runtime
        if on:
            core.set_unavailable(rule.error, rule.group)
            if rule.seconds is not None:
                asyncio.get_running_loop().call_later(rule.seconds, self._retire, rule)
        else:
            core.set_available(rule.group)

    def _expire(self, now: float) -> None:
        for rule in list(self.rules):
            if rule.expired(now):
                self._retire(rule)

    # ------------------------------------------------------------ actions at once
    async def expire_member(self, group_id: str, member_id: str) -> bool:
        return self.coordinator.runtime.expire_member_now(group_id, member_id)

    async def force_rebalance(self, group_id: str) -> bool:
        return self.coordinator.runtime.force_rebalance(group_id, "forced by fault rule")

    # ------------------------------------------------------------ the server hook
    def note(self, req) -> str | None:
        """Number a request and keep it in the history (what a client did after a fault); its group."""
        key = req.api_key
        self._seq += 1
        body = req.body
        if type(body) is Message and _NAMES_ONE_GROUP[key]:
            group = body.get("group_id")
        else:
            group = request_group(key, req.api_version, body) if isinstance(body, dict) else None
        # Interned: a decoded group id is a new string per request, and the history keeps it.
        self.history.append(self._seq, key, None if group is None else sys.intern(group))
        return group

    def _target(self, rule: FaultRule, node: int, group: str | None) -> int | None:
        """The broker a stop_broker/kill_broker rule acts on for a request that `node` received
        and that names `group`; None if it names none that runs (the rule waits)."""
        target = rule.broker
        if target is None:
            return node
        if target == COORDINATOR:
            code, target = self.coordinator.runtime.find(group)
            if code != ErrorCode.NONE:
                return None
        found = self.controls.cluster.nodes.get(target)
        return target if found is not None and found.running else None

    def _can_act(self, rule: FaultRule, node: int, group: str | None) -> bool:
        return rule.action not in BROKER_ACTIONS or self._target(rule, node, group) is not None

    async def _control_broker(self, action: str, target: int, node: int, handle):
        control = self.controls.kill if action == "kill_broker" else self.controls.stop
        if target != node:
            await control(target)
            return await handle()
        # The request goes down with the broker that received it: the control runs beside it (it
        # cancels this request's task when it ends the connection) and the request is never handled.
        task = asyncio.get_running_loop().create_task(control(target))
        self._controlling.add(task)
        task.add_done_callback(self._controlling.discard)
        await asyncio.shield(task)
        return False

    async def around(self, req, handle: Callable[[], Awaitable[bytes | None]],
                     answered: Callable[[dict], None] | None = None, group: str | None = None, node: int = 0):
        """Handle request `req`, which `note` has seen (and named `group`) and broker `node`
        received, through `handle()`, applying the first rule that fires. The server calls it
        only while rules exist.

        Returns response bytes, None (no response) or False (close the connection).
        `answered` sees a response body a rule made up (for the request metrics)."""
        body = req.body
        if not self.rules:
            return await handle()
        now = time.monotonic()
        self._expire(now)
        member = body.get("member_id") if isinstance(body, dict) else None
        rule = next((r for r in self.rules
                     if not (r.action == "unavailable" and r.api is None)
                     and r.matches(req.api_key, req.api_version, req.client_id, group, member)
                     and self._can_act(r, node, group) and r.take()), None)
        if rule is None:
            return await handle()
        target = self._target(rule, node, group) if rule.action in BROKER_ACTIONS else None
        if len(self.fired_log) < 10000:
            self.fired_log.append({"seq": self._seq, "rule": rule.id, "action": rule.action, "api": req.api_key,
                                   "version": req.api_version, "group": group, "member": member,
                                   "client": req.client_id, "node": node,
                                   **({"broker": target} if target is not None else {})})
        if rule.expired(now):
            self._retire(rule)
        log.info("fault rule %d fires on api %d v%d (group %s, member %s)", rule.id, req.api_key,
                 req.api_version, group, member)
        action = rule.action
        if action in ("error", "unavailable"):
            body_out = registry()[req.api_key].failure(req.api_version, body, rule.error)
            if answered is not None:
                answered(body_out)
            return codec.encode_response(req.api_key, req.api_version, {"correlation_id": req.correlation_id},
                                         body_out)
        if action == "delay":
            await asyncio.sleep(rule.delay_ms / 1000)
            return await handle()
        if action == "drop_before":
            return False
        if action == "drop_after":
            await handle()
            return False
        if action in BROKER_ACTIONS:
            return await self._control_broker(action, target, node, handle)
        # A rule's group and member are filters too: the request's are the rule's, when it has any.
        if action == "expire_member":
            await self.expire_member(group, member)
        elif action == "rebalance":
            await self.force_rebalance(group)
        return await handle()


def load_rules_file(path: str) -> list[dict]:
    """Rules from a JSON or YAML file: a list of rule objects, or {"rules": [...]}."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith((".yaml", ".yml")):
        try:
            import yaml
        except ImportError:
            raise FaultRuleError("YAML rules files need PyYAML: pip install pyyaml (or write the rules as JSON)")
        data = yaml.safe_load(text)
    else:
        data = json.loads(text)
    if isinstance(data, dict):
        data = data.get("rules", [])
    if not isinstance(data, list):
        raise FaultRuleError(f"{path}: expected a list of rules")
    return data
