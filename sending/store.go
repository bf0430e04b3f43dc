package sending

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// invoiceStatusShareTx reads invoice id's status, holding the row against
// changes (a void) until tx ends.
func invoiceStatusShareTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) (invoices.Status, error) {
	var st invoices.Status
	err := tx.QueryRow(ctx, `SELECT status FROM invoices WHERE id = $1 FOR SHARE`, id).Scan(&st)
	return st, store.MapError(err, "invoice")
}

// SendingInsertTx records sn and its documents; false, with nothing
// written, when sn is a reminder of a level its invoice had already (the
// unique index decides, so that racing runs send it once).
func SendingInsertTx(ctx context.Context, tx pgx.Tx, sn *Sending) (bool, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO sendings (id, invoice_id, credit_note_id, recipient, subject, body_text, body_html,
			reply_to, message_id, requested_by, requested_at, reminder_level)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (invoice_id, reminder_level) WHERE reminder_level IS NOT NULL DO NOTHING`,
		sn.ID, sn.InvoiceID, sn.CreditNoteID, sn.To, sn.Subject, sn.text, sn.html, sn.replyTo, sn.MessageID, sn.RequestedBy, sn.RequestedAt, sn.ReminderLevel)
	if err != nil || tag.RowsAffected() == 0 {
		return false, store.MapError(err, "sending")
	}
	var (
		pos                         []int
		formats, names, types, sums []string
		contents                    [][]byte
	)
	for i, d := range sn.Documents {
		pos, formats, names, types = append(pos, i), append(formats, string(d.Format)), append(names, d.Filename), append(types, d.ContentType)
		sums, contents = append(sums, d.SHA256), append(contents, d.content)
	}
	_, err = tx.Exec(ctx, `INSERT INTO sending_documents (sending_id, position, format, filename, content_type, sha256, content)
		SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[])`,
		sn.ID, pos, formats, names, types, sums, contents)
	return err == nil, store.MapError(err, "sending documents")
}

const sendingColumns = `s.id, s.invoice_id, s.credit_note_id, coalesce(i.number, c.number), s.recipient, s.subject, s.body_text, s.body_html,
	s.reply_to, s.message_id, s.requested_by, s.requested_at, s.sent_at, s.failed_at, s.error, s.reminder_level`

const sendingFrom = ` FROM sendings s LEFT JOIN invoices i ON i.id = s.invoice_id LEFT JOIN credit_notes c ON c.id = s.credit_note_id`

func scanSending(row pgx.Row) (*Sending, error) {
	var sn Sending
	if err := row.Scan(&sn.ID, &sn.InvoiceID, &sn.CreditNoteID, &sn.Number, &sn.To, &sn.Subject, &sn.text, &sn.html,
		&sn.replyTo, &sn.MessageID, &sn.RequestedBy, &sn.RequestedAt, &sn.SentAt, &sn.FailedAt, &sn.Error, &sn.ReminderLevel); err != nil {
		return nil, err
	}
	switch {
	case sn.SentAt != nil:
		sn.Status = StatusSent
	case sn.FailedAt != nil:
		sn.Status = StatusFailed
	default:
		sn.Status = StatusQueued
	}
	return &sn, nil
}

// documentsLoad fills the sendings' documents, with their bytes when
// content is true.
func documentsLoad(ctx context.Context, db store.Executor, sns []*Sending, content bool) error {
	if len(sns) == 0 {
		return nil
	}
	byID := make(map[uuid.UUID]*Sending, len(sns))
	ids := make([]uuid.UUID, len(sns))
	for i, sn := range sns {
		byID[sn.ID], ids[i] = sn, sn.ID
		sn.Documents = []Document{}
	}
	col := `NULL::bytea`
	if content {
		col = `content`
	}
	rows, err := db.Query(ctx, `SELECT sending_id, format, filename, content_type, octet_length(content), sha256, `+col+`
		FROM sending_documents WHERE sending_id = ANY($1) ORDER BY sending_id, position`, ids)
	if err != nil {
		return store.MapError(err, "sending documents")
	}
	var (
		id uuid.UUID
		d  Document
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &d.Format, &d.Filename, &d.ContentType, &d.Size, &d.SHA256, &d.content}, func() error {
		byID[id].Documents = append(byID[id].Documents, d)
		return nil
	})
	return store.MapError(err, "sending documents")
}

// SendingGetByID reads sending id with its documents' bytes.
func SendingGetByID(ctx context.Context, db store.Executor, id uuid.UUID) (*Sending, error) {
	sn, err := scanSending(db.QueryRow(ctx, `SELECT `+sendingColumns+sendingFrom+` WHERE s.id = $1`, id))
	if err != nil {
		return nil, store.MapError(err, "sending")
	}
	return sn, documentsLoad(ctx, db, []*Sending{sn}, true)
}

// SendingList returns up to p.Limit sendings of the invoice or credit
// note id (column names which) after p.After, oldest first, with their
// documents' digests.
func SendingList(ctx context.Context, db store.Executor, column string, id uuid.UUID, p page.Request) ([]*Sending, error) {
	q := `SELECT ` + sendingColumns + sendingFrom + ` WHERE s.` + column + ` = $1`
	args := []any{id}
	if p.After != nil {
		q += ` AND (s.requested_at, s.id) > ($2, $3)`
		args = append(args, p.After.CreatedAt, p.After.ID)
	}
	q += fmt.Sprintf(` ORDER BY s.requested_at, s.id LIMIT %d`, p.Limit)
	var out []*Sending
	err := store.ReadSnapshot(ctx, db, func(db store.Executor) error {
		rows, err := db.Query(ctx, q, args...)
		if err != nil {
			return store.MapError(err, "sendings")
		}
		if out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Sending, error) { return scanSending(r) }); err != nil {
			return store.MapError(err, "sendings")
		}
		return documentsLoad(ctx, db, out, false)
	})
	return out, err
}

// SendingMarkSentTx records that the SMTP server accepted sending id at
// at; false when its outcome was already recorded.
func SendingMarkSentTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, at time.Time) (bool, error) {
	tag, err := tx.Exec(ctx, `UPDATE sendings SET sent_at = $2 WHERE id = $1 AND sent_at IS NULL AND failed_at IS NULL`, id, at)
	return tag.RowsAffected() == 1, store.MapError(err, "sending")
}

// SendingMarkFailed records that sending id's retries gave up at at, and why.
func SendingMarkFailed(ctx context.Context, db store.Executor, id uuid.UUID, at time.Time, reason string) error {
	_, err := db.Exec(ctx, `UPDATE sendings SET failed_at = $2, error = $3 WHERE id = $1 AND sent_at IS NULL AND failed_at IS NULL`, id, at, reason)
	return store.MapError(err, "sending")
}

// documentExists is nil when the invoice or credit note id (column
// names which) exists, else its 404.
func documentExists(ctx context.Context, db store.Executor, column string, id uuid.UUID) error {
	table, what := "invoices", "invoice"
	if column == "credit_note_id" {
		table, what = "credit_notes", "credit note"
	}
	return store.MapError(db.QueryRow(ctx, `SELECT 1 FROM `+table+` WHERE id = $1`, id).Scan(new(int)), what)
}

func auditTx(ctx context.Context, tx pgx.Tx, by Actor, typ, subjectType, id string, data any) error {
	ev := audit.Event{Type: typ, Actor: by.Username, Via: string(by.Via), SubjectType: subjectType, SubjectID: id, Data: data}
	if by.UserID != nil {
		ev.ActorID = by.UserID.String()
	}
	_, err := audit.AppendTx(ctx, tx, ev)
	return err
}
