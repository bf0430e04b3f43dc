package mcp

import (
	"context"
	"sync"

	"github.com/invoiced/invoiced/approvals"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// subscriptions is the set of approval URIs some session of this process
// subscribed to. The SDK keeps who subscribed; this set is what a resync
// must announce. It may hold URIs nobody watches any more (a session that
// ended without unsubscribing): announcing those reaches no one, and a
// URI leaves the set once its request is decided, so the set stays as
// small as the open requests.
type subscriptions struct {
	mu   sync.Mutex
	uris map[string]struct{}
}

func newSubscriptions() *subscriptions { return &subscriptions{uris: map[string]struct{}{}} }

func (s *subscriptions) add(uri string) {
	s.mu.Lock()
	s.uris[uri] = struct{}{}
	s.mu.Unlock()
}

func (s *subscriptions) remove(uri string) {
	s.mu.Lock()
	delete(s.uris, uri)
	s.mu.Unlock()
}

func (s *subscriptions) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.uris))
	for u := range s.uris {
		out = append(out, u)
	}
	return out
}

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
	s.subs.add(req.Params.URI)
	return nil
}

// unsubscribe lets the SDK drop the session's subscription; the URI stays
// in the set while other sessions may watch it.
func (s *Service) unsubscribe(context.Context, *gomcp.UnsubscribeRequest) error { return nil }

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
				s.subs.remove(uri)
			}
		}
	}
}

// updated sends notifications/resources/updated for uri to the sessions
// of both servers that subscribed to it (the SDK skips the others).
func (s *Service) updated(uri string) {
	for _, srv := range []*gomcp.Server{s.writers, s.readers} {
		_ = srv.ResourceUpdated(context.Background(), &gomcp.ResourceUpdatedNotificationParams{URI: uri})
	}
}
