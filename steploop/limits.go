package steploop

import (
	"fmt"
	"strconv"
	"time"
)

// Limits bound runs and conversations.
type Limits struct {
	// LeaseTTL is how long a run's hold on its conversation lasts
	// unrenewed; 0 uses DefaultLeaseTTL.
	LeaseTTL time.Duration
	// RunTimeout bounds one run; 0 uses DefaultRunTimeout.
	RunTimeout time.Duration
	// ReplayWindow is how long a finished run can be replayed; 0 uses
	// DefaultReplayWindow.
	ReplayWindow time.Duration
	// ContextBudget bounds the bytes of transcript sent to the model; 0
	// uses DefaultContextBudget.
	ContextBudget int
	// MaxMessages bounds a conversation's messages; 0 uses
	// DefaultMaxMessages.
	MaxMessages int
}

// fill applies the defaults and refuses what cannot work, by name.
func (l *Limits) fill() error {
	if l.LeaseTTL == 0 {
		l.LeaseTTL = DefaultLeaseTTL
	}
	if l.LeaseTTL < MinLeaseTTL {
		return fmt.Errorf("steploop: LeaseTTL %v is shorter than %v: renewed every third of it, it would be lost to one slow statement", l.LeaseTTL, MinLeaseTTL)
	}
	if l.RunTimeout <= 0 {
		l.RunTimeout = DefaultRunTimeout
	}
	if l.ReplayWindow <= 0 {
		l.ReplayWindow = DefaultReplayWindow
	}
	if l.ContextBudget <= 0 {
		l.ContextBudget = DefaultContextBudget
	}
	if l.MaxMessages <= 0 {
		l.MaxMessages = DefaultMaxMessages
	}
	if l.MaxMessages < 2 {
		return fmt.Errorf("steploop: MaxMessages %d leaves no room for a question and its answer", l.MaxMessages)
	}
	return nil
}

// LimitsFromSettings reads the INVOICED_CHAT_* settings (get returns ""
// for an unset one); unset ones keep the defaults.
//
//	INVOICED_CHAT_LEASE_TTL       how long a dead replica holds a conversation (default 30s, at least 1s)
//	INVOICED_CHAT_RUN_TIMEOUT     the longest run (default 10m)
//	INVOICED_CHAT_REPLAY_WINDOW   how long a finished run can be replayed (default 1m)
//	INVOICED_CHAT_CONTEXT_BUDGET  bytes of transcript sent to the model (default 200000)
//	INVOICED_CHAT_MAX_MESSAGES    messages in one conversation (default 1000)
func LimitsFromSettings(get func(string) string) (Limits, error) {
	var l Limits
	for _, d := range []struct {
		key string
		dst *time.Duration
	}{
		{"INVOICED_CHAT_LEASE_TTL", &l.LeaseTTL},
		{"INVOICED_CHAT_RUN_TIMEOUT", &l.RunTimeout},
		{"INVOICED_CHAT_REPLAY_WINDOW", &l.ReplayWindow},
	} {
		if v := get(d.key); v != "" {
			dur, err := time.ParseDuration(v)
			if err != nil || dur <= 0 {
				return l, fmt.Errorf("%s must be a positive duration such as 30s, not %q", d.key, v)
			}
			*d.dst = dur
		}
	}
	for _, n := range []struct {
		key string
		dst *int
	}{
		{"INVOICED_CHAT_CONTEXT_BUDGET", &l.ContextBudget},
		{"INVOICED_CHAT_MAX_MESSAGES", &l.MaxMessages},
	} {
		if v := get(n.key); v != "" {
			i, err := strconv.Atoi(v)
			if err != nil || i < 1 {
				return l, fmt.Errorf("%s must be a positive integer, not %q", n.key, v)
			}
			*n.dst = i
		}
	}
	check := l
	if err := check.fill(); err != nil {
		return l, fmt.Errorf("INVOICED_CHAT_*: %w", err)
	}
	return l, nil
}
