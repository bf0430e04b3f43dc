// Package audit appends to and verifies the hash-chained audit log: every
// approval request, decision and consumption, and every invoice mutation, is
// an event naming its principal and path.
package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// Event is one audited fact. Data holds the details (JSON-marshallable,
// integers within ±2^53 as the canonical form requires).
type Event struct {
	Type        string    `json:"type"`
	ActorID     string    `json:"actor_id,omitempty"`
	Actor       string    `json:"actor,omitempty"`
	Via         string    `json:"via"`
	SubjectType string    `json:"subject_type"`
	SubjectID   string    `json:"subject_id"`
	Data        any       `json:"data,omitempty"`
	OccurredAt  time.Time `json:"occurred_at"`
}

// lockKey serialises appends (pg_advisory_xact_lock): without it two
// transactions could read the same head and fork the chain. The lock is
// held until commit, so append as the last write of a transaction.
const lockKey int64 = 0x61756469_74636861 // "auditcha"

var genesis = make([]byte, sha256.Size)

// AppendTx appends ev to the chain in the caller's transaction and returns
// its sequence number. OccurredAt defaults to now.
func AppendTx(ctx context.Context, tx pgx.Tx, ev Event) (int64, error) {
	if ev.OccurredAt.IsZero() {
		ev.OccurredAt = time.Now()
	}
	ev.OccurredAt = ev.OccurredAt.UTC().Truncate(time.Microsecond)
	raw, err := json.Marshal(ev)
	if err != nil {
		return 0, fmt.Errorf("audit: marshal: %w", err)
	}
	canon, err := capability.Canonical(raw)
	if err != nil {
		return 0, fmt.Errorf("audit: canonical: %w", err)
	}
	// One round trip: take the lock, then link to the head and insert.
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_advisory_xact_lock($1)`, lockKey)
	b.Queue(`
		WITH head AS (SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1)
		INSERT INTO audit_events (seq, event, prev_hash, hash)
		SELECT coalesce((SELECT seq FROM head), 0) + 1, $1::jsonb,
		       coalesce((SELECT hash FROM head), $2),
		       sha256(coalesce((SELECT hash FROM head), $2) || $3::bytea)
		RETURNING seq`, canon, genesis, canon)
	br := tx.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return 0, store.MapError(err, "audit lock")
	}
	var seq int64
	if err := br.QueryRow().Scan(&seq); err != nil {
		br.Close()
		return 0, store.MapError(err, "audit event")
	}
	if err := br.Close(); err != nil {
		return 0, store.MapError(err, "audit event")
	}
	return seq, nil
}

// BrokenError names the first row whose hash does not follow from the
// chain; everything from it on is untrusted.
type BrokenError struct {
	Seq    int64
	Reason string
}

// Error says where the chain breaks and why.
func (e *BrokenError) Error() string {
	return fmt.Sprintf("audit chain broken at seq %d: %s", e.Seq, e.Reason)
}

// Verify walks the whole chain in order and returns how many rows it
// checked, or a *BrokenError for the first bad row.
func Verify(ctx context.Context, db store.Executor) (int64, error) {
	rows, err := db.Query(ctx, `SELECT seq, event::text, prev_hash, hash FROM audit_events ORDER BY seq`)
	if err != nil {
		return 0, store.MapError(err, "audit events")
	}
	defer rows.Close()
	prev := genesis
	var n, want int64
	for rows.Next() {
		var (
			seq             int64
			event           string
			prevHash, hashV []byte
		)
		if err := rows.Scan(&seq, &event, &prevHash, &hashV); err != nil {
			return n, store.MapError(err, "audit event")
		}
		want++
		if seq != want {
			return n, &BrokenError{Seq: seq, Reason: fmt.Sprintf("expected seq %d: a row is missing", want)}
		}
		if !bytes.Equal(prevHash, prev) {
			return n, &BrokenError{Seq: seq, Reason: "prev_hash does not match the previous row"}
		}
		canon, err := capability.Canonical([]byte(event))
		if err != nil {
			return n, &BrokenError{Seq: seq, Reason: "event is not canonicalisable"}
		}
		sum := sha256.Sum256(append(append([]byte{}, prev...), canon...))
		if !bytes.Equal(sum[:], hashV) {
			return n, &BrokenError{Seq: seq, Reason: "hash does not match the event"}
		}
		prev = hashV
		n++
	}
	if err := rows.Err(); err != nil {
		return n, store.MapError(err, "audit events")
	}
	return n, nil
}
