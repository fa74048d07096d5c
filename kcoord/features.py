"""The feature levels kcoord reports (KIP-584), in ApiVersions v3+ and so in
`kafka-features describe` and Admin.describeFeatures.

A Kafka broker reports, per feature, the levels its software supports and the level the
cluster has finalized, and clients act on the finalized ones: Kafka's 4.x producer, for
one, runs transactions the KIP-890 way once it sees `transaction.version` 2. So kcoord
reports the level of each feature whose behaviour it actually serves, and nothing above.
`transaction.version` (0–2), `streams.version` (0–1) and `share.version` (0–1) are served at every level Kafka has
and moved as on Kafka with UpdateFeatures (`kafka-features upgrade/downgrade`); the other
features are served at one level, their supported range. Where this differs from what the reference Kafka 4.3.1 reports
is listed in docs/deviations.md ("Feature levels").
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path


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
    # at every transaction end (both KIP-890); a 4.x producer that sees 2 adds partitions
    # through Produce and TxnOffsetCommit. Kafka 4.3 formats new clusters at 2.
    Feature("transaction.version", 0, 2, 2),
    # Level 1 keeps eligible leader replicas (KIP-966) and, with them, refuses a broker-level
    # min.insync.replicas (which kcoord's dynamic broker configs refuse as Kafka does). But
    # kcoord keeps no ELR: a replica that leaves the ISR is not kept eligible, so an unclean
    # election is the only way to a leader outside the ISR (docs/deviations.md).
    Feature("eligible.leader.replicas.version", 1, 1, 1),
    # Level 1 turns on share groups (KIP-932: ShareGroupHeartbeat, ShareGroupDescribe and the
    # share-partition APIs); at 0 Kafka answers them UNSUPPORTED_VERSION. It depends on no other
    # feature (beyond metadata.version 4.2-IV0, which 4.3-IV0 is), and Kafka 4.3 formats new
    # clusters at 1.
    Feature("share.version", 0, 1, 1),
    # Level 1 turns on streams groups (KIP-1071: StreamsGroupHeartbeat, StreamsGroupDescribe);
    # at 0 Kafka answers both UNSUPPORTED_VERSION. It depends on no other feature (beyond
    # metadata.version 4.2-IV1 to be formatted at 1, which 4.3-IV0 is), and Kafka 4.3 formats
    # new clusters at 1.
    Feature("streams.version", 0, 1, 1),
)

# Kafka's epoch is the offset in the metadata log of the image the levels come from. The
# metadata log kcoord.quorum describes holds kcoord's starting levels at offset 0; each update
# moves the epoch on by one.
FINALIZED_FEATURES_EPOCH = 0
BY_NAME = {f.name: f for f in FEATURES}
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


class FeatureUpdateError(ValueError):
    """An update Kafka's controller refuses with INVALID_UPDATE_VERSION, in its words."""


class FeatureLevels:
    """The finalized levels of one kcoord (every broker answers with them), kept in
    `features.json` of the data dir when there is one."""

    def __init__(self, data_dir=None):
        self.levels = {f.name: f.finalized for f in FEATURES}
        self.epoch = FINALIZED_FEATURES_EPOCH
        self._path = None if data_dir is None else Path(data_dir) / "features.json"
        self.listeners: list = []
        if self._path is not None and self._path.exists():
            saved = json.loads(self._path.read_text())
            self.epoch = saved.get("epoch", self.epoch)
            self.levels.update({k: v for k, v in saved.get("levels", {}).items() if k in self.levels})

    def level(self, name: str) -> int:
        return self.levels.get(name, 0)

    def streams_enabled(self) -> bool:
        """Streams groups are served (Kafka's StreamsVersion.streamsGroupSupported)."""
        return self.level("streams.version") >= 1

    def share_enabled(self) -> bool:
        """Share groups are served (Kafka's ShareVersion.supportsShareGroups)."""
        return self.level("share.version") >= 1

    def finalized(self) -> list[dict]:
        return [{"name": name, "min_version_level": level, "max_version_level": level}
                for name, level in self.levels.items() if level > 0]

    def check(self, name: str, level: int, upgrade_type: int, controller: int = 0) -> None:
        """Raise FeatureUpdateError where Kafka's FeatureControlManager (on node `controller`)
        refuses the update."""
        def refuse(why: str):
            raise FeatureUpdateError(f"Invalid update version {level} for feature {name}. {why}")
        if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
            refuse("The controller does not support the given upgrade type.")
        if level < 0:
            refuse("A feature version cannot be less than 0.")
        feature = BY_NAME.get(name)
        low, high = (feature.min_supported, feature.max_supported) if feature is not None else (0, 0)
        if not (low <= level <= high):
            refuse(f"Local controller {controller} does not support this feature." if high == 0
                   else f"Local controller {controller} only supports versions {low}-{high}")
        current = self.level(name)
        if level < current and upgrade_type == UPGRADE:
            refuse("Can't downgrade the version of this feature without setting the upgrade type to "
                   "either safe or unsafe downgrade.")
        if level > current and upgrade_type != UPGRADE:
            refuse("Can't downgrade to a newer version.")

    def update(self, changes: dict[str, int]) -> None:
        """Apply checked changes (name -> level), durably when there is a data dir."""
        if not changes or all(self.level(n) == v for n, v in changes.items()):
            return
        self.levels.update(changes)
        self.epoch += 1
        if self._path is not None:
            tmp = self._path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"epoch": self.epoch, "levels": self.levels}))
            os.replace(tmp, self._path)
        for listener in self.listeners:
            listener(self)


def supported(api_version: int) -> list[dict]:
    """ApiVersions' SupportedFeatures. Before v4, a feature whose minimum is 0 is left
    out: older clients take a 0 minimum for a malformed range (KIP-1022)."""
    return [{"name": f.name, "min_version": f.min_supported, "max_version": f.max_supported}
            for f in FEATURES if api_version >= 4 or f.min_supported > 0]
