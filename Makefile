# Two commands on a fresh machine: `make run` (index the sample corpus and search it) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test install bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -U pip

# torch first: the CPU wheel lies on the local disk; anything else would pull a multi-GB CUDA build.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/needle index samples/python_docs.jsonl --out .needle/sample --overwrite
	HF_HUB_OFFLINE=1 $(BIN)/needle search .needle/sample "how do I parse command line arguments" "read and write zip archives" "run a function in a separate thread" --top-k 3

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) .needle
