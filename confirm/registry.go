package confirm

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Registry stores confirmations. NewPostgres is the one serve uses (any
// replica verifies, single use holds across replicas); NewMemory serves unit
// tests. Both pass the same contract suite. Times are arguments, taken from
// the controller's clock, so expiry is testable against either.
type Registry interface {
	// Create stores a new, unanswered confirmation and returns it as stored.
	Create(ctx context.Context, c Confirmation) (Confirmation, error)
	// Consume atomically marks the confirmation used at now with decision
	// d and returns it as consumed. It matches id, conversation, principal
	// and capability; a match that was already used is ErrReplayed,
	// no match ErrUnknown, and neither changes anything. Expiry and the
	// input hash are the caller's to judge on the returned row.
	Consume(ctx context.Context, k Key, d Decision, reason string, now time.Time) (Confirmation, error)
	// Get returns a confirmation by id, or ErrUnknown.
	Get(ctx context.Context, id string) (Confirmation, error)
	// Sweep deletes confirmations that expired before before and returns
	// how many it deleted.
	Sweep(ctx context.Context, before time.Time) (int64, error)
}

// Key names a confirmation as evidence must: the id plus the binding that
// must match for the evidence to count at all.
type Key struct {
	ID             string
	ConversationID string
	Principal      uuid.UUID
	Capability     string
}

func (k Key) matches(c Confirmation) bool {
	return c.ID == k.ID && c.ConversationID == k.ConversationID && c.Principal == k.Principal && c.Capability == k.Capability
}

func truncateReason(s string) string {
	// The reason is the user's free text: PostgreSQL text holds neither
	// U+0000 nor invalid UTF-8, and both registries store the same.
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if len(s) <= maxReasonLen {
		return s
	}
	// Cut on a rune boundary so the stored text stays valid UTF-8.
	cut := maxReasonLen
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}
