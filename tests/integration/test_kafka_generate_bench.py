"""bench/kafka_generate.py: Kafka's own `kafka-reassign-partitions --generate`, run against a
multi-broker kcoord holding a generated cluster, proposes a placement for every partition
over the target brokers only, rack-aware, and it reads back as the cluster's own broker ids."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from kcoord.reassign.model import Cluster, Partition
from kcoord.reassign.plan import Options
from kcoord.reassign.synthetic import generated

ROOT = Path(__file__).resolve().parents[2]


def _bench_module():
    spec = importlib.util.spec_from_file_location("kafka_generate", ROOT / "bench" / "kafka_generate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


kafka_generate = _bench_module()


def _placed(before: Cluster, after: Cluster) -> dict[int, int]:
    """Replicas per broker in `after`, once checked to be a placement of every partition of
    `before` with its replication factor and no broker twice."""
    assert [p.key for p in after.partitions] == [p.key for p in before.partitions]
    count: dict[int, int] = {}
    for old, new in zip(before.partitions, after.partitions):
        assert len(new.replicas) == len(old.replicas) == len(set(new.replicas)), (old, new)
        assert new.size == old.size
        for b in new.replicas:
            count[b] = count.get(b, 0) + 1
    return count


def test_brokers_added_over_racks_get_their_share_and_each_partition_spans_the_racks():
    # Brokers 1-4 over racks r0/r1 hold 24 partitions x 2 replicas; 5 and 6 are added. kcoord
    # numbers its brokers 0-5: an id not mapped back would be a broker the cluster lacks.
    before = generated(4, 24, racks=2, replication=2, topics=2, extra_brokers=2, seed=3)
    proposal = kafka_generate.generate(before, Options(add=(5, 6)))
    count = _placed(before, proposal.cluster)
    # The striped placer deals each topic's replicas round the brokers: 48 over 6 is 8 each.
    assert count == {b: 8 for b in range(1, 7)}
    for p in proposal.cluster.partitions:
        assert {before.racks[b] for b in p.replicas} == {"r0", "r1"}, p
    assert proposal.seconds > 0


def test_a_removed_broker_ends_empty_without_racks():
    before = generated(4, 12, racks=0, replication=3, topics=1, seed=4)
    proposal = kafka_generate.generate(before, Options(remove=(2,)))
    count = _placed(before, proposal.cluster)
    assert count == {1: 12, 3: 12, 4: 12}   # 3 replicas on the 3 brokers left: all of them


def test_a_topic_whose_partitions_are_not_0_to_n_is_refused_before_any_kcoord_starts():
    gap = Cluster({1: None}, (Partition("t", 0, (1,)), Partition("t", 2, (1,))))
    with pytest.raises(ValueError, match="t has partition 2 but not 1"):
        kafka_generate.generate(gap, Options())


def test_each_assignment_is_the_json_line_after_its_heading():
    current, proposed = '{"version":1,"partitions":[]}', '{"version":1,"partitions":[{"topic":"t"}]}'
    out = (f'Current partition replica assignment\n{current}\n\n'
           f'Proposed partition reassignment configuration\n{proposed}\n')
    assert kafka_generate.json_after(kafka_generate.CURRENT_HEADING, out) == current
    assert kafka_generate.json_after(kafka_generate.PROPOSAL_HEADING, out) == proposed
    with pytest.raises(RuntimeError, match="printed no 'Proposed partition reassignment configuration'"):
        kafka_generate.json_after(kafka_generate.PROPOSAL_HEADING, "Current partition replica assignment\n{}\n")
