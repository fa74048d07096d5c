import shutil

import pytest


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the session: JVM start-up is the expensive part (the modules
    using it share one xdist group, tests/conftest.py, so a parallel run starts one too). It has
    Spark's Kafka source, which the journal-topic report reads with."""
    if shutil.which("java") is None:
        pytest.fail("kcoord report needs Java 17+ on PATH (apt-get install openjdk-17-jre-headless)")
    try:
        from kcoord.analytics.job import spark_session
    except ImportError as exc:  # pragma: no cover
        pytest.fail(f"pyspark missing ({exc}): run `make install-test` (extra 'analytics')")
    from kcoord.testing import jvm
    from kcoord.testing.spark_kafka import SparkKafkaUnavailable

    try:
        session = spark_session("local[2]", app_name="kcoord-tests", shuffle_partitions=2, kafka_connector=True,
                                driver_java_options=jvm.LEAN)
    except SparkKafkaUnavailable as err:
        pytest.fail(f"{err} (`make install-test` fetches it)")
    yield session
    session.stop()


def report_of(spark, inputs, tmp_path_factory):
    """`kcoord report` of `inputs` on the session's Spark, into a fresh directory (returned)."""
    from kcoord.analytics.job import run_report

    out = tmp_path_factory.mktemp("report")
    assert run_report([str(i) for i in inputs], out, spark=spark) == 0
    return out
