package mcp_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/app"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/quantity"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// An agent over MCP says what a legal invoice needs — the buyer's
// address and VAT id, a decimal quantity with its unit, a reverse-charge
// line, a service period — and the person confirming sees those facts;
// a draft that lacks them is refused before any approval with each
// missing item named, as over REST.
func TestMCPToolsTakeTheLegalInvoicesFacts(t *testing.T) {
	t.Parallel()
	b := setup(t, app.Config{})
	ctx := context.Background()
	var asked []string
	cs := sdkSession(t, b.h.URL, b.clerk, &gomcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *gomcp.ElicitRequest) (*gomcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			return &gomcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
		}})
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err)
		raw, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		var out map[string]any
		if res.IsError {
			require.NoError(t, json.Unmarshal([]byte(res.Content[0].(*gomcp.TextContent).Text), &out))
			return out
		}
		require.NoError(t, json.Unmarshal(raw, &out))
		return out
	}

	c := call("create-customer", map[string]any{"name": "Lumière SARL", "currency": "EUR", "vat_id": "FR 40 303265045", "language": "fr",
		"address": map[string]any{"lines": []string{"12 rue de la Paix"}, "postcode": "75002", "city": "Paris", "country": "fr"}})
	require.Equal(t, "FR40303265045", c["vat_id"], "%v", c)
	require.Equal(t, "FR", c["address"].(map[string]any)["country"])
	require.Len(t, asked, 1)
	require.Contains(t, asked[0], "FR 40 303265045", "the confirmation shows the VAT id asked for")
	require.Contains(t, asked[0], "12 rue de la Paix")

	d := call("create-draft-invoice", map[string]any{"customer_id": c["id"], "currency": "EUR",
		"service_period": map[string]any{"start": "2026-11-01", "end": "2026-11-30"},
		"lines":          []any{map[string]any{"description": "Conseil", "quantity": "7.5", "unit": "HUR", "unit_amount": 12000, "vat_category": "AE"}}})
	require.Equal(t, "2026-11-30", d["service_period"].(map[string]any)["end"], "%v", d)
	line := d["lines"].([]any)[0].(map[string]any)
	require.Equal(t, "7.5", line["quantity"])
	require.Equal(t, "HUR", line["unit"])
	require.Equal(t, "AE", line["vat_category"])
	require.EqualValues(t, 90000, line["amount"])
	require.EqualValues(t, 0, line["tax_amount"])
	require.Len(t, asked, 2)
	require.Contains(t, asked[1], "HUR")

	// A customer without an address: issuing names what is missing, and
	// asks nobody for an approval.
	bare := call("create-customer", map[string]any{"name": "Nowhere Ltd", "currency": "EUR"})
	bareID := uuid.MustParse(bare["id"].(string))
	draft := invoicetest.Draft(ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &bareID,
		Lines: []invoices.LineInput{{Description: "Work", Quantity: quantity.One, UnitAmount: 1000, TaxRateBPS: 1900}}})
	before := b.written(t)
	p := call("issue-invoice", map[string]any{"invoice_id": draft.ID.String()})["error"].(map[string]any)
	require.Equal(t, invoices.CodeInvoiceIncomplete, p["code"], "%v", p)
	var fields []string
	for _, e := range p["errors"].([]any) {
		fields = append(fields, e.(map[string]any)["field"].(string))
	}
	require.Contains(t, fields, "customer.address")
	require.Equal(t, before, b.written(t), "no approval asked, nothing written")
}
