#!/usr/bin/env bash
# Creates a first admin user when the database has no user, and prints its
# API token once. Later runs leave users alone.
set -euo pipefail
bin=$1
n=$(psql "$DATABASE_URL" -Atqc "SELECT count(*) FROM users")
if [ "$n" = "0" ]; then
  "$bin" users create --username admin --role admin --display-name "First admin"
  addr=${INVOICED_ADDR:-:8080}
  case "$addr" in :*) addr="localhost$addr" ;; esac
  echo "Keep this token: it is not shown again. Try: curl -H 'Authorization: Bearer <token>' http://$addr/v1/me"
fi
