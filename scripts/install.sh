#!/usr/bin/env bash
# Create .venv with a Python >= 3.12 (Django 6.1 needs it), install the pinned packages, and
# fetch the clustermax wheels the clustermax_audit probe uploads (scripts/fetch-cmax-wheels.sh).
# Needs no root. Idempotent and quick when done: reinstalls only when a requirements file changed
# since the last install, and fetches the wheels only once.
set -euo pipefail
cd "$(dirname "$0")/.."

find_python() {
  for candidate in "${PYTHON:-}" python3.12 /root/.pyenv/versions/3.12*/bin/python3.12 python3.13 \
      /root/.pyenv/versions/3.13*/bin/python3.13 /usr/local/bin/python3.12 /usr/bin/python3.12 python3; do
    [ -n "$candidate" ] || continue
    local exe
    exe=$(command -v "$candidate" 2>/dev/null) || continue
    if "$exe" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      echo "$exe"; return 0
    fi
  done
  return 1
}

if [ ! -x .venv/bin/python ]; then
  py=$(find_python) || { echo "error: Opgrade needs Python >= 3.12 (Django 6.1); none found. Set PYTHON=/path/to/python3.12" >&2; exit 1; }
  echo "== creating .venv with $py"
  "$py" -m venv .venv
fi

stamp=.venv/.requirements.sha256
want=$(cat requirements.txt requirements-nodeps.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "== installing Python packages into .venv"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -r requirements.txt
  .venv/bin/python -m pip install --quiet --no-deps -r requirements-nodeps.txt
  echo "$want" > "$stamp"
fi
mkdir -p var
PYTHON=.venv/bin/python ./scripts/fetch-cmax-wheels.sh
