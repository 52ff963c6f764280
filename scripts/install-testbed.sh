#!/bin/sh
# Install the system packages the testbed (testbed/, `python -m testbed`) needs.
#
# Idempotent: packages already present are skipped, and apt-get update only runs when something
# is missing (scripts/lib/apt.sh). Works on a fresh Debian 12 machine as root; what it cannot do
# (not root, no apt-get, MariaDB not starting) is an error naming it.
# The package daemons are installed but NOT left running: the testbed starts its own
# copies inside network namespaces, with its own config files and ports.
set -eu

PKGS="openssh-server openssh-client slurmctld slurmd slurm-client slurmdbd munge \
prometheus prometheus-node-exporter prometheus-pushgateway nginx rsyslog \
mariadb-server mariadb-client iproute2 procps util-linux psmisc bridge-utils \
socat rsync xz-utils bzip2 zstd curl"
# curl: bmc_reachable asks Redfish with it from the nodes; a node without it leaves that path
# unchecked (an error, never a pass), so the clean testbed needs it

. "$(dirname "$0")/lib/apt.sh"
# shellcheck disable=SC2086
apt_install_missing install-testbed.sh $PKGS

# sshd refuses to start without its privilege-separation directory.
[ -d /run/sshd ] || mkdir -p /run/sshd || { echo "install-testbed.sh: cannot create /run/sshd (root needed)" >&2; exit 1; }

# Slurm accounting (profile knob slurm.accounting): each testbed's slurmdbd keeps its own
# database on the machine's MariaDB, reached through its unix socket. Start it if it is down.
if [ ! -S /run/mysqld/mysqld.sock ]; then
    echo "install-testbed.sh: starting MariaDB"
    service mariadb start >/dev/null 2>&1 || service mysql start >/dev/null 2>&1 || true
    i=0
    while [ ! -S /run/mysqld/mysqld.sock ] && [ "$i" -lt 30 ]; do sleep 1; i=$((i + 1)); done
    if [ ! -S /run/mysqld/mysqld.sock ]; then
        echo "install-testbed.sh: MariaDB did not start (root needed; see /var/log/mysql)" >&2
        exit 1
    fi
fi
