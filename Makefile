# Every task runs through here; CI calls the same targets (.ci/run).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test test-fast times lint fmt bench bench-distribute fuzz clean pictures docs

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/gradscope inspect configs/two-heads.yaml

# The pictures in the README (the graph needs Graphviz's dot).
pictures: $(STAMP)
	$(VENV)/bin/gradscope graph configs/chained-heads.yaml --loss loss2_stopped -o docs/chained-heads.svg
	$(PY) configs/monitor_example.py $${TMPDIR:-/tmp}/gradscope-timeline.json $${TMPDIR:-/tmp}/gradscope-tb
	$(VENV)/bin/gradscope plot $${TMPDIR:-/tmp}/gradscope-timeline.json -o docs/timeline.png
	$(PY) scripts/capture.py docs/assets/run-gan.svg gradscope run docs/examples/gan.py

# The documentation site (docs/, mkdocs.yml) into site/; --strict: a broken link fails.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# One pytest worker per core (at most 4: each holds TensorFlow and its models). Whole files go
# to a worker (a module fixture runs once), the costliest first (tests/times.json: make times).
PYTEST_WORKERS ?= -n auto --maxprocesses 4 --dist loadfile --no-loadscope-reorder

# Bytecode written even where PYTHONDONTWRITEBYTECODE is set: each worker otherwise rewrites
# the asserts of every test file again (its collection: 21 s -> 10 s of CPU here).
test: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -q $(PYTEST_WORKERS)

# A long fuzz run with new examples each time (a short one is part of make test):
# make fuzz FUZZ_SCALE=100 runs 100 times the examples of make test (default 50).
FUZZ_SCALE ?= 50
fuzz: $(STAMP)
	GRADSCOPE_FUZZ=long GRADSCOPE_FUZZ_SCALE=$(FUZZ_SCALE) $(PY) -m pytest -q tests/fuzz

# What each test file costs (CPU, its processes' too) into tests/times.json, which make test
# orders its files by: run after adding or changing costly tests (the full suite, once).
times: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -q $(PYTEST_WORKERS) --record-times=.times.json
	$(PY) tests/timing.py .times.json tests/times.json

test-fast: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -q $(PYTEST_WORKERS) -m "not tf"

lint: $(STAMP)
	$(VENV)/bin/ruff format --check gradscope tests scripts bench
	$(VENV)/bin/ruff check gradscope tests scripts bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

fmt: $(STAMP)
	$(VENV)/bin/ruff format gradscope tests scripts bench
	$(VENV)/bin/ruff check --fix gradscope tests scripts bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis site

# Benchmarks against bare TensorFlow (bench/RESULTS.md): make bench BENCH_ARGS="--device gpu"
# (bench/process.py: whole processes of gradscope run, watch(), pytest and the Monitor)
BENCH_ARGS ?=
bench: $(STAMP)
	$(PY) bench/run.py $(BENCH_ARGS)
	$(PY) bench/monitor.py
	$(PY) bench/process.py $(BENCH_ARGS)

# --strategy against bare tf.distribute (bench/RESULTS.md, "Distributed runs")
bench-distribute: $(STAMP)
	$(PY) bench/distribute.py $(BENCH_ARGS)
