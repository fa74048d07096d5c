"""The `kcoord_server` fixture, used exactly as README and docs/faults.md show (it reaches this suite as any
user's: through the pytest11 entry point of the installed package)."""
from kafka import KafkaConsumer, KafkaProducer


def test_my_consumer_group(kcoord_server):
    producer = KafkaProducer(bootstrap_servers=kcoord_server.bootstrap)
    producer.send("orders", b"hello"); producer.flush()
    consumer = KafkaConsumer("orders", group_id="billing", auto_offset_reset="earliest",
                             bootstrap_servers=kcoord_server.bootstrap)
    assert next(iter(consumer)).value == b"hello"
    kcoord_server.wait_for("billing", state="Stable", members=1)   # no sleeps
    consumer.close()
    producer.close()
    described = kcoord_server.wait_for("billing", state="Empty", members=0)
    assert described.state == "Empty"
