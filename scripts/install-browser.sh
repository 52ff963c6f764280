#!/bin/sh
# Install what the report renderings and the browser test need from Debian:
# chromium (driven by Playwright through executable_path; we never run `playwright install`)
# and fonts, so that screenshots and WeasyPrint PDFs render text instead of boxes.
#
# Idempotent: apt-get update only runs when something is missing. Debian 12, as root.
set -eu

PKGS="chromium fonts-dejavu-core fonts-liberation2 fontconfig"

if [ "$(id -u)" -ne 0 ]; then
    echo "install-browser.sh: must run as root (apt-get install)" >&2
    exit 1
fi

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done

if [ -n "$missing" ]; then
    echo "== installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    # shellcheck disable=SC2086
    apt-get install -y -q --no-install-recommends $missing >/dev/null
fi
test -x /usr/bin/chromium || { echo "install-browser.sh: /usr/bin/chromium missing after install" >&2; exit 1; }
/usr/bin/chromium --version
