#!/bin/sh
# Install what the SSH tests and the SSH fan-out benchmark need:
#   - OpenSSH server and client (Debian packages): tests/sshd.py starts real sshd processes on
#     loopback for tests/probes and tests/integration; the benchmark uses the `ssh` client as a floor;
#   - the benchmark's peers (parallel-ssh, ansible-core) into .venv from requirements-bench.txt.
# Idempotent; apt-get update runs only when a package is missing. Run as root.
set -eu
cd "$(dirname "$0")/.."

PKGS="openssh-server openssh-client"

. scripts/lib/apt.sh
# shellcheck disable=SC2086
apt_install_missing install-bench.sh $PKGS
# sshd refuses to start without its privilege-separation directory.
mkdir -p /run/sshd

if [ "${1:-}" != "--no-python" ] && [ -x .venv/bin/python ]; then
    .venv/bin/python -m pip install --quiet -r requirements-bench.txt
fi
