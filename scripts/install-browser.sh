#!/bin/sh
# Install what the report renderings and the browser test need from Debian:
# chromium (driven by Playwright through executable_path; we never run `playwright install`)
# and fonts, so that screenshots and WeasyPrint PDFs render text instead of boxes.
#
# Idempotent: apt-get update only runs when something is missing. Debian 12, as root.
set -eu

PKGS="chromium fonts-dejavu-core fonts-liberation2 fontconfig"

. "$(dirname "$0")/lib/apt.sh"
# shellcheck disable=SC2086
apt_install_missing install-browser.sh $PKGS
test -x /usr/bin/chromium || { echo "install-browser.sh: /usr/bin/chromium missing after install" >&2; exit 1; }
/usr/bin/chromium --version
