package steploop

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/confirm"
)

// Tools is what the loop knows of the capabilities it offers the model:
// their descriptors, and the one Prepare/Invoke path every caller uses.
// *capability.Registry satisfies it; steploop never imports a domain
// package (DESIGN.md §4).
type Tools interface {
	Descriptors() []capability.Descriptor
	Prepare(name string, raw json.RawMessage) (capability.Call, error)
	Invoke(ctx context.Context, call capability.Call) (any, error)
}

// Confirmer is the confirm controller (ADR-0005) as the loop calls it for
// every model tool call of a bound capability. *confirm.Controller
// satisfies it.
type Confirmer interface {
	Call(ctx context.Context, req confirm.Request, run func(ctx context.Context) (any, error)) (confirm.Outcome, error)
}

// FrontendTool is a tool the browser executes between requests (ADR-0002):
// the loop emits its call, ends the request, and accepts the browser's
// output on the next one.
type FrontendTool struct {
	Name        string
	Description string
	InputSchema json.RawMessage
}

// ShowInvoice is the frontend tool that asks the UI to open an invoice.
var ShowInvoice = FrontendTool{
	Name: "show-invoice",
	Description: "Open an invoice in the user's screen so they can see it. Runs in the browser; " +
		"returns {\"shown\": true} once the invoice is on screen.",
	InputSchema: json.RawMessage(`{
		"type": "object",
		"properties": {"invoice_id": {"type": "string", "format": "uuid", "description": "The invoice to show."}},
		"required": ["invoice_id"],
		"additionalProperties": false
	}`),
}

// errBrowserTool is the handler of frontend tools in the loop's private
// registry, which exists only so their input is validated like any other.
var errBrowserTool = errors.New("frontend tools run in the browser")

func frontendRegistry(tools []FrontendTool) (*capability.Registry, error) {
	r := capability.NewRegistry()
	for _, t := range tools {
		err := r.Register(capability.Capability{
			Descriptor: capability.Descriptor{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Risk: capability.RiskRead},
			Handler:    func(context.Context, capability.Call) (any, error) { return nil, errBrowserTool },
		})
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}
