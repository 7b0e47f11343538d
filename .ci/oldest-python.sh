#!/usr/bin/env bash
# `make run` on the oldest Python the README names that a newcomer meets:
# Debian 12's own python3 (3.11.2, below 3.11.3, where redis needs
# async-timeout). A fresh virtual environment installs the hashed lock, then
# `make run` must reach the console (/healthz and the sign-in page answer 200)
# and stop cleanly on Ctrl-C. Everything it makes is in a temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."

OLDEST="${CODEX_OLDEST_PYTHON:-/usr/bin/python3.11}"
if ! [ -x "$OLDEST" ]; then
  echo "Installing Debian's python3.11 (3.11.2 on Debian 12)"
  apt-get update -qq && apt-get install -y -qq python3.11 python3.11-venv
fi
version="$("$OLDEST" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
echo "=== make run on Python $version ($OLDEST) ==="

work="$(mktemp -d)"
port="$("$OLDEST" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
log="$work/run.log"
cleanup() {
  if [ -n "${run_pid:-}" ] && kill -0 "$run_pid" 2>/dev/null; then
    kill -INT -- "-$run_pid" 2>/dev/null || true
    sleep 3
    kill -KILL -- "-$run_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Its own process group, so that Ctrl-C (SIGINT) reaches make and Codex.
setsid env -u DATABASE_URL -u REDIS_URL CODEX_VAR_DIR="$work/var" \
  CODEX_ADMIN_PASSWORD=oldest-python-check \
  make run PYTHON="$OLDEST" VENV="$work/venv" PORT="$port" >"$log" 2>&1 &
run_pid=$!

# Installing the lock downloads the wheels (the pip cache helps the next run).
deadline=$((SECONDS + 900))
until curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
  if ! kill -0 "$run_pid" 2>/dev/null || [ "$SECONDS" -gt "$deadline" ]; then
    echo "make run on Python $version did not reach the console:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 2
done
curl -fsS -o /dev/null "http://127.0.0.1:$port/admin/login/"
"$work/venv/bin/python" -c 'import sys; print("venv Python", sys.version.split()[0])'
grep -q "Codex console on http://127.0.0.1:$port/admin/" "$log"

kill -INT -- "-$run_pid"
status=0
wait "$run_pid" || status=$?
run_pid=""
grep -q "Stopped:" "$log" || { cat "$log" >&2; exit 1; }
echo "make run reached the console on Python $version and stopped (status $status)"
