package reminders

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/sending"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// The 409 problem codes of a reminder that cannot be sent.
const (
	CodeNotOverdue   = "INVOICE_NOT_OVERDUE"
	CodeDisputed     = "INVOICE_DISPUTED"
	CodeOnHold       = "CUSTOMER_ON_HOLD"
	CodeAlreadySent  = "REMINDER_ALREADY_SENT"
	CodeNoLevelAhead = "NO_REMINDER_LEVEL_LEFT"
)

// Config is what the service needs beyond the database and sending.
type Config struct {
	// Today is the business day overdue counts from
	// (invoices.Service.BusinessToday, on the injectable clock).
	Today func() invoices.Date
	// Now is the clock the settings' changes are stamped with.
	Now func() time.Time
	Log *slog.Logger
}

// Service keeps the reminder settings and sends the reminders.
type Service struct {
	db    store.Executor
	send  *sending.Service
	today func() invoices.Date
	now   func() time.Time
	log   *slog.Logger
}

// New returns the service over db, mailing through send.
func New(db store.Executor, send *sending.Service, cfg Config) *Service {
	s := &Service{db: db, send: send, today: cfg.Today, now: cfg.Now, log: cfg.Log}
	if s.now == nil {
		s.now = time.Now
	}
	if s.today == nil {
		s.today = func() invoices.Date {
			y, m, d := s.now().UTC().Date()
			return invoices.Date{Time: time.Date(y, m, d, 0, 0, 0, 0, time.UTC)}
		}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Settings reads the reminder settings.
func (s *Service) Settings(ctx context.Context) (*Settings, error) { return SettingsGet(ctx, s.db) }

// SetSettings replaces the settings with in as admin p, by via, if match
// (when given) names the current version. Turning automatic reminders on
// or off, and any other change, makes the next version and is audited as
// reminders.settings_changed with the settings before and after;
// setting what is there changes nothing.
func (s *Service) SetSettings(ctx context.Context, p identity.Principal, via capability.Path, in Input, match *etag.IfMatch) (*Settings, error) {
	levels, err := in.Check()
	if err != nil {
		return nil, err
	}
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Settings, error) {
		u, err := identity.UserAdminLockTx(ctx, tx, p.UserID, "change the reminder settings")
		if err != nil {
			return nil, err
		}
		cur, err := SettingsLockTx(ctx, tx)
		if err != nil {
			return nil, err
		}
		if match != nil {
			if err := etag.CheckIfMatch(*match, cur.Version); err != nil {
				return nil, err
			}
		}
		next := &Settings{Automatic: in.Automatic, StopAfterLevel: in.StopAfterLevel, Levels: levels,
			Version: cur.Version + 1, UpdatedAt: s.clock(), UpdatedBy: &u.ID}
		if same(cur, next) {
			return cur, nil
		}
		if err := SettingsReplaceTx(ctx, tx, next); err != nil {
			return nil, err
		}
		_, err = audit.AppendTx(ctx, tx, audit.Event{Type: "reminders.settings_changed", ActorID: u.ID.String(), Actor: u.Username,
			Via: string(via), SubjectType: "reminder_settings", SubjectID: fmt.Sprint(next.Version),
			Data: map[string]any{"before": cur, "after": next}})
		return next, err
	})
}

// same: b changes nothing of a.
func same(a, b *Settings) bool {
	x, y := *a, *b
	x.Version, x.UpdatedAt, x.UpdatedBy = 0, time.Time{}, nil
	y.Version, y.UpdatedAt, y.UpdatedBy = 0, time.Time{}, nil
	return canonical(x) == canonical(y)
}

// canonical is s in a form compared by value (fmt prints maps sorted).
func canonical(s Settings) string {
	stop := "nil"
	if s.StopAfterLevel != nil {
		stop = fmt.Sprint(*s.StopAfterLevel)
	}
	return fmt.Sprintf("%v %s %v", s.Automatic, stop, s.Levels)
}

// due is the level an invoice is due to be reminded at on its day
// overdue, and whether the automatic reminders may send it: the highest
// level reached that is above the last one sent, or, before one is
// reached, the next one and the day it falls due.
type due struct {
	level *Level
	// on is when it falls due.
	on time.Time
	// reached: today is on or after on.
	reached bool
}

// next is o's next reminder under st; nil when no level is left.
func next(st *Settings, o open) *due {
	var d *due
	for i := range st.Levels {
		l := &st.Levels[i]
		if l.Level <= o.LastLevel {
			continue
		}
		on := o.DueDate.AddDate(0, 0, l.DaysPastDue)
		if o.DaysOverdue >= l.DaysPastDue {
			d = &due{level: l, on: on, reached: true}
			continue
		}
		if d == nil {
			d = &due{level: l, on: on}
		}
		break
	}
	return d
}

// automatic: the automatic reminders may send level l.
func automatic(st *Settings, l *Level) bool {
	return st.StopAfterLevel == nil || l.Level <= *st.StopAfterLevel
}

// RunResult is what one run of the automatic reminders did.
type RunResult struct {
	Sent    int
	Skipped int
	Failed  int
}

// RunDue sends every reminder that has fallen due, when automatic
// reminders are on and this server sends mail: one per invoice, at the
// highest level it reached and has not had. Two runs at once (two
// replicas, a run that outlasts its period) send each once: the unique
// index on the sendings lets the second insert nothing. A reminder that
// fails to render is logged and counted, and the run goes on.
func (s *Service) RunDue(ctx context.Context) (RunResult, error) {
	var res RunResult
	st, err := SettingsGet(ctx, s.db)
	if err != nil || !st.Automatic {
		return res, err
	}
	today := s.today()
	list, err := openList(ctx, s.db, today, nil)
	if err != nil {
		return res, err
	}
	for _, o := range list {
		d := next(st, o)
		if o.Disputed || o.Held || o.Email == "" || d == nil || !d.reached || !automatic(st, d.level) {
			continue
		}
		_, err := s.sendLevel(ctx, sending.System, o.InvoiceID, d.level, today)
		switch {
		case err == nil:
			res.Sent++
		case problem.HasCode(err, CodeAlreadySent) || problem.HasCode(err, CodeDisputed) || problem.HasCode(err, CodeOnHold) ||
			problem.HasCode(err, CodeNotOverdue):
			res.Skipped++
		case problem.HasCode(err, sending.CodeMailNotConfigured):
			return res, nil
		default:
			res.Failed++
			s.log.WarnContext(ctx, "reminder not sent", "invoice_id", o.InvoiceID, "level", d.level.Level, "err", err)
		}
	}
	return res, nil
}

// sendLevel renders and records invoice id's reminder at level l as by:
// rendered outside the transaction, then, with the invoice and its
// customer held, checked again (still owing and overdue, not disputed,
// not on hold) and recorded, or REMINDER_ALREADY_SENT when the level was
// sent meanwhile.
func (s *Service) sendLevel(ctx context.Context, by sending.Actor, id uuid.UUID, l *Level, today invoices.Date) (*sending.Sending, error) {
	p, err := s.send.PrepareReminder(ctx, sending.Reminder{InvoiceID: id, Level: l.Level, By: by,
		Write: func(d *document.Document) (string, string, error) { return letter(d, l, today) }})
	if err != nil {
		return nil, err
	}
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*sending.Sending, error) {
		o, ok, err := openShareTx(ctx, tx, today, id)
		if err != nil {
			return nil, err
		}
		if err := remindable(o, ok); err != nil {
			return nil, err
		}
		sn, ok, err := s.send.RecordReminderTx(ctx, tx, p)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, problem.Conflict(CodeAlreadySent, fmt.Sprintf("invoice %s had its level %d reminder already", o.Number, l.Level)).
				With("level", l.Level)
		}
		return sn, nil
	})
}

// remindable is nil when o (ok: still open) may be reminded of, else
// the 409 that says why not.
func remindable(o open, ok bool) error {
	switch {
	case !ok:
		return problem.Conflict(CodeNotOverdue, "the invoice owes nothing, is not issued or has no due date: there is nothing to remind of")
	case o.DaysOverdue < 1:
		return problem.Conflict(CodeNotOverdue, fmt.Sprintf("invoice %s is not overdue yet: it is due on %s", o.Number, o.DueDate.Format(time.DateOnly)))
	case o.Disputed:
		return problem.Conflict(CodeDisputed, fmt.Sprintf("the customer disputes invoice %s: resolve the dispute (set-invoice-dispute) before reminding them", o.Number))
	case o.Held:
		return problem.Conflict(CodeOnHold, fmt.Sprintf("%s is on hold: release the hold (set-customer-hold) before reminding them", o.CustomerName))
	}
	return nil
}

// letter writes level l's mail for d, in d's language.
func letter(d *document.Document, l *Level, today invoices.Date) (string, string, error) {
	lang := d.Language
	w, ok := l.Wording[string(lang)]
	if !ok {
		lang = document.English
		w = l.Wording[string(lang)]
	}
	var balance int64
	if d.Balance != nil {
		balance = *d.Balance
	}
	data := Data{Number: d.Number, Seller: d.Seller.Name, Date: lang.Date(d.IssueDate), Due: lang.Date(d.DueDate),
		Total: lang.Money(d.Total, d.Currency), Balance: lang.Money(balance, d.Currency), Level: l.Level,
		DaysOverdue: int(today.Sub(d.DueDate).Hours() / 24)}
	subject, err := write(w.Subject, data)
	if err != nil {
		return "", "", err
	}
	body, err := write(w.Body, data)
	return subject, body, err
}
