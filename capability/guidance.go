package capability

// approvalGuidance is what a model is told to do with each answer of the
// approval gate (the codes of package approvals, which imports this one).
var approvalGuidance = map[string]string{
	"APPROVAL_REQUIRED": "This needs an approver's decision in the back office and was not done yet. Tell the user it is waiting for approval; once it is approved, call the tool again with the same input.",
	"APPROVAL_DENIED":   "An approver denied this, so it was not done. Tell the user; do not retry unless they ask for a changed request.",
	"APPROVAL_EXPIRED":  "The approval expired before it was used, so nothing was done. Calling the tool again with the same input requests a new approval.",
	"APPROVAL_STALE":    "The target changed after approval was requested, so nothing was done. Calling the tool again requests approval of the current version.",
}

// ApprovalGuidance is the message a model reads for a consequential
// call's approval answer, the same on every agent path (the step loop,
// MCP); detail, the problem's own sentence, for a code without guidance.
func ApprovalGuidance(code, detail string) string {
	if msg, ok := approvalGuidance[code]; ok {
		return msg
	}
	return detail
}
