#!/usr/bin/env bash
# apt-install.sh WHO [--no-install-recommends] PKG...: installs Debian packages for WHO (the script that needs them), as
# root directly or through sudo. Where neither is possible (an unprivileged user on a machine
# without sudo) it says which packages and the command an administrator would run, and fails,
# rather than dying on "sudo: command not found" halfway through a test run.
set -euo pipefail
who=$1; shift
opts=()
if [ "${1:-}" = --no-install-recommends ]; then opts=(--no-install-recommends); shift; fi
[ $# -gt 0 ] || exit 0
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null; then SUDO=sudo
  else
    echo "$who: needs the Debian packages $*, and this user ($(id -un)) is not root and has no sudo:" \
         "ask an administrator to run 'apt-get install -y $*', then run this again" >&2
    exit 1
  fi
fi
if ! command -v apt-get >/dev/null; then
  echo "$who: no apt-get here: install $* with your package manager, then run this again" >&2
  exit 1
fi
echo "$who: running: ${SUDO:+$SUDO }apt-get update && ${SUDO:+$SUDO }apt-get install -y $*" >&2
$SUDO apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq ${opts[@]+"${opts[@]}"} "$@" >&2
