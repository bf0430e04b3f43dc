package webhooks

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/outbox"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Config is shared by the admin service and the deliverer.
type Config struct {
	// AllowPrivate lets endpoints reach private, loopback and link-local
	// addresses (INVOICED_WEBHOOKS_ALLOW_PRIVATE=true): for a receiver on
	// the same network, and tests.
	AllowPrivate bool
	// RetrySchedule is the wait before each retry
	// (INVOICED_WEBHOOK_RETRY_SCHEDULE); nil means DefaultRetrySchedule.
	RetrySchedule outbox.RetrySchedule
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// DefaultRetrySchedule is the Standard Webhooks example schedule without
// its last step: 9 retries over 71 h 35 min, the last one three days after
// the event.
func DefaultRetrySchedule() outbox.RetrySchedule {
	return outbox.RetrySchedule{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
		10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 20 * time.Hour}
}

func (c Config) withDefaults() Config {
	if c.RetrySchedule == nil {
		c.RetrySchedule = DefaultRetrySchedule()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Schedule is the retry schedule in force.
func (c Config) Schedule() outbox.RetrySchedule { return c.withDefaults().RetrySchedule }

func (c Config) now() time.Time { return c.Now().UTC().Truncate(time.Microsecond) }

// Inserter enqueues a job in a transaction (outbox.Emitter).
type Inserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) error
}

// Service is what admins do with endpoints and deliveries, over the API and
// the CLI alike: every change is audited (never with a secret).
type Service struct {
	db   store.Executor
	jobs Inserter
	cfg  Config
}

// NewService returns the admin service; jobs enqueues redeliveries.
func NewService(db store.Executor, jobs Inserter, cfg Config) *Service {
	return &Service{db: db, jobs: jobs, cfg: cfg.withDefaults()}
}

// rotationOverlap is how long the replaced secret still signs after a
// rotation: a day to deploy the new one to the receiver.
const rotationOverlap = 24 * time.Hour

func requireAdmin(p identity.Principal) error {
	if p.Role != identity.RoleAdmin {
		return problem.Forbidden("only admins manage webhooks")
	}
	return nil
}

// adminLockTx locks the acting admin p until the caller's transaction
// ends and refuses (403 FORBIDDEN) unless they are still an enabled
// admin: p's role is what it was when the request was authenticated, and
// an admin disabled or demoted since must not have the change take effect.
func adminLockTx(ctx context.Context, tx pgx.Tx, p identity.Principal) error {
	_, err := identity.UserAdminLockTx(ctx, tx, p.UserID, "manage webhooks")
	return err
}

// checkTarget refuses a URL whose host resolves to an address deliveries
// may not reach (unless AllowPrivate). Deliveries check each connection's
// address again, since DNS may answer otherwise later.
func (s *Service) checkTarget(ctx context.Context, u *url.URL) error {
	if s.cfg.AllowPrivate {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil || len(addrs) == 0 {
		return problem.Invalid("url", "host %q does not resolve", u.Hostname())
	}
	for _, a := range addrs {
		if err := guard.SafeAddr(a.Unmap()); err != nil {
			return problem.Invalid("url", "host %q resolves to %s, a private, loopback or link-local address; set INVOICED_WEBHOOKS_ALLOW_PRIVATE=true to allow such receivers", u.Hostname(), netip.Addr.String(a))
		}
	}
	return nil
}

// auditURL is an endpoint's URL as the audit chain keeps it: without user
// information or query, which may carry a receiver's credential.
func auditURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

func (s *Service) audit(ctx context.Context, tx pgx.Tx, p identity.Principal, via capability.Path, typ string, e *Endpoint, data map[string]any) error {
	return auditEndpoint(ctx, tx, audit.Event{Type: typ, ActorID: p.UserID.String(), Actor: p.Username, Via: string(via)}, e, data)
}

// auditEndpoint appends ev about endpoint e: its URL as auditURL keeps it,
// its version, and data; never its secret.
func auditEndpoint(ctx context.Context, tx pgx.Tx, ev audit.Event, e *Endpoint, data map[string]any) error {
	if data == nil {
		data = map[string]any{}
	}
	data["url"] = auditURL(e.URL)
	data["version"] = e.Version
	ev.SubjectType, ev.SubjectID, ev.Data = "webhook_endpoint", e.ID.String(), data
	_, err := audit.AppendTx(ctx, tx, ev)
	return err
}

// Add creates an endpoint subscribed to eventTypes and returns it with its
// secret, shown this once.
func (s *Service) Add(ctx context.Context, p identity.Principal, via capability.Path, rawURL string, eventTypes []string) (*WithSecret, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	u, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	types, err := parseEvents(eventTypes)
	if err != nil {
		return nil, err
	}
	if err := s.checkTarget(ctx, u); err != nil {
		return nil, err
	}
	secret, err := newSecret()
	if err != nil {
		return nil, err
	}
	e := &Endpoint{ID: uuid.Must(uuid.NewV7()), URL: u.String(), Events: types, CreatedBy: p.UserID, CreatedAt: s.cfg.now(), secret: secret}
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*WithSecret, error) {
		if err := adminLockTx(ctx, tx, p); err != nil {
			return nil, err
		}
		out, err := endpointInsertTx(ctx, tx, e)
		if err != nil {
			return nil, err
		}
		if err := s.audit(ctx, tx, p, via, "webhook_endpoint.added", out, map[string]any{"events": out.Events}); err != nil {
			return nil, err
		}
		return &WithSecret{Endpoint: out, Secret: secret}, nil
	})
}

// List returns a page of endpoints, newest first.
func (s *Service) List(ctx context.Context, p identity.Principal, req page.Request) (page.List[*Endpoint], error) {
	if err := requireAdmin(p); err != nil {
		return page.List[*Endpoint]{}, err
	}
	rows, err := endpointList(ctx, s.db, req.Ahead())
	if err != nil {
		return page.List[*Endpoint]{}, err
	}
	return page.Of(rows, req.Limit), nil
}

// Get returns an endpoint.
func (s *Service) Get(ctx context.Context, p identity.Principal, id uuid.UUID) (*Endpoint, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	return EndpointGet(ctx, s.db, id)
}

// change runs fn on endpoint id, locked and at a version ifMatch names (any, if none).
func (s *Service) change(ctx context.Context, p identity.Principal, id uuid.UUID, ifMatch etag.IfMatch,
	fn func(ctx context.Context, tx pgx.Tx, e *Endpoint, now time.Time) (*Endpoint, error),
) (*Endpoint, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Endpoint, error) {
		if err := adminLockTx(ctx, tx, p); err != nil {
			return nil, err
		}
		e, err := endpointLockTx(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		if err := etag.CheckIfMatch(ifMatch, e.Version); err != nil {
			return nil, err
		}
		return fn(ctx, tx, e, s.cfg.now())
	})
}

// SetEnabled disables an endpoint (deliveries to it stop; those pending
// fail) or enables it again. Doing what is already done changes nothing.
func (s *Service) SetEnabled(ctx context.Context, p identity.Principal, via capability.Path, id uuid.UUID, ifMatch etag.IfMatch, enabled bool) (*Endpoint, error) {
	return s.change(ctx, p, id, ifMatch, func(ctx context.Context, tx pgx.Tx, e *Endpoint, now time.Time) (*Endpoint, error) {
		if e.Enabled == enabled {
			return e, nil
		}
		reason, typ := "", "webhook_endpoint.enabled"
		if !enabled {
			reason, typ = "disabled by "+p.Username, "webhook_endpoint.disabled"
		}
		out, err := endpointSetEnabledTx(ctx, tx, e, enabled, reason, now)
		if err != nil {
			return nil, err
		}
		return out, s.audit(ctx, tx, p, via, typ, out, nil)
	})
}

// RotateSecret gives an endpoint a new secret; the old one keeps signing
// (a second signature) for rotationOverlap.
func (s *Service) RotateSecret(ctx context.Context, p identity.Principal, via capability.Path, id uuid.UUID, ifMatch etag.IfMatch) (*WithSecret, error) {
	secret, err := newSecret()
	if err != nil {
		return nil, err
	}
	e, err := s.change(ctx, p, id, ifMatch, func(ctx context.Context, tx pgx.Tx, e *Endpoint, now time.Time) (*Endpoint, error) {
		out, err := endpointRotateTx(ctx, tx, e, secret, now.Add(rotationOverlap), now)
		if err != nil {
			return nil, err
		}
		return out, s.audit(ctx, tx, p, via, "webhook_endpoint.secret_rotated", out, map[string]any{
			"previous_secret_until": out.PreviousSecretUntil.Format(time.RFC3339Nano),
		})
	})
	if err != nil {
		return nil, err
	}
	return &WithSecret{Endpoint: e, Secret: secret}, nil
}

// Deliveries returns a page of an endpoint's deliveries with their attempts.
func (s *Service) Deliveries(ctx context.Context, p identity.Principal, endpoint uuid.UUID, req page.Request) (page.List[*Delivery], error) {
	if _, err := s.Get(ctx, p, endpoint); err != nil {
		return page.List[*Delivery]{}, err
	}
	rows, err := deliveryList(ctx, s.db, endpoint, req.Ahead())
	if err != nil {
		return page.List[*Delivery]{}, err
	}
	return page.Of(rows, req.Limit), nil
}

// Delivery returns a delivery with its attempts.
func (s *Service) Delivery(ctx context.Context, p identity.Principal, id uuid.UUID) (*Delivery, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	return DeliveryGet(ctx, s.db, id)
}

// Redeliver sends a delivery again, whatever became of it, with the same
// webhook-id and body: the receiver dedupes by the id. The endpoint must be
// enabled.
func (s *Service) Redeliver(ctx context.Context, p identity.Principal, via capability.Path, id uuid.UUID) (*Delivery, error) {
	if err := requireAdmin(p); err != nil {
		return nil, err
	}
	return store.WithTxResult(ctx, s.db, func(ctx context.Context, tx pgx.Tx) (*Delivery, error) {
		if err := adminLockTx(ctx, tx, p); err != nil {
			return nil, err
		}
		d, err := DeliveryGet(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		e, err := endpointLockTx(ctx, tx, d.EndpointID)
		if err != nil {
			return nil, err
		}
		if !e.Enabled {
			return nil, problem.Conflict(problem.CodeConflict, fmt.Sprintf("webhook endpoint %s is disabled (%s); enable it first", e.ID, e.DisabledReason))
		}
		if err := deliveryResetTx(ctx, tx, id, s.cfg.now()); err != nil {
			return nil, err
		}
		if err := s.jobs.InsertTx(ctx, tx, deliverArgs{DeliveryID: id}, redeliverOpts()); err != nil {
			return nil, err
		}
		if err := s.audit(ctx, tx, p, via, "webhook_delivery.redelivered", e, map[string]any{
			"delivery_id": id.String(), "event_id": d.EventID.String(), "event_type": string(d.EventType),
		}); err != nil {
			return nil, err
		}
		// In the transaction: a request's effect commits after its answer
		// is written (ADR-0020), so a read beside it would show the
		// delivery as it was.
		return DeliveryGet(ctx, tx, id)
	})
}

// redeliverOpts are a redelivery job's options: one job while one is
// waiting or running, so a double click sends once.
func redeliverOpts() *river.InsertOpts {
	return &river.InsertOpts{UniqueOpts: river.UniqueOpts{
		ByArgs: true,
		ByState: []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
			rivertype.JobStateRetryable, rivertype.JobStateScheduled},
	}}
}
