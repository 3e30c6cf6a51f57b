#!/usr/bin/env bash
# Make sure the browser tests (tests/browser, marker "browser") have Debian's Chromium and its matching
# chromedriver at /usr/bin/chromium and /usr/bin/chromedriver, installing both with apt-get when missing.
#
# The tests never let Selenium download a browser or a driver, so this is the only way they get one. When the
# install is impossible (no apt-get, no root and no sudo), this fails: CI must not pass with the browser tests
# quietly skipped. A developer without Chromium can opt out explicitly with TASKQ_SKIP_BROWSER=1, and the
# tests then report themselves as skipped with that reason.
#
# Usage: scripts/ensure-chromium.sh
set -euo pipefail

CHROMIUM=/usr/bin/chromium
CHROMEDRIVER=/usr/bin/chromedriver

have_browser() {
    [[ -x $CHROMIUM && -x $CHROMEDRIVER ]]
}

source "$(dirname "$0")/apt-install.sh"

if have_browser; then
    exit 0
fi

if [[ ${TASKQ_SKIP_BROWSER:-} == 1 ]]; then
    echo "ensure-chromium: Chromium is missing and TASKQ_SKIP_BROWSER=1: the browser tests will be skipped" >&2
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure-chromium: $CHROMIUM or $CHROMEDRIVER is missing and apt-get is not available to install them." >&2
    echo "ensure-chromium: install Chromium and chromedriver there, or set TASKQ_SKIP_BROWSER=1 to skip the" \
         "browser tests on this machine." >&2
    exit 1
fi

apt_install ensure-chromium "the browser tests drive them" chromium chromium-driver

if ! have_browser; then
    echo "ensure-chromium: apt-get finished but $CHROMIUM or $CHROMEDRIVER is still missing" >&2
    exit 1
fi
"$CHROMIUM" --version >&2
