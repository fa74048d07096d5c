"""The admin endpoint's routes for the brokers of one kcoord and who leads each partition:

    GET  /brokers                          every broker: address, rack, running, fenced, controller,
                                           partitions led (per topic) and groups coordinated
    POST /brokers/{id}/stop|kill|start     kcoord.cluster.controls: controlled shutdown, kill -9, start
    GET  /partitions[?topic=T]             every partition's leader, leader epoch, replicas and ISR
    GET  /partitions/{topic}               one topic's
    POST /partitions/{topic}/{p}/leader    {"broker": ID}: move the partition's leadership there
    POST /elections/preferred              preferred-leader election of every partition led elsewhere,
                                           or of {"partitions": [{"topic": T, "partition": P}, ...]}

They belong to the app, not to a broker: they answer while any broker, node 0 included, is
stopped. A control that cannot be applied answers 404 when what it names does not exist and
400 otherwise, with the one line kcoord.cluster.controls.ClusterControlError says.
"""
from __future__ import annotations

from kcoord.admin.cluster_view import all_partitions, groups_coordinated, partitions_led
from kcoord.admin.http import HttpError, HttpRequest, HttpResponse
from kcoord.cluster.controls import ClusterControlError


def partition_json(topic: str, partition) -> dict:
    return {"topic": topic, "partition": partition.index, "leader": partition.leader,
            "leader_epoch": partition.leader_epoch, "replicas": list(partition.replicas),
            "isr": list(partition.isr), "preferred_leader": partition.replicas[0] if partition.replicas else -1}


def brokers_json(app) -> list[dict]:
    cluster = app.cluster
    led = partitions_led(app.topics)
    coordinated = groups_coordinated(app.coordinator.runtime)
    out = []
    for node in cluster.nodes.values():
        host, port = node.advertised
        mine = led.get(node.node_id, {})
        out.append({"id": node.node_id, "host": host, "port": port, "rack": node.rack, "running": node.running,
                    "fenced": node.fenced, "controller": node.node_id == cluster.controller_id,
                    "partitions_led": sum(mine.values()), "partitions_led_by_topic": dict(sorted(mine.items())),
                    "groups_coordinated": coordinated.get(node.node_id, 0)})
    return out


def _broker_id(app, text: str) -> int:
    try:
        node_id = int(text)
    except ValueError:
        raise HttpError(400, f"broker ids are numbers, not {text!r}") from None
    if node_id not in app.cluster.nodes:
        raise HttpError(404, f"no broker {node_id} (brokers: {', '.join(map(str, app.cluster.nodes))})")
    return node_id


def _partition(app, topic: str, text: str):
    try:
        index = int(text)
    except ValueError:
        raise HttpError(400, f"partitions are numbers, not {text!r}") from None
    partition = app.topics.partition(topic, index)
    if partition is None:
        raise HttpError(404, f"no topic {topic}" if app.topics.get(topic) is None
                        else f"no partition {topic}-{index}")
    return partition


def _election_targets(app, spec) -> list[tuple[str, int]] | None:
    """The (topic, partition) pairs a preferred election names: None for every partition."""
    if spec is None:
        return None
    if not isinstance(spec, dict) or not isinstance(spec.get("partitions", []), (list, type(None))):
        raise HttpError(400, 'expected {"partitions": [{"topic": T, "partition": P}, ...]} or no body')
    if spec.get("partitions") is None:
        return None
    targets = []
    for item in spec["partitions"]:
        if not isinstance(item, dict) or not isinstance(item.get("topic"), str):
            raise HttpError(400, f"each partition is {{\"topic\": T, \"partition\": P}}, not {item!r}")
        if "partition" not in item:  # every partition of the topic
            topic = app.topics.get(item["topic"])
            if topic is None:
                raise HttpError(404, f"no topic {item['topic']}")
            targets += [(topic.name, p.index) for p in topic.partitions]
        elif isinstance(item["partition"], int) and not isinstance(item["partition"], bool):
            targets.append((item["topic"], item["partition"]))
        else:
            raise HttpError(400, f"partitions are numbers, not {item['partition']!r}")
    return targets


def install(app) -> None:
    """Add the routes to `app.http` (a Kcoord with the admin endpoint on)."""
    http = app.http
    controls = app.controls

    def broker(node_id: int) -> dict:
        return next(b for b in brokers_json(app) if b["id"] == node_id)

    async def list_brokers(request: HttpRequest) -> HttpResponse:
        return HttpResponse.json(brokers_json(app))

    def control(action):
        async def route(request: HttpRequest) -> HttpResponse:
            node_id = _broker_id(app, request.params["id"])
            try:
                await action(node_id)
            except ClusterControlError as err:
                raise HttpError(400, str(err)) from None
            return HttpResponse.json(broker(node_id))
        return route

    async def list_partitions(request: HttpRequest) -> HttpResponse:
        wanted = request.query.get("topic")
        if wanted:
            missing = [t for t in wanted if app.topics.get(t) is None]
            if missing:
                raise HttpError(404, f"no topic {missing[0]}")
        return HttpResponse.json([partition_json(t, p) for t, p in all_partitions(app.topics)
                                  if not wanted or t in wanted])

    async def topic_partitions(request: HttpRequest) -> HttpResponse:
        topic = app.topics.get(request.params["topic"])
        if topic is None:
            raise HttpError(404, f"no topic {request.params['topic']}")
        return HttpResponse.json([partition_json(topic.name, p) for p in topic.partitions])

    async def move_leader(request: HttpRequest) -> HttpResponse:
        topic = request.params["topic"]
        partition = _partition(app, topic, request.params["partition"])
        spec = request.json()
        target = spec.get("broker") if isinstance(spec, dict) else None
        if not isinstance(target, int) or isinstance(target, bool):
            raise HttpError(400, 'expected {"broker": ID}')
        _broker_id(app, str(target))
        try:
            controls.move_leader(topic, partition.index, target)
        except ClusterControlError as err:
            raise HttpError(400, str(err)) from None
        return HttpResponse.json(partition_json(topic, partition))

    async def elect_preferred(request: HttpRequest) -> HttpResponse:
        outcome = controls.elect_preferred(_election_targets(app, request.json()))
        return HttpResponse.json({"results": [{"topic": t, "partition": p, "error": error}
                                              for (t, p), error in outcome.items()]})

    http.add("GET", "/brokers", list_brokers)
    for name in ("stop", "kill", "start"):
        http.add("POST", "/brokers/{id}/" + name, control(getattr(controls, name)))
    http.add("GET", "/partitions", list_partitions)
    http.add("GET", "/partitions/{topic}", topic_partitions)
    http.add("POST", "/partitions/{topic}/{partition}/leader", move_leader)
    http.add("POST", "/elections/preferred", elect_preferred)
