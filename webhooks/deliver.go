package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"code.dny.dev/ssrf"
	"github.com/google/uuid"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/outbox"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// guard refuses connections to addresses in IANA's special-purpose
// registries (loopback, private, link-local, CGNAT, …) on any port.
var guard = ssrf.New(ssrf.WithAnyPort())

// OwnerNotifier tells an endpoint's owner that it was disabled (by mail),
// as jobs inserted in the disabling transaction.
type OwnerNotifier interface {
	EndpointDisabledTx(ctx context.Context, tx pgx.Tx, owner, endpoint uuid.UUID, host, reason string) ([]river.InsertManyParams, error)
}

// Deliverer sends deliveries (the webhook.deliver worker).
type Deliverer struct {
	db     store.Executor
	cfg    Config
	owners OwnerNotifier
	client *http.Client
}

// requestTimeout bounds one attempt: the spec suggests 15–30 s.
const requestTimeout = 15 * time.Second

// NewDeliverer returns the deliverer; db is the pool its jobs use, owners
// may be nil (no mails).
func NewDeliverer(db store.Executor, cfg Config, owners OwnerNotifier) *Deliverer {
	cfg = cfg.withDefaults()
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	if !cfg.AllowPrivate {
		// The address is checked after DNS, on every connection: a host
		// that resolved to a public address when the endpoint was added
		// and to a private one now is refused now.
		dialer.Control = guard.Safe
	}
	// Idle connections per receiver: one per webhook worker (32), so busy
	// deliveries to one endpoint reuse connections instead of opening one
	// each.
	transport := &http.Transport{
		Proxy: nil, DialContext: dialer.DialContext, ForceAttemptHTTP2: true,
		MaxIdleConnsPerHost: 32, IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second,
	}
	return &Deliverer{db: db, cfg: cfg, owners: owners, client: &http.Client{
		Transport: transport, Timeout: requestTimeout,
		// A redirect is an answer, not a place to follow to (the spec
		// counts 3xx as a failure, and following could reach anywhere).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// payloadVersion versions the envelope: a change of its shape gets a new
// number.
const payloadVersion = 1

// envelope is a delivery's body.
type envelope struct {
	ID        uuid.UUID       `json:"id"`
	Type      events.Type     `json:"type"`
	Version   int             `json:"version"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// Fanout is the webhooks' outbox.Subscriber: in the fact's transaction, one
// delivery per enabled endpoint subscribed to the event's type, its body
// built once so every attempt sends the same bytes, and a job for each.
// It reads no settings, so the CLI fans out as the server does.
type Fanout struct{}

// HandleEventTx implements outbox.Subscriber.
func (Fanout) HandleEventTx(ctx context.Context, tx pgx.Tx, ev outbox.Event) ([]river.InsertManyParams, error) {
	body, err := json.Marshal(envelope{ID: ev.ID, Type: ev.Type, Version: payloadVersion, CreatedAt: ev.CreatedAt, Data: ev.Data})
	if err != nil {
		return nil, fmt.Errorf("webhook payload: %w", err)
	}
	ids, err := deliveriesInsertTx(ctx, tx, ev.ID, ev.Type, string(body), ev.CreatedAt)
	if err != nil {
		return nil, err
	}
	jobs := make([]river.InsertManyParams, len(ids))
	for i, id := range ids {
		jobs[i] = river.InsertManyParams{Args: deliverArgs{DeliveryID: id}}
	}
	return jobs, nil
}

// jobAttempts is River's bound on a delivery job's attempts. The retry
// schedule ends a delivery sooner: it is a setting of the replicas that
// work deliveries, not of the process (perhaps the CLI) whose fact
// inserted the job, so the worker reads it at each attempt.
const jobAttempts = 1000

// deliverArgs sends one delivery.
type deliverArgs struct {
	DeliveryID uuid.UUID `json:"delivery_id"`
}

func (deliverArgs) Kind() string { return "webhook.deliver" }

func (deliverArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: outbox.QueueWebhooks, MaxAttempts: jobAttempts}
}

type deliverWorker struct {
	river.WorkerDefaults[deliverArgs]
	d *Deliverer
}

// AddWorkers implements outbox.WorkerSet.
func (d *Deliverer) AddWorkers(w *river.Workers) { river.AddWorker(w, &deliverWorker{d: d}) }

// NextRetry follows the configured schedule; River's attempt count
// includes the one that just failed.
func (w *deliverWorker) NextRetry(job *river.Job[deliverArgs]) time.Time {
	return time.Now().Add(w.d.cfg.RetrySchedule.Delay(job.Attempt))
}

func (w *deliverWorker) Work(ctx context.Context, job *river.Job[deliverArgs]) error {
	final := job.Attempt >= min(w.d.cfg.RetrySchedule.Attempts(), job.MaxAttempts)
	err := w.d.deliver(ctx, job.Args.DeliveryID, final)
	if err != nil && final {
		// River would retry up to jobAttempts; the schedule is spent.
		return river.JobCancel(err)
	}
	return err
}

// errDisabled cancels the jobs of a disabled endpoint's deliveries.
var errDisabled = errors.New("the endpoint is disabled")

// deliver makes one attempt; final says no retry follows a failure.
func (d *Deliverer) deliver(ctx context.Context, id uuid.UUID, final bool) error {
	del, e, err := deliveryToSend(ctx, d.db, id)
	if err != nil {
		return err
	}
	if !e.Enabled {
		return river.JobCancel(errors.Join(errDisabled, deliveryFailTx(ctx, d.db, id, d.cfg.now())))
	}
	a, gone := d.attempt(ctx, e, del)
	status := StatusDelivered
	switch {
	case a.Error == "" && *a.StatusCode < 300:
	case gone || final:
		status = StatusFailed
	default:
		status = StatusPending
	}
	if err := attemptRecord(ctx, d.db, del, a, status); err != nil {
		return err
	}
	if status == StatusDelivered {
		return nil
	}
	failure := attemptError(a)
	if gone {
		return river.JobCancel(errors.Join(failure, d.disable(ctx, e, "the receiver answered 410 Gone")))
	}
	if final {
		return errors.Join(failure, d.disableIfDead(ctx, e, del))
	}
	return failure
}

// attemptError is a failed attempt as River records it: no URL, no body.
func attemptError(a Attempt) error {
	if a.Error != "" {
		return errors.New(a.Error)
	}
	return fmt.Errorf("the receiver answered %d", *a.StatusCode)
}

// responseHeadBytes is how much of an answer an attempt keeps.
const responseHeadBytes = 1024

// attempt sends the delivery once; gone says the receiver answered 410.
func (d *Deliverer) attempt(ctx context.Context, e *Endpoint, del *Delivery) (Attempt, bool) {
	start := time.Now()
	a := Attempt{AttemptedAt: d.cfg.now()}
	body := []byte(del.payload)
	sig, err := signature(del.EventID.String(), start, body, e.secrets(start))
	if err != nil {
		a.Error = err.Error()
		return a, false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		a.Error = "the endpoint URL cannot be requested"
		return a, false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "invoiced-webhooks")
	req.Header.Set("webhook-id", del.EventID.String())
	req.Header.Set("webhook-timestamp", fmt.Sprint(start.Unix()))
	req.Header.Set("webhook-signature", sig)
	resp, err := d.client.Do(req)
	a.DurationMS = int(time.Since(start).Milliseconds())
	if err != nil {
		a.Error = transportError(err)
		return a, false
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, responseHeadBytes))
	a.StatusCode, a.ResponseHead = &resp.StatusCode, storable(head)
	return a, resp.StatusCode == http.StatusGone
}

// transportError describes why no answer came, without the URL (which may
// carry a receiver's credential).
func transportError(err error) string {
	if errors.Is(err, ssrf.ErrProhibitedIP) {
		return "refused: the host resolves to a private, loopback or link-local address (INVOICED_WEBHOOKS_ALLOW_PRIVATE=true allows it)"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "Client.Timeout") {
		return fmt.Sprintf("no answer within %s", requestTimeout)
	}
	return err.Error()
}

// storable is text PostgreSQL keeps: valid UTF-8 without NUL, cut at a
// rune boundary.
func storable(b []byte) string {
	s := strings.ReplaceAll(strings.ToValidUTF8(string(b), "\uFFFD"), "\x00", "")
	if len(s) <= responseHeadBytes {
		return s
	}
	i := responseHeadBytes
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}
