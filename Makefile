# The only two set-up commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed
TSTAMP := $(VENV)/.installed-test

.PHONY: run test install install-test clean bench

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(STAMP): $(PY) pyproject.toml
	$(PIP) install -q -e .
	touch $@

$(TSTAMP): $(STAMP) pyproject.toml
	$(PIP) install -q -e '.[test]'
	touch $@

install: $(STAMP)
install-test: $(TSTAMP)

run: $(STAMP)
	$(VENV)/bin/kcoord serve --listen 127.0.0.1:9092 --data-dir .kcoord-data

test: $(TSTAMP)
	$(PY) -m pytest -q -p no:cacheprovider --cov=kcoord/coordinator --cov-report=term

clean:
	rm -rf $(VENV) .kcoord-data

# Speed figures, side by side with peers (not part of `make test`).
bench: $(TSTAMP)
	$(PIP) install -q -e '.[test,bench]'
	$(PY) bench/codec.py
	$(PY) bench/rebalance.py
	$(PY) bench/report.py
