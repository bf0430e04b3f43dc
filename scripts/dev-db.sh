#!/usr/bin/env bash
# Creates the database named in DATABASE_URL (a postgres:// URL) when it does
# not exist yet, connecting to the server's `postgres` database to do so.
set -euo pipefail
: "${DATABASE_URL:?DATABASE_URL must be set}"
base=${DATABASE_URL%%\?*}          # strip ?query
query=${DATABASE_URL#"$base"}      # keep ?query (sslmode etc.)
db=${base##*/}
server=${base%/*}
if [ -z "$db" ] || [ "$server" = "$base" ]; then
  echo "dev-db: DATABASE_URL must look like postgres://user@host:port/dbname" >&2
  exit 2
fi
if ! psql "$server/postgres$query" -Atqc "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1; then
  echo "creating database $db"
  psql "$server/postgres$query" -qc "CREATE DATABASE \"$db\""
fi
