#!/bin/sh
# Install the system packages the testbed (testbed/, `python -m testbed`) needs.
#
# Idempotent: packages already present are skipped by apt, and apt-get update only
# runs when something is missing. Works on a fresh Debian 12 machine as root.
# The package daemons are installed but NOT left running: the testbed starts its own
# copies inside network namespaces, with its own config files and ports.
set -eu

PKGS="openssh-server openssh-client slurmctld slurmd slurm-client slurmdbd munge \
prometheus prometheus-node-exporter prometheus-pushgateway nginx rsyslog \
mariadb-server mariadb-client iproute2 procps util-linux psmisc bridge-utils"

if [ "$(id -u)" -ne 0 ]; then
    echo "install-testbed.sh: must run as root (apt-get install)" >&2
    exit 1
fi

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -n "$missing" ]; then
    echo "install-testbed.sh: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    # policy-rc.d keeps the package scripts from starting the system daemons
    # (where an init system would); the testbed runs its own instances.
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
else
    echo "install-testbed.sh: all packages present"
fi

# sshd refuses to start without its privilege-separation directory.
mkdir -p /run/sshd

# Slurm accounting (profile knob slurm.accounting): each testbed's slurmdbd keeps its own
# database on the machine's MariaDB, reached through its unix socket. Start it if it is down.
if [ ! -S /run/mysqld/mysqld.sock ]; then
    echo "install-testbed.sh: starting MariaDB"
    service mariadb start >/dev/null 2>&1 || service mysql start >/dev/null 2>&1 || true
    i=0
    while [ ! -S /run/mysqld/mysqld.sock ] && [ "$i" -lt 30 ]; do sleep 1; i=$((i + 1)); done
    if [ ! -S /run/mysqld/mysqld.sock ]; then
        echo "install-testbed.sh: MariaDB did not start (see /var/log/mysql)" >&2
        exit 1
    fi
fi
