// Package clocktest is a settable clock for tests of expiry: approvals,
// confirmations and sessions take a `func() time.Time`, and tests pass
// Clock.Now and move time with Advance.
package clocktest

import (
	"sync"
	"time"
)

// Clock is a goroutine-safe settable clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock standing at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Running is a goroutine-safe clock that runs with wall time and jumps
// forward with Advance: the clock to share with background jobs (River),
// which wait in wall time for what falls due in the clock's.
type Running struct {
	mu     sync.Mutex
	offset time.Duration
}

// NewRunning returns a running clock reading wall time.
func NewRunning() *Running { return &Running{} }

// Now returns wall time moved by every Advance so far.
func (c *Running) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock forward by d.
func (c *Running) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}
