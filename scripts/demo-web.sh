#!/usr/bin/env bash
# The demo's web server (scripts/demo.sh starts it last): gunicorn with DEBUG off, static files
# served by WhiteNoise from var/static (collectstatic ran before), Django's log and gunicorn's
# errors in var/log/demo-web.log, the access log in var/log/demo-access.log.
# OPGRADE_DEMO_BIND (default 127.0.0.1:8000) and OPGRADE_DEMO_LOG_DIR (default var/log) move them.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/demo-env.sh
log_dir=${OPGRADE_DEMO_LOG_DIR:-var/log}
mkdir -p "$log_dir"
OPGRADE_LOG_FILE="$log_dir/demo-web.log" exec .venv/bin/gunicorn config.wsgi:application \
  --bind "${OPGRADE_DEMO_BIND:-127.0.0.1:8000}" --workers 2 --timeout 120 \
  --access-logfile "$log_dir/demo-access.log" --error-logfile "$log_dir/demo-web.log"
