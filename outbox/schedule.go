package outbox

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// RetrySchedule is the delay before each retry of a job: entry i is the
// wait after the (i+1)th failed attempt.
type RetrySchedule []time.Duration

// ParseRetrySchedule reads comma-separated positive durations ("5s,5m,…").
func ParseRetrySchedule(s string) (RetrySchedule, error) {
	var out RetrySchedule
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q is not a positive duration such as 5s or 2h", strings.TrimSpace(f))
		}
		out = append(out, d)
	}
	return out, nil
}

// Attempts is how many attempts the schedule allows: the first, then one
// per delay.
func (r RetrySchedule) Attempts() int { return len(r) + 1 }

// Delay is the wait after failed attempt number attempt (1-based).
func (r RetrySchedule) Delay(attempt int) time.Duration {
	return r[min(max(attempt, 1), len(r))-1]
}

// Total is how long the schedule retries for.
func (r RetrySchedule) Total() time.Duration {
	var t time.Duration
	for _, d := range r {
		t += d
	}
	return t
}

// FetchPollFor is the fetch poll interval a schedule needs: a retry due
// sooner than River's 5 s scheduler tick is picked up only by the next
// fetch poll, so a schedule of 100 ms steps (tests) polls every 100 ms;
// otherwise 1 s, River's default.
func FetchPollFor(r RetrySchedule) time.Duration {
	if len(r) == 0 {
		return time.Second
	}
	return min(max(slices.Min(r), 100*time.Millisecond), time.Second)
}
