# Sourced by the install scripts: install the Debian packages that are missing, as root.
#
#   apt_install_missing CALLER PKG...
#
# Idempotent: packages already installed are skipped, and `apt-get update` runs only when
# something is missing. A temporary policy-rc.d keeps the packages' scripts from starting
# their system daemons (where an init system would): Opgrade's tests and testbed start
# their own instances with their own configs and ports.
apt_install_missing() {
    caller=$1
    shift
    if [ "$(id -u)" -ne 0 ]; then
        echo "$caller: must run as root (apt-get install)" >&2
        exit 1
    fi
    missing=""
    for p in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            missing="$missing $p"
        fi
    done
    if [ -z "$missing" ]; then
        echo "$caller: all packages present"
        return 0
    fi
    echo "$caller: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    created_policy=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        created_policy=1
    fi
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing
    if [ "$created_policy" = 1 ]; then
        rm -f /usr/sbin/policy-rc.d
    fi
}
