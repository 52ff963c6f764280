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
# Idempotent: once a fetch of VERSION for PYTHON_VERSIONS completed (DEST/.fetched says so and the
# clustermax wheel is there) it returns at once without asking PyPI; otherwise pip skips the
# wheels already present. Only PyPI (pip's configured index) is contacted.
# scripts/install.sh runs it, so `clustermax_audit` works after a plain install.
set -eu

VERSION="${1:-0.2.1}"
PYVERS="${2:-3.10 3.11 3.12 3.13}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/var/wheels/cmax"
PY="${PYTHON:-python3}"
STAMP="$DEST/.fetched"
mkdir -p "$DEST"
if [ "$(cat "$STAMP" 2>/dev/null)" = "$VERSION $PYVERS" ] && ls "$DEST"/clustermax-"$VERSION"-*.whl >/dev/null 2>&1; then
    echo "fetch-cmax-wheels: clustermax $VERSION already fetched ($(ls "$DEST" | wc -l) wheels in $DEST)"
    exit 0
fi

for pyver in $PYVERS; do
    "$PY" -m pip download --quiet --dest "$DEST" --only-binary=:all: \
        --python-version "$pyver" --implementation cp \
        --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform any \
        "clustermax==$VERSION"
done
ls "$DEST"/clustermax-"$VERSION"-*.whl >/dev/null 2>&1 \
    || { echo "fetch-cmax-wheels: pip fetched no clustermax-$VERSION wheel into $DEST" >&2; exit 1; }
echo "$VERSION $PYVERS" > "$STAMP"
echo "fetch-cmax-wheels: $(ls "$DEST" | wc -l) wheels in $DEST"
