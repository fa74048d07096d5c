import pytest

from kcoord.coordinator.group import Group
from kcoord.coordinator.state import ALLOWED_FROM, GroupState, IllegalStateTransition

PAIRS = [(a, b) for a in GroupState for b in GroupState]


@pytest.mark.parametrize("source,target", PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
def test_transition_table(source, target):
    g = Group("g", created_ms=0, state=source)
    if source in ALLOWED_FROM[target]:
        g.transition(target, 5)
        assert g.state is target and g.state_since_ms == 5
    else:
        with pytest.raises(IllegalStateTransition):
            g.transition(target, 5)
        assert g.state is source


def test_table_is_kafkas():
    S = GroupState
    assert ALLOWED_FROM[S.EMPTY] == {S.PREPARING_REBALANCE}
    assert ALLOWED_FROM[S.PREPARING_REBALANCE] == {S.EMPTY, S.COMPLETING_REBALANCE, S.STABLE}
    assert ALLOWED_FROM[S.COMPLETING_REBALANCE] == {S.PREPARING_REBALANCE}
    assert ALLOWED_FROM[S.STABLE] == {S.COMPLETING_REBALANCE}
    assert ALLOWED_FROM[S.DEAD] == set(S)
