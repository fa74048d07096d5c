"""The feature levels kcoord reports (KIP-584), in ApiVersions v3+ and so in
`kafka-features describe` and Admin.describeFeatures.

A Kafka broker reports, per feature, the levels its software supports and the level the
cluster has finalized, and clients act on the finalized ones: Kafka's 4.x producer, for
one, runs transactions the KIP-890 way once it sees `transaction.version` 2. So kcoord
reports the level of each feature whose behaviour it actually serves, and nothing above.
It cannot change a level (UpdateFeatures is not served), so each feature's supported range
is that one level too. Where this differs from what the reference Kafka 4.3.1 reports is
listed in docs/deviations.md ("Finalized features").
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Feature:
    name: str
    min_supported: int
    max_supported: int
    finalized: int     # 0: the feature is off, and is left out of the finalized list as Kafka leaves it out


FEATURES: tuple[Feature, ...] = (
    # Gates the metadata log's record formats and the inter-broker RPC versions, and
    # through them behaviour a client sees (ELR records since 4.0-IV1, ...). kcoord answers
    # clients as Kafka 4.3.1 does at its default, 4.3-IV0 (level 30), and has no code that
    # behaves as an older one would: Kafka supports 3.3-IV3 (7) and up.
    Feature("metadata.version", 30, 30, 30),
    # Level 1 is KIP-853's dynamic quorum (AddRaftVoter/RemoveRaftVoter, voters' directory
    # ids). kcoord's quorum is fixed (kcoord.quorum) and those APIs are not served; the
    # reference Kafka, with static controller.quorum.voters, is finalized at 0 too.
    Feature("kraft.version", 0, 0, 0),
    # Level 1 turns on the consumer group protocol (KIP-848: ConsumerGroupHeartbeat and
    # ConsumerGroupDescribe), which kcoord serves; it cannot turn it off (level 0).
    Feature("group.version", 1, 1, 1),
    # Level 1 writes flexible transaction state records, level 2 bumps the producer epoch
    # at every transaction end (both KIP-890). kcoord serves no transactions at all, so 0:
    # a 4.x producer that saw 2 would send transactional requests KIP-890's way.
    Feature("transaction.version", 0, 0, 0),
    # Level 1 keeps eligible leader replicas (KIP-966) and, with them, refuses a broker-level
    # min.insync.replicas (which kcoord's dynamic broker configs refuse as Kafka does). But
    # kcoord keeps no ELR: a replica that leaves the ISR is not kept eligible, so an unclean
    # election is the only way to a leader outside the ISR (docs/deviations.md).
    Feature("eligible.leader.replicas.version", 1, 1, 1),
    # Level 1 turns on share groups (KIP-932): not served.
    Feature("share.version", 0, 0, 0),
    # Level 1 turns on streams groups (KIP-1071): not served.
    Feature("streams.version", 0, 0, 0),
)

# Kafka's epoch is the offset in the metadata log of the image the levels come from. kcoord's
# levels never change, and the metadata log kcoord.quorum describes holds them at offset 0.
FINALIZED_FEATURES_EPOCH = 0


def supported(api_version: int) -> list[dict]:
    """ApiVersions' SupportedFeatures. Before v4, a feature whose minimum is 0 is left
    out: older clients take a 0 minimum for a malformed range (KIP-1022)."""
    return [{"name": f.name, "min_version": f.min_supported, "max_version": f.max_supported}
            for f in FEATURES if api_version >= 4 or f.min_supported > 0]


def finalized() -> list[dict]:
    """ApiVersions' FinalizedFeatures: the features that are on."""
    return [{"name": f.name, "min_version_level": f.finalized, "max_version_level": f.finalized}
            for f in FEATURES if f.finalized > 0]

