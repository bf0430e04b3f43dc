package invoices_test

import (
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/seller"
	"github.com/stretchr/testify/require"
)

// parisAddress is a complete postal address in another member state than
// the default seller's.
var parisAddress = map[string]any{"lines": []string{"12 rue de Rivoli"}, "postcode": "75001", "city": "Paris", "country": "FR"}

// client is the body of a customer in France with a VAT id, changed by
// set: a nil value drops the member.
func client(set map[string]any) map[string]any {
	c := map[string]any{"name": "Client SARL", "email": "compta@client.example", "currency": "EUR",
		"address": parisAddress, "vat_id": "FR04409414364"}
	for k, v := range set {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// vatLine is a line of category cat (S at 19 %, the others at 0 %).
func vatLine(cat string) map[string]any {
	l := map[string]any{"description": "Item " + cat, "quantity": "7.5", "unit": "HUR", "unit_amount": 12000, "vat_category": cat}
	if cat == "S" {
		l["tax_rate_bps"] = 1900
	}
	return l
}

// sellerWith is the default seller changed by change.
func sellerWith(change func(*seller.Details)) *seller.Details {
	d := invoicetest.DefaultSeller
	d.Address.Lines = append([]string(nil), d.Address.Lines...)
	change(&d)
	return &d
}

// readinessCase is a seller, a customer and a draft, and what keeps the
// draft from being issued (nothing: it is a legal invoice).
type readinessCase struct {
	name     string
	noSeller bool
	seller   *seller.Details // nil: invoicetest.DefaultSeller
	customer map[string]any  // nil: client(nil)
	// draft is the body of POST /v1/invoices but its customer; nil: the
	// factory's draft of one S line, due two days ago (in the past in
	// whatever time zone the service's clock reads).
	draft       map[string]any
	field, code string
}

// readinessBundle creates each case's parties and draft on one service,
// one case at a time (they share the seller).
type readinessBundle struct{ httpBundle }

// arrange sets the case's seller and creates its customer and draft,
// returning the draft's id.
func (b readinessBundle) arrange(t *testing.T, tc readinessCase) string {
	t.Helper()
	switch {
	case tc.noSeller:
		_, err := b.h.Pool.Exec(b.ctx, `DELETE FROM seller`)
		require.NoError(t, err)
	case tc.seller != nil:
		invoicetest.Seller(b.ctx, t, b.h.Pool, *tc.seller)
	default:
		invoicetest.Seller(b.ctx, t, b.h.Pool, invoicetest.DefaultSeller)
	}
	body := tc.customer
	if body == nil {
		body = client(nil)
	}
	r := b.h.Do(t, http.MethodPost, "/v1/customers", b.clerk, body)
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var c invoices.Customer
	r.JSON(t, &c)
	if tc.draft == nil {
		past := invoices.Date{Time: time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -2)}
		return invoicetest.Draft(b.ctx, t, b.h.Pool, invoicetest.DraftOpts{CustomerID: &c.ID, DueDate: &past}).ID.String()
	}
	draft := maps.Clone(tc.draft)
	draft["customer_id"] = c.ID
	r = b.h.Do(t, http.MethodPost, "/v1/invoices", b.clerk, draft)
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var inv invoices.Invoice
	r.JSON(t, &inv)
	return inv.ID.String()
}

// written is what an issue attempt may write: approval requests, audit
// events, numbers taken.
func (b readinessBundle) written(t *testing.T) [3]int {
	t.Helper()
	var n [3]int
	require.NoError(t, b.h.Pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM approval_requests),
		(SELECT count(*) FROM audit_events), (SELECT count(*) FROM invoice_number_series)`).Scan(&n[0], &n[1], &n[2]))
	return n
}

// Each rule of issue readiness, alone: issuing the draft is 422
// INVOICE_INCOMPLETE naming that one field and code, before any approval
// is asked for (no approval request, no audit event, no number, the
// draft as it was), and get-invoice says the same under readiness. The
// drafts that break no rule are legal invoices: they go to an approver
// and issue as before.
func TestIssueRefusesAnIncompleteDraft(t *testing.T) {
	t.Parallel()
	b := readinessBundle{setupHTTP(t)}
	lines := func(cats ...string) map[string]any {
		var ls []any
		for _, c := range cats {
			ls = append(ls, vatLine(c))
		}
		return map[string]any{"lines": ls, "supply_date": "2026-03-02"}
	}
	withoutSupplyDate := lines("K")
	delete(withoutSupplyDate, "supply_date")
	withPeriod := lines("K")
	delete(withPeriod, "supply_date")
	withPeriod["service_period"] = map[string]any{"start": "2026-03-01", "end": "2026-03-31"}
	taxNumberOnly := sellerWith(func(d *seller.Details) { d.VATID, d.TaxNumber = "", "37/123/45678" })
	noIdentifier := sellerWith(func(d *seller.Details) { d.VATID = "" })
	cityOnly := map[string]any{"lines": []string{}, "postcode": "", "city": "Paris", "country": "FR"}

	refused := []readinessCase{
		{name: "no seller", noSeller: true, draft: lines("S"), field: "seller", code: invoices.MissingSeller},
		{name: "seller without a country", seller: sellerWith(func(d *seller.Details) { d.Address.Country = "" }),
			draft: lines("S"), field: "seller.address", code: invoices.MissingSellerAddress},
		{name: "seller without a street line", seller: sellerWith(func(d *seller.Details) { d.Address.Lines = nil }),
			draft: lines("S"), field: "seller.address", code: invoices.MissingSellerAddress},
		{name: "seller with neither VAT id nor tax number", seller: noIdentifier,
			draft: lines("S"), field: "seller.vat_id", code: invoices.MissingSellerTaxID},
		{name: "reverse charge, seller with a tax number only", seller: taxNumberOnly,
			draft: lines("AE"), field: "seller.vat_id", code: invoices.MissingSellerVATID},
		{name: "intra-community supply, seller with a tax number only", seller: taxNumberOnly,
			draft: lines("K"), field: "seller.vat_id", code: invoices.MissingSellerVATID},
		{name: "export, seller with a tax number only", seller: taxNumberOnly,
			draft: lines("G"), field: "seller.vat_id", code: invoices.MissingSellerVATID},
		{name: "customer without an address", customer: client(map[string]any{"address": nil}),
			draft: lines("S"), field: "customer.address", code: invoices.MissingBuyerAddress},
		{name: "customer address without a street line", customer: client(map[string]any{"address": cityOnly}),
			draft: lines("S"), field: "customer.address", code: invoices.MissingBuyerAddress},
		{name: "reverse charge, customer without a VAT id", customer: client(map[string]any{"vat_id": nil}),
			draft: lines("AE"), field: "customer.vat_id", code: invoices.MissingBuyerVATID},
		{name: "intra-community supply, customer without a VAT id", customer: client(map[string]any{"vat_id": nil}),
			draft: lines("K"), field: "customer.vat_id", code: invoices.MissingBuyerVATID},
		{name: "intra-community supply within one state", customer: client(map[string]any{"vat_id": "DE136308783"}),
			draft: lines("K"), field: "customer.vat_id", code: invoices.VATIDsNotTwoEUStates},
		{name: "intra-community supply to Switzerland", customer: client(map[string]any{"vat_id": "CHE-107.787.577 IVA"}),
			draft: lines("K"), field: "customer.vat_id", code: invoices.VATIDsNotTwoEUStates},
		{name: "intra-community supply to Great Britain", customer: client(map[string]any{"vat_id": "GB980780684"}),
			draft: lines("K"), field: "customer.vat_id", code: invoices.VATIDsNotTwoEUStates},
		{name: "intra-community supply from Switzerland", seller: sellerWith(func(d *seller.Details) { d.VATID = "CHE107787577IVA" }),
			draft: lines("K"), field: "customer.vat_id", code: invoices.VATIDsNotTwoEUStates},
		{name: "intra-community supply without a supply date", draft: withoutSupplyDate,
			field: "supply_date", code: invoices.MissingSupplyDate},
		{name: "outside scope with a standard rated line", draft: lines("O", "S"),
			field: "lines", code: invoices.OutsideScopeWithOther},
		{name: "due date in the past", field: "due_date", code: invoices.DueDatePast},
		{name: "no lines", draft: map[string]any{"lines": []any{}}, field: "lines", code: invoices.MissingLines},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			id := b.arrange(t, tc)
			path := "/v1/invoices/" + id
			before := b.h.Do(t, http.MethodGet, path, b.clerk, nil)
			require.Equal(t, http.StatusOK, before.StatusCode, "%s", before.Body)
			written := b.written(t)

			r := b.h.Do(t, http.MethodPost, path+"/issue", b.clerk, nil)
			requireProblem(t, r, http.StatusUnprocessableEntity, invoices.CodeInvoiceIncomplete)
			var refusal struct{ Errors []problem.FieldError }
			r.JSON(t, &refusal)
			require.Len(t, refusal.Errors, 1, "%v", refusal.Errors)
			require.Equal(t, tc.field, refusal.Errors[0].Field)
			require.Equal(t, tc.code, refusal.Errors[0].Code)
			require.NotEmpty(t, refusal.Errors[0].Message)

			require.Equal(t, written, b.written(t), "no approval request, no audit event, no number")
			after := b.h.Do(t, http.MethodGet, path, b.clerk, nil)
			require.Equal(t, before.Header.Get("ETag"), after.Header.Get("ETag"))
			require.JSONEq(t, string(before.Body), string(after.Body), "the draft is as it was")
			var inv invoices.Invoice
			after.JSON(t, &inv)
			require.Equal(t, invoices.StatusDraft, inv.Status)
			require.Equal(t, &invoices.Readiness{Ready: false, Missing: refusal.Errors}, inv.Readiness,
				"get-invoice names what issuing would")
		})
	}

	ready := []readinessCase{
		{name: "standard rated", draft: lines("S")},
		{name: "standard rated, seller with a tax number only", seller: taxNumberOnly, draft: lines("S")},
		{name: "outside scope only, seller with neither VAT id nor tax number", seller: noIdentifier,
			customer: client(map[string]any{"vat_id": nil}), draft: lines("O")},
		{name: "reverse charge with both VAT ids", draft: lines("AE")},
		{name: "intra-community supply over a service period", draft: withPeriod},
		{name: "intra-community supply of goods to Northern Ireland", customer: client(map[string]any{"vat_id": "XI980780684",
			"address": map[string]any{"lines": []string{"1 Donegall Square"}, "postcode": "BT1 5GS", "city": "Belfast", "country": "GB"}}),
			draft: lines("K")},
		{name: "export to a customer without a VAT id", customer: client(map[string]any{"vat_id": nil,
			"address": map[string]any{"lines": []string{"Bahnhofstrasse 1"}, "postcode": "8001", "city": "Zürich", "country": "CH"}}),
			draft: lines("G")},
		{name: "exempt and zero rated with standard rated", draft: lines("E", "Z", "S")},
	}
	for _, tc := range ready {
		t.Run(tc.name, func(t *testing.T) {
			id := b.arrange(t, tc)
			path := "/v1/invoices/" + id
			var inv invoices.Invoice
			get(t, b.h, path, b.clerk, http.StatusOK).JSON(t, &inv)
			require.Equal(t, &invoices.Readiness{Ready: true, Missing: []problem.FieldError{}}, inv.Readiness)

			p := requireProblem(t, b.h.Do(t, http.MethodPost, path+"/issue", b.clerk, nil), http.StatusForbidden, approvals.CodeApprovalRequired)
			r := b.h.Do(t, http.MethodPost, "/v1/approvals/"+p["approval_id"].(string)+"/approve", b.approver, nil)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
			r = b.h.Do(t, http.MethodPost, path+"/issue", b.clerk, nil)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
			var issued invoices.Invoice
			r.JSON(t, &issued)
			require.Equal(t, invoices.StatusIssued, issued.Status)
			require.NotNil(t, issued.Number)
			var read invoices.Invoice
			get(t, b.h, path, b.clerk, http.StatusOK).JSON(t, &read)
			require.Nil(t, read.Readiness, "only a draft says what keeps it from being issued")
		})
	}
}

// The refusal is the same through /invoke, which the chat's tools call;
// once the clerk supplies what it names, the draft goes to an approver
// and issues. An approver, who may not issue, is refused as before.
func TestIncompleteDraftThroughInvoke(t *testing.T) {
	t.Parallel()
	b := readinessBundle{setupHTTP(t)}
	id := b.arrange(t, readinessCase{customer: client(map[string]any{"address": nil}), draft: map[string]any{"lines": []any{vatLine("S")}}})
	invoke := func(token string) *apptest.Response {
		return b.h.Do(t, http.MethodPost, "/v1/capabilities/issue-invoice/invoke", token, map[string]any{"input": map[string]any{"invoice_id": id}})
	}
	written := b.written(t)
	requireProblem(t, invoke(b.approver), http.StatusForbidden, "FORBIDDEN")
	r := invoke(b.clerk)
	requireProblem(t, r, http.StatusUnprocessableEntity, invoices.CodeInvoiceIncomplete)
	var refusal struct{ Errors []problem.FieldError }
	r.JSON(t, &refusal)
	require.Equal(t, []problem.FieldError{{Field: "customer.address", Code: invoices.MissingBuyerAddress,
		Message: "the customer Client SARL needs a postal address with a street line, a city and a country"}}, refusal.Errors)
	require.Equal(t, written, b.written(t))

	var inv invoices.Invoice
	get(t, b.h, "/v1/invoices/"+id, b.clerk, http.StatusOK).JSON(t, &inv)
	r = b.h.Do(t, http.MethodPatch, "/v1/customers/"+inv.CustomerID.String(), b.clerk, map[string]any{"address": parisAddress})
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	p := requireProblem(t, invoke(b.clerk), http.StatusForbidden, approvals.CodeApprovalRequired)
	r = b.h.Do(t, http.MethodPost, "/v1/approvals/"+p["approval_id"].(string)+"/approve", b.approver, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	r = invoke(b.clerk)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	var out struct{ Output invoices.Invoice }
	r.JSON(t, &out)
	require.Equal(t, invoices.StatusIssued, out.Output.Status)
	require.Equal(t, party.Address{Lines: []string{"12 rue de Rivoli"}, Postcode: "75001", City: "Paris", Country: "FR"},
		out.Output.BillTo.Address, "it bills the customer at the address supplied")
}
