// Package webhooks pushes events to other systems (an ERP, a ledger, a
// chat bot) as Standard Webhooks: endpoints that admins manage, one
// delivery per event and endpoint, signed, retried on a schedule for up to
// three days with the same webhook-id, every attempt recorded; an endpoint
// that keeps failing is disabled and its owner told. Endpoint URLs must not
// reach private, loopback or link-local addresses, checked when an
// endpoint is added and again on every connection (DNS rebinding).
package webhooks

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/url"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
)

// Endpoint is where events of the types it lists are delivered. Its
// secret is shown only when it is added or rotated.
type Endpoint struct {
	ID             uuid.UUID     `json:"id"`
	URL            string        `json:"url"`
	Events         []events.Type `json:"events"`
	Enabled        bool          `json:"enabled"`
	DisabledReason string        `json:"disabled_reason,omitempty"`
	// PreviousSecretUntil is when the secret replaced by the last
	// rotation stops signing too.
	PreviousSecretUntil *time.Time `json:"previous_secret_until,omitempty"`
	CreatedBy           uuid.UUID  `json:"created_by"`
	CreatedAt           time.Time  `json:"created_at"`
	UpdatedAt           time.Time  `json:"updated_at"`
	Version             int64      `json:"version"`

	secret, previousSecret string
}

// Cursor is the endpoint's position in the list order.
func (e *Endpoint) Cursor() page.Cursor { return page.Cursor{CreatedAt: e.CreatedAt, ID: e.ID} }

// secrets are the keys that sign a delivery now: the current one, and the
// previous one while a rotation lasts.
func (e *Endpoint) secrets(now time.Time) []string {
	out := []string{e.secret}
	if e.previousSecret != "" && e.PreviousSecretUntil != nil && now.Before(*e.PreviousSecretUntil) {
		out = append(out, e.previousSecret)
	}
	return out
}

// WithSecret is an endpoint with its signing secret, the answer to adding
// an endpoint or rotating its secret: the one time the secret is shown.
type WithSecret struct {
	*Endpoint
	Secret string `json:"secret"`
}

// Delivery statuses.
const (
	StatusPending   = "pending"
	StatusDelivered = "delivered"
	StatusFailed    = "failed"
)

// Delivery is one event sent to one endpoint, with its attempts.
type Delivery struct {
	ID          uuid.UUID   `json:"id"`
	EndpointID  uuid.UUID   `json:"endpoint_id"`
	EventID     uuid.UUID   `json:"event_id"`
	EventType   events.Type `json:"event_type"`
	Status      string      `json:"status"`
	Attempts    []Attempt   `json:"attempts"`
	CreatedAt   time.Time   `json:"created_at"`
	UpdatedAt   time.Time   `json:"updated_at"`
	DeliveredAt *time.Time  `json:"delivered_at,omitempty"`

	payload string
}

// Cursor is the delivery's position in the list order.
func (d *Delivery) Cursor() page.Cursor { return page.Cursor{CreatedAt: d.CreatedAt, ID: d.ID} }

// Attempt is one try of a delivery: the status the receiver answered, or
// the error that kept it from answering.
type Attempt struct {
	Attempt      int       `json:"attempt"`
	AttemptedAt  time.Time `json:"attempted_at"`
	StatusCode   *int      `json:"status_code,omitempty"`
	DurationMS   int       `json:"duration_ms"`
	ResponseHead string    `json:"response_head,omitempty"`
	Error        string    `json:"error,omitempty"`
}

// secretBytes is the signing key size: 32 random bytes (the spec asks for
// at least 24).
const secretBytes = 32

// newSecret returns a Standard Webhooks secret: whsec_ and base64.
func newSecret() (string, error) {
	var b [secretBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("secret entropy: %w", err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b[:]), nil
}

// maxURLLen matches the table's check.
const maxURLLen = 2048

// parseURL accepts absolute http(s) URLs with a host and no fragment.
func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return nil, problem.Invalid("url", "is required")
	case len(raw) > maxURLLen:
		return nil, problem.Invalid("url", "must be at most %d bytes", maxURLLen)
	case err != nil:
		return nil, problem.Invalid("url", "is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, problem.Invalid("url", "must be an http or https URL")
	case u.Hostname() == "":
		return nil, problem.Invalid("url", "must name a host")
	case u.Fragment != "" || u.RawFragment != "":
		return nil, problem.Invalid("url", "must not have a fragment")
	}
	return u, nil
}

// parseEvents validates a subscription list: at least one type, each
// known, none twice.
func parseEvents(in []string) ([]events.Type, error) {
	if len(in) == 0 {
		return nil, problem.Invalid("events", "must list at least one event type")
	}
	seen := map[events.Type]bool{}
	out := make([]events.Type, 0, len(in))
	for _, s := range in {
		t, err := events.ParseType("events", s)
		if err != nil {
			return nil, err
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out, nil
}
