package steploop

import (
	"strings"
	"sync"

	"github.com/google/uuid"
)

// chatChannel is the LISTEN/NOTIFY channel of the run log. A payload is a
// conversation id (its run logged a batch: readers read the log) or
// "stop:" and a run id (POST /v1/chat/{id}/stop asked the replica running
// it to stop it).
const chatChannel = "invoiced_chat"

const stopPrefix = "stop:"

// hub wakes the readers following a conversation's run when the run log
// notifies (chatChannel, on the process's store.Listener); stop requests
// go to onStop.
type hub struct {
	onStop func(run uuid.UUID)

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

func newHub(onStop func(uuid.UUID)) *hub {
	return &hub{onStop: onStop, subs: map[string]map[chan struct{}]struct{}{}}
}

// Notify wakes the readers of a conversation, or stops a run
// (store.Notifiee).
func (h *hub) Notify(payload string) {
	if id, ok := strings.CutPrefix(payload, stopPrefix); ok {
		if run, err := uuid.Parse(id); err == nil {
			h.onStop(run)
		}
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[payload] {
		wake(ch)
	}
}

// Resync wakes every reader: notifications may have been missed while
// the listener reconnected (store.Notifiee).
func (h *hub) Resync() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, chs := range h.subs {
		for ch := range chs {
			wake(ch)
		}
	}
}

// wake signals ch without blocking: one pending wake-up is enough, since
// a woken reader reads everything logged so far.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// subscribe returns a channel signalled whenever the run of conversation
// id logs a batch or ends, and a function ending the subscription. A nil
// hub returns a channel that is never signalled (readers then poll).
func (h *hub) subscribe(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	if h == nil {
		return ch, func() {}
	}
	h.mu.Lock()
	if h.subs[id] == nil {
		h.subs[id] = map[chan struct{}]struct{}{}
	}
	h.subs[id][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs[id], ch)
		if len(h.subs[id]) == 0 {
			delete(h.subs, id)
		}
		h.mu.Unlock()
	}
}
