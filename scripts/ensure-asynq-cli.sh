#!/usr/bin/env bash
# asynq's own CLI (`asynq stats`, `asynq task ls`, `asynq server ls`...), for tests/asynq/test_asynq_cli.py: built
# once from asynq's repository at the tag the interop tests pin, against asynq v0.26.0 from the Go module proxy,
# and cached outside the repository. `make test` (so CI) runs it before the suite; by hand:
#
#   eval "$(bash scripts/ensure-asynq-cli.sh)"    # exports TASKQ_ASYNQ_CLI (the asynq binary)
#
# The CLI is its own Go module (github.com/hibiken/asynq/tools), which asynq never tagged, so the module proxy does
# not serve it: its source comes from a git repository of github.com/hibiken/asynq, the first of
#   - $TASKQ_ASYNQ_SOURCE (a clone or a bare mirror),
#   - a clone into the cache from github.com (where the machine reaches it),
#   - the snapshot a machine without github.com keeps (our CI machine's, under /work/.mirror).
# Its dependencies (cobra, go-redis...) come from the module proxy. Where no source is found it prints nothing on
# stdout, says why on stderr and exits 0, and the test skips naming the reason.
#
# The binary lives under ${TASKQ_ASYNQ_CLI_CACHE:-~/.cache/taskq/asynq-cli}/<key>; the key hashes this script and the
# Go toolchain's version, so an unchanged key reuses the binary without running Go or git at all.
set -euo pipefail

cd "$(dirname "$0")/.."

TAG=v0.26.0 # the asynq version tests/asynq/goasynq/go.mod pins
root=${TASKQ_ASYNQ_CLI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/taskq/asynq-cli}
go_bin=$(bash scripts/ensure-go.sh)
key=$({
    cat "$0"
    "$go_bin" env GOVERSION GOOS GOARCH
} | sha256sum | cut -c1-16)
home=$root/$key

has_tag() { git -C "$1" rev-parse --verify --quiet "$TAG^{commit}" >/dev/null 2>&1; }

find_source() {
    local candidate
    for candidate in "${TASKQ_ASYNQ_SOURCE:-}" "$root/source.git" /work/.mirror/hibiken+asynq/repo; do
        if [[ -n $candidate ]] && has_tag "$candidate"; then
            echo "$candidate"
            return
        fi
    done
    if timeout 120 git clone --quiet --bare https://github.com/hibiken/asynq "$root/source.git" >&2 2>/dev/null \
        && has_tag "$root/source.git"; then
        echo "$root/source.git"
        return
    fi
    rm -rf "$root/source.git"
}

build() {
    local source=$1 started=$SECONDS
    echo "ensure-asynq-cli: building asynq's CLI at $TAG from $source into $home" >&2
    rm -rf "$home" && mkdir -p "$home/src"
    git -C "$source" archive "$TAG" tools | tar -x -C "$home/src"
    # The tag's tools/go.mod names an older asynq; the CLI is built against the version the interop tests pin.
    (cd "$home/src/tools" && GOTOOLCHAIN=local GOFLAGS=-mod=mod "$go_bin" mod edit -require "github.com/hibiken/asynq@$TAG" \
        && GOTOOLCHAIN=local GOFLAGS=-mod=mod "$go_bin" build -trimpath -o "$home/asynq" ./asynq) >&2
    rm -rf "$home/src"
    "$home/asynq" --version >/dev/null 2>&1 || { echo "ensure-asynq-cli: $home/asynq does not run" >&2; return 1; }
    touch "$home/.complete"
    echo "ensure-asynq-cli: built in $((SECONDS - started)) s" >&2
    find "$root" -mindepth 1 -maxdepth 1 -type d ! -path "$home" ! -path "$root/source.git" -exec rm -rf {} +
}

mkdir -p "$root"
exec 9>"$root/.lock"
flock 9
if [[ ! -f $home/.complete ]]; then
    source=$(find_source)
    if [[ -z $source ]]; then
        echo "ensure-asynq-cli: no git repository of github.com/hibiken/asynq with tag $TAG (set TASKQ_ASYNQ_SOURCE);" \
            "asynq's CLI is not served by the Go module proxy, so tests/asynq/test_asynq_cli.py will skip" >&2
        exit 0
    fi
    build "$source"
fi

printf 'export TASKQ_ASYNQ_CLI=%q\n' "$home/asynq"
