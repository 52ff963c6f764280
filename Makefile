# Opgrade: the two commands of the quick start are `make demo` and `make test`.
.PHONY: install demo test lint services

install:
	./scripts/install.sh

# Install, migrate, load the default rubric and sample data, then serve the admin and the
# published report on http://127.0.0.1:8000 with a Celery worker beside it.
demo: install
	./scripts/demo.sh

# The test command CI runs (.ci/run calls exactly this): ruff + pytest on PostgreSQL,
# with `makemigrations --check` inside the suite.
test: install
	./scripts/test.sh

lint: install
	.venv/bin/ruff check .

# Start PostgreSQL and Redis if they do not answer (CI and fresh machines).
services:
	./scripts/services.sh
