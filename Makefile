# Two commands on a fresh machine: `make run` and `make test`. See README.md.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: run test lint format check ci clean bench bench-smoke demo

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.installed-base: requirements/base.txt requirements/prod.txt | $(PY)
	$(PIP) install --quiet -r requirements/base.txt -r requirements/prod.txt
	touch $@

$(VENV)/.installed-dev: requirements/base.txt requirements/dev.txt | $(PY)
	$(PIP) install --quiet -r requirements/dev.txt
	touch $@

## run: the console (http://127.0.0.1:8000/admin/) and a worker, on SQLite by default
run: $(VENV)/.installed-base
	$(PY) manage.py migrate --no-input
	$(PY) manage.py collectstatic --no-input --verbosity 0
	$(PY) manage.py ensure_admin
	$(PY) manage.py codex_run

## demo: a scripted walk through all six phases on a sample repository of the
## local forge (var/demo/; pre-recorded model answers, no key needed). The dev
## requirements bring pytest, which the QA phase runs in the sample project.
demo: $(VENV)/.installed-base $(VENV)/.installed-dev
	$(PY) manage.py migrate --no-input
	$(PY) manage.py demo

## test: the whole suite (DATABASE_URL=postgres://... to run it on PostgreSQL)
test: $(VENV)/.installed-dev
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

check: $(VENV)/.installed-dev
	$(PY) manage.py check
	$(PY) manage.py makemigrations --check --dry-run

## bench: the benchmarks (issue 8) on PostgreSQL, a few minutes (load from
## Locust, a dev requirement); writes bench/REPORT.md and bench/report.json
bench: $(VENV)/.installed-base $(VENV)/.installed-dev
	$(PY) -m bench.run

## bench-smoke: the same in a short mode for CI; writes var/bench/
bench-smoke: $(VENV)/.installed-base $(VENV)/.installed-dev
	$(PY) -m bench.run --smoke

ci:
	bash .ci/run

clean:
	rm -rf $(VENV) var .pytest_cache
