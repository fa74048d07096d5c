"""The server assignors of the consumer group protocol (KIP-848): what they are given and answer
(`spec`), and the two Kafka serves, `uniform` and `range`, by the name a member asks for."""
from __future__ import annotations

from kcoord.coordinator.assignors.range import RangeAssignor
from kcoord.coordinator.assignors.spec import ServerAssignor
from kcoord.coordinator.assignors.uniform import UniformAssignor


def assignors() -> dict[str, ServerAssignor]:
    """The assignors kcoord serves, by the name a member asks for (Kafka's default order)."""
    return {"uniform": UniformAssignor(), "range": RangeAssignor()}
