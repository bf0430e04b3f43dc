package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// auditLockKey is audit's advisory lock key ("auditcha").
const auditLockKey int64 = 0x61756469_74636861

// rawScript is the issue transaction as SQL, statement for statement what
// the service sends (invoice lock and lines, customer and seller for
// issue readiness, the requester's row locked to check their live
// authority, the approval policy's rules, the gate's lookup of the
// approval and its decisions, consume, the effect the windows count and
// notify, two audit appends, the
// numbered update, and the
// invoice.issued event's fan-out: the delivery to the subscribed endpoint
// (the bench subscribes exactly one: \gset takes one row) and River's
// JobInsertFastMany of its job, with one row, on a queue
// nothing works; River's occasional insert notification, at most one per
// 100 ms, is left out), with the audit events and the delivery's body
// built in SQL. Pipelines mirror the statements pgx sends as one batch
// (consume + effect + notify; each audit lock + insert). The work item lookup
// before BEGIN stands in for the HTTP request naming the invoice. The
// Idempotency-Key's lookup and its record in the transaction (ADR-0020),
// which ours sends with each issue (-keys), are not in it: like the HTTP
// layer, they are what the service adds to the same effect.
const rawScript = `\set i :i + 1
\set k :client_id * :per + :i
SELECT invoice_id AS inv, approval_id AS appr, input_hash AS ih, customer_id AS cust, requester AS clerk FROM bench_queue WHERE k = :k \gset
BEGIN;
SELECT id, number, status, customer_id, currency, due_date, memo, subtotal, tax_total, total, amount_paid, amount_credited, issued_at, voided_at, paid_at, version, created_at, updated_at, bill_to, seller, tax_rounding, supply_date, period_start, period_end, payment_terms_days, purchase_order, buyer_reference FROM invoices WHERE id = :inv FOR UPDATE;
SELECT invoice_id, description, quantity_e4, unit, unit_amount, vat_category, tax_rate_bps, exemption_reason, exemption_code, amount, tax_amount FROM invoice_lines WHERE invoice_id = ANY(ARRAY[:inv::uuid]) ORDER BY invoice_id, position;
SELECT id, name, email, currency, address, vat_id, tax_number, buyer_reference, language, payment_terms_days, einvoice_format, peppol_id, version, created_at, updated_at, (SELECT jsonb_build_object('legal_name', legal_name, 'trading_name', trading_name, 'address', address, 'vat_id', vat_id, 'tax_number', tax_number, 'registration', registration, 'contact', contact, 'bank_accounts', bank_accounts, 'payment_terms_days', payment_terms_days) FROM seller) FROM customers WHERE id = :cust;
SELECT u.id, u.username, u.display_name, u.role, u.disabled, u.email, u.version, u.created_at, u.updated_at FROM users u WHERE u.id = :clerk FOR SHARE;
SELECT v.version, r.id, r.capability, coalesce(r.currency, '*'), r.min_amount, r.min_amount_major, r.approvers, r.window_days, r.scope, r.from_version, r.to_version FROM (SELECT max(version) AS version FROM approval_policy_versions) v LEFT JOIN approval_policy_rules r ON r.to_version IS NULL AND r.capability = 'issue-invoice' AND (r.currency = 'EUR' OR r.currency IS NULL);
SELECT r.id, r.capability, r.status, r.input, r.input_hash, r.target_type, r.target_id, r.target_version, r.amount, r.currency, r.snapshot, r.requested_by, u.username, r.requested_via, r.reason, r.required_approvals, r.created_at, r.updated_at, r.expires_at, r.decided_at, r.consumed_at, r.consumed_by, r.expiry_reported_at IS NOT NULL, r.version, r.policy_version, r.policy_rule_id, r.policy_required, r.required_raised_version, r.policy_window FROM approval_requests r JOIN users u ON u.id = r.requested_by WHERE r.capability = 'issue-invoice' AND r.target_type = 'invoice' AND r.target_id = :inv AND r.input_hash = :ih ORDER BY r.created_at DESC, r.id DESC LIMIT 1 FOR UPDATE OF r;
SELECT d.request_id, d.approver_id, u.username, d.decision, d.reason, d.decided_at, d.voided_at, d.void_reason, u.role, u.disabled FROM approval_decisions d JOIN users u ON u.id = d.approver_id WHERE d.request_id = ANY(ARRAY[:appr::uuid]) ORDER BY d.decided_at, d.id;
\startpipeline
UPDATE approval_requests SET status = 'consumed', consumed_at = now(), consumed_by = gen_random_uuid(), updated_at = now(), version = version + 1 WHERE id = :appr AND status = 'approved';
INSERT INTO policy_effects (id, capability, requester, customer_id, amount, currency, at, target_type, target_id, approval_id) VALUES (gen_random_uuid(), 'issue-invoice', :clerk, :cust, 12000, 'EUR', now(), 'invoice', :inv, :appr);
SELECT pg_notify('invoiced_approvals', '{"id":"' || :appr::text || '","status":"consumed","version":3}');
\endpipeline
\startpipeline
SELECT pg_advisory_xact_lock(AUDITKEY);
WITH ev AS (SELECT '{"actor":"bench-clerk","data":{"invocation_id":"' || gen_random_uuid() || '"},"occurred_at":"' || (to_json(now() AT TIME ZONE 'UTC') #>> '{}') || 'Z' || '","subject_id":"' || :appr::text || '","subject_type":"approval","type":"approval.consumed","via":"rest"}' AS t),
     head AS (SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1)
INSERT INTO audit_events (seq, event, prev_hash, hash, hash_version, recorded_at)
SELECT coalesce((SELECT seq FROM head), 0) + 1, ev.t::jsonb, coalesce((SELECT hash FROM head), decode(repeat('00', 32), 'hex')),
       sha256(coalesce((SELECT hash FROM head), decode(repeat('00', 32), 'hex')) || convert_to(ev.t, 'UTF8') || int8send((extract(epoch FROM now()) * 1000000)::bigint)), 2, now() FROM ev RETURNING seq;
\endpipeline
\startpipeline
SELECT pg_advisory_xact_lock(AUDITKEY);
WITH ev AS (SELECT '{"actor":"bench-clerk","data":{"approval_id":"' || :appr::text || '"},"occurred_at":"' || (to_json(now() AT TIME ZONE 'UTC') #>> '{}') || 'Z' || '","subject_id":"' || :inv::text || '","subject_type":"invoice","type":"invoice.issued","via":"rest"}' AS t),
     head AS (SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1)
INSERT INTO audit_events (seq, event, prev_hash, hash, hash_version, recorded_at)
SELECT coalesce((SELECT seq FROM head), 0) + 1, ev.t::jsonb, coalesce((SELECT hash FROM head), decode(repeat('00', 32), 'hex')),
       sha256(coalesce((SELECT hash FROM head), decode(repeat('00', 32), 'hex')) || convert_to(ev.t, 'UTF8') || int8send((extract(epoch FROM now()) * 1000000)::bigint)), 2, now() FROM ev RETURNING seq;
\endpipeline
WITH seq AS (INSERT INTO invoice_number_series AS s (prefix, year, last_seq) VALUES ('INV', extract(year FROM now())::int, 1) ON CONFLICT (prefix, year) DO UPDATE SET last_seq = s.last_seq + 1 RETURNING last_seq)
UPDATE invoices SET status = 'issued', number = 'INV-' || extract(year FROM now())::int || '-' || lpad(seq.last_seq::text, greatest(6, length(seq.last_seq::text)), '0'), issued_at = now(), version = invoices.version + 1, updated_at = now(),
  bill_to = jsonb_build_object('name', c.name, 'email', c.email, 'address', c.address, 'vat_id', c.vat_id, 'tax_number', c.tax_number, 'language', c.language, 'einvoice_format', c.einvoice_format, 'peppol_id', c.peppol_id),
  seller = (SELECT jsonb_build_object('legal_name', legal_name, 'trading_name', trading_name, 'address', address, 'vat_id', vat_id, 'tax_number', tax_number, 'registration', registration, 'contact', contact, 'bank_accounts', bank_accounts, 'payment_terms_days', payment_terms_days) FROM seller),
  payment_terms_days = CASE WHEN invoices.due_date IS NULL THEN coalesce(invoices.payment_terms_days, c.payment_terms_days, (SELECT payment_terms_days FROM seller)) ELSE invoices.payment_terms_days END,
  due_date = coalesce(invoices.due_date, current_date + coalesce(invoices.payment_terms_days, c.payment_terms_days, (SELECT payment_terms_days FROM seller)))
FROM seq, customers c WHERE invoices.id = :inv AND invoices.status = 'draft' AND c.id = invoices.customer_id
RETURNING invoices.id, invoices.number, invoices.status, invoices.customer_id, invoices.currency, invoices.due_date, invoices.memo, invoices.subtotal, invoices.tax_total, invoices.total, invoices.amount_paid, invoices.amount_credited, invoices.issued_at, invoices.voided_at, invoices.paid_at, invoices.version, invoices.created_at, invoices.updated_at, invoices.bill_to, invoices.seller, invoices.tax_rounding, invoices.supply_date, invoices.period_start, invoices.period_end, invoices.payment_terms_days, invoices.purchase_order, invoices.buyer_reference;
INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, payload, created_at, updated_at)
SELECT gen_random_uuid(), e.id, ev.id, 'invoice.issued', jsonb_build_object('id', ev.id, 'type', 'invoice.issued', 'version', 1, 'created_at', now(), 'data', (SELECT to_jsonb(i) FROM invoices i WHERE i.id = :inv))::text, now(), now() FROM webhook_endpoints e, (SELECT gen_random_uuid() AS id) ev WHERE e.enabled AND 'invoice.issued' = ANY(e.events)
ON CONFLICT (endpoint_id, event_id) DO NOTHING RETURNING id AS did \gset
WITH raw_job_data AS (SELECT unnest(ARRAY[0]::bigint[]) AS id,
    unnest(ARRAY[jsonb_build_object('delivery_id', :did::uuid)]) AS args,
    unnest(ARRAY[now()]::timestamptz[]) AS created_at, unnest(ARRAY['webhook.deliver']::text[]) AS kind, unnest(ARRAY[1000]::smallint[]) AS max_attempts,
    unnest(ARRAY['{}']::jsonb[]) AS metadata, unnest(ARRAY[1]::smallint[]) AS priority, unnest(ARRAY['bench_raw']::text[]) AS queue,
    unnest(ARRAY[now()]::timestamptz[]) AS scheduled_at, unnest(ARRAY['available']::text[]) AS state, unnest(ARRAY['']::text[]) AS tags,
    unnest(ARRAY[NULL]::bytea[]) AS unique_key, unnest(ARRAY[0]::integer[]) AS unique_states)
INSERT INTO river_job(id, args, created_at, kind, max_attempts, metadata, priority, queue, scheduled_at, state, tags, unique_key, unique_states)
SELECT coalesce(nullif(id, 0), nextval('river_job_id_seq'::regclass)), args, coalesce(nullif(created_at, '0001-01-01 00:00:00 +0000'), now()), kind, max_attempts,
    coalesce(metadata, '{}'::jsonb), priority, queue, coalesce(nullif(scheduled_at, '0001-01-01 00:00:00 +0000'), now()), state::river_job_state,
    string_to_array(tags, ',')::varchar(255)[], nullif(unique_key, '')::bytea, nullif(unique_states::integer, 0)::bit(8)
FROM raw_job_data
ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND unique_states IS NOT NULL AND river_job_state_in_bitmask(unique_states, state) DO UPDATE SET kind = river_job.kind
RETURNING river_job.id, river_job.args, river_job.attempt, river_job.attempted_at, river_job.attempted_by, river_job.created_at, river_job.errors, river_job.finalized_at, river_job.kind, river_job.max_attempts, river_job.metadata, river_job.priority, river_job.queue, river_job.state, river_job.scheduled_at, river_job.tags, river_job.unique_key, river_job.unique_states, (xmax != 0) AS unique_skipped_as_duplicate;
END;
`

var tpsRE = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// raw runs the same issue transaction as a pgbench script over n fresh
// approved drafts with c clients and returns issues per second.
func (b *bench) raw(ctx context.Context, c, n int) (float64, error) {
	items, err := b.prepare(ctx, n)
	if err != nil {
		return 0, err
	}
	if err := b.drain(ctx); err != nil {
		return 0, err
	}
	if _, err := b.pool.Exec(ctx, `DELETE FROM river_job WHERE queue = 'bench_raw'; DROP TABLE IF EXISTS bench_queue; CREATE TABLE bench_queue (k int PRIMARY KEY, invoice_id uuid, approval_id uuid, input_hash text, customer_id uuid, requester uuid)`); err != nil {
		return 0, err
	}
	per := n / c
	rows := make([][]any, 0, n)
	for i, it := range items {
		// Client j runs i = 1..per, so its items are k = j*per+1 … j*per+per.
		rows = append(rows, []any{i + 1, it.invoice, it.approval, it.inputHash, b.customer.ID, b.clerk.UserID})
	}
	if _, err := b.pool.CopyFrom(ctx, pgx.Identifier{"bench_queue"}, []string{"k", "invoice_id", "approval_id", "input_hash", "customer_id", "requester"}, pgx.CopyFromRows(rows)); err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp("", "bench-issue")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "issue.sql")
	if err := os.WriteFile(script, []byte(strings.ReplaceAll(rawScript, "AUDITKEY", strconv.FormatInt(auditLockKey, 10))), 0o600); err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, b.o.pgbench, "-n", "-r", "-M", "prepared", "-f", script,
		"-c", strconv.Itoa(c), "-j", strconv.Itoa(min(c, 2)), "-t", strconv.Itoa(per),
		"-D", "i=0", "-D", "per="+strconv.Itoa(per), b.url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pgbench: %w\n%s", err, out)
	}
	if b.o.verbose {
		fmt.Printf("%s\n", out)
	}
	m := tpsRE.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("pgbench output without tps:\n%s", out)
	}
	var issued int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM invoices i JOIN bench_queue q ON q.invoice_id = i.id WHERE i.status = 'issued'`).Scan(&issued); err != nil {
		return 0, err
	}
	if issued != n {
		return 0, errors.New("pgbench did not issue every draft: " + strconv.Itoa(issued) + " of " + strconv.Itoa(n) + "\n" + string(out))
	}
	return strconv.ParseFloat(string(m[1]), 64)
}
