package mcp

import (
	"context"
	"sync"
	"time"

	"github.com/invoiced/invoiced/approvals"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// methodResourceUpdated is the notification a subscribed session gets.
const methodResourceUpdated = "notifications/resources/updated"

// sendTimeout bounds one notification's send as the SDK bounds its own
// (10 s); the write to a stream underneath does not watch it.
const sendTimeout = 10 * time.Second

// subscriptions records which sessions of this process subscribed to
// which approval URIs, and sends each session its updates from a queue of
// its own. The SDK keeps who subscribed for its ResourceUpdated; this
// record is what a resync announces and what Service.Subscriptions
// counts, and it loses a session's entries when the session unsubscribes
// or ends.
//
// A session's queue is a set of URIs in arrival order: an update for a URI
// already waiting to be sent to that session is not queued again, since an
// update only says "this changed, read it again". So a session that does
// not read its stream holds at most one entry per URI it subscribed to,
// and its stalled write stops no one else.
type subscriptions struct {
	stopping context.Context

	mu       sync.Mutex
	uris     map[string]map[*gomcp.ServerSession]struct{}
	sessions map[*gomcp.ServerSession]*outbox
	sent     uint64
}

// outbox is one session's subscriptions and its queue of updates to send.
type outbox struct {
	ss   *gomcp.ServerSession
	uris map[string]struct{}
	// queue holds the updates waiting, at most one per URI (queued).
	queue  []gomcp.Request
	queued map[string]struct{}
	// send is the rest of the SDK's sending chain for this session's
	// server, past queueUpdates.
	send   gomcp.MethodHandler
	wake   chan struct{}
	closed chan struct{}
	// sending is set while an update is being written.
	sending bool
}

func newSubscriptions(stopping context.Context) *subscriptions {
	return &subscriptions{stopping: stopping, uris: map[string]map[*gomcp.ServerSession]struct{}{},
		sessions: map[*gomcp.ServerSession]*outbox{}}
}

// outboxLocked returns ss's outbox, making it (and the goroutines that
// send its updates and notice its end) on first use. s.mu must be held.
func (s *subscriptions) outboxLocked(ss *gomcp.ServerSession) *outbox {
	if o, ok := s.sessions[ss]; ok {
		return o
	}
	o := &outbox{ss: ss, uris: map[string]struct{}{}, queued: map[string]struct{}{},
		wake: make(chan struct{}, 1), closed: make(chan struct{})}
	s.sessions[ss] = o
	go func() {
		_ = ss.Wait()
		close(o.closed)
		s.drop(ss)
	}()
	go s.deliver(o)
	return o
}

// add records that ss subscribed to uri.
func (s *subscriptions) add(ss *gomcp.ServerSession, uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.outboxLocked(ss)
	o.uris[uri] = struct{}{}
	if s.uris[uri] == nil {
		s.uris[uri] = map[*gomcp.ServerSession]struct{}{}
	}
	s.uris[uri][ss] = struct{}{}
}

// remove forgets that ss subscribed to uri (it unsubscribed).
func (s *subscriptions) remove(ss *gomcp.ServerSession, uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.sessions[ss]; ok {
		delete(o.uris, uri)
	}
	s.removeLocked(ss, uri)
}

func (s *subscriptions) removeLocked(ss *gomcp.ServerSession, uri string) {
	if watchers, ok := s.uris[uri]; ok {
		delete(watchers, ss)
		if len(watchers) == 0 {
			delete(s.uris, uri)
		}
	}
}

// drop forgets a session that ended, with everything it subscribed to.
func (s *subscriptions) drop(ss *gomcp.ServerSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.sessions[ss]
	if !ok {
		return
	}
	for uri := range o.uris {
		s.removeLocked(ss, uri)
	}
	delete(s.sessions, ss)
}

// decided forgets uri: its request can no longer change by a decision, so
// a resync need not announce it.
func (s *subscriptions) decided(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ss := range s.uris[uri] {
		if o, ok := s.sessions[ss]; ok {
			delete(o.uris, uri)
		}
	}
	delete(s.uris, uri)
}

// all returns every URI some session subscribed to.
func (s *subscriptions) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.uris))
	for u := range s.uris {
		out = append(out, u)
	}
	return out
}

// SubscriptionStats counts what the endpoint's subscriptions hold.
type SubscriptionStats struct {
	// Sessions is how many sessions subscribed to something and have not
	// ended; each has a queue and a goroutine that sends from it.
	Sessions int
	// URIs is how many distinct URIs some session subscribed to.
	URIs int
	// Subscriptions is how many (session, URI) pairs there are.
	Subscriptions int
	// Queued is how many updates wait to be sent.
	Queued int
	// MostQueued is how many wait for the session with the most: at most
	// one per URI it subscribed to, however long its stream is stuck.
	MostQueued int
	// Sending is how many sessions have an update being written now; a
	// session that stays here stopped reading its stream.
	Sending int
	// Sent counts the updates written since the endpoint started.
	Sent uint64
}

func (s *subscriptions) stats() SubscriptionStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := SubscriptionStats{Sessions: len(s.sessions), URIs: len(s.uris), Sent: s.sent}
	for _, o := range s.sessions {
		st.Subscriptions += len(o.uris)
		st.Queued += len(o.queue)
		st.MostQueued = max(st.MostQueued, len(o.queue))
		if o.sending {
			st.Sending++
		}
	}
	return st
}

// enqueue queues req, an update of uri for ss, unless one for uri already
// waits; it never blocks on the session's stream.
func (s *subscriptions) enqueue(ss *gomcp.ServerSession, uri string, req gomcp.Request, send gomcp.MethodHandler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.sessions[ss]
	if !ok {
		// Only a session that subscribed is sent updates, and it has an
		// outbox until it ends: this one ended meanwhile.
		return
	}
	if o.send == nil {
		o.send = send
	}
	if _, waiting := o.queued[uri]; waiting {
		return
	}
	o.queued[uri] = struct{}{}
	o.queue = append(o.queue, req)
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest update waiting for o, once the one before it was
// written (the first call writes none); a change that arrives while it is
// being sent queues the URI again.
func (s *subscriptions) next(o *outbox, wrote bool) (gomcp.Request, gomcp.MethodHandler, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if wrote {
		s.sent++
	}
	o.sending = len(o.queue) > 0
	if !o.sending {
		return nil, nil, false
	}
	req := o.queue[0]
	o.queue[0] = nil
	o.queue = o.queue[1:]
	delete(o.queued, req.GetParams().(*gomcp.ResourceUpdatedNotificationParams).URI)
	return req, o.send, true
}

// deliver sends o's updates in order until its session ends or the
// endpoint stops. A send may block for as long as the client does not
// read its stream; only this session waits.
func (s *subscriptions) deliver(o *outbox) {
	for {
		select {
		case <-o.closed:
			return
		case <-s.stopping.Done():
			return
		case <-o.wake:
		}
		for wrote := false; ; wrote = true {
			req, send, ok := s.next(o, wrote)
			if !ok {
				break
			}
			// A background context, as the SDK's own ResourceUpdated
			// uses: one tied to a request would pick that request's
			// stream, not the session's GET stream.
			ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
			_, _ = send(ctx, methodResourceUpdated, req)
			cancel()
		}
	}
}

// queueUpdates is sending middleware: the SDK's ResourceUpdated sends to
// each subscribed session in turn and waits on each write, so it hands
// every update to the session's queue instead and returns at once.
func (s *Service) queueUpdates(next gomcp.MethodHandler) gomcp.MethodHandler {
	return func(ctx context.Context, method string, req gomcp.Request) (gomcp.Result, error) {
		if method != methodResourceUpdated {
			return next(ctx, method, req)
		}
		ss, okSession := req.GetSession().(*gomcp.ServerSession)
		p, okParams := req.GetParams().(*gomcp.ResourceUpdatedNotificationParams)
		if !okSession || !okParams {
			return next(ctx, method, req)
		}
		s.subs.enqueue(ss, p.URI, req, next)
		return nil, nil
	}
}

// Subscriptions counts the resource subscriptions of this process's
// sessions and the updates waiting to be sent.
func (s *Service) Subscriptions() SubscriptionStats { return s.subs.stats() }

// subscribe accepts subscriptions to approval requests that exist: they
// are what changes while a client waits (a decision, from any replica).
// Invoices and customers change only by calls the client makes itself.
func (s *Service) subscribe(ctx context.Context, req *gomcp.SubscribeRequest) error {
	if _, err := callerOf(req.Extra); err != nil {
		return err
	}
	if _, err := s.approval(ctx, req.Params.URI); err != nil {
		return s.readError(req.Params.URI, err)
	}
	s.subs.add(req.Session, req.Params.URI)
	return nil
}

// unsubscribe forgets the session's subscription; the SDK drops its own
// record after this returns.
func (s *Service) unsubscribe(_ context.Context, req *gomcp.UnsubscribeRequest) error {
	s.subs.remove(req.Session, req.Params.URI)
	return nil
}

// watch announces every approval change this process hears, whichever
// replica made it, to the sessions subscribed here, until Close. A resync
// (the hub's connection was lost, or this watcher lagged and was dropped)
// announces every subscribed URI: a client re-reads and finds what
// changed.
func (s *Service) watch() {
	defer s.watching.Done()
	for {
		changes, stop := s.cfg.Hub.Watch()
		s.follow(changes)
		stop()
		if s.stopping.Err() != nil || s.cfg.Hub.Closed() {
			return
		}
		for _, uri := range s.subs.all() {
			s.updated(uri)
		}
	}
}

// follow announces changes until the channel closes or Close.
func (s *Service) follow(changes <-chan approvals.Change) {
	for {
		select {
		case <-s.stopping.Done():
			return
		case ch, ok := <-changes:
			if !ok {
				return
			}
			if ch.Resync {
				for _, uri := range s.subs.all() {
					s.updated(uri)
				}
				continue
			}
			uri := approvalURI(ch.ID.String())
			s.updated(uri)
			if !ch.Status.Open() {
				s.subs.decided(uri)
			}
		}
	}
}

// updated queues notifications/resources/updated for uri to the sessions
// of both servers that subscribed to it (the SDK skips the others, and
// queueUpdates keeps it from waiting on any session's stream).
func (s *Service) updated(uri string) {
	for _, srv := range []*gomcp.Server{s.writers, s.readers} {
		_ = srv.ResourceUpdated(context.Background(), &gomcp.ResourceUpdatedNotificationParams{URI: uri})
	}
}
