package confirm

// Result codes the model reads (stable: models and tests switch on them).
const (
	CodeConfirmationRequired = "CONFIRMATION_REQUIRED"
	CodeConfirmationInvalid  = "CONFIRMATION_INVALID"
)

// Reason says why evidence was not accepted.
type Reason string

// The reasons of CONFIRMATION_INVALID.
const (
	ReasonDenied        Reason = "denied"
	ReasonCancelled     Reason = "cancelled"
	ReasonExpired       Reason = "expired"
	ReasonInputMismatch Reason = "input_mismatch"
	ReasonReplayed      Reason = "replayed"
	ReasonUnknown       Reason = "unknown"
)

// TypedResult is the tool result the model reads instead of an output:
// {"error": {"code": …, "reason": …, "message": …}}.
type TypedResult struct {
	Error ResultError `json:"error"`
}

// ResultError is the body of a TypedResult.
type ResultError struct {
	// Code is CONFIRMATION_REQUIRED or CONFIRMATION_INVALID.
	Code string `json:"code"`
	// Reason is set for CONFIRMATION_INVALID.
	Reason Reason `json:"reason,omitempty"`
	// Message is one sentence telling the model what to do next.
	Message string `json:"message"`
	// ConfirmationID names the confirmation concerned: the one minted for
	// CONFIRMATION_REQUIRED, the one presented for CONFIRMATION_INVALID.
	ConfirmationID string `json:"confirmation_id,omitempty"`
	// UserReason is the reason the user gave with a denial, if any.
	UserReason string `json:"user_reason,omitempty"`
}

var messages = map[Reason]string{
	ReasonDenied:        "The user declined this call, so it was not done; do not retry it unless the user asks again, and tell them it was not done.",
	ReasonCancelled:     "The user dismissed the question without answering, so this call was not done; do not retry it on your own: ask the user whether they want it, and call the tool again only if they say so.",
	ReasonExpired:       "The user's confirmation expired before it was used, so nothing was done; call the tool again to ask the user to confirm anew.",
	ReasonInputMismatch: "The confirmation was given for a different input than this call, so nothing was done; call the tool again with the input the user should confirm.",
	ReasonReplayed:      "This confirmation was already used once, so nothing was done; call the tool again if the user still wants it done.",
	ReasonUnknown:       "No confirmation matches this call, so nothing was done; call the tool again to ask the user to confirm it.",
}

func invalid(r Reason, ev *Evidence) Outcome {
	res := Invalid(r, ev.ConfirmationID)
	if r == ReasonDenied {
		res.Error.UserReason = truncateReason(ev.Reason)
	}
	return Outcome{Result: res}
}

// Invalid is the CONFIRMATION_INVALID result for confirmationID. Call
// answers it for evidence it consumed or refused; a caller answers it
// itself when no evidence ever came, as when an MCP client's elicitation
// is still unanswered when its confirmation expires.
func Invalid(r Reason, confirmationID string) *TypedResult {
	return &TypedResult{Error: ResultError{Code: CodeConfirmationInvalid, Reason: r, Message: messages[r], ConfirmationID: confirmationID}}
}

func required(id string) *TypedResult {
	return &TypedResult{Error: ResultError{
		Code:           CodeConfirmationRequired,
		Message:        "This call needs the user's confirmation first and was not done; tell the user what it will do and call the tool again with the same input on a later turn, after they have confirmed.",
		ConfirmationID: id,
	}}
}
