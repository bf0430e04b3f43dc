package confirm

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Memory is an in-memory Registry for unit tests: one process, one mutex.
type Memory struct {
	mu   sync.Mutex
	rows map[string]Confirmation
}

var _ Registry = (*Memory)(nil)

// NewMemory returns an empty in-memory registry.
func NewMemory() *Memory { return &Memory{rows: map[string]Confirmation{}} }

// Create implements Registry.
func (m *Memory) Create(_ context.Context, c Confirmation) (Confirmation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.rows[c.ID]; dup {
		return Confirmation{}, fmt.Errorf("confirmation %s already exists", c.ID)
	}
	c.Decision, c.DecisionReason, c.UsedAt = "", "", nil
	m.rows[c.ID] = c
	return c, nil
}

// Consume implements Registry.
func (m *Memory) Consume(_ context.Context, k Key, d Decision, reason string, now time.Time) (Confirmation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.rows[k.ID]
	if !ok || !k.matches(c) {
		return Confirmation{}, ErrUnknown
	}
	if c.UsedAt != nil {
		return Confirmation{}, ErrReplayed
	}
	c.Decision, c.DecisionReason, c.UsedAt = d, truncateReason(reason), &now
	m.rows[k.ID] = c
	return c, nil
}

// Get implements Registry.
func (m *Memory) Get(_ context.Context, id string) (Confirmation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.rows[id]
	if !ok {
		return Confirmation{}, ErrUnknown
	}
	return c, nil
}

// Sweep implements Registry.
func (m *Memory) Sweep(_ context.Context, before time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for id, c := range m.rows {
		if c.ExpiresAt.Before(before) {
			delete(m.rows, id)
			n++
		}
	}
	return n, nil
}
