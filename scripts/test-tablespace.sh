#!/usr/bin/env bash
# Gives the local PostgreSQL a tablespace in memory (/dev/shm) for test
# databases and prints its name. Cloning a database creates ~400 files, and
# on this project's machines each file operation on disk costs ~100 µs, so
# a clone takes 200–400 ms on disk and ~30 ms in memory. Only databases
# that the tests create live there; nothing else changes. After a reboot
# the directory is gone: the tablespace and the test databases in it are
# dropped and made anew.
set -euo pipefail
url=${1:?usage: test-tablespace.sh ADMIN_URL}
name=invoiced_test_mem
dir=/dev/shm/invoiced-pg-tests

psql() { command psql "$url" -qAtX -v ON_ERROR_STOP=1 "$@"; }

if [ "$(psql -c "SELECT count(*) FROM pg_tablespace WHERE spcname = '$name'")" = 1 ]; then
  if ls -d "$dir"/PG_* >/dev/null 2>&1; then
    echo "$name"
    exit 0
  fi
  # The memory is gone (a reboot): drop what pointed into it.
  for db in $(psql -c "SELECT datname FROM pg_database d JOIN pg_tablespace t ON t.oid = d.dattablespace WHERE t.spcname = '$name'"); do
    psql -c "ALTER DATABASE \"$db\" WITH IS_TEMPLATE false" >/dev/null 2>&1 || true
    psql -c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null 2>&1 || true
  done
  psql -c "DROP TABLESPACE $name" >&2
fi
mkdir -p "$dir"
owner=$(psql -c "SELECT setting FROM pg_settings WHERE name = 'data_directory'" | xargs stat -c %U)
chown "$owner" "$dir"
chmod 700 "$dir"
psql -c "CREATE TABLESPACE $name LOCATION '$dir'" >&2
echo "$name"
