# Two entry points that work on a fresh machine: `make test` and `make demo`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test demo bench install clean

install: $(STAMP)

# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build; this one is the CPU wheel.
$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q

demo: $(STAMP)
	$(PY) -m ccq_eval.demo

bench: $(STAMP)
	$(PY) benchmarks/ccq_overhead.py

clean:
	rm -rf $(VENV) build *.egg-info
