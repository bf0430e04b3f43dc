package web

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
)

// CodeRateLimited is the problem code of a refused sign-in attempt.
const CodeRateLimited = "RATE_LIMITED"

// ThrottleLimit is how many attempts one key may make per window.
type ThrottleLimit struct {
	Attempts int
	Window   time.Duration
}

// throttleHit counts one attempt for key and refuses (429, with the
// seconds until the window ends) once the window holds more than the limit.
// The count and the check are one upsert (throttleCount), so N concurrent
// attempts against a limit of L let exactly L through.
func throttleHit(ctx context.Context, db store.Executor, key string, lim ThrottleLimit) error {
	attempts, retry, err := throttleCount(ctx, db, key, lim.Window)
	if err != nil {
		return err
	}
	if attempts > lim.Attempts {
		secs := int(retry) + 1
		wait := "1 minute"
		if m := (secs + 59) / 60; m > 1 {
			wait = fmt.Sprintf("%d minutes", m)
		}
		return problem.New(http.StatusTooManyRequests, CodeRateLimited,
			"too many sign-in attempts; try again in "+wait).With("retry_after", strconv.Itoa(secs))
	}
	return nil
}
