package app_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/invoices/invoicetest"
	"github.com/invoiced/invoiced/openapi"
	"github.com/invoiced/invoiced/web"
	"github.com/stretchr/testify/require"
)

// TestEveryETagHonoursIfNoneMatch: every GET the document says answers
// an ETag, asked again with If-None-Match naming that ETag (as sent, or
// weakened by a proxy), answers 304 with the ETag and no body, and so
// does its HEAD; naming another, the full 200. The routes are the
// document's, so a new one that sends an ETag needs a case here.
func TestEveryETagHonoursIfNoneMatch(t *testing.T) {
	t.Parallel()
	h := apptest.New(t, apptest.Options{NoSeller: true})
	ctx := t.Context()
	clerk, clerkTok := h.User(t, "clara", identity.RoleClerk)
	_, bobTok := h.User(t, "bob", identity.RoleApprover)
	_, adminTok := h.User(t, "ada", identity.RoleAdmin)

	r := h.Do(t, "PUT", "/v1/seller", adminTok, map[string]any{"legal_name": "Example Seller", "vat_id": "DE136308783",
		"address": map[string]any{"lines": []string{"Hauptstraße 5"}, "postcode": "10115", "city": "Berlin", "country": "DE"}},
		"If-None-Match", "*")
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	draft := invoicetest.Draft(ctx, t, h.Pool, invoicetest.DraftOpts{})
	aid := refusedWith(t, h.Do(t, "POST", "/v1/invoices/"+draft.ID.String()+"/issue", clerkTok, nil),
		http.StatusForbidden, approvals.CodeApprovalRequired)
	issued := invoicetest.Issued(ctx, t, h.Pool, invoicetest.DraftOpts{CustomerID: &draft.CustomerID})
	creditPath := "/v1/invoices/" + issued.ID.String() + "/credit-notes"
	creditBody := map[string]any{"reason": "goodwill", "amount": 100}
	caid := refusedWith(t, h.Do(t, "POST", creditPath, clerkTok, creditBody), http.StatusForbidden, approvals.CodeApprovalRequired)
	require.Equal(t, http.StatusOK, h.Do(t, "POST", "/v1/approvals/"+caid+"/approve", bobTok, nil).StatusCode)
	r = h.Do(t, "POST", creditPath, clerkTok, creditBody)
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var cn invoices.CreditNote
	r.JSON(t, &cn)
	r = h.Do(t, "POST", "/v1/webhook-endpoints", adminTok, map[string]any{"url": "https://1.1.1.1/hooks", "events": []string{"invoice.paid"}})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var endpoint struct{ ID string }
	r.JSON(t, &endpoint)
	grant := map[string]any{"capability": "issue", "customer_ids": nil, "currency": "EUR", "max_total": 1000, "max_count": 1,
		"valid_until": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "reason": "ETags"}
	gid := refusedWith(t, h.Do(t, "POST", "/v1/allowances", clerkTok, grant), http.StatusForbidden, approvals.CodeApprovalRequired)
	require.Equal(t, http.StatusOK, h.Do(t, "POST", "/v1/approvals/"+gid+"/approve", bobTok, nil).StatusCode)
	r = h.Do(t, "POST", "/v1/allowances", clerkTok, grant)
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	var allowance struct{ ID string }
	r.JSON(t, &allowance)
	r = h.Do(t, "POST", "/v1/schedules", clerkTok, map[string]any{"customer_id": draft.CustomerID.String(), "every": "1 month", "start": "2099-01-31",
		"issue": "never", "lines": []map[string]any{{"description": "Hosting {period}", "quantity": "1", "unit_amount": 10000}}})
	require.Equal(t, http.StatusCreated, r.StatusCode, "%s", r.Body)
	schedule := r.Header.Get("Location")
	sid, _, err := web.SessionCreate(ctx, h.Pool, clerk.ID, time.Hour)
	require.NoError(t, err)

	byCookie := []string{"Cookie", web.SessionCookie + "=" + sid}
	cases := map[string]struct {
		path, token string
		headers     []string
	}{
		"get-invoice":              {"/v1/invoices/" + draft.ID.String(), clerkTok, nil},
		"get-invoice-pdf":          {"/v1/invoices/" + draft.ID.String() + "/pdf", clerkTok, nil},
		"get-customer":             {"/v1/customers/" + draft.CustomerID.String(), clerkTok, nil},
		"get-credit-note-pdf":      {"/v1/credit-notes/" + cn.ID.String() + "/pdf", clerkTok, nil},
		"get-invoice-einvoice":     {"/v1/invoices/" + issued.ID.String() + "/einvoice?format=ubl", clerkTok, nil},
		"get-credit-note-einvoice": {"/v1/credit-notes/" + cn.ID.String() + "/einvoice?format=cii", clerkTok, nil},
		"get-approval":             {"/v1/approvals/" + aid, bobTok, nil},
		"get-approval-policy":      {"/v1/approval-policy", adminTok, nil},
		"get-user":                 {"/v1/users/" + clerk.ID.String(), adminTok, nil},
		"get-webhook-endpoint":     {"/v1/webhook-endpoints/" + endpoint.ID, adminTok, nil},
		"get-seller":               {"/v1/seller", clerkTok, nil},
		"get-allowance":            {"/v1/allowances/" + allowance.ID, clerkTok, nil},
		"get-reminder-settings":    {"/v1/reminders/settings", clerkTok, nil},
		"get-schedule":             {schedule, clerkTok, nil},
		"page-invoice-pdf":         {"/invoices/" + draft.ID.String() + "/pdf", "", byCookie},
	}

	doc, err := openapi.Document()
	require.NoError(t, err)
	var withETag []string
	for _, item := range doc.Paths.Map() {
		if item.Get == nil {
			continue
		}
		if ok := item.Get.Responses.Status(http.StatusOK); ok != nil && ok.Value.Headers["ETag"] != nil {
			withETag = append(withETag, item.Get.OperationID)
		}
	}
	slices.Sort(withETag)
	var covered []string
	for op := range cases {
		covered = append(covered, op)
	}
	slices.Sort(covered)
	require.Equal(t, withETag, covered, "every GET the document gives an ETag has a case")

	for op, tc := range cases {
		first := h.Do(t, "GET", tc.path, tc.token, nil, tc.headers...)
		require.Equal(t, http.StatusOK, first.StatusCode, "%s: %s", op, first.Body)
		tag := first.Header.Get("ETag")
		require.NotEmpty(t, tag, op)
		for _, inm := range []string{tag, "W/" + tag, `"x", ` + tag, "*"} {
			for _, method := range []string{"GET", "HEAD"} {
				r := h.Do(t, method, tc.path, tc.token, nil, append([]string{"If-None-Match", inm}, tc.headers...)...)
				require.Equal(t, http.StatusNotModified, r.StatusCode, "%s %s If-None-Match %s: %s", op, method, inm, r.Body)
				require.Empty(t, r.Body, op)
				require.Equal(t, tag, r.Header.Get("ETag"), op)
			}
		}
		r := h.Do(t, "GET", tc.path, tc.token, nil, append([]string{"If-None-Match", `"stale"`}, tc.headers...)...)
		require.Equal(t, http.StatusOK, r.StatusCode, op)
		require.Equal(t, first.Body, r.Body, "%s: another ETag gets the full answer", op)
	}
}
