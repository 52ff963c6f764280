#!/usr/bin/env bash
# The test command (`make test`; .ci/run calls exactly this): ruff, the import contracts
# (lint-imports, .importlinter: app layers point down; the engine and the testbed import no app),
# then pytest on PostgreSQL
# (127.0.0.1:5432, user postgres) with `makemigrations --check` inside the suite.
#
# With no arguments the suite runs as three pytest processes side by side: the `testbed`
# tests (real Slurm, sshd, Prometheus, nginx, rsyslog in network namespaces; they mostly
# wait on daemons) in two shards, and everything else (mostly CPU). Each has its own test
# database, Redis database (9, 10, 11 by default) and testbed name prefix, so they cannot
# see each other. With arguments, one
# plain pytest run gets them (e.g. `make test ARGS="tests/rubric -x"` or scripts/test.sh -k x).
# Tests marked `testbed` need root and the packages from scripts/install-testbed.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
db="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/opgrade}"
redis="${TEST_REDIS_URL:-redis://127.0.0.1:6379/9}"
export OPGRADE_DEBUG=1
.venv/bin/ruff check .
.venv/bin/lint-imports --no-logo --no-cache  # a broken contract names the importing and the imported module
mkdir -p var/static artifacts var/log

if [ "$#" -gt 0 ]; then
  set +e
  DATABASE_URL="$db" REDIS_URL="$redis" .venv/bin/python -m pytest "$@"
  rc=$?
  set -e
  [ "$rc" -eq 5 ] && echo "error: pytest collected no tests" >&2
  exit "$rc"
fi

# The testbed tests run as two shards beside the rest (they mostly wait on daemons): the long
# end-to-end ones (tests/quickstart, tests/workbench: the demo cycle, the scheduled catalog, the
# browser onboarding) and all other testbed tests. The red team's test runs in the end-to-end shard,
# one after the demo: its mutations plant flaws in host paths every testbed's nodes can see (/srv,
# /var/log), which the demo's exposure probes would rightly report. Each shard has its own database (pytest-django
# creates test_<name>), Redis db and testbed prefix (testbed names are at most 10 characters).
log=var/log/test-testbed.log
log_e2e=var/log/test-testbed-e2e.log
: > "$log"; : > "$log_e2e"
e2e_paths=(tests/quickstart tests/workbench tests/integration/test_red_team.py)
prefix="${OPGRADE_TESTBED_PREFIX:-ci}"
DATABASE_URL="${db}_tb" REDIS_URL="${redis%/*}/$(( ${redis##*/} + 1 ))" OPGRADE_TESTBED_PREFIX="$prefix" \
  .venv/bin/python -m pytest -m testbed -p no:cacheprovider -o console_output_style=classic \
  "${e2e_paths[@]/#/--ignore=}" > "$log" 2>&1 &
tb_pid=$!
DATABASE_URL="${db}_e2e" REDIS_URL="${redis%/*}/$(( ${redis##*/} + 2 ))" OPGRADE_TESTBED_PREFIX="${prefix:0:1}q" \
  .venv/bin/python -m pytest -m testbed -p no:cacheprovider -o console_output_style=classic \
  "${e2e_paths[@]}" > "$log_e2e" 2>&1 &
e2e_pid=$!
trap 'kill "$tb_pid" "$e2e_pid" 2>/dev/null || true' EXIT

set +e
rest_log=var/log/test-rest.log
DATABASE_URL="$db" REDIS_URL="$redis" .venv/bin/python -m pytest -m "not testbed" -p no:cacheprovider \
  2>&1 | tee "$rest_log"
rest_rc=${PIPESTATUS[0]}
echo "== waiting for the testbed tests (pids $tb_pid $e2e_pid, logs $log $log_e2e)"
wait "$tb_pid"
tb_rc=$?
wait "$e2e_pid"
e2e_rc=$?
set -e
trap - EXIT
echo "== testbed tests (pytest -m testbed, without ${e2e_paths[*]}):"
cat "$log"
echo "== end-to-end testbed tests (pytest -m testbed ${e2e_paths[*]}):"
cat "$log_e2e"

# One closing line for both runs: the sums of pytest's final counts.
count() { local n; n=$(tail -n 3 "$1" | grep -Eo "[0-9]+ $2" | tail -n 1 | cut -d' ' -f1); echo "${n:-0}"; }
total() { echo $(( $(count "$rest_log" "$1") + $(count "$log" "$1") + $(count "$log_e2e" "$1") )); }
echo "== non-testbed exit status $rest_rc, testbed exit status $tb_rc, end-to-end testbed exit status $e2e_rc"
echo "total: $(total passed) passed, $(( $(total failed) + $(total error) )) failed, $(total skipped) skipped"
for rc in "$rest_rc" "$tb_rc" "$e2e_rc"; do
  if [ "$rc" -eq 5 ]; then echo "error: a pytest run collected no tests" >&2; exit 5; fi
  if [ "$rc" -ne 0 ]; then exit "$rc"; fi
done
exit 0
