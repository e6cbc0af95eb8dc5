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
if ! command -v apt-get >/dev/null; then
  echo "$who: needs $*, and there is no apt-get here: install them with your package manager, then run this again" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  # sudo that can run: without a password, or with a terminal to ask for one on; a sudo that
  # would only fail (not in sudoers, a job with no terminal) gets the same message as no sudo
  if command -v sudo >/dev/null && { sudo -n true 2>/dev/null || [ -t 0 ]; }; then SUDO=sudo
  else
    echo "$who: needs the Debian packages $*, and this user ($(id -un)) is not root and cannot use sudo here:" \
         "ask an administrator to run 'apt-get install -y $*', then run this again" >&2
    exit 1
  fi
fi
echo "$who: running: ${SUDO:+$SUDO }apt-get update && ${SUDO:+$SUDO }apt-get install -y $*" >&2
$SUDO apt-get update -qq >&2
# through env: sudo's env_reset would drop a DEBIAN_FRONTEND set in front of it
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${opts[@]+"${opts[@]}"} "$@" >&2
