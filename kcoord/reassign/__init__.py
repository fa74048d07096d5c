"""Planning partition reassignments: a cluster as data (model), its six criteria as numbers
(score), a planner that optimises them together (plan), and Kafka's reassignment JSON (plan_json)."""
