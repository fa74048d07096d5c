"""The reference Apache Kafka of the test bed (kcoord.testing.reference_kafka) and the
pytest plugin's fixtures for it: a real broker, and one clear line for each way it can fail."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer

from kcoord.analytics.events import LOG4J
from kcoord.conformance.member import subscribe_kafka_python
from kcoord.testing import reference_kafka as rk
from kcoord.testing.brokers import KafkaHandle, create_topic, end_offsets, wait_group

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]


def _module(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "kcoord.testing.reference_kafka", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env=env)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _env(tmp_path, **extra) -> dict:
    return {**os.environ, "KCOORD_KAFKA_CACHE": str(tmp_path / "cache"), **extra}


# ---- the session broker ----

def test_session_broker_forms_groups_and_logs_in_kafkas_layout(reference_kafka):
    handle = KafkaHandle(reference_kafka)
    topic, group = f"ref-{uuid.uuid4().hex[:8]}", f"ref-g-{uuid.uuid4().hex[:8]}"
    create_topic(handle.bootstrap, topic, 3)
    producer = KafkaProducer(bootstrap_servers=handle.bootstrap)
    for i in range(30):
        producer.send(topic, b"v%d" % i, partition=i % 3)
    producer.flush()
    producer.close()
    assert end_offsets(handle.bootstrap, topic) == {0: 10, 1: 10, 2: 10}
    consumer = KafkaConsumer(bootstrap_servers=handle.bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    subscribe_kafka_python(consumer, [topic])
    try:
        got = 0
        deadline = time.monotonic() + 60
        while got < 30 and time.monotonic() < deadline:
            got += sum(len(rs) for rs in consumer.poll(500).values())
        assert got == 30
        consumer.commit()
        view = handle.wait_for(group, state="Stable", members=1)
        assert view.protocol_type == "consumer" and view.protocol == "range"
        assert view.assignments() == {view.members[0]["member_id"]: [0, 1, 2]}
        assert handle.committed(group) == {(topic, p): 10 for p in range(3)}
    finally:
        consumer.close()
    assert wait_group(handle.bootstrap, group, state="Empty", members=0).state == "Empty"
    if isinstance(reference_kafka, rk.ReferenceKafka):  # not a --kafka-bootstrap one
        assert reference_kafka.config["group.initial.rebalance.delay.ms"] == "0"
        lines = reference_kafka.log_path.read_text().splitlines()
        assert lines and all(LOG4J.match(line) for line in lines if line.startswith("["))
        assert any(f"group {group}" in line for line in lines), "the group coordinator logs nothing"


def test_describing_an_unknown_group_says_dead(reference_kafka):
    assert wait_group(reference_kafka.bootstrap, f"never-{uuid.uuid4().hex}", timeout=10).state == "Dead"


# ---- bad input: one clear line each, nothing left running ----

def test_without_java_the_message_says_which_jdk_to_install(tmp_path, monkeypatch):
    env = _env(tmp_path, PATH=str(tmp_path))  # nothing on PATH
    with monkeypatch.context() as m:
        m.setenv("PATH", str(tmp_path))
        with pytest.raises(rk.ReferenceKafkaUnavailable, match="apt-get install openjdk-17-jdk-headless"):
            rk.ReferenceKafka().start()
    proc = _module("fetch", env=env)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "reference-kafka: `java` not found on PATH: install a JDK 17: apt-get install openjdk-17-jdk-headless"]


def test_without_maven_the_message_says_to_install_it(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "java").symlink_to(rk.require_java())
    proc = _module("fetch", env=_env(tmp_path, PATH=str(bin_dir)))
    assert proc.returncode == 1
    [line] = proc.stderr.strip().splitlines()
    assert "`mvn` not found" in line and "apt-get install maven" in line
    assert not (tmp_path / "cache" / f"kafka-{rk.KAFKA_VERSION}" / rk.MARKER).exists()


def test_an_unknown_version_names_it_and_leaves_nothing_behind(tmp_path, monkeypatch):
    proc = _module("fetch", env=_env(tmp_path, KCOORD_KAFKA_VERSION="0.0.1-bogus"))
    assert proc.returncode == 1
    [line] = proc.stderr.strip().splitlines()
    assert "mvn could not fetch Apache Kafka 0.0.1-bogus" in line
    assert "org.apache.kafka:kafka_2.13:jar:0.0.1-bogus" in line  # mvn's own reason
    home = tmp_path / "cache" / "kafka-0.0.1-bogus"
    assert not (home / rk.MARKER).exists() and not list(home.glob("libs*"))  # not taken for complete

    kafka = rk.ReferenceKafka(version="0.0.1-bogus")
    monkeypatch.setenv("KCOORD_KAFKA_CACHE", str(tmp_path / "cache"))
    with pytest.raises(rk.ReferenceKafkaUnavailable, match="0.0.1-bogus"):
        kafka.start()
    assert kafka.pid is None and not kafka.running and kafka.dir is None  # no JVM was started


def test_a_second_broker_on_the_same_port_is_refused(reference_kafka):
    second = rk.ReferenceKafka(port=reference_kafka.port)
    with pytest.raises(rk.ReferenceKafkaUnavailable, match=f"port 127.0.0.1:{reference_kafka.port} is already in use"):
        second.start()
    assert second.pid is None and second.dir is None
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(rk.ReferenceKafkaUnavailable, match=f"controller port 127.0.0.1:{port} is already in use"):
            rk.ReferenceKafka(controller_port=port).start()


def test_a_broker_that_does_not_answer_in_time_is_stopped_and_its_log_shown(tmp_path):
    kafka = rk.ReferenceKafka(start_timeout=0.5, keep_logs_in=tmp_path / "logs")
    with pytest.raises(rk.ReferenceKafkaUnavailable) as err:
        kafka.start()
    first = str(err.value).splitlines()[0]
    assert f"the reference Kafka {rk.KAFKA_VERSION} on 127.0.0.1:" in first and "did not answer within 0.5s" in first
    assert kafka.pid is not None and _gone(kafka.pid)  # started, then stopped
    assert kafka.dir is None and not kafka.running
    assert (tmp_path / "logs" / "stdout.log").exists()


# ---- the command line ----

def test_serve_prints_its_bootstrap_and_stops_on_sigterm(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "kcoord.testing.reference_kafka", "serve",
                             "--config", "group.initial.rebalance.delay.ms=0", "--keep-logs-in", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"reference Kafka {rk.KAFKA_VERSION} listening on 127.0.0.1:"), (line, proc.stderr.read())
        bootstrap = line.split()[5]
        group = f"serve-{uuid.uuid4().hex[:6]}"
        assert wait_group(bootstrap, group).state == "Dead"  # a ready coordinator answers
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(60)
    log = (tmp_path / "server.log").read_text()
    assert "Kafka Server started" in log and "shut down completed" in log


def test_an_interrupted_fetch_is_not_taken_for_complete(tmp_path, monkeypatch):
    monkeypatch.setenv("KCOORD_KAFKA_CACHE", str(tmp_path))
    home = tmp_path / f"kafka-{rk.KAFKA_VERSION}"
    (home / "libs").mkdir(parents=True)
    (home / "libs" / "half-a-jar.jar").write_bytes(b"PK")  # what a killed mvn run leaves
    libs = rk.fetch()
    assert libs == home / "libs" and (home / rk.MARKER).exists()
    names = {p.name for p in libs.glob("*.jar")}
    assert "half-a-jar.jar" not in names and f"kafka-clients-{rk.KAFKA_VERSION}.jar" in names


def test_fetch_lists_the_jars_and_exposes_the_classpath():
    proc = _module("fetch", timeout=60)
    assert proc.returncode == 0, proc.stderr
    libs = rk.fetch()
    assert f"{len(list(libs.glob('*.jar')))} jars in {libs}" in proc.stdout
    assert rk.classpath() == f"{libs}/*"
    names = {p.name for p in libs.glob("*.jar")}
    for jar in (f"kafka_2.13-{rk.KAFKA_VERSION}.jar", f"kafka-tools-{rk.KAFKA_VERSION}.jar",
                f"kafka-clients-{rk.KAFKA_VERSION}.jar", "log4j-slf4j2-impl-2.24.3.jar"):
        assert jar in names
    assert not any(n.startswith("slf4j-api-1.") for n in names)  # 1.x cannot see log4j's binding


# ---- the pytest plugin's options ----

def test_plugin_options_point_broker_and_broker_any_at_kafka(pytester, reference_kafka, monkeypatch):
    pytester.makepyfile(textwrap.dedent("""
        def test_broker(broker):
            assert broker.kind == "kafka" and broker.bootstrap == "%(b)s"

        def test_any(broker_any):
            assert broker_any.kind in ("kcoord", "kafka")
            assert broker_any.wait_for("nobody-%(u)s", state="Dead").state == "Dead"
    """ % {"b": reference_kafka.bootstrap, "u": uuid.uuid4().hex}))
    result = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider", "--kcoord-broker=kafka",
                                           f"--kafka-bootstrap={reference_kafka.bootstrap}")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*test_any?kcoord? PASSED*", "*test_any?kafka? PASSED*"])

    env_run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "test_broker")
    env_run.assert_outcomes(failed=1)  # without the option `broker` is kcoord's
    monkeypatch.setenv("KCOORD_BROKER", "kafka")
    monkeypatch.setenv("KCOORD_KAFKA_BOOTSTRAP", reference_kafka.bootstrap)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "test_broker").assert_outcomes(passed=1)
