"""The admin endpoint's routes for looking at kcoord: /metrics, /groups, /groups/{id}."""
from __future__ import annotations

from kcoord.admin.http import HttpError, HttpResponse
from kcoord.connect_protocol import decode_assignment, decode_metadata, held
from kcoord.protocol_client import consumer_assignment


def _connect(group, m) -> dict:
    """A Connect worker's decoded metadata (url, config offset, previous allocation) and assignment."""
    meta = None
    if group.protocol_name is not None:
        try:
            meta = decode_metadata(m.metadata(group.protocol_name))
        except KeyError:
            pass
    assignment = decode_assignment(m.assignment)
    connectors, tasks = held(meta, assignment)
    return {"metadata": meta.to_json() if meta else None,
            "assignment": assignment.to_json() if assignment else None,
            "held": {"connectors": connectors, "tasks": tasks}}


def _member(group, m) -> dict:
    connect = group.protocol_type == "connect"
    partitions = [] if connect else consumer_assignment(m.assignment)
    extra = {"connect": _connect(group, m)} if connect else {}
    return {"member_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
            "client_host": m.client_host, "session_timeout_ms": m.session_timeout_ms,
            "rebalance_timeout_ms": m.rebalance_timeout_ms,
            "assignment": [{"topic": t, "partition": p} for t, p in partitions], **extra}


def offsets_json(core, group_id: str) -> list[dict]:
    return [{"topic": t, "partition": p, "offset": v.offset, "metadata": v.metadata, "commit_ms": v.commit_ms}
            for (t, p), v in sorted(core.committed(group_id).items())]


def group_json(core, group) -> dict:
    return {"group_id": group.group_id, "coordinator": core.coordinator_node(group.group_id),
            "state": str(group.state), "generation": group.generation, "protocol_type": group.protocol_type,
            "protocol": group.protocol_name, "leader": group.leader_id,
            "members": [_member(group, m) for m in group.members.values()],
            "offsets": offsets_json(core, group.group_id)}


def install(app) -> None:
    """Add the routes to `app.http` (a Kcoord with the admin endpoint on)."""
    http = app.http
    core = app.coordinator.runtime

    async def metrics(request):
        return HttpResponse(200, app.metrics.exposition(), "text/plain; version=0.0.4; charset=utf-8")

    async def groups(request):
        return HttpResponse.json([{"group_id": g.group_id, "state": str(g.state), "generation": g.generation,
                                   "members": g.size, "protocol_type": g.protocol_type, "type": g.group_type,
                                   "coordinator": core.coordinator_node(g.group_id)}
                                  for g in core.all_groups()])

    async def group(request):
        consumer = core.consumer_group(request.params["id"])
        if consumer is not None:
            # A consumer group (KIP-848): its epochs and assignments as ConsumerGroupDescribe has them.
            d = core.consumer_group_describe(consumer.group_id)
            return HttpResponse.json({
                "group_id": d.group_id, "coordinator": core.coordinator_node(d.group_id), "type": "consumer",
                "state": d.state, "group_epoch": d.group_epoch,
                "assignment_epoch": d.assignment_epoch, "assignor": d.assignor_name, "members": d.members,
                "offsets": offsets_json(core, d.group_id)})
        if core.streams_group(request.params["id"]) is not None:
            # A streams group (KIP-1071): StreamsGroupDescribe's answer, with its offsets.
            d = core.streams_group_describe(request.params["id"])
            d = {k: int(v) if k == "error_code" else v for k, v in d.items()}
            return HttpResponse.json({
                **d, "coordinator": core.coordinator_node(d["group_id"]), "type": "streams",
                "state": d["group_state"], "offsets": offsets_json(core, d["group_id"])})
        g = core.group(request.params["id"])
        if g is None:
            raise HttpError(404, f"no group {request.params['id']!r}")
        return HttpResponse.json(group_json(core, g))

    http.add("GET", "/metrics", metrics)
    http.add("GET", "/groups", groups)
    http.add("GET", "/groups/{id}", group)
