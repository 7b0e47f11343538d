# Two commands on a fresh machine: `make run` and `make test`. See README.md.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: run test lint format check ci clean bench bench-smoke demo eval lock \
	system-packages

## system-packages: the Debian packages Codex needs beyond Python and make
## (bubblewrap for the command jail, python3.X-venv, git), installed as root or
## through `sudo -n`; otherwise it stops with the one command to run.
system-packages:
	@sh scripts/system-packages.sh $(PYTHON)

$(PY): | system-packages
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# requirements/*.txt are locks (every package pinned with its hashes) compiled from
# the requirements/*.in by `make lock`; pip refuses any file whose hash differs,
# and scripts/install-lock.py says what that refusal means.
INSTALL_LOCK := $(PY) scripts/install-lock.py

$(VENV)/.installed-base: requirements/prod.txt | $(PY)
	$(INSTALL_LOCK) requirements/prod.txt
	touch $@

$(VENV)/.installed-dev: requirements/dev.txt | $(PY)
	$(INSTALL_LOCK) requirements/dev.txt
	touch $@

$(VENV)/.installed-bench: requirements/bench.txt | $(PY)
	$(INSTALL_LOCK) requirements/bench.txt
	touch $@

## lock: compile requirements/*.in (the direct pins) into the locks prod.txt, dev.txt
## and bench.txt with pip-tools, keeping the indirect pins they already have;
## `make lock LOCK_ARGS=--upgrade` moves those up too.
PIP_COMPILE := CUSTOM_COMPILE_COMMAND="make lock" $(VENV)/bin/pip-compile --quiet \
	--generate-hashes --allow-unsafe --strip-extras --no-emit-index-url \
	--no-emit-find-links $(LOCK_ARGS)

lock: $(VENV)/.installed-dev
	$(PIP_COMPILE) --output-file requirements/prod.txt requirements/prod.in
	$(PIP_COMPILE) --output-file requirements/dev.txt requirements/dev.in
	$(PIP_COMPILE) --output-file requirements/bench.txt requirements/bench.in

## run: the console (http://127.0.0.1:8000/admin/) and a worker, on SQLite by default.
## `make run HOST=0.0.0.0 PORT=8080` to choose where the console listens. The
## first run makes development keys under var/ (codex/settings/security.py, Keys).
HOST ?= 127.0.0.1
PORT ?= 8000
# Links printed outside the console (the demo's) name where it listens.
export CODEX_CONSOLE_ADDRESS ?= $(HOST):$(PORT)
VAR := $(or $(CODEX_VAR_DIR),var)
STATIC_ROOT := $(or $(CODEX_STATIC_ROOT),$(VAR)/static)
# Static files are collected (and compressed) again only when a source changed:
# the project's own, or the installed packages' (admin, API browser).
STATIC_SOURCES := $(shell find codex -path '*/static/*' -type f 2>/dev/null)
STATIC_STAMP := $(STATIC_ROOT)/.collected

$(STATIC_STAMP): $(VENV)/.installed-base $(STATIC_SOURCES)
	@echo "Collecting static files (only when they changed)"
	$(PY) manage.py collectstatic --no-input --verbosity 0
	touch $@

run: system-packages $(VENV)/.installed-base $(STATIC_STAMP)
	$(PY) manage.py codex_run --prepare --addrport $(HOST):$(PORT)

## demo: a scripted walk through all six phases on a sample repository of the
## local forge (pre-recorded model answers, no key needed), in a database and
## queue of its own (var/demo/, never the one `make run` uses). QA runs the
## sample project's pytest in the jail, from a toolchain of its own
## (var/toolchains/pytest, bound read-only into the jail), not Codex's venv.
DEMO_TOOLCHAIN := $(VAR)/toolchains/pytest

$(DEMO_TOOLCHAIN)/bin/pytest:
	$(PYTHON) -m venv $(DEMO_TOOLCHAIN)
	$(DEMO_TOOLCHAIN)/bin/pip install --quiet pytest==9.2.0

demo: system-packages $(VENV)/.installed-base $(VENV)/.installed-dev $(DEMO_TOOLCHAIN)/bin/pytest
	$(PY) manage.py demo
	$(PY) manage.py demo --scenario fanout

## eval: cases through the whole pipeline, judged by their hidden tests
## (docs/eval.md). The shipped suite `real`: 23 cases from 7 open-source
## projects (Python, JavaScript) built from releases fetched from PyPI and npm
## (pinned by sha256, cached under var/eval/cache). Real models with
## ANTHROPIC_API_KEY, else scripted agents; in a database and queue of its own
## (var/eval/); writes var/eval/results.json and results.md.
## EVAL_ARGS="--agent gold", "--agent empty", "--case qs-skip-nulls",
## "--cases DIR", "--repeat 3".
eval: system-packages $(VENV)/.installed-base
	$(PY) -m agents.evaluation $(EVAL_ARGS)

## test: the whole suite (DATABASE_URL=postgres://... to run it on PostgreSQL)
## Bytecode first: the live tests start hundreds of Python processes, and
## where PYTHONDONTWRITEBYTECODE is set each would compile Codex again.
test: system-packages $(VENV)/.installed-dev
	$(PY) -m compileall -q -j 0 codex agents integrations bench tests >/dev/null
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

format: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

check: $(VENV)/.installed-dev
	$(PY) manage.py check
	$(PY) manage.py makemigrations --check --dry-run

## bench: the benchmarks (bench/REPORT.md) on PostgreSQL, a few minutes (load from
## Locust, in requirements/bench.txt); writes bench/REPORT.md and bench/report.json
bench: $(VENV)/.installed-base $(VENV)/.installed-bench
	$(PY) -m bench.run

## bench-smoke: the same in a short mode for CI; writes var/bench/
bench-smoke: $(VENV)/.installed-base $(VENV)/.installed-bench
	$(PY) -m bench.run --smoke

ci:
	bash .ci/run

clean:
	rm -rf $(VENV) var .pytest_cache
