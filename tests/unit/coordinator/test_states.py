import pytest

from kcoord.coordinator.classic.group import Group
from kcoord.coordinator.classic.state import ALLOWED_FROM, GroupState, IllegalStateTransition

PAIRS = [(a, b) for a in GroupState for b in GroupState]


@pytest.mark.parametrize("source,target", PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
def test_transition_table(source, target):
    g = Group("g", created_ms=0, state=source)
    if source in ALLOWED_FROM[target]:
        g.transition(target, 5)
        assert g.state is target
        assert g.emptied_at_ms == (5 if target is GroupState.EMPTY else None)
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


def test_every_state_says_what_it_does_and_where_it_goes():
    for state in GroupState:
        assert state.note.splitlines()[0], state
        next_part = state.note[state.note.index("\nNext:"):]
        named = {s for s in GroupState if s.value in next_part}
        # The note's "Next:" names exactly the states the table lets it go to.
        assert named == {t for t in GroupState if state in ALLOWED_FROM[t] and t is not state}, state
    assert "static member rejoining" in GroupState.STABLE.note and "NO rebalance" in GroupState.STABLE.note


def test_a_reloaded_group_starts_empty_or_stable_only():
    for state in GroupState:
        g = Group("g", created_ms=0)
        if state in (GroupState.EMPTY, GroupState.STABLE):
            g.load_state(state)
            assert g.state is state
        else:
            with pytest.raises(IllegalStateTransition):
                g.load_state(state)
