package capability

import (
	"context"
	"encoding/json"

	"github.com/invoiced/invoiced/identity"
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
	// Description is written for a model: what it does, when to use it,
	// what it returns.
	Description string `json:"description"`
	// InputSchema is a JSON Schema (draft 2020-12) object.
	InputSchema json.RawMessage `json:"input_schema"`
	Risk        Risk            `json:"risk"`
}

// Path says how a call arrived (DESIGN.md §2); it is recorded on approval
// requests and audit events as requested_via.
type Path string

// The paths. An agent path is "agent:<conversation id>"; see AgentPath.
const (
	PathREST    Path = "rest"
	PathBinding Path = "binding"
)

// AgentPath is the path of a model's tool call in a conversation.
func AgentPath(conversationID string) Path { return Path("agent:" + conversationID) }

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
	// IfMatch is the version the caller expects the target to have (from
	// an If-Match header), 0 when none was given.
	IfMatch int64
}

// Handler runs a capability. It returns the output (marshalled as JSON) or a
// typed *problem.Error.
type Handler func(ctx context.Context, call Call) (any, error)

// Capability is a descriptor plus its one handler.
type Capability struct {
	Descriptor
	Handler Handler
}
