"""Fault injection wired into a running kcoord: the server hook, start-up rules and HTTP routes.

    GET    /faults                                   rules in force, and what fired
    POST   /faults                                   add a rule (JSON object) or rules (JSON list)
    DELETE /faults                                   remove every rule
    DELETE /faults/{id}                              remove one rule
    POST   /groups/{group}/rebalance                 force a rebalance now
    POST   /groups/{group}/members/{member}/expire   expire a member now
"""
from __future__ import annotations

from kcoord.admin.http import HttpError, HttpRequest, HttpResponse
from kcoord.faults import FaultInjector, FaultRule, FaultRuleError


def install_faults(app) -> FaultInjector:
    injector = FaultInjector(app.coordinator, app.controls)
    for server in app.servers:
        server.faults = injector
    for rule in app.config.fault_rules:
        try:
            injector.add(rule)
        except FaultRuleError as err:  # `kcoord serve` prints it as its one line
            raise FaultRuleError(f"fault rule {rule!r}: {err}") from None
    if app.http is not None:
        _routes(app.http, injector)
    return injector


def _routes(http, injector: FaultInjector) -> None:
    async def list_faults(request: HttpRequest) -> HttpResponse:
        return HttpResponse.json({"rules": injector.list(), "fired": injector.fired_log[-200:]})

    async def add_faults(request: HttpRequest) -> HttpResponse:
        spec = request.json()
        try:
            # Every rule is read before any is added: one refused rule adds none of them.
            rules = [FaultRule.parse(s) if isinstance(s, str) else FaultRule.from_dict(s)
                     for s in (spec if isinstance(spec, list) else [spec])]
            added = injector.add_all(rules)
        except (FaultRuleError, ValueError, TypeError) as err:
            raise HttpError(400, str(err)) from None
        return HttpResponse.json({"rules": [r.to_dict() for r in added]}, status=201)

    async def clear_faults(request: HttpRequest) -> HttpResponse:
        injector.clear()
        return HttpResponse.json({"rules": []})

    async def delete_fault(request: HttpRequest) -> HttpResponse:
        try:
            rule_id = int(request.params["id"])
        except ValueError:
            raise HttpError(400, "rule ids are numbers") from None
        if not injector.remove(rule_id):
            raise HttpError(404, f"no fault rule {rule_id}")
        return HttpResponse.json({"removed": rule_id})

    async def rebalance(request: HttpRequest) -> HttpResponse:
        group = request.params["group"]
        if not await injector.force_rebalance(group):
            raise HttpError(404, f"group {group} has no members that can rebalance")
        return HttpResponse.json({"group": group, "rebalancing": True})

    async def expire(request: HttpRequest) -> HttpResponse:
        group, member = request.params["group"], request.params["member"]
        if not await injector.expire_member(group, member):
            raise HttpError(404, f"group {group} has no member {member}")
        return HttpResponse.json({"group": group, "expired": member})

    http.add("GET", "/faults", list_faults)
    http.add("POST", "/faults", add_faults)
    http.add("DELETE", "/faults", clear_faults)
    http.add("DELETE", "/faults/{id}", delete_fault)
    http.add("POST", "/groups/{group}/rebalance", rebalance)
    http.add("POST", "/groups/{group}/members/{member}/expire", expire)
