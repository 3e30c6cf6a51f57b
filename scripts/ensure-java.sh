#!/usr/bin/env bash
# Make sure a Java runtime (17 or newer) is there for the Spark tests (tests/spark: PySpark starts a JVM),
# installing Debian's default-jre-headless with apt-get when `java` is missing. Fails when it cannot install:
# CI must not pass with the Spark tests erroring for want of a JVM.
#
# Usage: scripts/ensure-java.sh
set -euo pipefail

if command -v java >/dev/null 2>&1 || [[ -n ${JAVA_HOME:-} && -x ${JAVA_HOME}/bin/java ]]; then
    exit 0
fi
as_root() {
    if [[ $(id -u) == 0 ]]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"; else
        echo "ensure-java: need root (or sudo) to run: $*" >&2; return 1; fi
}
echo "ensure-java: installing default-jre-headless (PySpark needs a JVM)" >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends default-jre-headless
java -version
