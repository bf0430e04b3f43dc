#!/usr/bin/env bash
# On a database without users, creates the first admin and prints its API
# token once and a one-time link that opens the page to set its password
# (it works once, for 15 minutes). Every run then prints where to sign in.
# Later runs leave users alone.
set -euo pipefail
bin=$1
if [ -n "${INVOICED_PUBLIC_URL:-}" ]; then
  site=${INVOICED_PUBLIC_URL%/}
else
  addr=${INVOICED_ADDR:-:8080}
  case "$addr" in :*|0.0.0.0:*|\[::\]:*) addr="127.0.0.1:${addr##*:}" ;; esac
  site="http://$addr"
fi
n=$(psql "$DATABASE_URL" -Atqc "SELECT count(*) FROM users")
if [ "$n" = "0" ]; then
  "$bin" users create --username admin --role admin --display-name "First admin"
  echo "Keep this token: it is not shown again. Try: curl -H 'Authorization: Bearer <token>' $site/v1/me"
  "$bin" users signin-link admin
  echo "Open that link to choose the admin's password; it signs you in."
fi
echo "The inbox (approvers, admins): $site/inbox"
echo "The chat (clerks, admins):     $site/chat"
echo "A new sign-in link for a user: $bin users signin-link NAME"
