# ctxgraph: `make demo` runs the main job, `make test` runs every test. Both install what is
# missing first (system packages, pgvector, the venv) and are safe to run again.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
STAMP := $(VENV)/.provisioned

.PHONY: help provision provision-system provision-python provision-test provision-citus db-start db-stop citus-start citus-stop deploy revert test demo bench docs clean

help:
	@echo "make demo   - run ctxgraph on the bundled sample (embedded PostgreSQL)"
	@echo "make test   - run every test (pgTAP, sqitch round trip, pytest)"
	@echo "make bench  - run the benchmarks"
	@echo "make docs   - regenerate docs/sql-api.md from a fresh deploy's catalog"
	@echo "make deploy / make revert / make db-start / make db-stop"
	@echo "make citus-start / make citus-stop - a local Citus cluster, built from the vendored source (docs/scaling.md)"

provision: provision-system provision-python

provision-system:
	@bash scripts/provision-system.sh

provision-python: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@bash scripts/provision-python.sh
	@touch $@

provision-test: $(STAMP).test

$(STAMP).test: $(STAMP) requirements-test.txt
	@bash scripts/provision-python.sh --test
	@touch $@

# Citus from the vendored source (../shared/vendor/citus), once; then a coordinator and two workers.
provision-citus:
	@bash scripts/provision-system.sh --citus

citus-start: provision-citus
	@bash scripts/citus-local.sh start

citus-stop:
	@[ ! -d .pgdata/citus ] || bash scripts/citus-local.sh stop

db-start: provision-system
	@bash scripts/pg-local.sh start

db-stop:
	@bash scripts/pg-local.sh stop

deploy: provision-system
	@source scripts/db-env.sh && { psql -X -q -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$$PGDATABASE'" | grep -q 1 || create_database "$$PGDATABASE"; } && sqitch deploy

revert: provision-system
	@source scripts/db-env.sh && sqitch revert

test: provision-system provision-test
	@bash scripts/run-tests.sh

demo: provision-system provision-python
	@bash scripts/demo.sh

bench: provision-system provision-python
	@bash scripts/bench.sh

docs: provision-system provision-python
	@bash scripts/gen-sql-api.sh

clean: citus-stop db-stop
	rm -rf .pgdata $(VENV)
