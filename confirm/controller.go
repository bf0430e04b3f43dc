package confirm

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"
)

// Defaults for Config.
const (
	// DefaultTTL is how long a confirmation waits for the user's answer:
	// 10 minutes covers reading a dialog and a short interruption, while
	// keeping a forgotten tab's evidence from lingering.
	DefaultTTL = 10 * time.Minute
	// DefaultRetention is how long past expiry a row is kept before the
	// sweep deletes it: 1 hour, so a late answer still reads `expired`
	// (telling the model to ask again) rather than `unknown`.
	DefaultRetention = time.Hour
)

// Config configures a Controller.
type Config struct {
	// Registry stores the confirmations (required).
	Registry Registry
	// Mode answers bound calls without evidence (required; the step loop
	// passes AgentToolset.Confirmations).
	Mode Mode
	// TTL is the lifetime of a minted confirmation; 0 means DefaultTTL.
	TTL time.Duration
	// Retention is how long Sweep keeps rows past expiry; 0 means
	// DefaultRetention.
	Retention time.Duration
	// Now is the clock; nil means time.Now. Tests set it to move past
	// expiry.
	Now func() time.Time
}

// Controller runs bound capability calls through frontend confirmation, in
// either mode. It is safe for concurrent use.
type Controller struct {
	reg       Registry
	mode      Mode
	ttl       time.Duration
	retention time.Duration
	now       func() time.Time
}

// NewController validates cfg and returns a Controller.
func NewController(cfg Config) (*Controller, error) {
	if cfg.Registry == nil {
		return nil, errors.New("confirm: no registry")
	}
	switch cfg.Mode {
	case ModeWait, ModeTwoPhase:
	default:
		return nil, fmt.Errorf("confirm: unknown mode %q (want %q or %q)", cfg.Mode, ModeWait, ModeTwoPhase)
	}
	if cfg.TTL < 0 || cfg.Retention < 0 {
		return nil, errors.New("confirm: negative TTL or retention")
	}
	c := &Controller{reg: cfg.Registry, mode: cfg.Mode, ttl: cfg.TTL, retention: cfg.Retention, now: cfg.Now}
	if c.ttl == 0 {
		c.ttl = DefaultTTL
	}
	if c.retention == 0 {
		c.retention = DefaultRetention
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// Mode returns the controller's mode.
func (c *Controller) Mode() Mode { return c.mode }

// Request is one bound tool call as the controller sees it.
type Request struct {
	// Capability is the capability's (and tool's) name.
	Capability string
	// InputHash is jsondoc.Hash of the effective input, recomputed from
	// the server's stored tool call, never from the client's copy.
	InputHash string
	// ConversationID is the conversation the call belongs to.
	ConversationID string
	// ToolCallID is the model's tool call id.
	ToolCallID string
	// Principal is the user the call acts for.
	Principal uuid.UUID
	// Evidence is the browser's answer to a confirmation, nil when there
	// is none.
	Evidence *Evidence
}

// Evidence is the browser's approval response: the AI SDK's
// approval {id, approved, reason} on the tool part.
type Evidence struct {
	// ConfirmationID is the approvalId the server issued.
	ConfirmationID string
	// Approved is the user's answer.
	Approved bool
	// Reason is the user's optional reason.
	Reason string
	// Cancelled says the user dismissed the question without answering
	// (MCP's elicitation "cancel"): spent as a denial, and answered
	// ReasonCancelled rather than ReasonDenied, since nobody said no.
	Cancelled bool
}

// Outcome is what a Call came to: exactly one of Pause, Result or Ran.
type Outcome struct {
	// Pause is the minted confirmation in wait mode: emit
	// tool-approval-request with approvalId = Pause.ID and end the step.
	Pause *Confirmation
	// Ran says the evidence was consumed and run was called once.
	Ran bool
	// Output and Err are what run returned.
	Output any
	Err    error
	// Result is the typed result for the model when run was not called
	// and there is no pause.
	Result *TypedResult
}

var inputHashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (r Request) validate() error {
	switch {
	case r.Capability == "":
		return errors.New("confirm: request without capability")
	case !inputHashRE.MatchString(r.InputHash):
		return errors.New("confirm: input hash must be the hex SHA-256 from jsondoc.Hash")
	case r.ConversationID == "":
		return errors.New("confirm: request without conversation id")
	case r.Principal == uuid.Nil:
		return errors.New("confirm: request without principal")
	}
	return nil
}

// Call runs one bound tool call. Without evidence it mints a confirmation
// and pauses (wait) or answers CONFIRMATION_REQUIRED (two-phase). With
// evidence it consumes it and either calls run exactly once, with the
// consumed confirmation in ctx (FromContext), or answers
// CONFIRMATION_INVALID with the reason. The error is for infrastructure
// failures and malformed requests only.
func (c *Controller) Call(ctx context.Context, req Request, run func(ctx context.Context) (any, error)) (Outcome, error) {
	if err := req.validate(); err != nil {
		return Outcome{}, err
	}
	if req.Evidence == nil {
		return c.mint(ctx, req)
	}
	now := c.clock()
	d := DecisionDenied
	if req.Evidence.Approved {
		d = DecisionApproved
	}
	key := Key{ID: req.Evidence.ConfirmationID, ConversationID: req.ConversationID, Principal: req.Principal, Capability: req.Capability}
	conf, err := c.reg.Consume(ctx, key, d, req.Evidence.Reason, now)
	switch {
	case errors.Is(err, ErrUnknown):
		return invalid(ReasonUnknown, req.Evidence), nil
	case errors.Is(err, ErrReplayed):
		return invalid(ReasonReplayed, req.Evidence), nil
	case err != nil:
		return Outcome{}, fmt.Errorf("confirm: consume evidence: %w", err)
	}
	// The evidence is spent from here on, whatever the answer: a denial,
	// an expiry or a mismatch is final for this confirmation.
	switch {
	case conf.Decision != DecisionApproved && req.Evidence.Cancelled:
		return invalid(ReasonCancelled, req.Evidence), nil
	case conf.Decision != DecisionApproved:
		return invalid(ReasonDenied, req.Evidence), nil
	case !now.Before(conf.ExpiresAt):
		return invalid(ReasonExpired, req.Evidence), nil
	case conf.InputHash != req.InputHash:
		return invalid(ReasonInputMismatch, req.Evidence), nil
	}
	out, runErr := run(ctx)
	return Outcome{Ran: true, Output: out, Err: runErr}, nil
}

func (c *Controller) mint(ctx context.Context, req Request) (Outcome, error) {
	now := c.clock()
	conf, err := c.reg.Create(ctx, Confirmation{
		ID:             NewID(),
		Capability:     req.Capability,
		InputHash:      req.InputHash,
		ConversationID: req.ConversationID,
		Principal:      req.Principal,
		ToolCallID:     req.ToolCallID,
		CreatedAt:      now,
		ExpiresAt:      now.Add(c.ttl),
	})
	if err != nil {
		return Outcome{}, fmt.Errorf("confirm: mint: %w", err)
	}
	if c.mode == ModeWait {
		return Outcome{Pause: &conf}, nil
	}
	return Outcome{Result: required(conf.ID)}, nil
}

// clock reads Now in UTC at microsecond precision, the precision
// timestamptz stores, so both registries hold the same instants.
func (c *Controller) clock() time.Time { return c.now().UTC().Truncate(time.Microsecond) }

// Sweep deletes confirmations that expired more than Retention ago.
func (c *Controller) Sweep(ctx context.Context) (int64, error) {
	n, err := c.reg.Sweep(ctx, c.clock().Add(-c.retention))
	if err != nil {
		return 0, fmt.Errorf("confirm: %w", err)
	}
	return n, nil
}
