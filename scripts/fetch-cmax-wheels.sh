#!/bin/sh
# Download SemiAnalysis's open-source audit CLI (PyPI package `clustermax`, command `cmax`)
# and every wheel it depends on into var/wheels/cmax, for the clustermax_audit probe.
#
# Why: managed clusters often have no internet, so Opgrade uploads these wheels to the
# login node over SFTP and installs them there with `pip install --no-index`. The probe
# refuses to run if the directory is empty.
#
# Usage: scripts/fetch-cmax-wheels.sh [VERSION] [PYTHON_TAG]
#   VERSION     clustermax version (default 0.2.1, the one the probe was tested with)
#   PYTHON_TAG  e.g. 3.11 to fetch wheels for a login node whose python3 differs from ours
#               (default: the version of `python3` here)
# Idempotent: pip skips wheels already present. Only PyPI is contacted.
set -eu

VERSION="${1:-0.2.1}"
PYVER="${2:-}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/var/wheels/cmax"
PY="${PYTHON:-python3}"
mkdir -p "$DEST"

set -- download --dest "$DEST" --only-binary=:all: "clustermax==$VERSION"
if [ -n "$PYVER" ]; then
    set -- "$@" --python-version "$PYVER" --platform manylinux2014_x86_64 --platform any
fi
"$PY" -m pip "$@"
echo "fetch-cmax-wheels: $(ls "$DEST" | wc -l) wheels in $DEST"
