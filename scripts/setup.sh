#!/usr/bin/env bash
# Installs what the build needs when it is missing and prints the JAVA_HOME to use.
# Idempotent and quiet when everything is there; source-free: run it as a command.
set -euo pipefail

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v gcc >/dev/null || need+=(gcc)
command -v mvn >/dev/null || need+=(maven)
[ -f /usr/include/liburing.h ] && ls /usr/lib/*/liburing.a >/dev/null 2>&1 || need+=(liburing-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >&2
fi

# JDK 25 (java.lang.foreign): JAVA_HOME if it is 25+, else Temurin 25 under /usr/lib/jvm
java_ok() { [ -x "$1/bin/java" ] && "$1/bin/java" -version 2>&1 | grep -qE 'version "(2[5-9]|[3-9][0-9])'; }
if [ -n "${JAVA_HOME:-}" ] && java_ok "$JAVA_HOME"; then
  echo "$JAVA_HOME"; exit 0
fi
for j in /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/temurin-2[5-9]* /usr/lib/jvm/*25*; do
  if java_ok "$j"; then echo "$j"; exit 0; fi
done
echo "setup: no JDK 25 found; install Temurin 25 under /usr/lib/jvm or set JAVA_HOME" >&2
exit 1
