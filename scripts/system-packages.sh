#!/bin/sh
# The Debian packages `make run`, `make test` and `make demo` need beyond Python
# and make, installed by the same command where it may (as root, or through
# `sudo -n`); otherwise it stops before anything else with the one command to
# run. Usage: scripts/system-packages.sh PYTHON
#
# - bubblewrap: the command jail (docs/jail.md), unless CODEX_SANDBOX names
#   another backend (docker, podman) or none;
# - python3.X-venv: Debian's Python makes no virtual environment without it;
# - git: the forges and the agents' worktrees.
set -eu

PYTHON="${1:-python3}"
missing=""

case "$(printf '%s' "${CODEX_SANDBOX:-auto}" | tr '[:upper:]' '[:lower:]')" in
  docker | podman | none) ;;
  *) command -v bwrap >/dev/null 2>&1 || missing="$missing bubblewrap" ;;
esac
command -v git >/dev/null 2>&1 || missing="$missing git"
# A Python with ensurepip makes a venv by itself (pyenv, python.org, the Docker
# images); Debian's splits it out into python3.X-venv.
if ! "$PYTHON" -c "import ensurepip, venv" >/dev/null 2>&1; then
  version="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  missing="$missing python$version-venv"
fi
missing="${missing# }"
[ -z "$missing" ] && exit 0

install_with() {
  # $1: empty (root) or "sudo -n".
  echo "Installing Debian's $missing (needed by Codex: docs/jail.md)"
  $1 env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    $1 env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends $missing
}

if command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    install_with "" && exit 0
  elif command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
    install_with "sudo -n" && exit 0
  fi
  echo "Codex needs Debian's $missing. Run:" >&2
  echo "    sudo apt-get install -y $missing" >&2
  echo "then run make again." >&2
else
  echo "Codex needs $missing (Debian's package names), and this machine has" >&2
  echo "no apt-get: install them with its package manager, then run make again." >&2
fi
case " $missing " in
  *" bubblewrap "*)
    echo "(Or let agents run commands in containers: CODEX_SANDBOX=docker.)" >&2 ;;
esac
exit 1
