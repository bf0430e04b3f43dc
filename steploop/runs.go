package steploop

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"
)

// errStopped is why a run ends when POST /v1/chat/{id}/stop asks it to.
var errStopped = errors.New("steploop: the run was stopped")

// errLeaseLostCause is why a run ends when its lease could not be renewed
// (another request took the conversation after it expired).
var errLeaseLostCause = errors.New("steploop: the run lost its lease")

// runs is a replica's running turns: a heartbeat renews their leases, and
// a stop request for one of them cancels it.
type runs struct {
	s       *Service
	mu      sync.Mutex
	live    map[uuid.UUID]*liveRun
	beating bool
}

// liveRun is one running turn as the heartbeat and stop requests see it.
type liveRun struct {
	lease  *Lease
	cancel context.CancelCauseFunc
}

func newRuns(s *Service) *runs { return &runs{s: s, live: map[uuid.UUID]*liveRun{}} }

// add registers a run for the heartbeat and stop requests; the function it
// returns removes it. The heartbeat runs while any run is registered.
func (r *runs) add(id uuid.UUID, l *Lease, cancel context.CancelCauseFunc) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live[id] = &liveRun{lease: l, cancel: cancel}
	if !r.beating {
		r.beating = true
		go r.heartbeat()
	}
	return func() {
		r.mu.Lock()
		delete(r.live, id)
		r.mu.Unlock()
	}
}

// stop cancels run id if it runs here, reporting whether it does.
func (r *runs) stop(id uuid.UUID) bool {
	r.mu.Lock()
	lr, ok := r.live[id]
	r.mu.Unlock()
	if ok {
		lr.cancel(errStopped)
	}
	return ok
}

// heartbeat renews the leases of this replica's runs every third of
// LeaseTTL in one statement, which also reads their stop requests (in
// case a notification was missed); a run whose lease is gone is cancelled.
// It ends once no run is left.
func (r *runs) heartbeat() {
	t := time.NewTicker(r.s.cfg.LeaseTTL / 3)
	defer t.Stop()
	for range t.C {
		r.mu.Lock()
		if len(r.live) == 0 {
			r.beating = false
			r.mu.Unlock()
			return
		}
		batch := make(map[uuid.UUID]*liveRun, len(r.live))
		for id, lr := range r.live {
			batch[id] = lr
		}
		r.mu.Unlock()
		r.renew(batch)
	}
}

func (r *runs) renew(batch map[uuid.UUID]*liveRun) {
	ctx, cancel := context.WithTimeout(context.Background(), r.s.cfg.LeaseTTL/3)
	defer cancel()
	ids := make([]uuid.UUID, 0, len(batch))
	convs := make([]string, 0, len(batch))
	tokens := make([]uuid.UUID, 0, len(batch))
	for id, lr := range batch {
		ids, convs, tokens = append(ids, id), append(convs, lr.lease.ID), append(tokens, lr.lease.token)
	}
	states, err := leaseRenew(ctx, r.s.cfg.DB, ids, convs, tokens, r.s.cfg.LeaseTTL)
	if err != nil {
		// The next beat tries again; a lease expires only after three
		// missed ones.
		r.s.cfg.Log.Warn("steploop: renewing chat leases", "runs", len(ids), "err", err)
		return
	}
	for id, st := range states {
		switch {
		case !st.held:
			batch[id].cancel(errLeaseLostCause)
		case st.stop:
			batch[id].cancel(errStopped)
		}
	}
}
