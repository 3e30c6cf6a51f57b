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
source "$(dirname "$0")/apt-install.sh"
apt_install ensure-java "PySpark needs a JVM" default-jre-headless
java -version
