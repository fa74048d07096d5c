"""The feature levels kcoord finalizes: streams.version (KIP-1071) and share.version (KIP-932) are
served at 0 and 1, as Kafka 4.3.1 serves them, and the coordinator asks them whether streams and
share groups are on."""
import pytest

from kcoord.features import SAFE_DOWNGRADE, UPGRADE, FeatureLevels, FeatureUpdateError, supported

GATES = [("streams.version", FeatureLevels.streams_enabled), ("share.version", FeatureLevels.share_enabled)]


@pytest.mark.parametrize("feature,enabled", GATES)
def test_the_groups_are_on_by_default_as_on_a_new_kafka_4_3_cluster(feature, enabled):
    levels = FeatureLevels()
    assert enabled(levels) and levels.level(feature) == 1
    assert {"name": feature, "min_version_level": 1, "max_version_level": 1} in levels.finalized()
    assert {"name": feature, "min_version": 0, "max_version": 1} in supported(4)
    # Before ApiVersions v4 a feature whose minimum is 0 is left out (KIP-1022).
    assert all(f["name"] != feature for f in supported(3))


@pytest.mark.parametrize("feature,enabled", GATES)
def test_a_feature_downgraded_to_0_turns_its_groups_off_and_is_kept(tmp_path, feature, enabled):
    levels = FeatureLevels(tmp_path)
    levels.check(feature, 0, SAFE_DOWNGRADE)
    levels.update({feature: 0})
    assert not enabled(levels)
    assert all(f["name"] != feature for f in levels.finalized())
    restarted = FeatureLevels(tmp_path)
    assert not enabled(restarted) and restarted.epoch == 1


@pytest.mark.parametrize("feature", [f for f, _ in GATES])
@pytest.mark.parametrize("level,upgrade_type,why", [
    (2, UPGRADE, "Local controller 0 only supports versions 0-1"),
    (0, UPGRADE, "Can't downgrade the version of this feature without setting the upgrade type to either safe "
                 "or unsafe downgrade."),
])
def test_updates_kafkas_controller_refuses(feature, level, upgrade_type, why):
    with pytest.raises(FeatureUpdateError) as err:
        FeatureLevels().check(feature, level, upgrade_type)
    assert str(err.value) == f"Invalid update version {level} for feature {feature}. {why}"
