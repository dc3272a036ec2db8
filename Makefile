# Two entry points that work on a fresh machine: `make test` and `make demo`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test test-interpreter demo bench install clean

install: $(STAMP)

# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build; this one is the CPU wheel.
$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

# Two pytest workers, one per core, one torch thread each (two threads each would oversubscribe the cores).
TEST_WORKERS ?= 2
PYTEST := OMP_NUM_THREADS=1 $(PY) -m pytest -q -n $(TEST_WORKERS)

# --dist loadfile keeps a file's tests on one worker: some share a module's store in order
test: $(STAMP)
	$(PYTEST) --dist loadfile
	$(MAKE) test-interpreter

# fla's real Triton kernels on CPU through Triton's interpreter (its own process: the variable must be set
# before triton is imported); tests/interpreter/patches.py holds the three patches it needs
test-interpreter: $(STAMP)
	TRITON_INTERPRET=1 $(PYTEST) tests/interpreter

demo: $(STAMP)
	$(PY) -m ccq_eval.demo

bench: $(STAMP)
	$(PY) benchmarks/ccq_overhead.py

clean:
	rm -rf $(VENV) build *.egg-info
