package app_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/app/apptest"
	"github.com/invoiced/invoiced/audit"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

// adminRace is an admin (eve) whose authority is taken away while her
// request runs, the admin who takes it (ada), and a clerk (carl) for
// eve's request to act on.
type adminRace struct {
	h              *apptest.Harness
	ctx            context.Context
	eve, carl      *identity.User
	adaTok, eveTok string
	carlTokenID    string
	endpointID     string
	seedRuleID     string
}

func setupAdminRace(t *testing.T) *adminRace {
	t.Helper()
	h := apptest.New(t, apptest.Options{})
	r := &adminRace{h: h, ctx: context.Background()}
	_, r.adaTok = h.User(t, "ada", identity.RoleAdmin)
	r.eve, r.eveTok = h.User(t, "eve", identity.RoleAdmin)
	r.carl, _ = h.User(t, "carl", identity.RoleClerk)
	require.NoError(t, h.Pool.QueryRow(r.ctx, `SELECT id::text FROM api_tokens WHERE user_id = $1`, r.carl.ID).Scan(&r.carlTokenID))
	require.NoError(t, h.Pool.QueryRow(r.ctx, `SELECT id::text FROM approval_policy_rules WHERE to_version IS NULL LIMIT 1`).Scan(&r.seedRuleID))
	// A public address as an IP literal: no DNS lookup in the test.
	resp := h.Do(t, http.MethodPost, "/v1/webhook-endpoints", r.adaTok, map[string]any{"url": "https://1.1.1.1/hooks", "events": []string{"invoice.paid"}})
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(resp.Body))
	var ep struct {
		ID string `json:"id"`
	}
	resp.JSON(t, &ep)
	r.endpointID = ep.ID
	return r
}

// state is everything an admin's request could change, as one string.
func (r *adminRace) state(t *testing.T) string {
	t.Helper()
	var s string
	require.NoError(t, r.h.Pool.QueryRow(r.ctx, `SELECT concat_ws(' | ',
		(SELECT count(*) FROM audit_events),
		(SELECT string_agg(concat_ws(',', username, display_name, role, disabled, version), ';' ORDER BY username) FROM users WHERE username <> 'eve'),
		(SELECT string_agg(concat_ws(',', id, revoked_at IS NULL), ';' ORDER BY id) FROM api_tokens),
		(SELECT max(version) FROM approval_policy_versions),
		(SELECT string_agg(concat_ws(',', id, to_version), ';' ORDER BY id) FROM approval_policy_rules),
		(SELECT string_agg(concat_ws(',', id, enabled, version), ';' ORDER BY id) FROM webhook_endpoints))`).Scan(&s))
	return s
}

// Every admin route that changes something, asked by an admin whom
// another admin disables while the request runs: the disabling holds
// eve's row until it commits, her request (authenticated before) waits
// for it, then is refused 403 FORBIDDEN with nothing written. The
// interleave is fixed: the request is seen waiting on the held lock
// before the disabling commits.
func TestAdminDisabledWhileHerRequestWaitsChangesNothing(t *testing.T) {
	t.Parallel()
	r := setupAdminRace(t)
	for _, tc := range []struct {
		name, method, path string
		body               any
	}{
		{"change a user", http.MethodPatch, "/v1/users/" + r.carl.ID.String(), map[string]any{"display_name": "Carl C."}},
		{"revoke a token", http.MethodPost, "/v1/tokens/" + r.carlTokenID + "/revoke", nil},
		{"set a policy rule", http.MethodPost, "/v1/approval-policy/rules",
			map[string]any{"capability": "issue-invoice", "currency": "EUR", "min_amount": 100, "approvers": 2}},
		{"delete a policy rule", http.MethodDelete, "/v1/approval-policy/rules/" + r.seedRuleID, nil},
		{"add a webhook endpoint", http.MethodPost, "/v1/webhook-endpoints",
			map[string]any{"url": "https://1.0.0.1/hooks", "events": []string{"invoice.issued"}}},
		{"disable a webhook endpoint", http.MethodPost, "/v1/webhook-endpoints/" + r.endpointID + "/disable", nil},
		{"rotate a webhook secret", http.MethodPost, "/v1/webhook-endpoints/" + r.endpointID + "/rotate-secret", nil},
	} {
		before := r.state(t)
		tx, err := r.h.Pool.Begin(r.ctx)
		require.NoError(t, err)
		var pid int
		require.NoError(t, tx.QueryRow(r.ctx, `SELECT pg_backend_pid()`).Scan(&pid))
		// What an admin's PATCH disabling eve does to her row, held open.
		_, err = tx.Exec(r.ctx, `UPDATE users SET disabled = true, version = version + 1 WHERE id = $1`, r.eve.ID)
		require.NoError(t, err)

		done := make(chan *apptest.Response, 1)
		go func() { done <- r.h.Do(t, tc.method, tc.path, r.eveTok, tc.body) }()
		require.Eventually(t, func() bool {
			var n int
			require.NoError(t, r.h.Pool.QueryRow(r.ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid).Scan(&n))
			return n == 1
		}, 10*time.Second, 5*time.Millisecond, "%s: the request waits for the disabling", tc.name)
		require.NoError(t, tx.Commit(r.ctx))

		resp := <-done
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s: %s", tc.name, resp.Body)
		require.Equal(t, problem.CodeForbidden, resp.Problem(t)["code"], tc.name)
		require.Equal(t, before, r.state(t), "%s wrote nothing", tc.name)

		_, err = r.h.Pool.Exec(r.ctx, `UPDATE users SET disabled = false, version = version + 1 WHERE id = $1`, r.eve.ID)
		require.NoError(t, err)
	}
	// Not disabled, the same admin's request goes through.
	resp := r.h.Do(t, http.MethodPatch, "/v1/users/"+r.carl.ID.String(), r.eveTok, map[string]any{"display_name": "Carl C."})
	require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
}

// An admin disables admin eve while eve's PATCH of another user runs,
// twenty rounds: either eve's change committed before she was disabled
// (the audit chain's order is commit order: its lock is held to COMMIT),
// or it is refused (401 when her token was checked after, 403 when she
// was disabled while it ran) and nothing of it is written. Never is it
// committed after she lost the authority to make it.
func TestAdminDisabledWhileHerPatchRunsOneOrderWins(t *testing.T) {
	t.Parallel()
	r := setupAdminRace(t)
	carl := r.carl.ID.String()
	var first, refused int
	for round := range 20 {
		name := fmt.Sprintf("Carl %d", round)
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			eveResp *apptest.Response
		)
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			// Spread over about 3 ms, so the disabling lands before,
			// during and after eve's request.
			time.Sleep(time.Duration(round%4) * time.Millisecond)
			eveResp = r.h.Do(t, http.MethodPatch, "/v1/users/"+carl, r.eveTok, map[string]any{"display_name": name})
		}()
		go func() {
			defer wg.Done()
			<-start
			if resp := r.h.Do(t, http.MethodPatch, "/v1/users/"+r.eve.ID.String(), r.adaTok, map[string]any{"disabled": true}); resp.StatusCode != http.StatusOK {
				t.Errorf("round %d: disable: %d %s", round, resp.StatusCode, resp.Body)
			}
		}()
		close(start)
		wg.Wait()

		disabledAt := r.seq(t, `SELECT max(seq) FROM audit_events WHERE type = 'user.updated' AND subject_id = $1`, r.eve.ID.String())
		changedAt := r.seq(t, `SELECT coalesce(max(seq), 0) FROM audit_events WHERE type = 'user.updated' AND subject_id = $1
			AND event->'data'->'changes'->'display_name'->>'to' = $2`, carl, name)
		var shown string
		require.NoError(t, r.h.Pool.QueryRow(r.ctx, `SELECT display_name FROM users WHERE id = $1`, r.carl.ID).Scan(&shown))
		switch eveResp.StatusCode {
		case http.StatusOK:
			first++
			require.Equal(t, name, shown, "round %d", round)
			require.NotZero(t, changedAt, "round %d", round)
			require.Less(t, changedAt, disabledAt, "round %d: eve's change committed before she was disabled", round)
		case http.StatusUnauthorized, http.StatusForbidden:
			refused++
			require.NotEqual(t, name, shown, "round %d", round)
			require.Zero(t, changedAt, "round %d: nothing audited", round)
		default:
			t.Fatalf("round %d: unexpected %d %s", round, eveResp.StatusCode, eveResp.Body)
		}
		resp := r.h.Do(t, http.MethodPatch, "/v1/users/"+r.eve.ID.String(), r.adaTok, map[string]any{"disabled": false})
		require.Equal(t, http.StatusOK, resp.StatusCode, string(resp.Body))
	}
	t.Logf("20 rounds: eve's change first %d, refused %d", first, refused)
	_, err := audit.Verify(r.ctx, r.h.Pool)
	require.NoError(t, err)
}

func (r *adminRace) seq(t *testing.T, q string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, r.h.Pool.QueryRow(r.ctx, q, args...).Scan(&n))
	return n
}
