#!/bin/sh
# Install wrk (Debian package) for bench/report_bench.py. Idempotent; Debian 12, as root.
set -eu
if ! command -v wrk >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "install-bench-report.sh: must run as root (apt-get install wrk)" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends wrk >/dev/null
fi
command -v wrk
