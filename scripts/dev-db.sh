#!/usr/bin/env bash
# Creates the database named in DATABASE_URL when it does not exist yet.
set -euo pipefail
: "${DATABASE_URL:?DATABASE_URL must be set}"
db=$(python3 -c 'import sys,urllib.parse as u; print(u.urlparse(sys.argv[1]).path.lstrip("/"))' "$DATABASE_URL" 2>/dev/null || true)
if [ -z "$db" ]; then
  db=$(sed -E 's#^[a-z]+://[^/]*/([^?]*).*#\1#' <<<"$DATABASE_URL")
fi
admin=${DATABASE_URL%%/"$db"*}/postgres
if ! psql "$admin" -Atqc "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1; then
  echo "creating database $db"
  psql "$admin" -qc "CREATE DATABASE \"$db\""
fi
