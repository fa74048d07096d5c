"""What an API's requests need from the ACLs, as each API's descriptor (kcoord.api) declares it.

A leaf: it imports nothing of kcoord's, so kcoord.api can declare its ACL facts with these
and kcoord.security can read them without either reaching up into the other.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass


class GroupOperation(enum.StrEnum):
    """Operations on Kafka's GROUP resource, as its authorizer names them."""

    READ = "Read"
    DESCRIBE = "Describe"
    DELETE = "Delete"
    ALL = "All"


class TopicOperation(enum.StrEnum):
    """Operations on Kafka's TOPIC resource, as its authorizer names them."""

    READ = "Read"
    WRITE = "Write"
    CREATE = "Create"
    DELETE = "Delete"
    ALTER = "Alter"
    DESCRIBE = "Describe"
    DESCRIBE_CONFIGS = "DescribeConfigs"
    ALTER_CONFIGS = "AlterConfigs"


@dataclass(frozen=True)
class GroupAcl:
    """What kcoord's group ACLs check for an API (kcoord.security.acls.Authorizer.authorize)."""

    operation: GroupOperation
    # A response list of groups (by `group_id`) shown only where the principal has
    # `operation`, for requests that name no group (ListGroups).
    filters: str | None = None
    # The error message an entry of a partly denied batch carries.
    denied_message: str | None = None


@dataclass(frozen=True)
class TopicAcl:
    """What kcoord's topic ACLs check for an API (kcoord.security.acls.topic_gate): the
    operation each topic the request names needs. A denied topic is answered as Kafka
    answers it, by the handler (TOPIC_AUTHORIZATION_FAILED per partition or per topic,
    left out of an all-topics answer)."""

    operation: TopicOperation
    # Create on the CLUSTER resource allows the operation on every topic (Kafka's
    # CreateTopics and Metadata's auto-creation ask the cluster first).
    cluster_wide: bool = False
