package steploop

import (
	"context"
	"net/http"
	"time"

	"github.com/invoiced/invoiced/identity"
	"github.com/labstack/echo/v4"
)

// Poll intervals of a reader: a notification wakes it at once, the poll is
// the safety net for one lost while the listener reconnected (1 s), or
// all it has on a replica that does not listen (250 ms: a quarter of a
// second is as late as a reader may fall behind the writer's 10 ms
// flushes before the answer visibly stutters).
const (
	followPoll      = time.Second
	followPollNoHub = 250 * time.Millisecond
)

// Resume answers GET /v1/chat/{id}/stream (ai@7's resume: true): the
// owner's running run of conversation id (or one that ended within
// ReplayWindow) replayed from its start and followed live until [DONE],
// from any replica. No run, a conversation that does not exist yet (a new
// chat mounting) and another owner's are all 204, alike, so a client
// mounts cleanly and nothing is disclosed.
func (s *Service) Resume(c echo.Context) error {
	p, id, woken, unsubscribe, err := s.runRoute(c)
	if err != nil || id == "" {
		return err
	}
	defer unsubscribe()
	ctx := c.Request().Context()
	run, err := runFollow(ctx, s.cfg.DB, id, p.UserID, s.cfg.ReplayWindow)
	if err != nil {
		return err
	}
	if run == nil {
		return c.NoContent(http.StatusNoContent)
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := runUnfollow(uctx, s.cfg.DB, run.ID); err != nil {
			s.cfg.Log.Warn("steploop: unfollowing a run", "conversation", id, "err", err)
		}
	}()
	f := &follower{s: s, ctx: ctx, run: run, w: c.Response(), woken: woken, rc: http.NewResponseController(c.Response())}
	// The server sets no deadline per request, so one left behind would
	// cut the next request on this connection.
	defer func() { _ = f.rc.SetWriteDeadline(time.Time{}) }()
	streamHeaders(c.Response())
	if !f.write([]byte(run.Head)) {
		return nil
	}
	f.follow()
	return nil
}

// runRoute is the preamble of the run routes: the principal, and the
// conversation id from the path with a subscription to its run's
// notifications, made before the run is read so that nothing logged after
// the read goes unnoticed. An id no conversation can have is answered 204
// here (id ""), as for one with no run.
func (s *Service) runRoute(c echo.Context) (identity.Principal, string, <-chan struct{}, func(), error) {
	p, err := identity.RequestPrincipal(c)
	if err != nil {
		return p, "", nil, nil, err
	}
	id := c.Param("id")
	if !idRE.MatchString(id) {
		return p, "", nil, nil, c.NoContent(http.StatusNoContent)
	}
	woken, unsubscribe := s.hub.subscribe(id)
	return p, id, woken, unsubscribe, nil
}

// follower copies one run's log to one reader.
type follower struct {
	s     *Service
	ctx   context.Context
	run   *followed
	w     http.ResponseWriter
	rc    *http.ResponseController
	woken <-chan struct{}
	seq   int
}

// follow writes the run's batches as they are logged until its last one
// ([DONE]), the reader leaves, its credential no longer holds, or the
// server shuts down. A run whose replica died is reaped here, so the
// reader gets its end instead of waiting forever.
func (f *follower) follow() {
	poll := followPoll
	if f.s.hub == nil {
		poll = followPollNoHub
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	checked := time.Now()
	for {
		st, err := runRead(f.ctx, f.s.cfg.DB, f.run.ID, f.seq)
		if err != nil {
			f.fail("The server could not read the answer; the error has been logged. Reload the conversation.", err)
			return
		}
		for _, b := range st.batches {
			if !f.write(b) {
				return
			}
			f.seq++
		}
		switch {
		case st.ended:
			return
		case !st.live && len(st.batches) == 0:
			if err := f.s.reap(f.ctx, f.run.ID); err != nil {
				f.fail("The server could not end the interrupted answer; the error has been logged. Reload the conversation.", err)
				return
			}
			continue
		}
		select {
		case <-f.ctx.Done():
			return
		case <-f.s.stopping.Done():
			f.end("The server is restarting; reload the conversation to follow the answer.")
			return
		case <-f.woken:
		case <-tick.C:
		}
		if time.Since(checked) > f.s.cfg.CredentialMaxAge {
			if err := identity.Recheck(f.ctx); err != nil {
				f.end("Your credentials are no longer valid (token revoked, user disabled or role changed); sign in again to continue.")
				return
			}
			checked = time.Now()
		}
	}
}

// write sends b to the reader, reporting whether it is still there.
func (f *follower) write(b []byte) bool {
	_ = f.rc.SetWriteDeadline(time.Now().Add(WriteTimeout))
	if _, err := f.w.Write(b); err != nil {
		return false
	}
	return f.rc.Flush() == nil
}

// end closes the reader's stream early with an error chunk and [DONE].
func (f *follower) end(text string) {
	f.write(append(frame(chunk{"type": "error", "errorText": text}), doneFrame...))
}

func (f *follower) fail(text string, err error) {
	if f.ctx.Err() != nil {
		return
	}
	f.s.cfg.Log.Error("steploop: following a run", "run", f.run.ID, "err", err)
	f.end(text)
}
