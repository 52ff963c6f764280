#!/usr/bin/env bash
# Everything the test suite needs on Debian 12, as root; `make test` (scripts/test.sh) runs it first.
#
#   1. PostgreSQL and Redis, installed when missing and started when they do not answer (services.sh)
#   2. the testbed's Debian packages (Slurm, OpenSSH, munge, Prometheus, Pushgateway, node exporter,
#      nginx, rsyslog, MariaDB), MariaDB started (install-testbed.sh)
#   3. chromium and fonts for the browser and report tests (install-browser.sh)
#   4. .venv with the pinned Python packages, and the clustermax wheels (install.sh)
#
# Not here: the LLM server (scripts/install-llm.sh, 12-40 min cold, cached per machine), which
# `make test` builds in the background beside the tests.
#
# Each step is idempotent and checks before it acts, so a run on an installed machine takes about
# a second. `apt-get update` runs at most once per run (OPGRADE_APT_STAMP, see scripts/lib/apt.sh),
# and only when a package is missing. A step that cannot be taken (not root, no apt-get, no
# network, no Python >= 3.12) stops the run with an error naming the missing piece; nothing is
# skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s%N)
step() { echo "== install [$(( ($(date +%s%N) - start) / 1000000 )) ms] $*"; }

if [ -z "${OPGRADE_APT_STAMP:-}" ]; then
  OPGRADE_APT_STAMP=$(mktemp /tmp/opgrade-apt-update.XXXXXX)
  export OPGRADE_APT_STAMP
  trap 'rm -f "$OPGRADE_APT_STAMP"' EXIT
fi

step "PostgreSQL and Redis (scripts/services.sh)"
./scripts/services.sh
step "testbed packages (scripts/install-testbed.sh)"
./scripts/install-testbed.sh
step "chromium and fonts (scripts/install-browser.sh)"
./scripts/install-browser.sh
step "Python packages and clustermax wheels (scripts/install.sh)"
./scripts/install.sh
step "installed"
