# Sourced by the install scripts: install the Debian packages that are missing, as root.
#
#   apt_install_missing CALLER PKG...
#
# Idempotent: packages already installed are skipped (one dpkg-query for all of them), and
# `apt-get update` runs only when something is missing. When OPGRADE_APT_STAMP names a file
# (scripts/install-all.sh and scripts/test.sh set it), `apt-get update` runs at most once for
# every script that shares that file: the first one that needs it writes the file.
# Not root or no apt-get while something is missing: an error naming the missing packages.
# A temporary policy-rc.d keeps the packages' scripts from starting their system daemons (where
# an init system would): Opgrade's tests and testbed start their own instances with their own
# configs and ports.
apt_install_missing() {
    caller=$1
    shift
    installed=" $(dpkg-query -W -f='${Package} ${Status}\n' "$@" 2>/dev/null \
        | awk '/ install ok installed$/ {print $1}' | tr '\n' ' ') "
    missing=""
    for p in "$@"; do
        case "$installed" in
            *" $p "*) ;;
            *) missing="$missing $p" ;;
        esac
    done
    if [ -z "$missing" ]; then
        echo "$caller: all packages present"
        return 0
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "$caller: missing Debian packages:$missing, and this machine has no apt-get (Opgrade targets Debian 12)" >&2
        exit 1
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "$caller: missing Debian packages:$missing; run as root to install them (apt-get install)" >&2
        exit 1
    fi
    echo "$caller: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    created_policy=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        created_policy=1
    fi
    rc=0
    if [ -n "${OPGRADE_APT_STAMP:-}" ] && [ -s "$OPGRADE_APT_STAMP" ]; then
        echo "$caller: package lists already updated by this run"
    elif apt-get update -qq; then
        if [ -n "${OPGRADE_APT_STAMP:-}" ]; then echo "updated by $caller" > "$OPGRADE_APT_STAMP"; fi
    else
        rc=1
        echo "$caller: apt-get update failed (no network or no Debian mirror?)" >&2
    fi
    # shellcheck disable=SC2086
    if [ "$rc" = 0 ] && ! apt-get install -y -qq --no-install-recommends $missing; then
        rc=1
        echo "$caller: apt-get install failed for:$missing" >&2
    fi
    if [ "$created_policy" = 1 ]; then
        rm -f /usr/sbin/policy-rc.d
    fi
    if [ "$rc" != 0 ]; then exit 1; fi
}
