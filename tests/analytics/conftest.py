import shutil

import pytest


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the session: JVM start-up is the expensive part (the modules
    using it share one xdist group, tests/conftest.py, so a parallel run starts one too)."""
    if shutil.which("java") is None:
        pytest.fail("kcoord report needs Java 17+ on PATH (apt-get install openjdk-17-jre-headless)")
    try:
        from kcoord.analytics.job import spark_session
    except ImportError as exc:  # pragma: no cover
        pytest.fail(f"pyspark missing ({exc}): run `make install-test` (extra 'analytics')")
    session = spark_session("local[2]", app_name="kcoord-tests", shuffle_partitions=2)
    yield session
    session.stop()
