// Package capability holds what approvals, confirm and steploop share about a
// capability: its descriptor, its risk class, the registry every path runs
// it through, and the effective-input hash that approvals and
// confirmations bind to. Serving it over HTTP is caphttp's job.
package capability

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/jackc/pgx/v5"
)

// Risk is a capability's risk class (DESIGN.md §2).
type Risk string

// The risk classes.
const (
	// RiskRead runs without a pause.
	RiskRead Risk = "read"
	// RiskBound may ask for a frontend confirmation in the step loop
	// (ADR-0005); other paths run it directly.
	RiskBound Risk = "bound"
	// RiskConsequential needs a durable approval on every path (ADR-0010).
	RiskConsequential Risk = "consequential"
)

// Descriptor is what clients and models see of a capability.
type Descriptor struct {
	// Name is kebab-case and doubles as the model's tool name.
	Name string `json:"name"`
	// Title is the name a person reads (an MCP client's tool list).
	Title string `json:"title"`
	// Description is written for a model: what it does, when to use it,
	// what it returns.
	Description string `json:"description"`
	// InputSchema is a JSON Schema (draft 2020-12) object.
	InputSchema json.RawMessage `json:"input_schema"`
	// OutputSchema is a JSON Schema object describing a successful
	// output, for capabilities whose output has a stable shape; nil when
	// none is promised. MCP clients validate results against it.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Risk         Risk            `json:"risk"`
	// Governed says that a bound capability's handler passes every call
	// through the Gate with the amount it moves, so approval rules may
	// name it and, at or above a tier, it answers APPROVAL_REQUIRED like
	// a consequential one (ADR-0022 §1). Consequential capabilities are
	// governed whatever it says.
	Governed bool `json:"-"`
	// Idempotent says that calling the capability again with the same
	// input has no further effect (a repeat is refused or finds nothing
	// to do); MCP's idempotentHint.
	Idempotent bool `json:"idempotent"`
	// Additive says that the capability only adds a record (a customer,
	// a draft, a payment) and overwrites or removes nothing: MCP's
	// destructiveHint false. A read is neither.
	Additive bool `json:"additive"`
	// OpenWorld says that its effect reaches outside the service (a mail
	// to a customer): MCP's openWorldHint.
	OpenWorld bool `json:"open_world"`
}

// Call is one invocation of a capability after validation.
type Call struct {
	// Name is the capability's name.
	Name string
	// Principal is the user the call acts for.
	Principal identity.Principal
	// Via is the path the call arrived by.
	Via Path
	// Input is the effective input: validated, defaults applied, and in
	// canonical (RFC 8785) form.
	Input json.RawMessage
	// InputHash is the hex SHA-256 of Input; approvals and confirmations
	// bind to it.
	InputHash string
	// IfMatch is the caller's If-Match precondition on the target's
	// version; the zero value is none.
	IfMatch etag.IfMatch
}

// IsGoverned reports whether approval rules govern calls of d.
func (d Descriptor) IsGoverned() bool { return d.Risk == RiskConsequential || d.Governed }

// Versioned is an output that carries an optimistic-concurrency version;
// the HTTP layer sends it as the ETag (etag.FromVersion).
type Versioned interface {
	ResourceVersion() int64
}

// Handler runs a capability. It returns the output (marshalled as JSON) or a
// typed *problem.Error.
type Handler func(ctx context.Context, call Call) (any, error)

// Capability is a descriptor plus its one handler.
type Capability struct {
	Descriptor
	Handler Handler
}

// Target is the row a consequential capability acts on, as the gate needs
// it: locked by the caller, with the version the approval binds to, the
// amount the quorum policy reads, and the snapshot the approver decides on.
type Target struct {
	// Type names the kind of row ("invoice").
	Type string
	// ID is the row's id.
	ID string
	// Version is the row's optimistic-concurrency version.
	Version int64
	// Amount is the total in minor units of Currency (quorum policy).
	Amount int64
	// Currency is the ISO 4217 code of Amount.
	Currency string
	// CustomerID is the customer the effect concerns (uuid.Nil: none),
	// the scope of the policy's customer windows (ADR-0022 §3) and of
	// standing allowances (§8).
	CustomerID uuid.UUID
	// Snapshot is the JSON the approver sees: for an invoice, the invoice
	// with its lines, totals and customer.
	Snapshot json.RawMessage
}

// Grant is the proof that the gate consumed an approval in the caller's
// transaction.
type Grant struct {
	// ApprovalID is the consumed approval request.
	ApprovalID string
	// InvocationID identifies the consuming invocation in the audit chain.
	InvocationID string
	// Allowance is the standing allowance the call drew instead of an
	// approval (ApprovalID is then empty); nil otherwise.
	Allowance *AllowanceDraw
}

// AllowanceDraw is one call's draw on a standing allowance, as its result
// reports it: which allowance, and what is left of it after this call.
type AllowanceDraw struct {
	ID             uuid.UUID `json:"id"`
	RemainingTotal int64     `json:"remaining_total"`
	RemainingCount int       `json:"remaining_count"`
	Currency       string    `json:"currency"`
	// Note says it in a sentence: "issued under allowance A, X left".
	Note string `json:"note"`
}

// Gate authorizes consequential effects (ADR-0010). AuthorizeTx runs inside
// the caller's transaction after the caller has locked the target row
// (SELECT … FOR UPDATE) and its state checks passed. On success an approval
// matching the capability, effective-input hash, target id and version was
// consumed by this transaction: the caller applies the effect and commits.
// Otherwise it returns a typed problem (APPROVAL_REQUIRED, APPROVAL_DENIED,
// APPROVAL_EXPIRED, APPROVAL_STALE); refusals that recorded something (a new
// pending request, a superseded one) are wrapped with store.CommitAnd so
// store.WithTx commits them before returning the refusal.
type Gate interface {
	AuthorizeTx(ctx context.Context, tx pgx.Tx, call Call, target Target) (Grant, error)
}
