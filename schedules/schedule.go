// Package schedules holds recurring invoices (issue 43): a schedule drafts
// one invoice per period of its cadence for one customer, with line
// templates whose "{period}" is filled per period. Run drafts each period
// that has begun, once per (schedule, period), whoever runs it and however
// late.
package schedules

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/page"
)

// Unit is a cadence's unit.
type Unit string

// The units of a cadence.
const (
	Day   Unit = "day"
	Week  Unit = "week"
	Month Unit = "month"
	Year  Unit = "year"
)

// maxEvery bounds N in "every N units": 366 (a yearly cadence in days) is
// the longest anyone writes; beyond it a typo is likelier than intent.
const maxEvery = 366

// Every is a cadence: every N days, weeks, months or years. In JSON it is
// a string such as "1 month", "2 weeks", "10 days".
type Every struct {
	N    int
	Unit Unit
}

// ParseEvery reads "N unit" or "N units".
func ParseEvery(s string) (Every, error) {
	num, unit, ok := strings.Cut(strings.TrimSpace(s), " ")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 1 || n > maxEvery {
		return Every{}, fmt.Errorf("%q is not a cadence: write N days, weeks, months or years with N from 1 to %d, such as \"1 month\"", s, maxEvery)
	}
	u := Unit(strings.TrimSuffix(strings.TrimSpace(unit), "s"))
	switch u {
	case Day, Week, Month, Year:
		return Every{N: n, Unit: u}, nil
	}
	return Every{}, fmt.Errorf("%q is not a cadence: the unit is days, weeks, months or years", s)
}

func (e Every) String() string {
	if e.N == 1 {
		return "1 " + string(e.Unit)
	}
	return fmt.Sprintf("%d %ss", e.N, e.Unit)
}

// MarshalJSON writes the cadence as its string.
func (e Every) MarshalJSON() ([]byte, error) { return json.Marshal(e.String()) }

// Issue says what the job does with a period's draft.
type Issue string

const (
	// IssueNever leaves the draft for a person to issue.
	IssueNever Issue = "never"
	// IssueUnderAllowance issues it drawing the named standing allowance.
	IssueUnderAllowance Issue = "under_allowance"
)

// Schedule is a recurring invoice.
type Schedule struct {
	ID               uuid.UUID            `json:"id"`
	CustomerID       uuid.UUID            `json:"customer_id"`
	Currency         string               `json:"currency"`
	Every            Every                `json:"every"`
	DayOfMonth       *int                 `json:"day_of_month"`
	Start            invoices.Date        `json:"start"`
	End              *invoices.Date       `json:"end"`
	Count            *int                 `json:"count"`
	Lines            []invoices.LineInput `json:"lines"`
	PaymentTermsDays *int                 `json:"payment_terms_days"`
	Issue            Issue                `json:"issue"`
	AllowanceID      *uuid.UUID           `json:"allowance_id"`
	CreatedBy        uuid.UUID            `json:"created_by"`
	CreatedAt        time.Time            `json:"created_at"`
	UpdatedAt        time.Time            `json:"updated_at"`
	DeletedAt        *time.Time           `json:"deleted_at"`
	// Version is the schedule's ETag: PATCH with If-Match changes the
	// version it read or nothing.
	Version int64 `json:"version"`
}

// ResourceVersion is the version its ETag carries.
func (s *Schedule) ResourceVersion() int64 { return s.Version }

// Cursor is the schedule's position in the list.
func (s *Schedule) Cursor() page.Cursor { return page.Cursor{CreatedAt: s.CreatedAt, ID: s.ID} }

// RunStatus is what became of one period.
type RunStatus string

// The statuses of a run.
const (
	RunDrafted RunStatus = "drafted"
	RunFailed  RunStatus = "failed"
	// RunIssued: the draft was issued under a standing allowance;
	// RunWaiting: no allowance covered it, and its approval was asked.
	RunIssued  RunStatus = "issued"
	RunWaiting RunStatus = "waiting"
)

// Run is one period of a schedule, drafted or failed.
type Run struct {
	ID          uuid.UUID     `json:"id"`
	ScheduleID  uuid.UUID     `json:"schedule_id"`
	PeriodStart invoices.Date `json:"period_start"`
	PeriodEnd   invoices.Date `json:"period_end"`
	InvoiceID   *uuid.UUID    `json:"invoice_id"`
	Status      RunStatus     `json:"status"`
	Error       string        `json:"error"`
	// ApprovalID is the approval a waiting draft asked for; AllowanceID
	// the allowance an issued one drew; Note why a draft of a schedule
	// that issues was not issued.
	ApprovalID  *uuid.UUID `json:"approval_id"`
	AllowanceID *uuid.UUID `json:"allowance_id"`
	Note        string     `json:"note"`
	CreatedAt   time.Time  `json:"created_at"`
	// Issue is what the schedule did with drafts when this one was made:
	// a schedule switched to under_allowance issues only what it drafts
	// from then on.
	Issue Issue `json:"-"`
}

// Cursor is the run's position in its schedule's list.
func (r *Run) Cursor() page.Cursor { return page.Cursor{CreatedAt: r.CreatedAt, ID: r.ID} }

func date(y int, m time.Month, d int) invoices.Date {
	return invoices.Date{Time: time.Date(y, m, d, 0, 0, 0, 0, time.UTC)}
}

// monthDay is day d of month m of year y, or the month's last day when it
// has fewer (the 31st in February is the 28th or 29th).
func monthDay(y int, m time.Month, d int) invoices.Date {
	first := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	last := first.AddDate(0, 1, -1).Day()
	return date(first.Year(), first.Month(), min(d, last))
}

// anchor is the start of the k-th step of the cadence from the schedule's
// start, before the first period is chosen. Months and years count from
// the start's month, each landing on the day of month clamped, so a
// schedule on the 31st is on the 31st again after February.
func (s *Schedule) anchor(k int) invoices.Date {
	st := s.Start.Time
	switch s.Every.Unit {
	case Day:
		return invoices.Date{Time: st.AddDate(0, 0, k*s.Every.N)}
	case Week:
		return invoices.Date{Time: st.AddDate(0, 0, 7*k*s.Every.N)}
	}
	months := k * s.Every.N
	if s.Every.Unit == Year {
		months *= 12
	}
	day := st.Day()
	if s.DayOfMonth != nil {
		day = *s.DayOfMonth
	}
	return monthDay(st.Year(), st.Month()+time.Month(months), day)
}

// Period returns the i-th period (from 0) and whether the schedule has
// one: periods begin on or after start, on or before end, at most count
// of them. A period ends the day before the next begins.
func (s *Schedule) Period(i int) (invoices.Period, bool) {
	k := i
	if s.anchor(0).Before(s.Start.Time) {
		// A day of month earlier than the start's: the first period
		// begins on it in the next step.
		k++
	}
	if s.Count != nil && i >= *s.Count {
		return invoices.Period{}, false
	}
	p := invoices.Period{Start: s.anchor(k), End: invoices.Date{Time: s.anchor(k+1).AddDate(0, 0, -1)}}
	if s.End != nil && p.Start.After(s.End.Time) {
		return invoices.Period{}, false
	}
	return p, true
}

// PeriodPlaceholder in a line's description is replaced by the period.
const PeriodPlaceholder = "{period}"

// linesFor returns the schedule's lines for period p.
func (s *Schedule) linesFor(p invoices.Period) []invoices.LineInput {
	out := make([]invoices.LineInput, len(s.Lines))
	text := p.Start.String() + " – " + p.End.String()
	for i, l := range s.Lines {
		l.Description = strings.ReplaceAll(l.Description, PeriodPlaceholder, text)
		out[i] = l
	}
	return out
}
