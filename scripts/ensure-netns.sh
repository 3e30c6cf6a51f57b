#!/usr/bin/env bash
# Make sure the multi-host chaos tests (tests/chaos/test_hosts.py) have what they need: iproute2 (`ip netns`,
# veth pairs) and nftables (packet loss inside a namespace), installing Debian's packages when they are missing.
# Making namespaces needs root: as any other user there is nothing to install for, and those tests skip saying so.
#
# Usage: scripts/ensure-netns.sh
set -euo pipefail

if [[ $(id -u) != 0 ]]; then
    echo "ensure-netns: not root, so tests/chaos/test_hosts.py will skip (it makes network namespaces)" >&2
    exit 0
fi
missing=()
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v nft >/dev/null 2>&1 || missing+=(nftables)
if [[ ${#missing[@]} == 0 ]]; then
    exit 0
fi
source "$(dirname "$0")/apt-install.sh"
apt_install ensure-netns "tests/chaos/test_hosts.py runs workers on hosts made of network namespaces" "${missing[@]}"
