#!/usr/bin/env bash
# Make sure `promtool` is there for the alert-rule tests (tests/metrics/test_alert_rules.py: promtool check config,
# check rules and the rule unit tests), installing Debian's prometheus package with apt-get when it is missing.
# Fails when it cannot install: CI must not pass with the promtool tests skipped for want of the tool.
#
# Usage: scripts/ensure-promtool.sh
set -euo pipefail

if command -v promtool >/dev/null 2>&1; then
    exit 0
fi
as_root() {
    if [[ $(id -u) == 0 ]]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"; else
        echo "ensure-promtool: need root (or sudo) to run: $*" >&2; return 1; fi
}
echo "ensure-promtool: installing prometheus (it ships promtool)" >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus
promtool --version
