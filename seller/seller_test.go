package seller_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/seller"
	"github.com/invoiced/invoiced/store"
	"github.com/invoiced/invoiced/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

type bundle struct {
	ctx   context.Context
	pool  *pgxpool.Pool
	svc   *seller.Service
	admin identity.Principal
	clerk identity.Principal
}

func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	pool := storetest.PoolFor(t, storetest.URL(t))
	b := &bundle{ctx: ctx, pool: pool, svc: seller.NewService(pool, nil)}
	for name, role := range map[string]identity.Role{"ada": identity.RoleAdmin, "clara": identity.RoleClerk} {
		u, err := identity.UserCreate(ctx, pool, identity.UserCreateParams{Username: name, Role: role})
		require.NoError(t, err)
		if role == identity.RoleAdmin {
			b.admin = u.Principal()
		} else {
			b.clerk = u.Principal()
		}
	}
	return b
}

func terms(n int) *int { return &n }

// nordlicht is a complete seller, written as a person would type it.
func nordlicht() seller.Details {
	return seller.Details{
		LegalName:   " Nordlicht GmbH ",
		TradingName: "Nordlicht Studio",
		Address: party.Address{Lines: []string{"Hauptstraße 5"}, Postcode: "10115", City: "Berlin",
			Subdivision: "Berlin", Country: "de"},
		VATID:            "de 136 308 783",
		TaxNumber:        "37/123/45678",
		Registration:     "Amtsgericht Charlottenburg, HRB 12345 B",
		Contact:          party.Contact{Name: "Ada Lovelace", Phone: "+49 30 1234567", Email: "billing@nordlicht.example"},
		BankAccounts:     []party.BankAccount{{IBAN: "DE89 3704 0044 0532 0130 00", BIC: "cobadeffxxx"}},
		PaymentTermsDays: terms(14),
	}
}

// auditOf returns the seller's audit events, oldest first.
func (b *bundle) auditOf(t *testing.T) []audit.Event {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT event FROM audit_events WHERE subject_type = 'seller' ORDER BY seq`)
	require.NoError(t, err)
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.Event, error) {
		var raw []byte
		var ev audit.Event
		if err := r.Scan(&raw); err != nil {
			return ev, err
		}
		return ev, json.Unmarshal(raw, &ev)
	})
	require.NoError(t, err)
	return evs
}

// An admin sets the first seller with If-None-Match: *, then changes it
// at its version; each change is the next version, audited with the
// details before and after, and reads back normalised.
func TestSetVersionsAndAudits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	none, err := seller.Get(b.ctx, b.pool)
	require.NoError(t, err)
	require.Nil(t, none, "a new database has no seller")
	_, err = b.svc.Get(b.ctx)
	require.True(t, problem.HasCode(err, problem.CodeNotFound), "%v", err)

	s, err := b.svc.Set(b.ctx, b.admin, capability.PathCLI, nordlicht(), seller.IfNoneSet())
	require.NoError(t, err)
	require.EqualValues(t, 1, s.Version)
	require.Equal(t, "ada", s.UpdatedBy.Username)
	require.Equal(t, "Nordlicht GmbH", s.LegalName)
	require.Equal(t, party.VATID("DE136308783"), s.VATID)
	require.Equal(t, party.Country("DE"), s.Address.Country)
	require.Equal(t, []party.BankAccount{{IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"}}, s.BankAccounts)

	got, err := seller.Get(b.ctx, b.pool)
	require.NoError(t, err)
	require.Equal(t, s, got, "what Set answers is what is stored")

	again, err := b.svc.Set(b.ctx, b.admin, capability.PathCLI, nordlicht(), seller.IfMatch(1))
	require.NoError(t, err)
	require.EqualValues(t, 1, again.Version, "setting what is there changes nothing")

	d := nordlicht()
	d.Address.Lines = append(d.Address.Lines, "Hinterhaus")
	d.PaymentTermsDays = nil
	d.BankAccounts = nil
	v2, err := b.svc.Set(b.ctx, b.admin, capability.PathREST, d, seller.IfMatch(1))
	require.NoError(t, err)
	require.EqualValues(t, 2, v2.Version)
	require.Nil(t, v2.PaymentTermsDays)
	require.Equal(t, []party.BankAccount{}, v2.BankAccounts)

	evs := b.auditOf(t)
	require.Len(t, evs, 2)
	require.Equal(t, "seller.changed", evs[0].Type)
	require.Equal(t, "cli", evs[0].Via)
	require.Equal(t, "ada", evs[0].Actor)
	first := evs[0].Data.(map[string]any)
	require.Nil(t, first["before"])
	require.Equal(t, "DE136308783", first["after"].(map[string]any)["vat_id"])
	second := evs[1].Data.(map[string]any)
	require.Equal(t, "rest", evs[1].Via)
	require.EqualValues(t, 2, second["version"])
	require.EqualValues(t, 14, second["before"].(map[string]any)["payment_terms_days"])
	require.Nil(t, second["after"].(map[string]any)["payment_terms_days"])
	n, err := audit.Verify(b.ctx, b.pool)
	require.NoError(t, err)
	require.Positive(t, n)
}

// A change names the version it is based on; one that names none, a
// stale one, or the first seller's If-None-Match once one is set is
// refused, and nothing is written.
func TestSetNeedsItsPrecondition(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.svc.Set(b.ctx, b.admin, capability.PathREST, nordlicht(), seller.Precondition{})
	pe, _ := problem.As(err)
	require.Equal(t, 428, pe.Status)
	require.Equal(t, seller.CodePreconditionRequired, pe.Code)
	require.Equal(t, "If-Match", pe.Errors[0].Field)
	_, err = b.svc.Set(b.ctx, b.admin, capability.PathREST, nordlicht(), seller.IfMatch(1))
	require.True(t, problem.HasCode(err, "VERSION_MISMATCH"), "no seller yet: If-Match names none: %v", err)

	_, err = b.svc.Set(b.ctx, b.admin, capability.PathREST, nordlicht(), seller.IfNoneSet())
	require.NoError(t, err)
	d := nordlicht()
	d.TradingName = "Other"
	for _, pre := range []seller.Precondition{seller.IfNoneSet(), seller.IfMatch(2), {}} {
		_, err = b.svc.Set(b.ctx, b.admin, capability.PathREST, d, pre)
		require.Error(t, err)
	}
	s, err := seller.Get(b.ctx, b.pool)
	require.NoError(t, err)
	require.EqualValues(t, 1, s.Version)
	require.Equal(t, "Nordlicht Studio", s.TradingName)
	require.Len(t, b.auditOf(t), 1)
}

// Only an enabled admin changes the seller.
func TestOnlyAdminsSet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.svc.Set(b.ctx, b.clerk, capability.PathREST, nordlicht(), seller.IfNoneSet())
	require.True(t, problem.HasCode(err, problem.CodeForbidden), "%v", err)
	require.NoError(t, identity.UserSetDisabled(b.ctx, b.pool, b.admin.UserID, true))
	_, err = b.svc.Set(b.ctx, b.admin, capability.PathREST, nordlicht(), seller.IfNoneSet())
	require.True(t, problem.HasCode(err, problem.CodeForbidden), "%v", err)
	s, err := seller.Get(b.ctx, b.pool)
	require.NoError(t, err)
	require.Nil(t, s)
}

// Every bad field is named, all of them at once, and nothing is written.
func TestSetRefusesBadFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := nordlicht()
	d.LegalName = " "
	d.TradingName = "A\u202eB"
	d.Address.Country = "UK"
	d.Address.Lines = []string{"", "x"}
	d.VATID = "DE136308784"
	d.TaxNumber = strings.Repeat("1", 51)
	d.Registration = "HRB\n12345"
	d.Contact.Email = "not an address"
	d.Contact.Phone = "call"
	d.BankAccounts = []party.BankAccount{{IBAN: "DE89370400440532013001"}, {IBAN: "NL91ABNA0417164300", BIC: "ABNA"},
		{IBAN: "nl91 abna 0417 1643 00"}, {IBAN: "NL91ABNA0417164300", BIC: "ABNANL2A"}}
	d.PaymentTermsDays = terms(366)
	_, err := b.svc.Set(b.ctx, b.admin, capability.PathREST, d, seller.IfNoneSet())
	pe, ok := problem.As(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, 422, pe.Status)
	var named []string
	for _, f := range pe.Errors {
		named = append(named, f.Field)
	}
	require.ElementsMatch(t, []string{"legal_name", "trading_name", "address.lines[0]", "address.country", "vat_id", "tax_number",
		"registration", "contact.phone", "contact.email", "bank_accounts[0].iban", "bank_accounts[1].bic", "bank_accounts[3].iban",
		"payment_terms_days"}, named, "%+v", pe.Errors)
	require.Contains(t, pe.Errors[len(pe.Errors)-2].Message+pe.Errors[len(pe.Errors)-1].Message, "is bank_accounts[2]'s IBAN already")

	six := nordlicht()
	for range 6 {
		six.BankAccounts = append(six.BankAccounts, party.BankAccount{IBAN: "x"})
	}
	_, err = b.svc.Set(b.ctx, b.admin, capability.PathREST, six, seller.IfNoneSet())
	pe, _ = problem.As(err)
	require.Equal(t, "bank_accounts", pe.Errors[0].Field)

	s, err := seller.Get(b.ctx, b.pool)
	require.NoError(t, err)
	require.Nil(t, s)
	require.Empty(t, b.auditOf(t))
}

// Two admins change the seller at the same version at once: one wins,
// the other is told the version moved, and the chain has one change.
func TestConcurrentChangesAtOneVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.svc.Set(b.ctx, b.admin, capability.PathREST, nordlicht(), seller.IfNoneSet())
	require.NoError(t, err)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := nordlicht()
			d.TradingName = "Nordlicht " + string(rune('A'+i))
			_, errs[i] = b.svc.Set(b.ctx, b.admin, capability.PathREST, d, seller.IfMatch(1))
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		require.True(t, problem.HasCode(err, "VERSION_MISMATCH"), "%v", err)
	}
	require.Equal(t, 1, won)
	s, err := seller.Get(b.ctx, b.pool)
	require.NoError(t, err)
	require.EqualValues(t, 2, s.Version)
	require.Len(t, b.auditOf(t), 2)
}

// The first seller can be seeded once, by no user; a second seed, or two
// at once, leave the one there is.
func TestSeedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var wg sync.WaitGroup
	seeded, found, errs := make([]bool, 4), make([]*seller.Seller, 4), make([]error, 4)
	for i := range seeded {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := seller.Details{LegalName: "Seed " + string(rune('A'+i))}
			found[i], seeded[i], errs[i] = b.svc.Seed(b.ctx, d, []string{"INVOICED_SELLER_NAME"})
		}()
	}
	wg.Wait()
	for i := range errs {
		require.NoError(t, errs[i])
		require.Equal(t, found[0].LegalName, found[i].LegalName, "every seed answers the one seller there is")
	}
	require.ElementsMatch(t, []bool{true, false, false, false}, seeded)
	s, err := seller.Get(b.ctx, b.pool)
	require.NoError(t, err)
	require.EqualValues(t, 1, s.Version)
	require.Nil(t, s.UpdatedBy, "seeded by no user")
	evs := b.auditOf(t)
	require.Len(t, evs, 1)
	require.Equal(t, "seller.seeded", evs[0].Type)
	require.Equal(t, "system", evs[0].Via)
	require.Equal(t, []any{"INVOICED_SELLER_NAME"}, evs[0].Data.(map[string]any)["settings"])

	_, _, err = b.svc.Seed(b.ctx, seller.Details{}, nil)
	require.Error(t, err, "a seed is checked as any change")
}

// Get reads in the caller's transaction: a change that transaction made
// and has not committed yet.
func TestGetInTheCallersTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.svc.Set(b.ctx, b.admin, capability.PathREST, nordlicht(), seller.IfNoneSet())
	require.NoError(t, err)
	err = store.WithTx(b.ctx, b.pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE seller SET trading_name = 'Inside'`)
		require.NoError(t, err)
		s, err := seller.Get(ctx, tx)
		require.NoError(t, err)
		require.Equal(t, "Inside", s.TradingName)
		return problem.Conflict("ROLLBACK", "roll back")
	})
	require.Error(t, err)
	s, err := seller.Get(b.ctx, b.pool)
	require.NoError(t, err)
	require.Equal(t, "Nordlicht Studio", s.TradingName)
}
