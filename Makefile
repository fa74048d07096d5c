# The only two set-up commands on a fresh machine: `make run` and `make test` (`make unit`: the
# quick loop, pip only).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed
PSTAMP := $(VENV)/.installed-test-pip
TSTAMP := $(VENV)/.installed-test

.PHONY: run test unit install install-test clean bench

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(STAMP): $(PY) pyproject.toml
	$(PIP) install -q -e .
	touch $@

# The test extras, from PyPI only: all `make unit` needs.
$(PSTAMP): $(STAMP) pyproject.toml
	$(PIP) install -q -e '.[test]'
	touch $@

$(TSTAMP): $(PSTAMP)
	@$(MAKE) --no-print-directory docker-tools
	@$(MAKE) --no-print-directory reference-kafka
	@$(MAKE) --no-print-directory spark-kafka
	@$(MAKE) --no-print-directory connect-kafka
	@$(MAKE) --no-print-directory streams-kafka
	touch $@

# The reference Apache Kafka (broker, tools, Java client 4.x: ~55 MB of jars from Maven
# Central into ~/.cache/kcoord/kafka-VERSION, once). Needs Java 17 and Maven; Maven is
# installed with apt as root. Fails loudly: the suite cannot run without them.
.PHONY: reference-kafka
reference-kafka: $(STAMP)
	@if ! command -v mvn >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing maven (mvn is missing; it fetches the reference Kafka)"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q maven; \
		fi; \
	fi
	$(PY) -m kcoord.testing.reference_kafka fetch

# Spark's Kafka connector at pyspark's version (spark-sql-kafka-0-10, kafka-clients,
# commons-pool2: ~15 MB into ~/.cache/kcoord/spark-kafka-VERSION, once), for
# tests/integration/test_spark_kafka_source.py. Maven is already there (reference-kafka).
.PHONY: spark-kafka
spark-kafka: reference-kafka
	$(PY) -m kcoord.testing.spark_kafka fetch

# Kafka Connect at the reference Kafka's version (connect-runtime, connect-file,
# connect-test-plugins and what they need: ~30 MB into ~/.cache/kcoord/connect-VERSION,
# once), for tests/integration/test_connect.py. Maven is already there (reference-kafka).
.PHONY: connect-kafka
connect-kafka: reference-kafka
	$(PY) -m kcoord.testing.connect fetch

# Kafka Streams at the reference Kafka's version (kafka-streams, RocksDB and what they need:
# ~95 MB, mostly RocksDB, into ~/.cache/kcoord/streams-VERSION, once), for tests/integration/test_streams_eos.py
# (which also fetches them itself the first time). Maven is already there (reference-kafka).
.PHONY: streams-kafka
streams-kafka: reference-kafka
	$(PY) -m kcoord.testing.streams fetch

# The compose tests (tests/docker) need a docker engine + CLI, docker-compose and
# debootstrap (a local base image: no registry is reachable). Installed with apt as root.
DOCKER_TOOLS := docker dockerd docker-compose debootstrap
.PHONY: docker-tools
docker-tools:
	@missing=""; for t in $(DOCKER_TOOLS); do command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing docker.io docker-compose debootstrap (missing:$$missing)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io docker-compose debootstrap; \
	else \
		echo "NOTE: missing$$missing; the docker compose tests will fail until you run:"; \
		echo "      sudo apt-get install -y docker.io docker-compose debootstrap"; \
	fi

install: $(STAMP)
install-test: $(TSTAMP)

run: $(STAMP)
	$(VENV)/bin/kcoord serve --listen 127.0.0.1:9092 --data-dir .kcoord-data

# The suite runs on 5 pytest-xdist workers: most of its time is spent waiting on client
# processes, JVM start-up and coordinator timers (with 4, a full run kept 1.35 of the 2 cores
# busy on average), so 5 keep a 2-core machine busy.
# tests/conftest.py groups the tests sharing a JVM and starts the longest first.
# Serially: `make test PYTEST_ARGS=-n0`; one file: `make test PYTEST_ARGS="-n0 tests/unit"`.
PYTEST_ARGS ?= -n 5 --dist loadgroup --no-loadscope-reorder --durations=30

test: $(TSTAMP)
	$(PY) -m pytest -q -p no:cacheprovider --cov=kcoord/coordinator --cov-report=term $(PYTEST_ARGS)

# The quick loop: no apt, no Maven, no JVM, no docker, nothing beyond loopback. The unit tests
# and the few others as cheap (~20 s together): hypothesis over frame decoding and a live
# in-process server, fault rules, the pytest fixture and plugin, the CLI's group commands and
# metrics, topic ids across versions, the report's parsers and arguments without Spark.
UNIT_TESTS := tests/unit tests/fuzz/test_frame_fuzz.py tests/conformance/test_faults.py \
	tests/integration/test_fixture.py tests/integration/test_pytest_plugin.py \
	tests/integration/test_cli_and_metrics.py tests/integration/test_topic_id_versions.py \
	tests/analytics/test_parsers.py tests/analytics/test_cli_args.py tests/analytics/test_failover.py
UNIT_ARGS ?= -n auto

unit: $(PSTAMP)
	$(PY) -m pytest -q -p no:cacheprovider $(UNIT_ARGS) $(UNIT_TESTS)

clean:
	rm -rf $(VENV) .kcoord-data

# Speed figures, side by side with peers (not part of `make test`).
bench: $(TSTAMP)
	$(PIP) install -q -e '.[test,bench]'
	$(PY) bench/codec.py
	$(PY) bench/rebalance.py
	$(PY) bench/report.py
	$(PY) bench/group_memory.py
