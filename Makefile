# Opgrade: the two commands of the quick start are `make demo` and `make test`.
.PHONY: install install-all demo demo-down test lint services

# .venv with the pinned Python packages, and the clustermax wheels for the audit probe (no root).
install:
	./scripts/install.sh

# Install, then a full rating cycle on the built-in testbed (three providers, the probe catalog
# on a Celery worker, reviews, feedback, tiers, the published report), then serve the admin and
# the report on http://127.0.0.1:8000 with the worker beside it. Root; see scripts/demo.sh.
demo: install
	./scripts/demo.sh

# Remove the demo's testbeds (they keep running after `make demo` stops serving).
demo-down:
	for name in aurora boreal cirrus; do .venv/bin/python -m testbed down $$name; done

# The test command CI runs (.ci/run calls exactly this), on a fresh Debian 12 machine as root:
# installs what the tests need (scripts/install-all.sh; about a second when all is there), builds
# the LLM server in the background, then ruff + pytest on PostgreSQL with `makemigrations --check`
# inside the suite. A missing piece fails, named; nothing is skipped. See scripts/test.sh.
# `make test ARGS="tests/rubric -x"`: one plain pytest run with those arguments (no LLM build).
test:
	./scripts/test.sh $(ARGS)

# Everything the tests need except the LLM server (root): PostgreSQL, Redis, the testbed's and the
# browser's Debian packages, .venv, the clustermax wheels.
install-all:
	./scripts/install-all.sh

lint: install
	.venv/bin/ruff check .

# Start PostgreSQL and Redis if they do not answer (CI and fresh machines).
services:
	./scripts/services.sh
