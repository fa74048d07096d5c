"""Idempotent producers whose answers are lost: each retried batch is answered with its first
base offset and appended once (Kafka's producer state keeps a producer's last five batches
per partition), so the log holds every record exactly once, in order."""
from __future__ import annotations

import uuid

import pytest

from kcoord.log.partition import AppendError
from tests.integration.clients import CLIENTS, produce
from wire import records as R

COUNT = 60
LOST_ANSWERS = 3


async def _create(server, topic, answers):
    server.app.broker.topics.create(topic, 1)
    partition = server.app.broker.topics.partition(topic, 0)
    append = partition.append

    def answered(blob):  # what the partition told each Produce: (error, base offset)
        try:
            base = append(blob)
        except AppendError as err:
            answers.append((err.code_name, -1))
            raise
        answers.append(("NONE", base))
        return base
    partition.append = answered


async def _values(server, topic):
    partition = server.app.broker.topics.partition(topic, 0)
    return [r.value for b in partition.batches for r in R.parse_batch(b.data).records()]


@pytest.mark.parametrize("client", CLIENTS)
def test_retried_batches_after_lost_answers_leave_no_duplicate(kcoord_server, client):
    topic = f"idem-{client}-{uuid.uuid4().hex[:6]}"
    answers: list[tuple[str, int]] = []
    kcoord_server.call(lambda: _create(kcoord_server, topic, answers))
    # The batch is appended, then the connection closes before its answer: the producer
    # reconnects and sends the same batch (same producer id, epoch and sequence) again.
    kcoord_server.fault(api="Produce", action="drop_after", times=LOST_ANSWERS)
    produce(client, kcoord_server.bootstrap, topic, COUNT, idempotent=True)
    assert len([f for f in kcoord_server.faults_fired() if f["action"] == "drop_after"]) == LOST_ANSWERS
    values = kcoord_server.call(lambda: _values(kcoord_server, topic))
    assert values == [b"v%d" % i for i in range(COUNT)]
    # Every retry got the success its first attempt had earned, with the same base offset.
    assert all(error == "NONE" for error, _ in answers), answers
    bases = [base for _, base in answers]
    assert len(bases) - len(set(bases)) >= LOST_ANSWERS, answers
