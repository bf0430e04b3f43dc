// Package audit appends to and verifies the hash-chained audit log: every
// approval request, decision and consumption, and every invoice mutation, is
// an event naming its principal and path.
package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/jsondoc"
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

// Hash versions (migration 00013): what a row's hash covers besides the
// previous hash and the event's canonical form.
const (
	// hashEventOnly: nothing else (rows appended before version 2).
	hashEventOnly = 1
	// hashRecordedAt: recorded_at too, as the 8-byte big-endian count of
	// microseconds since 1970, PostgreSQL's precision.
	hashRecordedAt = 2
)

// chainHash is a row's hash: SHA-256 over the previous row's hash, the
// event's canonical form and, from hashRecordedAt on, recorded_at.
func chainHash(version int16, prev, canon []byte, recordedAt time.Time) ([]byte, error) {
	h := sha256.New()
	h.Write(prev)
	h.Write(canon)
	switch version {
	case hashEventOnly:
	case hashRecordedAt:
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(recordedAt.UnixMicro())))
	default:
		return nil, fmt.Errorf("unknown hash version %d", version)
	}
	return h.Sum(nil), nil
}

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
	canon, err := jsondoc.Canonical(raw)
	if err != nil {
		return 0, fmt.Errorf("audit: canonical: %w", err)
	}
	// One round trip: take the lock, then link to the head and insert.
	// The hash is computed here, in SQL, because recorded_at is the
	// database's clock (chainHash is the same formula for Verify).
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_advisory_xact_lock($1)`, lockKey)
	b.Queue(`
		WITH head AS (SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1),
		     link AS (SELECT coalesce((SELECT seq FROM head), 0) + 1 AS seq,
		                     coalesce((SELECT hash FROM head), $2) AS prev_hash,
		                     now() AS recorded_at)
		INSERT INTO audit_events (seq, event, prev_hash, hash, hash_version, recorded_at)
		SELECT seq, $1::jsonb, prev_hash,
		       sha256(prev_hash || $3::bytea || int8send((extract(epoch FROM recorded_at) * 1000000)::bigint)),
		       $4, recorded_at
		  FROM link
		RETURNING seq`, canon, genesis, canon, hashRecordedAt)
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

// Head is a chain's last event: its sequence number and hash. A chain
// cannot show that its newest events were removed; an operator who keeps
// the head somewhere the database cannot reach can (VerifyAnchored).
type Head struct {
	Seq  int64
	Hash []byte
}

// String is the head as `invoiced audit verify --anchor` takes it.
func (h Head) String() string { return fmt.Sprintf("%d:%x", h.Seq, h.Hash) }

// ParseHead reads a head written by Head.String.
func ParseHead(s string) (Head, error) {
	seqS, hashS, ok := strings.Cut(s, ":")
	seq, err := strconv.ParseInt(seqS, 10, 64)
	if !ok || err != nil || seq < 1 {
		return Head{}, fmt.Errorf("an anchor is SEQ:HASH as audit verify prints it, not %q", s)
	}
	hash, err := hex.DecodeString(hashS)
	if err != nil || len(hash) != sha256.Size {
		return Head{}, fmt.Errorf("an anchor's hash is %d hex bytes, not %q", sha256.Size, hashS)
	}
	return Head{Seq: seq, Hash: hash}, nil
}

// Verify walks the whole chain in order and returns how many rows it
// checked, or a *BrokenError for the first bad row.
func Verify(ctx context.Context, db store.Executor) (int64, error) {
	h, err := verify(ctx, db, nil)
	return h.Seq, err
}

// VerifyAnchored verifies the chain as Verify does and returns its head,
// for the operator to keep. Given anchor, a head recorded earlier, it also
// checks that neither it nor an event before it was removed or changed.
func VerifyAnchored(ctx context.Context, db store.Executor, anchor *Head) (Head, error) {
	return verify(ctx, db, anchor)
}

func verify(ctx context.Context, db store.Executor, anchor *Head) (Head, error) {
	rows, err := db.Query(ctx, `SELECT seq, event::text, prev_hash, hash, hash_version, recorded_at FROM audit_events ORDER BY seq`)
	if err != nil {
		return Head{}, store.MapError(err, "audit events")
	}
	defer rows.Close()
	head := Head{Hash: genesis}
	for rows.Next() {
		var (
			seq             int64
			event           string
			prevHash, hashV []byte
			version         int16
			recordedAt      time.Time
		)
		if err := rows.Scan(&seq, &event, &prevHash, &hashV, &version, &recordedAt); err != nil {
			return head, store.MapError(err, "audit event")
		}
		if seq != head.Seq+1 {
			return head, &BrokenError{Seq: seq, Reason: fmt.Sprintf("expected seq %d: a row is missing", head.Seq+1)}
		}
		if !bytes.Equal(prevHash, head.Hash) {
			return head, &BrokenError{Seq: seq, Reason: "prev_hash does not match the previous row"}
		}
		canon, err := jsondoc.Canonical([]byte(event))
		if err != nil {
			return head, &BrokenError{Seq: seq, Reason: "event is not canonicalisable"}
		}
		// The hash covers the canonical form, whose numbers are doubles;
		// a stored number that is not exactly its double (3 edited into
		// 3.00000000000000000001) would hash the same, so it is refused.
		f, _ := jsondoc.Check([]byte(event)) // it parsed as RFC 8785 JSON above
		if path, ok := f.First(jsondoc.Inexact); ok {
			return head, &BrokenError{Seq: seq, Reason: fmt.Sprintf("the number at %s is not what was hashed", path)}
		}
		sum, err := chainHash(version, head.Hash, canon, recordedAt)
		if err != nil {
			return head, &BrokenError{Seq: seq, Reason: err.Error()}
		}
		if !bytes.Equal(sum, hashV) {
			return head, &BrokenError{Seq: seq, Reason: "hash does not match the event or when it was recorded"}
		}
		if anchor != nil && seq == anchor.Seq && !bytes.Equal(hashV, anchor.Hash) {
			return head, &BrokenError{Seq: seq, Reason: "hash differs from the anchor's: the chain up to the anchor was rewritten"}
		}
		head = Head{Seq: seq, Hash: hashV}
	}
	if err := rows.Err(); err != nil {
		return head, store.MapError(err, "audit events")
	}
	if anchor != nil && head.Seq < anchor.Seq {
		return head, &BrokenError{Seq: head.Seq + 1, Reason: fmt.Sprintf("the chain ends at seq %d, before the anchor's %d: events were removed", head.Seq, anchor.Seq)}
	}
	return head, nil
}
