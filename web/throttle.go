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
// The count and the check are one upsert, so N concurrent attempts against
// a limit of L let exactly L through.
func throttleHit(ctx context.Context, db store.Executor, key string, lim ThrottleLimit) error {
	var (
		attempts int
		retry    float64
	)
	err := db.QueryRow(ctx, `
		INSERT INTO web_login_throttle AS t (key, window_start, attempts) VALUES ($1, now(), 1)
		ON CONFLICT (key) DO UPDATE SET
			attempts     = CASE WHEN t.window_start <= now() - make_interval(secs => $2) THEN 1 ELSE t.attempts + 1 END,
			window_start = CASE WHEN t.window_start <= now() - make_interval(secs => $2) THEN now() ELSE t.window_start END
		RETURNING attempts, extract(epoch FROM window_start + make_interval(secs => $2) - now())::float8`,
		key, lim.Window.Seconds()).Scan(&attempts, &retry)
	if err != nil {
		return store.MapError(err, "sign-in attempt")
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

// throttleReset clears key's count after a successful sign-in, so a user
// who finally types the right password starts afresh.
func throttleReset(ctx context.Context, db store.Executor, key string) error {
	_, err := db.Exec(ctx, `DELETE FROM web_login_throttle WHERE key = $1`, key)
	return store.MapError(err, "sign-in attempt")
}
