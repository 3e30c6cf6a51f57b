#!/usr/bin/env bash
# Print the path of a Go toolchain (1.24 or newer: what asynq v0.26 needs) for the asynq interoperability tests,
# which build real Go asynq from the module proxy. The `go` on PATH when it is new enough; else Go's own toolchain
# module, downloaded once from the Go module proxy (a package registry, like PyPI) into ~/.cache/taskq. Debian's
# golang-go is too old (1.19 on Debian 12), so apt-get is no help here.
set -euo pipefail

wanted=${GO_TOOLCHAIN_VERSION:-1.24.0}
new_enough() {
    local have
    have=$("$1" env GOVERSION 2>/dev/null | sed 's/^go//') || return 1
    [[ -n $have && $(printf '%s\n%s\n' "$wanted" "$have" | sort -V | head -1) == "$wanted" ]]
}

if command -v go >/dev/null && new_enough "$(command -v go)"; then
    command -v go
    exit 0
fi
arch=$(uname -m)
case $arch in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; esac
cache=${XDG_CACHE_HOME:-$HOME/.cache}/taskq/go-toolchain/go$wanted
go_bin=$(find "$cache" -path '*/bin/go' -type f 2>/dev/null | head -1 || true)
if [[ -z $go_bin ]]; then
    proxy=$(printf '%s' "${GOPROXY:-https://proxy.golang.org}" | cut -d, -f1)
    echo "ensure-go: fetching Go $wanted from $proxy" >&2
    mkdir -p "$cache"
    curl -fsSL "$proxy/golang.org/toolchain/@v/v0.0.1-go$wanted.linux-$arch.zip" -o "$cache/toolchain.zip"
    (cd "$cache" && python3 -c "import zipfile,sys; zipfile.ZipFile(sys.argv[1]).extractall('.')" toolchain.zip && rm toolchain.zip)
    go_bin=$(find "$cache" -path '*/bin/go' -type f | head -1)
    chmod +x "$go_bin" "$(dirname "$go_bin")"/../pkg/tool/*/* 2>/dev/null || true
fi
echo "$go_bin"
