package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/problem"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// result is the tool result of a capability's run: the output as
// structuredContent with its JSON as text, or an error result.
func (s *Service) result(call capability.Call, out any, err error) *gomcp.CallToolResult {
	if err != nil {
		return s.errorResult(err)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return s.errorResult(err)
	}
	return &gomcp.CallToolResult{
		Content:           []gomcp.Content{&gomcp.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
	}
}

// errorBody is the text of an error result, {"error": {...}}, the shape
// the step loop's model reads too. An error result carries no
// structuredContent: clients validate it against the output schema, which
// describes success.
func errorBody(body map[string]any) *gomcp.CallToolResult {
	b, err := json.Marshal(map[string]any{"error": body})
	if err != nil {
		b = []byte(`{"error":{"code":"INTERNAL","message":"The tool failed with an internal error; it has been logged."}}`)
	}
	return &gomcp.CallToolResult{IsError: true, Content: []gomcp.Content{&gomcp.TextContent{Text: string(b)}}}
}

// errorResult turns an error into a result the model can read: a typed
// problem's code, detail, fields and extension members; anything
// internal is logged and reads INTERNAL. Never a protocol error, which a
// client would not show the model.
func (s *Service) errorResult(err error) *gomcp.CallToolResult {
	pe, ok := problem.As(err)
	if !ok || pe.Status >= 500 {
		if !errors.Is(err, context.Canceled) {
			s.cfg.Log.Error("mcp: tool failed", "err", err)
		}
		return errorBody(map[string]any{"code": problem.CodeInternal, "message": "The tool failed with an internal error; it has been logged."})
	}
	if strings.HasPrefix(pe.Code, "APPROVAL_") {
		return approvalResult(pe)
	}
	body := map[string]any{"code": pe.Code, "message": pe.Detail}
	if len(pe.Errors) > 0 {
		body["errors"] = pe.Errors
	}
	for k, v := range pe.Extra {
		if _, taken := body[k]; !taken {
			body[k] = v
		}
	}
	return errorBody(body)
}

// approvalResult answers a consequential call the gate refused: the
// approval's id, status, resource and, while it waits, how many approvals
// it has and needs; never an elicitation, since the user of this client
// must not be the one who approves (ADR-0010).
func approvalResult(pe *problem.Error) *gomcp.CallToolResult {
	msg := capability.ApprovalGuidance(pe.Code, pe.Detail)
	if pe.Code == approvals.CodeApprovalRequired {
		// Over MCP the request is also a resource the client can watch.
		msg += " Subscribe to its resource, or read it again later, to learn the decision."
	}
	body := map[string]any{"code": pe.Code, "message": msg, "approval_id": pe.Extra["approval_id"], "status": pe.Extra["approval_status"]}
	if id, ok := pe.Extra["approval_id"].(string); ok {
		body["resource"] = approvalURI(id)
	}
	if t, ok := pe.Extra["target"]; ok {
		body["target"] = t
	}
	// How far a pending request is, as the REST problem and the step
	// loop's data-approval part say it (a stricter policy may have asked
	// for more since it was raised). They stay in the text with the rest:
	// clients check any structuredContent against the tool's output
	// schema, error or not (the TypeScript SDK does), and an approval
	// answer is not an invoice.
	if n, ok := pe.Extra["required_approvals"]; ok {
		body["approvals"], body["required_approvals"] = pe.Extra["approvals"], n
	}
	return errorBody(body)
}

// typedResult is a confirm.TypedResult ({"error": {...}}) as an error
// result.
func typedResult(v any) *gomcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		return errorBody(map[string]any{"code": problem.CodeInternal, "message": "The tool failed with an internal error; it has been logged."})
	}
	return &gomcp.CallToolResult{IsError: true, Content: []gomcp.Content{&gomcp.TextContent{Text: string(b)}}}
}
