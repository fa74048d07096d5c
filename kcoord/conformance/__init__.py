"""`kcoord check`: a group-coordination conformance suite against any Kafka-protocol broker."""
