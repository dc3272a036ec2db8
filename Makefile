# Two entry points that work on a fresh machine: `make test` and `make demo`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test test-processes test-interpreter test-shapes test-browser test-install demo bench install lock clean

install: $(STAMP)

# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build; this one is the CPU wheel.
# Then everything at the exact versions of constraints.txt (pyproject.toml holds only ranges). Quiet: setuptools'
# note on every editable install whose folders map elsewhere (tasks/ -> ccq_eval.tasks) is information, not a fault.
$(STAMP): pyproject.toml constraints.txt Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade pip
	@$(PY) -m pip install -q torch==2.13.0
	@PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install -q -c constraints.txt -e '.[test]'
	@touch $(STAMP)

# Rewrite the lock from what .venv holds (after changing a range in pyproject.toml and installing)
lock: $(STAMP)
	{ sed -n '1,2p' constraints.txt; $(PY) -m pip freeze --exclude-editable | sed 's/+cpu$$//' | grep -v '^ccq.eval'; } > constraints.tmp
	mv constraints.tmp constraints.txt

# Two pytest workers, one per core, one torch thread each (two threads each would oversubscribe the cores).
TEST_WORKERS ?= 2
PYTEST := OMP_NUM_THREADS=1 $(PY) -m pytest -q -n $(TEST_WORKERS)

# --dist loadfile keeps a file's tests on one worker: some share a module's store in order
test: $(STAMP)
	$(PYTEST) --dist loadfile --ignore=tests/browser -m "not processes"

# the tests that start, kill and race whole ccq-eval processes (SIGKILL / SIGTERM / SIGINT mid-run, concurrent
# labelled writers, two-process data parallel, the loopback hub, the demo's workers): about 9 minutes; CI runs them after make test
test-processes: $(STAMP)
	$(PYTEST) --dist loadfile --ignore=tests/browser -m processes

# fla's real Triton kernels on CPU through Triton's interpreter (its own process: the variable must be set
# before triton is imported); tests/interpreter/patches.py holds the three patches it needs; about 7 minutes, CI runs
# it after make test. worksteal: a few tests take minutes, the rest seconds
test-interpreter: $(STAMP)
	TRITON_INTERPRET=1 $(PYTEST) --dist worksteal tests/interpreter -m "not shapes"

# whole S-NIAH and LongBench runs on fla's interpreted kernels, every kernel key (Triton's specialisation, each
# autotuner's key) recorded against the warm-up's (the CUDA behaviour on: padded packed prefills, fixed slots); about
# 3 minutes; CI runs it after make test
test-shapes: $(STAMP)
	TRITON_INTERPRET=1 $(PYTEST) tests/interpreter -m shapes

# the HTML report in headless Chromium (Debian's chromium + chromium-driver); one line and success where they are
# absent, a failure where CCQ_EVAL_REQUIRE_BROWSER is set (.ci/run installs them and sets it)
test-browser: $(STAMP)
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then \
		OMP_NUM_THREADS=1 $(PY) -m pytest -q tests/browser; \
	elif [ -n "$$CCQ_EVAL_REQUIRE_BROWSER" ]; then \
		echo "test-browser: Chromium is absent (apt-get install chromium chromium-driver)"; exit 1; \
	else echo "test-browser: skipped: Chromium is absent (apt-get install chromium chromium-driver)"; fi

# pip install into a fresh environment that already holds the oldest versions pyproject.toml allows (and
# transformers, pandas, huggingface-hub older than the lock's): nothing of it is replaced, and ccq-eval runs and
# passes its tests there. Then `ccq-eval wheelhouse` onto a stand-in for a GPU node's image, installed with no
# index and run offline. Reaches the package registry (as make install does); about 10 minutes.
test-install: $(STAMP)
	$(PYTHON) tests/install/check_install.py
	$(PY) tests/install/check_wheelhouse.py

demo: $(STAMP)
	$(PY) -m ccq_eval.demo

bench: $(STAMP)
	$(PY) benchmarks/ccq_overhead.py

clean:
	rm -rf $(VENV) build *.egg-info
