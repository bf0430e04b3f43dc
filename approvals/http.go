package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/server"
	"github.com/labstack/echo/v4"
)

// Handler serves the /v1/approvals routes; app's route table lists them.
type Handler struct {
	// Svc lists, reads and decides approval requests.
	Svc *Service
	// Hub feeds the event stream; nil makes GET /v1/approvals/events 503.
	Hub *Hub
	// Heartbeat is how often an idle event stream sends a keep-alive and
	// re-checks the credential it was opened with; 0 means 15 s.
	Heartbeat time.Duration
}

// parseListParams reads ?status=&cursor=&limit= of the inbox list.
func parseListParams(c echo.Context) (ListParams, error) {
	var (
		p   ListParams
		err error
	)
	if v := c.QueryParam("status"); v != "" {
		if p.Status, err = ParseStatus(v); err != nil {
			return p, err
		}
	}
	p.Page, err = server.PageQuery(c)
	return p, err
}

// List answers GET /v1/approvals?status=&cursor=&limit=.
func (h *Handler) List(c echo.Context) error {
	p, err := parseListParams(c)
	if err != nil {
		return err
	}
	list, err := h.Svc.List(c.Request().Context(), p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// parseWait reads ?wait= as a Go duration ("30s") or whole seconds ("30").
func parseWait(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		n, aerr := strconv.Atoi(v)
		if aerr != nil {
			return 0, problem.Invalid("wait", "must be a duration such as 30s, at most %s", MaxWait)
		}
		// Checked before multiplying: 2^55 seconds would wrap to 0.
		if n < 0 || n > int(MaxWait/time.Second) {
			return 0, problem.Invalid("wait", "must be between 0s and %s", MaxWait)
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 || d > MaxWait {
		return 0, problem.Invalid("wait", "must be between 0s and %s", MaxWait)
	}
	return d, nil
}

// Get answers GET /v1/approvals/{id}; with ?wait= it long-polls until the
// request leaves the status it had when the poll began. A poll that waited
// longer than a heartbeat checks its credential again before it answers,
// as the event stream does.
func (h *Handler) Get(c echo.Context) error {
	id, err := server.PathID(c, "approval")
	if err != nil {
		return err
	}
	d, err := parseWait(c.QueryParam("wait"))
	if err != nil {
		return err
	}
	start := time.Now()
	a, err := h.Svc.Wait(c.Request().Context(), id, d)
	if err != nil {
		return err
	}
	if time.Since(start) > h.heartbeat() {
		if err := identity.Recheck(c.Request().Context()); err != nil {
			return err
		}
	}
	c.Response().Header().Set("ETag", etag.FromVersion(a.Version))
	return c.JSON(http.StatusOK, a)
}

// decisionBody is the body of approve and deny.
type decisionBody struct {
	Reason string `json:"reason"`
}

// decodeOptional decodes a JSON body into v when one was sent; field names
// the body's string member in a refusal of bytes that are not UTF-8 (the
// decoder would quietly turn them into U+FFFD).
func decodeOptional(c echo.Context, v any, field string) error {
	body, err := server.ReadBody(c)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if !utf8.Valid(body) {
		return problem.Invalid(field, "must be valid UTF-8")
	}
	return server.DecodeJSONReader(bytes.NewReader(body), v)
}

// act answers approve, deny and cancel: it decodes the optional body into
// body (field names its string member in a refusal of bytes that are not
// UTF-8), runs do for the principal on request {id} at the If-Match
// version, and answers the request with its ETag.
func (h *Handler) act(c echo.Context, body any, field string,
	do func(ctx context.Context, p identity.Principal, id uuid.UUID, ifMatch etag.IfMatch) (*Approval, error),
) error {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return err
	}
	id, err := server.PathID(c, "approval")
	if err != nil {
		return err
	}
	ifMatch, err := etag.ReadIfMatch(c.Request().Header)
	if err != nil {
		return err
	}
	if err := decodeOptional(c, body, field); err != nil {
		return err
	}
	a, err := do(c.Request().Context(), p, id, ifMatch)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag.FromVersion(a.Version))
	return c.JSON(http.StatusOK, a)
}

func (h *Handler) decide(c echo.Context, decision string) error {
	var body decisionBody
	return h.act(c, &body, "reason", func(ctx context.Context, p identity.Principal, id uuid.UUID, ifMatch etag.IfMatch) (*Approval, error) {
		return h.Svc.Decide(ctx, p, capability.PathREST, id, ifMatch, decision, body.Reason)
	})
}

// Approve answers POST /v1/approvals/{id}/approve {"reason": "..."}.
func (h *Handler) Approve(c echo.Context) error { return h.decide(c, DecisionApprove) }

// Deny answers POST /v1/approvals/{id}/deny {"reason": "..."}; the reason
// is required.
func (h *Handler) Deny(c echo.Context) error { return h.decide(c, DecisionDeny) }

// Cancel answers POST /v1/approvals/{id}/cancel (requester only).
func (h *Handler) Cancel(c echo.Context) error {
	var body struct{}
	return h.act(c, &body, "body", func(ctx context.Context, p identity.Principal, id uuid.UUID, ifMatch etag.IfMatch) (*Approval, error) {
		return h.Svc.Cancel(ctx, p, capability.PathREST, id, ifMatch)
	})
}

// DefaultHeartbeat keeps idle streams open through proxies that cut
// silent connections after 30–60 s, and bounds how long a stream outlives
// its credential: a revoked token or ended session stops its stream within
// one heartbeat.
const DefaultHeartbeat = 15 * time.Second

// Events answers GET /v1/approvals/events: a Server-Sent Events stream with
// one "approval" event per announced change, from any replica. A "resync"
// event says changes may have been missed (the listener reconnected, or
// this client lagged): re-read what you show. The stream ends when the
// client goes away or lags too far, or when its credential no longer
// authenticates its principal (checked every heartbeat); EventSource
// reconnects by itself, and is refused in the last case.
func (h *Handler) Events(c echo.Context) error {
	if h.Hub == nil {
		return problem.New(http.StatusServiceUnavailable, problem.CodeUnavailable, "the approval event stream is not running")
	}
	changes, stop := h.Hub.Subscribe()
	defer stop()
	// EventSource sends the last id it saw when it reconnects: whatever
	// changed while it was away is not replayed, so it must re-read.
	reconnected := c.Request().Header.Get("Last-Event-ID") != ""
	return streamEvents(c.Request().Context(), c.Response(), changes, reconnected, h.heartbeat())
}

func (h *Handler) heartbeat() time.Duration {
	if h.Heartbeat <= 0 {
		return DefaultHeartbeat
	}
	return h.Heartbeat
}

// sseWriteTimeout bounds one frame's write: a client that stops reading
// (its socket buffer full) ends its stream instead of holding a handler,
// and graceful shutdown, until TCP gives up. Two default heartbeats' time.
const sseWriteTimeout = 2 * DefaultHeartbeat

// recheckTimeout bounds the credential check of one heartbeat.
const recheckTimeout = 5 * time.Second

// streamEvents writes changes to w as Server-Sent Events until ctx ends,
// the client goes away, changes closes (the hub dropped a lagging
// subscriber, or is shutting down: the client must resync) or a
// heartbeat's identity.Recheck fails. A check that fails for any reason,
// the database's too, ends the stream: the reconnect authenticates anew.
func streamEvents(ctx context.Context, w *echo.Response, changes <-chan Change, reconnected bool, heartbeat time.Duration) error {
	w.Header().Set(echo.HeaderContentType, "text/event-stream")
	w.Header().Set(echo.HeaderCacheControl, "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// Where the writer has no deadlines (tests' recorders) the stream
	// simply has none.
	deadline := func() { _ = rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout)) }
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	deadline()
	opening := ": approvals\n\n"
	if reconnected {
		opening += "event: resync\ndata: {}\n\n"
	}
	if _, err := io.WriteString(w, opening); err != nil {
		return nil //nolint:nilerr // the client went away
	}
	w.Flush()
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	for {
		var frame string
		select {
		case <-ctx.Done():
			return nil
		case <-beat.C:
			cctx, cancel := context.WithTimeout(ctx, recheckTimeout)
			err := identity.Recheck(cctx)
			cancel()
			if err != nil {
				return nil //nolint:nilerr // the headers are sent: ending is the answer
			}
			frame = ": keep-alive\n\n"
		case ch, ok := <-changes:
			if !ok {
				_, _ = io.WriteString(w, "event: resync\ndata: {}\n\n")
				w.Flush()
				return nil
			}
			var err error
			if frame, err = eventFrame(ch); err != nil {
				return err
			}
		}
		deadline()
		if _, err := io.WriteString(w, frame); err != nil {
			return nil //nolint:nilerr // the client went away
		}
		w.Flush()
	}
}

// eventFrame is the SSE frame announcing ch.
func eventFrame(ch Change) (string, error) {
	if ch.Resync {
		return "event: resync\ndata: {}\n\n", nil
	}
	b, err := json.Marshal(ch)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("event: approval\nid: %s.%d\ndata: %s\n\n", ch.ID, ch.Version, b), nil
}
