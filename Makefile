# Opgrade: the two commands of the quick start are `make demo` and `make test`.
.PHONY: install demo demo-down test lint services

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

# The test command CI runs (.ci/run calls exactly this): ruff + pytest on PostgreSQL,
# with `makemigrations --check` inside the suite.
test: install
	./scripts/test.sh $(ARGS)

lint: install
	.venv/bin/ruff check .

# Start PostgreSQL and Redis if they do not answer (CI and fresh machines).
services:
	./scripts/services.sh
