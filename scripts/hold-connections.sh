#!/usr/bin/env bash
# Holds N connections to PostgreSQL until it is stopped (Ctrl-C, or kill
# its pid), as other work on a shared server would: to see the tests get
# by on what is left (docs/testing.md). Each connection is a psql waiting
# in pg_sleep, named hold-connections in pg_stat_activity.
#
#   scripts/hold-connections.sh 85 &
#   make test
#   kill %1
set -euo pipefail
n=${1:?usage: hold-connections.sh N [URL] (URL defaults to INVOICED_TEST_DATABASE_URL)}
url=${2:-${INVOICED_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}}
export PGAPPNAME=hold-connections
# A backend in pg_sleep does not notice its psql gone unless it looks.
export PGOPTIONS="${PGOPTIONS:-} -c client_connection_check_interval=1000"

held() { psql "$url" -qAtX -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$PGAPPNAME' AND pid <> pg_backend_pid()"; }

if [ "$(held)" != 0 ]; then
  echo "hold-connections: another hold-connections holds connections already; stop it first" >&2
  exit 1
fi
pids=()
let_go() {
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  psql "$url" -qAtX -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '$PGAPPNAME' AND pid <> pg_backend_pid()" >/dev/null
}
trap let_go EXIT
trap 'exit 0' INT TERM
for _ in $(seq "$n"); do
  psql "$url" -qAtX -v ON_ERROR_STOP=1 -c "SELECT pg_sleep(1e9)" >/dev/null &
  pids+=($!)
done
for _ in $(seq 300); do
  [ "$(held)" -ge "$n" ] && break
  sleep 0.1
done
have=$(held)
if [ "$have" -lt "$n" ]; then
  echo "hold-connections: only $have of $n connected (the server's max_connections is $(psql "$url" -qAtX -c 'SHOW max_connections'))" >&2
  exit 1
fi
echo "hold-connections: holding $n connections to $(psql "$url" -qAtX -c "SELECT coalesce(host(inet_server_addr()) || ':' || inet_server_port(), 'the local socket')") until stopped (pid $$)" >&2
wait
