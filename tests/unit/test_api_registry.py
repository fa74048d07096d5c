"""The API registry: one descriptor per served key, consistent with wire's specs,
and the README's served-API table generated from it."""
import uuid
from pathlib import Path

import pytest

from kcoord.api import ApiKey, GroupBatch, NoErrorResponse, registry
from kcoord.api.table import current_block, readme_block
from wire import codec, specs
from wire.errors import ErrorCode

README = Path(__file__).resolve().parents[2] / "README.md"
SERVED = [(d.key, v) for d in registry().values() for v in range(d.min_version, d.max_version + 1)]


def test_api_key_names_are_the_specs():
    assert {int(k): k.api_name for k in ApiKey} == specs.api_keys()


def test_every_descriptor_lives_in_its_keys_module_within_the_specs_versions():
    for key, d in registry().items():
        assert d.key is key and d.handler.__module__ == f"kcoord.api.{key.module_name}"
        valid = specs.spec_for(key, "request").valid_versions
        assert valid.low <= d.min_version <= d.max_version <= valid.high, d.name
        assert all(d.serves(v) for v in d.version_notes), d.name


def test_readme_table_is_generated_from_the_registry():
    assert current_block(README.read_text(encoding="utf-8")) == readme_block(), (
        "README.md's served-API table differs from the registry: "
        "regenerate it with `python -m kcoord.api.table --readme README.md`")


def _request(key, version, body):
    """`body` as the server sees it: encoded and decoded, every other field at its default."""
    return codec.decode_request(codec.encode_request(key, version, {"correlation_id": 1}, body)).body


def _sample(key, version):
    """A request naming groups (or coordinator keys) wherever its version has a place for them."""
    fields = {f.attr: f for f in specs.spec_for(key, "request").fields if version in f.versions}
    body = {}
    if "group_id" in fields:
        body["group_id"] = "g-1"
    if "groups" in fields:
        body["groups"] = ["g-1", "g-2"] if fields["groups"].type == "[]string" else [
            {"group_id": "g-1", "topics": None}, {"group_id": "g-2", "topics": None}]
    if "groups_names" in fields:
        body["groups_names"] = ["g-1", "g-2"]
    if "group_ids" in fields:  # ConsumerGroupDescribe
        body["group_ids"] = ["g-1", "g-2"]
    if "key" in fields:
        body["key"] = "g-1"
    if "coordinator_keys" in fields:
        body["coordinator_keys"] = ["g-1", "g-2"]
    if key in (ApiKey.OFFSET_COMMIT, ApiKey.TXN_OFFSET_COMMIT):  # their errors are per partition
        body["topics"] = [{"name": "t", "topic_id": uuid.uuid4(), "partitions": [{"partition_index": 0}]}]
    return _request(key, version, body)


@pytest.mark.parametrize("key,version", SERVED)
def test_the_groups_a_request_names_are_its_group_fields(key, version):
    d = registry()[key]
    body = _sample(key, version)
    expected = ([body.group_id] if "group_id" in body
                else body.get("groups_names") or body.get("group_ids") or body.get("coordinator_keys")
                or [g if isinstance(g, str) else g.group_id for g in body.get("groups") or []]
                or ([body.key] if "key" in body else []))
    assert d.group_ids(version, body) == expected
    if expected:
        assert d.group_acl is not None, f"{d.name} names groups but no group ACL checks them"


def test_find_coordinator_names_groups_only_for_group_keys():
    d = registry()[ApiKey.FIND_COORDINATOR]
    assert d.group_ids(3, _request(10, 3, {"key": "tx", "key_type": 1})) == []
    assert d.group_ids(4, _request(10, 4, {"coordinator_keys": ["tx"], "key_type": 1})) == []


@pytest.mark.parametrize("key,version", SERVED)
def test_the_whole_request_error_response_encodes(key, version):
    d = registry()[key]
    body = _sample(key, version)
    layout = codec.message(key, version, "response")
    top_level_error = any(name == "error_code" for name, _ in layout.tree.fields)
    try:
        response = d.failure(version, body, ErrorCode.NOT_COORDINATOR)
    except NoErrorResponse:
        assert not top_level_error and d.error_response is None and not isinstance(d.groups, GroupBatch)
        return
    _, decoded = codec.decode_response(
        key, version, codec.encode_response(key, version, {"correlation_id": 1}, response))
    codes = [decoded.error_code] if top_level_error else []
    named = d.groups(version, body) if d.groups else None
    if isinstance(named, GroupBatch):
        codes = [entry.error_code for entry in decoded[named.response_field]]
        assert len(codes) == len(d.group_ids(version, body))
    elif key in (ApiKey.OFFSET_COMMIT, ApiKey.TXN_OFFSET_COMMIT):
        codes = [p.error_code for t in decoded.topics for p in t.partitions]
    elif key == ApiKey.ELECT_LEADERS:
        codes += [p.error_code for t in decoded.replica_election_results for p in t.partition_result]
    if key == ApiKey.OFFSET_FETCH and version < 2:
        # No place for an error in the v1 response: it answers with no offsets at all.
        assert codes == [] and decoded.topics == []
    elif key == ApiKey.ELECT_LEADERS and version == 0 and not body.topic_partitions:
        # v0 has no top-level error: only the partitions named carry it, and none were.
        assert codes == [] and decoded.replica_election_results == []
    else:
        assert codes and set(codes) == {ErrorCode.NOT_COORDINATOR}


def test_a_partly_denied_batch_entry_encodes():
    for d in registry().values():
        for version in range(d.min_version, d.max_version + 1):
            named = d.groups(version, _sample(d.key, version)) if d.groups else None
            if isinstance(named, GroupBatch):
                entry = {**named.entry("g-1", ErrorCode.GROUP_AUTHORIZATION_FAILED)}
                if d.group_acl.denied_message:
                    entry["error_message"] = d.group_acl.denied_message
                codec.encode_response(d.key, version, {"correlation_id": 1}, {named.response_field: [entry]})
