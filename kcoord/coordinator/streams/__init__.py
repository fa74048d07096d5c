"""Streams groups (KIP-1071, `group.protocol=streams` in Kafka Streams 4.2+): the broker, not a
client leader, assigns a Streams application's tasks (active, standby, warm-up) from the
topology its members send, and tells them which internal topics are missing."""
