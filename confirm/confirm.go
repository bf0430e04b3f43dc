package confirm

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"time"

	"github.com/google/uuid"
)

// Mode is how a bound call without evidence is answered (ADR-0005).
type Mode string

// The confirmation modes.
const (
	// ModeWait pauses the step: the controller mints a confirmation, the
	// step loop emits tool-approval-request and closes the stream, and the
	// next request retries the same tool call with the user's answer. One
	// tool call, one tool result.
	ModeWait Mode = "wait"
	// ModeTwoPhase answers CONFIRMATION_REQUIRED to the model, which retries
	// on a later turn once the user has confirmed.
	ModeTwoPhase Mode = "two-phase"
)

// Topology says where the model runs relative to the tools.
type Topology string

// TopologyRemote: the model runs on the server; browser tools and
// confirmation dialogs run between HTTP requests (ADR-0002).
const TopologyRemote Topology = "remote"

// Toolset is the declaration of how the tools offered to a model run: the
// topology and the confirmation mode.
type Toolset struct {
	Topology      Topology
	Confirmations Mode
}

// AgentToolset is the declaration the step loop builds its toolset with.
//
// ADR-0005 (docs/adr/0005-confirmation-mode.md): topology "remote" with
// confirmations "wait", stated explicitly rather than left to a default.
// Under the step-loop protocol (ADR-0002) a confirmation dialog runs in the
// browser after the step's stream has closed, so wait holds no connection
// across a human decision and none is lost to a dropped one.
var AgentToolset = Toolset{
	Topology:      TopologyRemote,
	Confirmations: ModeWait,
}

// Decision is the user's answer to a confirmation.
type Decision string

// The decisions; an unanswered confirmation has none ("").
const (
	DecisionApproved Decision = "approved"
	DecisionDenied   Decision = "denied"
)

// Confirmation is one pause for the user's answer, bound to one capability,
// one effective input, one conversation and one principal.
type Confirmation struct {
	// ID is the approvalId the browser answers to: 32 random bytes,
	// base64url, so it cannot be guessed.
	ID string `json:"id"`
	// Capability is the capability's name.
	Capability string `json:"capability"`
	// InputHash is the hex SHA-256 of the canonical effective input
	// (jsondoc.Hash).
	InputHash string `json:"input_hash"`
	// ConversationID is the conversation the call belongs to.
	ConversationID string `json:"conversation_id"`
	// Principal is the user the call acts for.
	Principal uuid.UUID `json:"principal"`
	// ToolCallID is the model's tool call that minted it (recorded, not
	// matched: a two-phase retry is a new tool call).
	ToolCallID string `json:"tool_call_id"`
	// CreatedAt is when it was minted.
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt is when evidence for it stops being accepted.
	ExpiresAt time.Time `json:"expires_at"`
	// Decision is the user's answer, set when the evidence was consumed.
	Decision Decision `json:"decision,omitempty"`
	// DecisionReason is the user's optional reason, as the browser sent it.
	DecisionReason string `json:"decision_reason,omitempty"`
	// UsedAt is when the evidence was consumed; nil while unused.
	UsedAt *time.Time `json:"used_at,omitempty"`
}

// idBytes is the entropy of a confirmation id: 256 bits, twice the 128 the
// ADR requires, at a cost of 43 characters.
const idBytes = 32

// NewID returns a fresh, unguessable confirmation id.
func NewID() string {
	var b [idBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// maxReasonLen bounds the stored DecisionReason (bytes): a sentence or two
// from a dialog; longer input is cut, not refused, because refusing would
// lose the decision itself.
const maxReasonLen = 1000

// Registry errors. Registries return them (wrapped or not) from Consume and
// Get; the controller turns them into typed results.
var (
	// ErrUnknown: no confirmation with that id matches the conversation,
	// principal and capability presented.
	ErrUnknown = errors.New("confirm: unknown confirmation")
	// ErrReplayed: the confirmation matches but was already consumed.
	ErrReplayed = errors.New("confirm: confirmation already used")
)
