#!/usr/bin/env bash
# The test command: ruff, then pytest against PostgreSQL (127.0.0.1:5432, user postgres).
# Tests marked `testbed` need root and the packages from scripts/install-testbed.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/opgrade}"
export REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379/9}"
export OPGRADE_DEBUG=1
.venv/bin/ruff check .
mkdir -p var/static artifacts
set +e
.venv/bin/python -m pytest "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "error: pytest collected no tests" >&2
fi
exit "$rc"
