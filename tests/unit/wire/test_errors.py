"""Our error table against two independent ones: kafka-python's and kio's."""
import kafka.errors as kafka_errors
from kio.schema.errors import ErrorCode as KioError

from wire.errors import ErrorCode

# kafka-python spells a few of Kafka's names its own way (older Kafka names).
KAFKA_PYTHON_SPELLINGS = {
    -1: "UNKNOWN", 0: "NO_ERROR", 6: "NOT_LEADER_FOR_PARTITION", 10: "MESSAGE_SIZE_TOO_LARGE",
    17: "INVALID_TOPIC", 39: "INVALID_REPLICATION_ASSIGNMENT",
}


def test_every_kio_code_present_with_the_same_name():
    for e in KioError:
        assert ErrorCode(e.value).name == e.name.upper()
    assert len(ErrorCode) == len(KioError)


def test_every_kafka_python_code_present():
    seen = 0
    for name in dir(kafka_errors):
        cls = getattr(kafka_errors, name)
        if isinstance(cls, type) and issubclass(cls, kafka_errors.BrokerResponseError) and cls.errno is not None:
            ours = ErrorCode(cls.errno)
            assert KAFKA_PYTHON_SPELLINGS.get(cls.errno, ours.name) == cls.message
            seen += 1
    assert seen > 120


def test_group_codes_and_retriable():
    assert (ErrorCode.MEMBER_ID_REQUIRED, ErrorCode.FENCED_INSTANCE_ID, ErrorCode.GROUP_ID_NOT_FOUND) == (79, 82, 69)
    assert ErrorCode.COORDINATOR_NOT_AVAILABLE.retriable and not ErrorCode.FENCED_INSTANCE_ID.retriable
    assert ErrorCode.of(9999) == 9999 and ErrorCode.of(25) is ErrorCode.UNKNOWN_MEMBER_ID
