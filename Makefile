# Two commands on a fresh machine: `make run` (index the sample corpus and search it) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# infinity-emb pins numpy<2 and old typer/click, so its server (used by the TEI client tests) gets its own venv.
INF_VENV := .venv-infinity
INF_STAMP := $(INF_VENV)/.installed

.PHONY: run test lint install bench clean docs smoke

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -U pip

# torch first: the CPU wheel lies on the local disk; anything else would pull a multi-GB CUDA build.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

$(INF_STAMP):
	$(PY) -m venv $(INF_VENV)
	$(INF_VENV)/bin/pip install -q -U pip
	$(INF_VENV)/bin/pip install -q torch==2.13.0
	$(INF_VENV)/bin/pip install -q 'infinity-emb[server,torch]'
	touch $(INF_STAMP)

install: $(STAMP)

run: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/needle index samples/python_docs.jsonl --out .needle/quickstart --bm25 --overwrite
	HF_HUB_OFFLINE=1 $(BIN)/needle search .needle/quickstart "how do I parse command line arguments" "read and write zip archives" "run a function in a separate thread" --top-k 3

# The suite on TEST_WORKERS pytest-xdist processes (one per core of a 2-core CI machine), whole files per worker so a
# module's fixtures are built once; each worker uses one torch/BLAS thread (tests/conftest.py).
TEST_WORKERS ?= 2
test: $(STAMP) $(INF_STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q --durations=30 -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The checks CI runs before the tests: lint, formatting and types. Any finding fails.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The documentation site, as CI builds it: any warning (a broken link, a missing page or docstring) fails.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The package as users install it: sdist + wheel built, the wheel installed into a fresh venv, used from outside
# the repository (.ci/package_smoke.sh).
smoke:
	bash .ci/package_smoke.sh

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) $(INF_VENV) .needle .pytest-models site dist
