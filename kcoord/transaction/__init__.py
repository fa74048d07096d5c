"""The transaction coordinator (KIP-98, KIP-447, KIP-890): transactional producers' state in
`__transaction_state`, placed, loaded and failed over as the group coordinator's partitions are.
See docs/transactions.md."""
