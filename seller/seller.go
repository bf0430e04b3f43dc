// Package seller keeps who issues the invoices: one record, owned by
// admins, versioned, every change in the audit chain with the seller
// before and after (docs/documents.md, "Who sells"). Get reads it in a
// caller's transaction, so that issuing can copy it into an invoice or a
// credit note as it is in that transaction.
package seller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// Details are the seller's facts: what an invoice says of who issues it,
// and what a change replaces, all of it at once.
type Details struct {
	// LegalName is the registered name, the one required fact.
	LegalName   string        `json:"legal_name"`
	TradingName string        `json:"trading_name"`
	Address     party.Address `json:"address"`
	// VATID is empty for a seller without one (TaxNumber may stand in).
	VATID     party.VATID `json:"vat_id"`
	TaxNumber string      `json:"tax_number"`
	// Registration is the company registration as the register words it
	// ("Amtsgericht Charlottenburg, HRB 12345 B").
	Registration string              `json:"registration"`
	Contact      party.Contact       `json:"contact"`
	BankAccounts []party.BankAccount `json:"bank_accounts"`
	// PaymentTermsDays is how many days after issue an invoice is due,
	// unless it says otherwise; nil for no default.
	PaymentTermsDays *int `json:"payment_terms_days"`
}

// Seller is the seller at one version.
type Seller struct {
	Details
	Version   int64     `json:"version"`
	UpdatedAt time.Time `json:"updated_at"`
	// UpdatedBy is the admin who made this version; nil when it was
	// seeded from the environment (INVOICED_SELLER_*).
	UpdatedBy *UserRef `json:"updated_by"`
}

// UserRef names a user.
type UserRef struct {
	ID       uuid.UUID `json:"id"`
	Username string    `json:"username"`
}

// ResourceVersion is the seller's version, sent as the ETag.
func (s *Seller) ResourceVersion() int64 { return s.Version }

// Limits of the seller's own text fields, in characters (the party
// package bounds the address and contact): a legal name as party's names,
// a tax number with room for any state's punctuation (a German
// Steuernummer is 13), a registration with its court or register, a
// number and a place, and at most five bank accounts for a PDF's footer.
const (
	maxTaxNumber    = 50
	maxRegistration = 300
	MaxBankAccounts = 5
	// MaxPaymentTermsDays is a year: longer terms are credit, not terms.
	MaxPaymentTermsDays = 365
)

// Check returns d normalised (trimmed, identifiers in their compact
// forms, no nil lists), or a 422 VALIDATION_FAILED naming every field
// that is wrong.
func (d Details) Check() (Details, error) {
	var bad []problem.FieldError
	fail := func(field, format string, args ...any) {
		bad = append(bad, problem.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	out := Details{BankAccounts: []party.BankAccount{}, PaymentTermsDays: d.PaymentTermsDays}
	var errs []problem.FieldError
	out.LegalName, errs = party.Line("legal_name", d.LegalName, party.MaxName, true)
	bad = append(bad, errs...)
	out.TradingName, errs = party.Line("trading_name", d.TradingName, party.MaxName, false)
	bad = append(bad, errs...)
	out.Address, errs = d.Address.Check("address")
	bad = append(bad, errs...)
	if strings.TrimSpace(string(d.VATID)) != "" {
		v, err := party.ParseVATID("vat_id", string(d.VATID))
		bad = append(bad, fieldsOf(err)...)
		out.VATID = v
	}
	out.TaxNumber, errs = party.Line("tax_number", d.TaxNumber, maxTaxNumber, false)
	bad = append(bad, errs...)
	out.Registration, errs = party.Line("registration", d.Registration, maxRegistration, false)
	bad = append(bad, errs...)
	out.Contact, errs = d.Contact.Check("contact")
	bad = append(bad, errs...)
	if len(d.BankAccounts) > MaxBankAccounts {
		fail("bank_accounts", "must be at most %d accounts, not %d", MaxBankAccounts, len(d.BankAccounts))
	}
	seen := map[party.IBAN]int{}
	for i, b := range d.BankAccounts {
		at := fmt.Sprintf("bank_accounts[%d]", i)
		b, errs := b.Check(at)
		bad = append(bad, errs...)
		if len(errs) > 0 {
			continue
		}
		if j, dup := seen[b.IBAN]; dup {
			fail(at+".iban", "is bank_accounts[%d]'s IBAN already: list each account once", j)
			continue
		}
		seen[b.IBAN] = i
		out.BankAccounts = append(out.BankAccounts, b)
	}
	if t := d.PaymentTermsDays; t != nil && (*t < 0 || *t > MaxPaymentTermsDays) {
		fail("payment_terms_days", "must be from 0 (due on receipt) to %d days, or null for no default", MaxPaymentTermsDays)
	}
	if len(bad) > 0 {
		return Details{}, problem.Validation(bad...)
	}
	return out, nil
}

// fieldsOf returns the field errors of a VALIDATION_FAILED err.
func fieldsOf(err error) []problem.FieldError {
	if pe, ok := problem.As(err); ok {
		return pe.Errors
	}
	return nil
}

// Precondition is what a change is based on (RFC 9110 §13.1): the
// version it read, with If-Match (a seller must be set, at a version it
// names), or that no seller is set yet, with If-None-Match: *. A change
// must state one, so that it never overwrites one made meanwhile unseen;
// the zero value states none.
type Precondition struct {
	// Exists: If-Match was sent, * or tags; Match is what it names.
	Exists bool
	Match  etag.IfMatch
	// Absent: If-None-Match: * was sent.
	Absent bool
}

// IfMatch is the precondition of a change based on version v.
func IfMatch(v int64) Precondition { return Precondition{Exists: true, Match: etag.MatchVersion(v)} }

// IfNoneSet is the precondition of setting the first seller.
func IfNoneSet() Precondition { return Precondition{Absent: true} }

// CodePreconditionRequired is the 428 problem code (RFC 6585 §3) of a
// change that names no version it is based on.
const CodePreconditionRequired = "PRECONDITION_REQUIRED"

// check honours p on the seller at version current (0: none set).
func (p Precondition) check(current int64) error {
	switch {
	case !p.Exists && !p.Absent:
		e := problem.New(http.StatusPreconditionRequired, CodePreconditionRequired,
			"a change of the seller must name the version it is based on: send If-Match with the ETag GET /v1/seller answered "+
				"(If-None-Match: * to set the first seller), so that a change made meanwhile is not overwritten")
		e.Errors = []problem.FieldError{{Field: "If-Match", Message: "is required"}}
		return e
	case p.Absent && current != 0:
		return problem.New(http.StatusPreconditionFailed, etag.CodeVersionMismatch, fmt.Sprintf(
			"the seller is set already, at version %d; fetch it and send If-Match with its ETag", current)).With("current_version", current)
	case p.Exists && current == 0:
		return problem.New(http.StatusPreconditionFailed, etag.CodeVersionMismatch,
			"no seller is set yet: set the first with If-None-Match: * instead of If-Match").With("current_version", int64(0))
	case p.Exists:
		return etag.CheckIfMatch(p.Match, current)
	}
	return nil
}

// Service reads and changes the seller.
type Service struct {
	db  store.Executor
	now func() time.Time
}

// NewService returns the service over db; now is the clock (nil:
// time.Now).
func NewService(db store.Executor, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{db: db, now: now}
}

// Get returns the seller as db sees it, nil when none is set: over a
// caller's transaction, the seller that transaction reads.
func Get(ctx context.Context, db store.Executor) (*Seller, error) {
	return sellerGet(ctx, db)
}

// Get returns the seller, 404 while none is set.
func (s *Service) Get(ctx context.Context) (*Seller, error) {
	sl, err := Get(ctx, s.db)
	if err != nil {
		return nil, err
	}
	if sl == nil {
		return nil, problem.New(http.StatusNotFound, problem.CodeNotFound,
			"no seller is set yet: an admin sets it with PUT /v1/seller (If-None-Match: *) or `invoiced seller set`")
	}
	return sl, nil
}

// Set replaces the seller's details with in as admin p, arriving by via,
// if pre holds. Setting what is there already changes nothing. A change
// makes the next version and is audited as seller.changed with the
// details before (null for the first) and after.
func (s *Service) Set(ctx context.Context, p identity.Principal, via capability.Path, in Details, pre Precondition) (*Seller, error) {
	d, err := in.Check()
	if err != nil {
		return nil, err
	}
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Seller, error) {
		// The admin's row first, shared until commit: an admin disabled
		// or demoted while this runs changes nothing.
		u, err := identity.UserAdminLockTx(ctx, tx, p.UserID, "change the seller")
		if err != nil {
			return nil, err
		}
		current, err := sellerLockTx(ctx, tx)
		if err != nil {
			return nil, err
		}
		var version int64
		var before *Details
		if current != nil {
			version, before = current.Version, &current.Details
		}
		if err := pre.check(version); err != nil {
			return nil, err
		}
		if before != nil && same(*before, d) {
			return current, nil
		}
		next := &Seller{Details: d, Version: version + 1, UpdatedAt: s.now().UTC().Truncate(time.Microsecond),
			UpdatedBy: &UserRef{ID: u.ID, Username: u.Username}}
		if err := sellerPutTx(ctx, tx, next); err != nil {
			return nil, err
		}
		_, err = audit.AppendTx(ctx, tx, audit.Event{Type: "seller.changed", ActorID: u.ID.String(), Actor: u.Username, Via: string(via),
			SubjectType: "seller", SubjectID: fmt.Sprint(next.Version),
			Data: map[string]any{"version": next.Version, "before": before, "after": d}})
		return next, err
	})
}

// Seed sets d as the first seller, by no user, from the settings named,
// unless a seller is set: then it changes nothing and returns that one
// and false. Audited as seller.seeded, by the system.
func (s *Service) Seed(ctx context.Context, in Details, settings []string) (*Seller, bool, error) {
	d, err := in.Check()
	if err != nil {
		return nil, false, err
	}
	type result struct {
		s      *Seller
		seeded bool
	}
	r, err := store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (result, error) {
		current, err := sellerLockTx(ctx, tx)
		if err != nil || current != nil {
			return result{s: current}, err
		}
		first := &Seller{Details: d, Version: 1, UpdatedAt: s.now().UTC().Truncate(time.Microsecond)}
		if err := sellerPutTx(ctx, tx, first); err != nil {
			return result{}, err
		}
		_, err = audit.AppendTx(ctx, tx, audit.Event{Type: "seller.seeded", Actor: "system", Via: string(capability.PathSystem),
			SubjectType: "seller", SubjectID: "1",
			Data: map[string]any{"version": 1, "settings": settings, "after": d}})
		return result{s: first, seeded: true}, err
	})
	return r.s, r.seeded, err
}

// same reports whether two normalised details say the same.
func same(a, b Details) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}
