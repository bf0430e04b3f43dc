package app_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/identity"
	"github.com/stretchr/testify/require"
)

// sellerAPI is a service with an admin, a clerk and an approver.
type sellerAPI struct {
	h                          *apptest.Harness
	adminTok, clerkTok, bobTok string
}

func setupSellerAPI(t *testing.T) *sellerAPI {
	t.Helper()
	s := &sellerAPI{h: apptest.New(t, apptest.Options{NoSeller: true})}
	_, s.adminTok = s.h.User(t, "ada", identity.RoleAdmin)
	_, s.clerkTok = s.h.User(t, "clara", identity.RoleClerk)
	_, s.bobTok = s.h.User(t, "bob", identity.RoleApprover)
	return s
}

// state is the seller's version (0: none) and the seller's audit events.
func (s *sellerAPI) state(t *testing.T) (version, audited int) {
	t.Helper()
	require.NoError(t, s.h.Pool.QueryRow(t.Context(), `SELECT coalesce((SELECT version FROM seller), 0),
		(SELECT count(*) FROM audit_events WHERE subject_type = 'seller')`).Scan(&version, &audited))
	return version, audited
}

// fieldOf returns the first field a 422 names.
func fieldOf(t *testing.T, r *apptest.Response) string {
	t.Helper()
	errs, _ := r.Problem(t)["errors"].([]any)
	require.NotEmpty(t, errs, "%s", r.Body)
	return errs[0].(map[string]any)["field"].(string)
}

func sellerBody() map[string]any {
	return map[string]any{
		"legal_name":   "Nordlicht GmbH",
		"trading_name": "Nordlicht Studio",
		"address": map[string]any{"lines": []string{"Hauptstraße 5"}, "postcode": "10115", "city": "Berlin",
			"subdivision": "", "country": "de"},
		"vat_id":             "DE 136 308 783",
		"tax_number":         "37/123/45678",
		"registration":       "Amtsgericht Charlottenburg, HRB 12345 B",
		"contact":            map[string]any{"name": "Ada", "phone": "+49 30 1234567", "email": "billing@nordlicht.example"},
		"bank_accounts":      []any{map[string]any{"iban": "DE89 3704 0044 0532 0130 00", "bic": "COBADEFFXXX"}},
		"payment_terms_days": 14,
	}
}

// The seller over /v1: every signed-in user reads it, with its version as
// ETag; admins set it with a precondition; each refusal is a problem
// naming what is wrong, and writes nothing.
func TestSellerOverHTTP(t *testing.T) {
	t.Parallel()
	s := setupSellerAPI(t)
	for _, tok := range []string{s.adminTok, s.clerkTok, s.bobTok} {
		refusedWith(t, s.h.Do(t, "GET", "/v1/seller", tok, nil), http.StatusNotFound, "NOT_FOUND")
	}
	refusedWith(t, s.h.Do(t, "GET", "/v1/seller", "", nil), http.StatusUnauthorized, "UNAUTHENTICATED")

	r := s.h.Do(t, "PUT", "/v1/seller", s.adminTok, sellerBody())
	refusedWith(t, r, http.StatusPreconditionRequired, "PRECONDITION_REQUIRED")
	require.Equal(t, "If-Match", fieldOf(t, r))
	r = s.h.Do(t, "PUT", "/v1/seller", s.adminTok, sellerBody(), "If-Match", `"1"`)
	refusedWith(t, r, http.StatusPreconditionFailed, "VERSION_MISMATCH")
	for _, tok := range []string{s.clerkTok, s.bobTok} {
		refusedWith(t, s.h.Do(t, "PUT", "/v1/seller", tok, sellerBody(), "If-None-Match", "*"), http.StatusForbidden, "FORBIDDEN")
	}
	v, audited := s.state(t)
	require.Zero(t, v+audited, "refusals wrote nothing")

	r = s.h.Do(t, "PUT", "/v1/seller", s.adminTok, sellerBody(), "If-None-Match", "*")
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	require.Equal(t, `"1"`, r.Header.Get("ETag"))
	var set map[string]any
	r.JSON(t, &set)
	require.Equal(t, "DE136308783", set["vat_id"])
	require.Equal(t, "DE", set["address"].(map[string]any)["country"])
	require.Equal(t, "DE89370400440532013000", set["bank_accounts"].([]any)[0].(map[string]any)["iban"])
	require.Equal(t, "ada", set["updated_by"].(map[string]any)["username"])
	for _, tok := range []string{s.adminTok, s.clerkTok, s.bobTok} {
		r := s.h.Do(t, "GET", "/v1/seller", tok, nil)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		require.Equal(t, `"1"`, r.Header.Get("ETag"))
		var got map[string]any
		r.JSON(t, &got)
		require.Equal(t, set, got)
	}

	bad := func(mutate func(b map[string]any)) map[string]any {
		b := sellerBody()
		mutate(b)
		return b
	}
	for name, tc := range map[string]struct {
		body    any
		headers []string
		status  int
		code    string
		field   string
	}{
		"no precondition": {body: sellerBody(), status: 428, code: "PRECONDITION_REQUIRED", field: "If-Match"},
		"empty If-Match":  {body: sellerBody(), headers: []string{"If-Match", " "}, status: 428, code: "PRECONDITION_REQUIRED", field: "If-Match"},
		"stale If-Match":  {body: sellerBody(), headers: []string{"If-Match", `"7"`}, status: 412, code: "VERSION_MISMATCH"},
		"first again":     {body: sellerBody(), headers: []string{"If-None-Match", "*"}, status: 412, code: "VERSION_MISMATCH"},
		"If-Match unread": {body: sellerBody(), headers: []string{"If-Match", "1"}, status: 400, code: "IF_MATCH_INVALID"},
		"bad IBAN": {body: bad(func(b map[string]any) {
			b["bank_accounts"] = []any{map[string]any{"iban": "DE88 3704 0044 0532 0130 00"}}
		}), field: "bank_accounts[0].iban"},
		"bad BIC": {body: bad(func(b map[string]any) {
			b["bank_accounts"] = []any{map[string]any{"iban": "DE89370400440532013000", "bic": "COBA"}}
		}), field: "bank_accounts[0].bic"},
		"malformed VAT id": {body: bad(func(b map[string]any) { b["vat_id"] = "DE12345678" }), field: "vat_id"},
		"Greek GR prefix":  {body: bad(func(b map[string]any) { b["vat_id"] = "GR094064321" }), field: "vat_id"},
		"unknown country":  {body: bad(func(b map[string]any) { b["address"] = map[string]any{"country": "XX"} }), field: "address.country"},
		"UK for GB":        {body: bad(func(b map[string]any) { b["address"] = map[string]any{"country": "UK"} }), field: "address.country"},
		"no legal name":    {body: bad(func(b map[string]any) { delete(b, "legal_name") }), field: "legal_name"},
		"terms":            {body: bad(func(b map[string]any) { b["payment_terms_days"] = 400 }), field: "payment_terms_days"},
		"unknown field":    {body: bad(func(b map[string]any) { b["name"] = "Nordlicht" }), field: "name"},
		"version in body":  {body: bad(func(b map[string]any) { b["version"] = 1 }), field: "version"},
		"empty body":       {body: "", status: 400, code: "MALFORMED_JSON"},
	} {
		headers := tc.headers
		if headers == nil && tc.field != "" && tc.field != "If-Match" {
			headers = []string{"If-Match", `"1"`}
		}
		if tc.code == "" {
			tc.status, tc.code = 422, "VALIDATION_FAILED"
		}
		if tc.status == 400 && headers == nil {
			headers = []string{"If-Match", `"1"`}
		}
		r := s.h.Do(t, "PUT", "/v1/seller", s.adminTok, tc.body, headers...)
		require.Equal(t, tc.status, r.StatusCode, "%s: %s", name, r.Body)
		require.Equal(t, tc.code, r.Problem(t)["code"], name)
		if tc.field != "" {
			require.Equal(t, tc.field, fieldOf(t, r), name)
		}
		v, audited := s.state(t)
		require.Equal(t, [2]int{1, 1}, [2]int{v, audited}, "%s wrote nothing", name)
	}

	change := sellerBody()
	change["bank_accounts"] = []any{}
	change["payment_terms_days"] = nil
	r = s.h.Do(t, "PUT", "/v1/seller", s.adminTok, change, "If-Match", `"1"`)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	require.Equal(t, `"2"`, r.Header.Get("ETag"))
	var before, after map[string]any
	require.NoError(t, s.h.Pool.QueryRow(t.Context(), `SELECT event->'data'->'before', event->'data'->'after' FROM audit_events
		WHERE type = 'seller.changed' AND subject_id = '2'`).Scan(&before, &after))
	require.EqualValues(t, 14, before["payment_terms_days"])
	require.Nil(t, after["payment_terms_days"])
	require.Empty(t, after["bank_accounts"])
}

// Admins change the seller at one version at once: one wins, the others
// are told the version moved; one change is stored and audited.
func TestSellerChangesAtOneVersionAtOnce(t *testing.T) {
	t.Parallel()
	s := setupSellerAPI(t)
	r := s.h.Do(t, "PUT", "/v1/seller", s.adminTok, sellerBody(), "If-None-Match", "*")
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	const n = 6
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := sellerBody()
			b["trading_name"] = "Nordlicht " + string(rune('A'+i))
			statuses[i] = s.h.Do(t, "PUT", "/v1/seller", s.adminTok, b, "If-Match", `"1"`).StatusCode
		}()
	}
	wg.Wait()
	won := 0
	for _, st := range statuses {
		if st == http.StatusOK {
			won++
		} else {
			require.Equal(t, http.StatusPreconditionFailed, st)
		}
	}
	require.Equal(t, 1, won, "%v", statuses)
	v, audited := s.state(t)
	require.Equal(t, [2]int{2, 2}, [2]int{v, audited})
}
