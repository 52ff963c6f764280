#!/bin/sh
# Download SemiAnalysis's open-source audit CLI (PyPI package `clustermax`, command `cmax`)
# and every wheel it depends on into var/wheels/cmax, for the clustermax_audit probe.
#
# Why: managed clusters often have no internet, so Opgrade uploads these wheels to the
# login node over SFTP and installs them there with `pip install --no-index`. The probe
# refuses to run if the directory is empty.
#
# Usage: scripts/fetch-cmax-wheels.sh [VERSION] [PYTHON_VERSIONS]
#   VERSION          clustermax version (default 0.2.1, the one the probe was tested with)
#   PYTHON_VERSIONS  space-separated python3 versions a login node may have (default
#                    "3.10 3.11 3.12 3.13": cmax needs >= 3.10; PyYAML ships per-version wheels)
# Idempotent: pip skips wheels already present. Only PyPI is contacted.
set -eu

VERSION="${1:-0.2.1}"
PYVERS="${2:-3.10 3.11 3.12 3.13}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/var/wheels/cmax"
PY="${PYTHON:-python3}"
mkdir -p "$DEST"

for pyver in $PYVERS; do
    "$PY" -m pip download --quiet --dest "$DEST" --only-binary=:all: \
        --python-version "$pyver" --implementation cp \
        --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform any \
        "clustermax==$VERSION"
done
echo "fetch-cmax-wheels: $(ls "$DEST" | wc -l) wheels in $DEST"
