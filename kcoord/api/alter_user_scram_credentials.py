"""AlterUserScramCredentials: SCRAM credentials added, replaced and deleted at run time, with
the checks and answers of Kafka's ScramControlManager.alterCredentials; kept in the data dir
(kcoord.security.users.UserStore)."""
from kcoord.api import ApiDescriptor, ApiKey
from kcoord.security.acls import cluster_allowed
from kcoord.security.users import (MAX_ITERATIONS, MIN_ITERATIONS, MECHANISM_TYPES, SCRAM_HASHES,
                                   credential_from_salted)
from wire.errors import ErrorCode

DUPLICATE = (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")


def _name_and_mechanism(name: str, mechanism: int):
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISM_TYPES:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


async def alter_user_scram_credentials(ctx, req):
    if not cluster_allowed(ctx, "Alter"):
        return _failed(ctx.api_version, req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    store = ctx.broker.users
    deletions, upsertions, errors = {}, {}, {}
    for d in req.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = DUPLICATE
            continue
        error = _name_and_mechanism(d.name, d.mechanism)
        if error is None and store.credential(d.name, MECHANISM_TYPES[d.mechanism]) is None:
            error = ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
        if error is None:
            deletions[d.name] = d
        else:
            errors[d.name] = error
    for u in req.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upsertions.pop(u.name, None) is not None:
            errors[u.name] = DUPLICATE
            continue
        error = _name_and_mechanism(u.name, u.mechanism)
        if error is None and u.iterations < MIN_ITERATIONS:
            error = ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
        elif error is None and u.iterations > MAX_ITERATIONS:
            error = ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
        if error is None:
            upsertions[u.name] = u
        else:
            errors[u.name] = error
    changes = [(d.name, MECHANISM_TYPES[d.mechanism], None) for d in deletions.values()]
    for u in upsertions.values():
        mechanism = MECHANISM_TYPES[u.mechanism]
        changes.append((u.name, mechanism, credential_from_salted(
            SCRAM_HASHES[mechanism], bytes(u.salt), bytes(u.salted_password), u.iterations)))
    store.change(changes)
    # In Kafka's order: deletions, upsertions, then the refused.
    results = [{"user": n, "error_code": ErrorCode.NONE, "error_message": None}
               for n in list(deletions) + list(upsertions)]
    results += [{"user": n, "error_code": code, "error_message": message} for n, (code, message) in errors.items()]
    return {"throttle_time_ms": 0, "results": results}


def _failed(version, body, code) -> dict:
    names = dict.fromkeys([d.name for d in body.deletions] + [u.name for u in body.upsertions])
    return {"throttle_time_ms": 0, "results": [{"user": n, "error_code": code, "error_message": None} for n in names]}


DESCRIPTOR = ApiDescriptor(
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0, alter_user_scram_credentials,
    "SCRAM credentials added, replaced and deleted at run time, kept in the data dir (needs Alter on "
    "the cluster with ACLs on)")
