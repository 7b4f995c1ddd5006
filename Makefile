# The two commands that matter: `make run` and `make test`. See README.md.

SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# Written after a successful install; reinstalls when pyproject.toml changes.
INSTALLED := $(VENV)/.installed

.PHONY: install run test lint bench clean

install:
	rm -f $(INSTALLED)
	$(MAKE) $(INSTALLED)

$(INSTALLED): pyproject.toml
	@test -n "$(PYTHON)" || { echo "python3.11 or python3 is needed" >&2; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(INSTALLED)

# Migrate, make sure the demo data exists (client, template, user, draft, and every template
# under examples/templates/*/template.json with its files; `pps demo` skips those already
# imported), print a login URL, then serve on 127.0.0.1:8000.
# PPS_DEVELOPMENT=1 generates a secret key into the instance folder; any PPS_* variable
# set in the environment wins over the defaults here.
run: $(INSTALLED)
	@set -e; \
	export PPS_DEVELOPMENT="$${PPS_DEVELOPMENT-1}"; \
	export PPS_INSTANCE_PATH="$${PPS_INSTANCE_PATH:-$(CURDIR)/instance}"; \
	mkdir -p "$$PPS_INSTANCE_PATH"; \
	$(BIN)/pps db upgrade; \
	$(BIN)/pps demo; \
	case "$${PPS_REDIS_URL-}" in redis://*|rediss://*|unix://*) $(BIN)/pps worker & ;; esac; \
	echo "Serving on http://$${PPS_BIND:-127.0.0.1:8000} (API reference: /docs). Ctrl-C stops."; \
	exec $(BIN)/gunicorn -c deploy/gunicorn.conf.py wsgi:app

# Tests spawn their own redis-server unless PPS_TEST_REDIS_URL is set; PostgreSQL tests
# run when PPS_TEST_DATABASE_URL is set. Extra pytest arguments: make test ARGS='-k cli'.
test: $(INSTALLED)
	@$(BIN)/pytest $(ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests" >&2; fi; exit $$status

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(INSTALLED)
	$(BIN)/python bench/load.py $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
