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
# On a database without a seller, unless INVOICED_SELLER_* will seed it
# when serve starts, a placeholder seller signs the documents until an
# admin sets the real one (docs/documents.md, "Who sells").
if [ -z "${INVOICED_SELLER_NAME:-}${INVOICED_SELLER_ADDRESS:-}${INVOICED_SELLER_TAX_ID:-}" ] &&
  [ "$(psql "$DATABASE_URL" -Atqc "SELECT count(*) FROM seller")" = "0" ]; then
  admin=$(psql "$DATABASE_URL" -Atqc "SELECT username FROM users WHERE role = 'admin' AND NOT disabled ORDER BY created_at LIMIT 1")
  if [ -z "$admin" ]; then
    echo "No seller is set, and no enabled admin to set one: enable an admin, then run $bin seller set --as NAME (see --help)"
  else
    "$bin" seller set --as "$admin" >/dev/null <<'JSON'
{
  "legal_name": "Example Seller",
  "address": {"lines": ["Example Street 1"], "postcode": "10115", "city": "Berlin", "country": "DE"},
  "tax_number": "00/000/00000",
  "payment_terms_days": 14
}
JSON
    echo "The documents name a placeholder seller, Example Seller. Set yours: $bin seller show --json > seller.json, edit it, then $bin seller set --as $admin --file seller.json"
  fi
fi
echo "The inbox (approvers, admins): $site/inbox"
echo "The chat (clerks, admins):     $site/chat"
echo "A new sign-in link for a user: $bin users signin-link NAME"
