#!/bin/sh
# Install what the SSH tests and the SSH fan-out benchmark need:
#   - OpenSSH server and client (Debian packages): tests/sshd.py starts real sshd processes on
#     loopback for tests/probes and tests/integration; the benchmark uses the `ssh` client as a floor;
#   - the benchmark's peers (parallel-ssh, ansible-core) into .venv from requirements-bench.txt.
# Idempotent; apt-get update runs only when a package is missing. Run as root.
set -eu
cd "$(dirname "$0")/.."

PKGS="openssh-server openssh-client"

if [ "$(id -u)" -ne 0 ]; then
    echo "install-bench.sh: must run as root (apt-get install)" >&2
    exit 1
fi

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -n "$missing" ]; then
    echo "install-bench.sh: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    # Keep the package scripts from starting the system sshd: tests start their own.
    created_policy=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        created_policy=1
    fi
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing
    if [ "$created_policy" = 1 ]; then
        rm -f /usr/sbin/policy-rc.d
    fi
fi
# sshd refuses to start without its privilege-separation directory.
mkdir -p /run/sshd

if [ "${1:-}" != "--no-python" ] && [ -x .venv/bin/python ]; then
    .venv/bin/python -m pip install --quiet -r requirements-bench.txt
fi
