#!/usr/bin/env bash
# Makes a Docker engine answer for the tests (kvcache-tier's Redis and Redis Cluster tests run
# through Testcontainers when one does), or says why none can. Idempotent: an engine that already
# answers (DOCKER_HOST or /var/run/docker.sock) is used as it is; otherwise dockerd is started in
# the background (logs in build/docker/dockerd.log, pid in build/docker/dockerd.pid) and waited
# for at most DOCKER_WAIT seconds (default 30). Never fails the caller: it exits 0 when an engine
# answers, 1 when none does (the tests then fall back to a plain redis-server and say so).
#
#   scripts/docker-engine.sh          start (or find) the engine
#   scripts/docker-engine.sh stop     stop the dockerd this script started (nothing else)
#
# PHX_REDIS_DOCKER=off makes the script do nothing (and the tests use the fallback).
set -uo pipefail
cd "$(dirname "$0")/.."
state=build/docker
pidfile=$state/dockerd.pid
wait_s=${DOCKER_WAIT:-30}
say() { echo "docker-engine: $*" >&2; }
# dockerd lives in /usr/sbin, off an unprivileged user's PATH on Debian
PATH="$PATH:/usr/sbin:/sbin"

answers() { timeout 5 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

ours_alive() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && grep -q dockerd "/proc/$(cat "$pidfile")/comm" 2>/dev/null; }

if [ "${1:-start}" = stop ]; then
  if ours_alive; then
    pid=$(cat "$pidfile")
    kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { say "dockerd $pid did not stop in 10 s; SIGKILL"; kill -9 "$pid"; }
    say "stopped dockerd $pid"
  fi
  rm -f "$pidfile"
  exit 0
fi

if [ "${PHX_REDIS_DOCKER:-auto}" = off ]; then
  say "PHX_REDIS_DOCKER=off: no engine started"
  exit 1
fi
if ! command -v docker >/dev/null; then
  say "no docker client on this machine"
  exit 1
fi
if answers; then
  say "a Docker engine answers ($(docker version --format 'server {{.Server.Version}}' 2>/dev/null)): using it"
  exit 0
fi
if [ -z "${DOCKER_HOST:-}" ] && [ -S /var/run/docker.sock ] && [ ! -w /var/run/docker.sock ] && [ "$(id -u)" != 0 ]; then
  if pgrep -x dockerd >/dev/null; then
    say "the Docker engine's socket refuses this user ($(id -un); /var/run/docker.sock is" \
        "$(stat -c '%U:%G %A' /var/run/docker.sock)): add the user to its group, or run as root"
  else
    say "no Docker engine runs (/var/run/docker.sock is left from one that stopped), and this user" \
        "($(id -un)) cannot start one: start dockerd as root, or run as root"
  fi
  exit 1
fi
if [ -n "${DOCKER_HOST:-}" ]; then
  say "DOCKER_HOST=$DOCKER_HOST does not answer; not starting a local engine in its place"
  exit 1
fi
if ! command -v dockerd >/dev/null; then
  say "no dockerd on this machine (scripts/setup.sh installs Debian's docker.io)"
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  say "not root: cannot start dockerd here (start it yourself, or run as root)"
  exit 1
fi
mkdir -p "$state"
if ours_alive; then
  say "dockerd $(cat "$pidfile") (started earlier) does not answer yet; waiting for it"
else
  # a socket left by an engine that is gone would make dockerd refuse to start
  [ -S /var/run/docker.sock ] && ! pgrep -x dockerd >/dev/null && rm -f /var/run/docker.sock
  if pgrep -x dockerd >/dev/null; then
    say "a dockerd not started here runs (pid $(pgrep -x dockerd | tr '\n' ' ')) but does not answer; waiting for it"
  else
    # setsid: its own session, so that a Ctrl-C to the tests does not take it down mid-start;
    # it stays up after the tests (the next run reuses it; "stop" ends it)
    setsid dockerd >"$state/dockerd.log" 2>&1 </dev/null &
    echo $! >"$pidfile"
    say "started dockerd (pid $!, log $state/dockerd.log); waiting up to $wait_s s"
  fi
fi
deadline=$((SECONDS + wait_s))
while [ "$SECONDS" -lt "$deadline" ]; do
  if answers; then
    say "the Docker engine answers ($(docker info --format 'server {{.ServerVersion}}, storage driver {{.Driver}}' 2>/dev/null))"
    exit 0
  fi
  if [ -f "$pidfile" ] && ! ours_alive && ! pgrep -x dockerd >/dev/null; then
    say "dockerd exited: $(tail -3 "$state/dockerd.log" | tr '\n' ' ')"
    rm -f "$pidfile"
    exit 1
  fi
  sleep 0.5
done
say "the Docker engine did not answer in $wait_s s (log: $state/dockerd.log); the tests fall back to a plain redis-server"
# a dockerd that never came up is not left behind for the next run
if ours_alive; then
  kill "$(cat "$pidfile")" 2>/dev/null
  rm -f "$pidfile"
fi
exit 1
