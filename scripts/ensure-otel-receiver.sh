#!/usr/bin/env bash
# The real OTLP receiver of the tracing tests: Jaeger v2 (an OpenTelemetry Collector with Jaeger's in-memory storage,
# query API and UI), built once from the Go module proxy at the exact versions of tests/tracing/receiver/go.mod and
# go.sum, and cached outside the repository. `make test` (so CI) runs it before the suite; by hand:
#
#   eval "$(bash scripts/ensure-otel-receiver.sh)"    # exports TASKQ_OTEL_RECEIVER (the jaeger binary)
#
# It prints that `export` line on stdout (progress goes to stderr). The binary lives under
# ${TASKQ_OTEL_RECEIVER_CACHE:-~/.cache/taskq/otel-receiver}/<key>, where the key is a hash of go.mod, go.sum, this
# script and the Go toolchain's version: a change of any of them builds a new folder (a build cut short is redone,
# and the folders of older keys are removed once the new one is complete); an unchanged key reuses the binary without
# running Go at all. A lock serialises two runs that start together. Go's module cache keeps the downloads, so a
# rebuild after a change of this script downloads nothing.
set -euo pipefail

cd "$(dirname "$0")/.."

MODULE=tests/tracing/receiver
PROGRAM=github.com/jaegertracing/jaeger/cmd/jaeger
root=${TASKQ_OTEL_RECEIVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/taskq/otel-receiver}

# The Go that go.mod's `go` line asks for at least (the one on PATH if new enough; else Go's toolchain module).
go_bin=$(GO_TOOLCHAIN_VERSION=$(awk '$1 == "go" { print $2; exit }' "$MODULE/go.mod") bash scripts/ensure-go.sh)

key=$({
    cat "$0" "$MODULE/go.mod" "$MODULE/go.sum"
    "$go_bin" env GOVERSION GOOS GOARCH
} | sha256sum | cut -c1-16)
home=$root/$key

build() {
    local started=$SECONDS
    echo "ensure-otel-receiver: building $PROGRAM into $home (go build, module $MODULE)" >&2
    rm -rf "$home" && mkdir -p "$home"
    # -mod=readonly: the build uses go.sum as committed and fails, by name, on anything it does not pin.
    (cd "$MODULE" && GOTOOLCHAIN=local "$go_bin" build -mod=readonly -trimpath -o "$home/jaeger" "$PROGRAM") >&2
    "$home/jaeger" version >/dev/null 2>&1 || { echo "ensure-otel-receiver: $home/jaeger does not run" >&2; return 1; }
    touch "$home/.complete"
    echo "ensure-otel-receiver: built in $((SECONDS - started)) s" >&2
    # The folders of older keys go once the new one is complete.
    find "$root" -mindepth 1 -maxdepth 1 -type d ! -path "$home" -exec rm -rf {} +
}

mkdir -p "$root"
exec 9>"$root/.lock"
flock 9
if [[ ! -f $home/.complete ]]; then build; fi

printf 'export TASKQ_OTEL_RECEIVER=%q\n' "$home/jaeger"
