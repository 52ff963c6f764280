#!/usr/bin/env bash
# The quick start's main job. Grows with the project: see the README.
set -euo pipefail
cd "$(dirname "$0")/.."
export OPGRADE_DEBUG="${OPGRADE_DEBUG:-1}"
py=.venv/bin/python
$py manage.py migrate --noinput
$py manage.py rubric import rubric/data/opgrade-2026.1.yaml --freeze
$py manage.py collectstatic --noinput -v0
echo "Admin at http://127.0.0.1:8000/admin/"
exec $py manage.py runserver 127.0.0.1:8000
