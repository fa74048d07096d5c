"""Rebalance analytics: kcoord journals and Kafka broker logs in, rebalance tables and a report out."""
