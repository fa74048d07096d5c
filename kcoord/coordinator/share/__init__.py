"""Share groups (KIP-932): the group coordinator's side (membership and assignment)."""
