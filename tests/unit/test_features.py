"""The feature levels kcoord finalizes: streams.version (KIP-1071) is served at 0 and 1, as
Kafka 4.3.1 serves it, and the coordinator asks it whether streams groups are on."""
import pytest

from kcoord.features import SAFE_DOWNGRADE, UPGRADE, FeatureLevels, FeatureUpdateError, supported


def test_streams_groups_are_on_by_default_as_on_a_new_kafka_4_3_cluster():
    levels = FeatureLevels()
    assert levels.streams_enabled() and levels.level("streams.version") == 1
    assert {"name": "streams.version", "min_version_level": 1, "max_version_level": 1} in levels.finalized()
    assert {"name": "streams.version", "min_version": 0, "max_version": 1} in supported(4)
    # Before ApiVersions v4 a feature whose minimum is 0 is left out (KIP-1022).
    assert all(f["name"] != "streams.version" for f in supported(3))


def test_streams_version_downgraded_to_0_turns_streams_groups_off_and_is_kept(tmp_path):
    levels = FeatureLevels(tmp_path)
    levels.check("streams.version", 0, SAFE_DOWNGRADE)
    levels.update({"streams.version": 0})
    assert not levels.streams_enabled()
    assert all(f["name"] != "streams.version" for f in levels.finalized())
    restarted = FeatureLevels(tmp_path)
    assert not restarted.streams_enabled() and restarted.epoch == 1


@pytest.mark.parametrize("level,upgrade_type,why", [
    (2, UPGRADE, "Local controller 0 only supports versions 0-1"),
    (0, UPGRADE, "Can't downgrade the version of this feature without setting the upgrade type to either safe "
                 "or unsafe downgrade."),
])
def test_streams_version_updates_kafkas_controller_refuses(level, upgrade_type, why):
    with pytest.raises(FeatureUpdateError) as err:
        FeatureLevels().check("streams.version", level, upgrade_type)
    assert str(err.value) == f"Invalid update version {level} for feature streams.version. {why}"
