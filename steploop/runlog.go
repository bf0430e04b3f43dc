package steploop

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

// runStart is a run as the request that opens it inserts it: the message
// it writes at position, and the head that rebuilds that message as it
// stands when the run begins.
type runStart struct {
	ID        uuid.UUID
	MessageID string
	Position  int
	Head      []byte
}

// runInsert opens run for the conversation leased by l.
func runInsert(ctx context.Context, db store.Executor, l *Lease, run runStart) error {
	_, err := db.Exec(ctx, `
		INSERT INTO chat_runs (id, conversation_id, message_id, position, lease_token, head)
		VALUES ($1, $2, $3, $4, $5, $6)`, run.ID, l.ID, run.MessageID, run.Position, l.token, string(run.Head))
	return store.MapError(err, "run")
}

// runLog is a turn's batchLog: each batch is one statement appending it to
// the run's log, waking its followers. seq is the next batch's number; it
// is used under the stream's logging lock only.
type runLog struct {
	s     *Service
	run   uuid.UUID
	conv  string
	seq   int
	ended func() // the run was ended by whoever reaped it
}

func (l *runLog) append(batch []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var logged int
	err := l.s.cfg.DB.QueryRow(ctx, `
		WITH r AS (
			SELECT id, followers FROM chat_runs WHERE id = $1 AND ended_at IS NULL FOR SHARE
		), b AS (
			INSERT INTO chat_run_batches (run_id, seq, sse) SELECT id, $3, $4 FROM r
		), n AS (
			SELECT pg_notify('`+chatChannel+`', $2) FROM r WHERE followers > 0
		)
		SELECT (SELECT count(*) FROM r), (SELECT count(*) FROM n)`,
		l.run, l.conv, l.seq, string(batch)).Scan(&logged, new(int))
	switch {
	case err != nil:
		l.s.cfg.Log.Error("steploop: appending to the run log", "conversation", l.conv, "err", err)
	case logged == 0:
		l.ended()
	default:
		l.seq++
	}
}

// renewState is what a lease renewal found of one run.
type renewState struct{ held, stop bool }

// leaseRenew extends the leases of runs ids (on conversations convs with
// tokens) by ttl in one statement, and reads which are still held and
// which were asked to stop.
func leaseRenew(ctx context.Context, db store.Executor, ids []uuid.UUID, convs []string, tokens []uuid.UUID, ttl time.Duration) (map[uuid.UUID]renewState, error) {
	rows, err := db.Query(ctx, `
		WITH l AS (
			SELECT * FROM unnest($1::uuid[], $2::text[], $3::uuid[]) AS l(run, conversation_id, token)
		), u AS (
			UPDATE conversations c SET busy_until = now() + $4::interval
			  FROM l WHERE c.id = l.conversation_id AND c.busy_token = l.token
			RETURNING l.run
		)
		SELECT l.run, u.run IS NOT NULL, coalesce(r.stop_requested, false)
		  FROM l LEFT JOIN u ON u.run = l.run LEFT JOIN chat_runs r ON r.id = l.run`,
		ids, convs, tokens, interval(ttl))
	if err != nil {
		return nil, err
	}
	out := map[uuid.UUID]renewState{}
	for rows.Next() {
		var (
			id uuid.UUID
			st renewState
		)
		if err := rows.Scan(&id, &st.held, &st.stop); err != nil {
			rows.Close()
			return nil, err
		}
		out[id] = st
	}
	return out, rows.Err()
}

// followed is the run a reader follows.
type followed struct {
	ID   uuid.UUID
	Head []byte
}

// runFollow finds the owner's latest run of conversation id, running or
// ended within window, and counts the reader among its followers (so its
// writes notify); nil when there is none, or the conversation is another
// owner's or does not exist.
func runFollow(ctx context.Context, db store.Executor, id string, owner uuid.UUID, window time.Duration) (*followed, error) {
	var (
		f    followed
		head string
	)
	err := db.QueryRow(ctx, `
		UPDATE chat_runs SET followers = followers + 1
		 WHERE id = (
			SELECT r.id FROM chat_runs r JOIN conversations c ON c.id = r.conversation_id
			 WHERE c.id = $1 AND c.owner_id = $2
			   AND (r.ended_at IS NULL OR r.ended_at > now() - $3::interval)
			 ORDER BY r.started_at DESC LIMIT 1)
		RETURNING id, head`, id, owner, interval(window)).Scan(&f.ID, &head)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, store.MapError(err, "run")
	}
	f.Head = []byte(head)
	return &f, nil
}

// runUnfollow uncounts a reader.
func runUnfollow(ctx context.Context, db store.Executor, run uuid.UUID) error {
	_, err := db.Exec(ctx, `UPDATE chat_runs SET followers = greatest(followers - 1, 0) WHERE id = $1`, run)
	return err
}

// runState is what a reader reads of its run: the batches from a seq on,
// whether it has ended (then they are all of it) and whether its replica
// still holds its lease.
type runState struct {
	batches [][]byte
	ended   bool
	live    bool
}

// runRead reads run's batches from seq on, in one snapshot with its state.
func runRead(ctx context.Context, db store.Executor, run uuid.UUID, seq int) (runState, error) {
	var st runState
	rows, err := db.Query(ctx, `
		SELECT r.ended_at IS NOT NULL,
		       coalesce(c.busy_token = r.lease_token AND c.busy_until >= now(), false),
		       b.sse
		  FROM chat_runs r
		  JOIN conversations c ON c.id = r.conversation_id
		  LEFT JOIN chat_run_batches b ON b.run_id = r.id AND b.seq >= $2
		 WHERE r.id = $1
		 ORDER BY b.seq`, run, seq)
	if err != nil {
		return st, err
	}
	defer rows.Close()
	found := false
	for rows.Next() {
		var batch *string
		if err := rows.Scan(&st.ended, &st.live, &batch); err != nil {
			return st, err
		}
		found = true
		if batch != nil {
			st.batches = append(st.batches, []byte(*batch))
		}
	}
	if err := rows.Err(); err != nil {
		return st, err
	}
	if !found {
		// Swept (or the conversation deleted): nothing more will come.
		st.ended = true
	}
	return st, nil
}

// runStopRequest marks the owner's running run of conversation id as asked
// to stop and tells every replica; it returns the run and the message it
// writes, or uuid.Nil when none runs.
func runStopRequest(ctx context.Context, db store.Executor, id string, owner uuid.UUID) (uuid.UUID, string, error) {
	var (
		run   uuid.UUID
		msgID string
	)
	err := db.QueryRow(ctx, `
		WITH r AS (
			UPDATE chat_runs r SET stop_requested = true
			  FROM conversations c
			 WHERE c.id = r.conversation_id AND c.id = $1 AND c.owner_id = $2 AND r.ended_at IS NULL
			RETURNING r.id, r.message_id
		)
		SELECT id, message_id, pg_notify('`+chatChannel+`', '`+stopPrefix+`' || id::text) FROM r`, id, owner).Scan(&run, &msgID, new(string))
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, "", nil
	}
	return run, msgID, store.MapError(err, "run")
}

// runSweep deletes the runs that ended more than window ago, with their
// batches, and names the runs whose replica died (unended, their lease
// expired or gone) for the caller to reap.
func runSweep(ctx context.Context, db store.Executor, window time.Duration) (dead []deadRun, err error) {
	if _, err := db.Exec(ctx, `DELETE FROM chat_runs WHERE ended_at < now() - $1::interval`, interval(window)); err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, `
		SELECT r.id, r.conversation_id FROM chat_runs r JOIN conversations c ON c.id = r.conversation_id
		 WHERE r.ended_at IS NULL
		   AND (c.busy_token IS DISTINCT FROM r.lease_token OR c.busy_until < now())`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[deadRun])
}

// deadRun is a run whose replica died.
type deadRun struct {
	ID           uuid.UUID
	Conversation string
}

// runAbandon ends a run whose answer could not be stored: the lease is
// given back (if still held) and the run ended with w's batch, which tells
// its readers to reload, in one statement.
func runAbandon(ctx context.Context, db store.Executor, l *Lease, w runWrite) error {
	_, err := db.Exec(ctx, `
		WITH rel AS (
			UPDATE conversations SET busy_token = NULL, busy_until = NULL, updated_at = now()
			 WHERE id = $1 AND busy_token = $2
		), r AS (
			SELECT id, followers, stop_requested FROM chat_runs WHERE id = $3 AND ended_at IS NULL FOR UPDATE
		), b AS (
			INSERT INTO chat_run_batches (run_id, seq, sse) SELECT id, $4, $5 FROM r
		), e AS (
			UPDATE chat_runs SET ended_at = now() WHERE id = (SELECT id FROM r)
		)
		SELECT pg_notify('`+chatChannel+`', $1) FROM r WHERE followers > 0 OR stop_requested`,
		l.ID, l.token, w.run, w.seq, string(w.batch))
	return err
}
