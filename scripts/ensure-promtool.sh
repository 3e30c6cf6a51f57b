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
source "$(dirname "$0")/apt-install.sh"
apt_install ensure-promtool "it ships promtool" prometheus
promtool --version
