#!/bin/sh
set -eu
BIN="$(ls -d /usr/lib/postgresql/*/bin | tail -1)"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  printf '%s\n' "$POSTGRES_PASSWORD" > /tmp/pwfile
  "$BIN/initdb" -D "$PGDATA" -U "$POSTGRES_USER" --pwfile=/tmp/pwfile \
    --auth-local=trust --auth-host=scram-sha-256
  rm /tmp/pwfile
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  "$BIN/pg_ctl" -D "$PGDATA" -o "-c listen_addresses=''" -w start
  "$BIN/createdb" -U "$POSTGRES_USER" "$POSTGRES_DB" || true
  "$BIN/pg_ctl" -D "$PGDATA" -m fast -w stop
fi
exec "$BIN/postgres" -D "$PGDATA" -c listen_addresses='*' \
  -c unix_socket_directories=/tmp
