#!/usr/bin/env bash
# Installs what the build needs when it is missing and prints the JAVA_HOME to use.
# Idempotent and quiet when everything is there; source-free: run it as a command.
set -euo pipefail
# dockerd and other daemons live in /usr/sbin, off an unprivileged user's PATH on Debian
PATH="$PATH:/usr/sbin:/sbin"

need=()
why=()
command -v cmake >/dev/null || { need+=(cmake); why+=("cmake: builds libphoenix"); }
command -v gcc >/dev/null || { need+=(gcc); why+=("gcc: compiles libphoenix"); }
command -v mvn >/dev/null || { need+=(maven); why+=("maven: builds the Java modules"); }
[ -f /usr/include/liburing.h ] && ls /usr/lib/*/liburing.a >/dev/null 2>&1 \
  || { need+=(liburing-dev); why+=("liburing-dev: libphoenix's io_uring engine, linked statically"); }
command -v redis-server >/dev/null || [ -x /usr/bin/redis-server ] \
  || { need+=(redis-server); why+=("redis-server: kvcache-tier's Redis tests (where no Docker engine answers)"); }
# the Docker engine kvcache-tier's Redis tests run in (Testcontainers; scripts/docker-engine.sh
# starts it), unless one is there already or PHX_REDIS_DOCKER=off
if [ "${PHX_REDIS_DOCKER:-auto}" != off ] && ! command -v dockerd >/dev/null && [ -z "${DOCKER_HOST:-}" ] \
  && [ ! -S /var/run/docker.sock ]; then
  need+=(docker.io); why+=("docker.io: the Docker engine kvcache-tier's Redis tests run in, through Testcontainers")
fi
# the serve tests drive the server with the official OpenAI SDK (npm) and curl
command -v npm >/dev/null || { need+=(nodejs npm); why+=("nodejs, npm: the serve tests' OpenAI SDK client"); }
command -v curl >/dev/null || { need+=(curl); why+=("curl: the serve tests' raw HTTP client"); }
if [ ${#need[@]} -gt 0 ]; then
  # said before anything runs: sudo may ask for a password, and a user should know what for
  {
    echo "setup: the build needs packages this machine lacks:"
    for w in "${why[@]}"; do echo "setup:   $w"; done
  } >&2
  "$(dirname "$0")/apt-install.sh" setup "${need[@]}"
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
