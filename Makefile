# Two commands do everything on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
HOST ?= 127.0.0.1
PORT ?= 8000

NPM_STAMP := node_modules/.installed-stamp

.PHONY: install run test lint typecheck pytest schema check-schema lock clean bench frontend frontend-test

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

# The studio (frontend/, an npm workspace of the root package.json): installed from the lock,
# built into backend/gpupaas/static/ (not committed), which `gpupaas serve` serves at /.
$(NPM_STAMP): package.json package-lock.json frontend/package.json
	@command -v npm >/dev/null || (echo "npm (Node.js 20.19+ or 22.12+) is needed to build the studio" && exit 1)
	@node frontend/scripts/check-node.mjs
	npm ci --no-audit --no-fund
	node frontend/scripts/check-engines.mjs
	touch $(NPM_STAMP)

frontend: $(NPM_STAMP)
	npm run build

# Type checks and component tests (Vitest + Testing Library) of the studio; every locked package
# must run on the Node.js versions package.json's engines (and the README) name.
frontend-test: $(NPM_STAMP)
	node frontend/scripts/check-engines.mjs
	npm run typecheck
	npm run lint
	npm test

run: install frontend
	$(BIN)/gpupaas serve --host $(HOST) --port $(PORT)

# ruff, then the architecture's contracts (pyproject.toml [tool.importlinter]: the layers, no two
# packages importing each other, which module may import kubernetes and aiokafka, who reads the
# environment); a broken contract names the rule and the import that breaks it; then hadolint
# checks the container images' files (infra/container/Containerfile, ssh-tools.Containerfile).
lint: install
	$(BIN)/ruff check backend tests
	$(BIN)/ruff format --check backend tests
	$(BIN)/lint-imports
	$(BIN)/hadolint infra/container/Containerfile infra/container/ssh-tools.Containerfile

typecheck: install
	$(BIN)/mypy

# SQLite, then PostgreSQL (skipped when no server answers, unless in CI or GPUPAAS_TEST_POSTGRES_URL
# is set: then it fails). The end-to-end tests (tests/e2e) drive Debian's chromium against the built
# studio, on SQLite only: on PostgreSQL too they took 80 s more and added no line or branch to the
# combined coverage. Each session runs on PYTEST_WORKERS processes (pytest-xdist; `auto`: one per
# core). Coverage is measured on the SQLite session, which runs every test, and printed at the end:
# measuring it costs a third more time (SQLite: 428 s without, 637 s with it in CI), which the
# PostgreSQL session, a subset of the same tests, is spared.
PYTEST_WORKERS ?= auto
PYTEST := $(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist worksteal

pytest: install frontend
	rm -f .coverage .coverage.*
	$(PYTEST) --cov=gpupaas --cov-report=
	$(PYTEST) --db=postgres --ignore=tests/e2e
	$(BIN)/coverage report

test: lint typecheck check-schema frontend-test pytest

schema: install
	$(BIN)/gpupaas export-schema --output schema.graphql

check-schema: install
	$(BIN)/gpupaas export-schema | diff -u schema.graphql - || (echo "schema.graphql is stale: run make schema" && exit 1)

# The benchmarks (bench/README.md): deploy throughput and latency through Kafka (tansu) and the
# in-process bus, live-status fan-out to 200-1,000 websocket subscribers, the catalog read path,
# lists at 100,000 instances on PostgreSQL.
bench: install
	$(BIN)/python bench/deploy_pipeline.py
	$(BIN)/python bench/fanout.py
	$(BIN)/python bench/read_path.py
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/status_latency.py

# Regenerate the lock from pyproject.toml (needs the registries).
lock:
	rm -rf /tmp/gpupaas-lock && $(PYTHON) -m venv /tmp/gpupaas-lock
	/tmp/gpupaas-lock/bin/pip install --quiet --upgrade pip
	/tmp/gpupaas-lock/bin/pip install --quiet '.[dev]'
	/tmp/gpupaas-lock/bin/pip freeze --exclude gpupaas > requirements.lock

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .coverage .coverage.*
