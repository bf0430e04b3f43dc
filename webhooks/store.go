package webhooks

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/store"
	"github.com/jackc/pgx/v5"
)

const endpointColumns = `e.id, e.url, e.events, e.enabled, e.disabled_reason, e.previous_secret_until, e.created_by,
	e.created_at, e.updated_at, e.version, e.secret, coalesce(e.previous_secret, '')`

// endpointScan maps endpointColumns into an Endpoint: dest are the scan
// targets, done finishes the endpoint once scanned.
func endpointScan() (e *Endpoint, dest []any, done func()) {
	e = &Endpoint{}
	var types []string
	dest = []any{&e.ID, &e.URL, &types, &e.Enabled, &e.DisabledReason, &e.PreviousSecretUntil, &e.CreatedBy,
		&e.CreatedAt, &e.UpdatedAt, &e.Version, &e.secret, &e.previousSecret}
	return e, dest, func() {
		for _, t := range types {
			e.Events = append(e.Events, events.Type(t))
		}
		e.CreatedAt, e.UpdatedAt = e.CreatedAt.UTC(), e.UpdatedAt.UTC()
		if e.PreviousSecretUntil != nil {
			u := e.PreviousSecretUntil.UTC()
			e.PreviousSecretUntil = &u
		}
	}
}

func scanEndpoint(row pgx.Row) (*Endpoint, error) {
	e, dest, done := endpointScan()
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	done()
	return e, nil
}

func endpointInsertTx(ctx context.Context, tx pgx.Tx, e *Endpoint) (*Endpoint, error) {
	out, err := scanEndpoint(tx.QueryRow(ctx, `
		INSERT INTO webhook_endpoints AS e (id, url, events, secret, created_by, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING `+endpointColumns,
		e.ID, e.URL, e.Events, e.secret, e.CreatedBy, e.CreatedAt))
	return out, store.MapError(err, "webhook endpoint")
}

// EndpointGet returns an endpoint, 404 when there is none.
func EndpointGet(ctx context.Context, db store.Executor, id uuid.UUID) (*Endpoint, error) {
	e, err := scanEndpoint(db.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints e WHERE e.id = $1`, id))
	return e, store.MapError(err, "webhook endpoint")
}

func endpointLockTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) (*Endpoint, error) {
	e, err := scanEndpoint(tx.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints e WHERE e.id = $1 FOR UPDATE`, id))
	return e, store.MapError(err, "webhook endpoint")
}

func endpointList(ctx context.Context, db store.Executor, p page.Request) ([]*Endpoint, error) {
	var at, id any
	if p.After != nil {
		at, id = p.After.CreatedAt, p.After.ID
	}
	rows, err := db.Query(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints e
		WHERE $1::timestamptz IS NULL OR (e.created_at, e.id) < ($1, $2)
		ORDER BY e.created_at DESC, e.id DESC LIMIT $3`, at, id, p.Limit)
	if err != nil {
		return nil, store.MapError(err, "webhook endpoints")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Endpoint, error) { return scanEndpoint(r) })
	return out, store.MapError(err, "webhook endpoints")
}

// endpointSetEnabledTx enables an endpoint, or disables it for reason.
func endpointSetEnabledTx(ctx context.Context, tx pgx.Tx, e *Endpoint, enabled bool, reason string, now time.Time) (*Endpoint, error) {
	out, err := scanEndpoint(tx.QueryRow(ctx, `UPDATE webhook_endpoints e SET enabled = $2, disabled_reason = $3,
		updated_at = $4, version = version + 1 WHERE id = $1 RETURNING `+endpointColumns, e.ID, enabled, reason, now))
	return out, store.MapError(err, "webhook endpoint")
}

func endpointRotateTx(ctx context.Context, tx pgx.Tx, e *Endpoint, secret string, previousUntil, now time.Time) (*Endpoint, error) {
	out, err := scanEndpoint(tx.QueryRow(ctx, `UPDATE webhook_endpoints e SET secret = $2, previous_secret = secret,
		previous_secret_until = $3, updated_at = $4, version = version + 1 WHERE id = $1 RETURNING `+endpointColumns,
		e.ID, secret, previousUntil, now))
	return out, store.MapError(err, "webhook endpoint")
}

// deliveriesInsertTx records the delivery of an event to every enabled
// endpoint subscribed to its type and returns the new deliveries' ids (an
// event emitted twice gets no second delivery). It runs in the fact's
// transaction, so it is one statement: one round trip added to every
// fact. The ids are random (v4) rather than time-ordered, since
// PostgreSQL 15 makes no v7; lists order by created_at first.
func deliveriesInsertTx(ctx context.Context, tx pgx.Tx, event uuid.UUID, t events.Type, payload string, now time.Time) ([]uuid.UUID, error) {
	rows, err := tx.Query(ctx, `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, payload, created_at, updated_at)
		SELECT gen_random_uuid(), e.id, $1, $2, $3, $4, $4 FROM webhook_endpoints e WHERE e.enabled AND $2 = ANY(e.events)
		ON CONFLICT (endpoint_id, event_id) DO NOTHING RETURNING id`, event, string(t), payload, now)
	if err != nil {
		return nil, store.MapError(err, "webhook deliveries")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return ids, store.MapError(err, "webhook deliveries")
}

const deliveryColumns = `d.id, d.endpoint_id, d.event_id, d.event_type, d.status, d.created_at, d.updated_at, d.delivered_at, d.payload`

// deliveryScan is endpointScan for deliveryColumns.
func deliveryScan() (d *Delivery, dest []any, done func()) {
	d = &Delivery{Attempts: []Attempt{}}
	dest = []any{&d.ID, &d.EndpointID, &d.EventID, &d.EventType, &d.Status, &d.CreatedAt, &d.UpdatedAt, &d.DeliveredAt, &d.payload}
	return d, dest, func() {
		d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
		if d.DeliveredAt != nil {
			u := d.DeliveredAt.UTC()
			d.DeliveredAt = &u
		}
	}
}

func scanDelivery(row pgx.Row) (*Delivery, error) {
	d, dest, done := deliveryScan()
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	done()
	return d, nil
}

// deliveryToSend returns a delivery (without its attempts) and its
// endpoint in one query: what an attempt needs.
func deliveryToSend(ctx context.Context, db store.Executor, id uuid.UUID) (*Delivery, *Endpoint, error) {
	e, edest, edone := endpointScan()
	d, ddest, ddone := deliveryScan()
	err := db.QueryRow(ctx, `SELECT `+endpointColumns+`, `+deliveryColumns+`
		FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.id = $1`, id).Scan(append(edest, ddest...)...)
	if err != nil {
		return nil, nil, store.MapError(err, "webhook delivery")
	}
	edone()
	ddone()
	return d, e, nil
}

// DeliveryGet returns a delivery with its attempts, 404 when there is none.
func DeliveryGet(ctx context.Context, db store.Executor, id uuid.UUID) (*Delivery, error) {
	var d *Delivery
	err := store.ReadSnapshot(ctx, db, func(db store.Executor) error {
		var err error
		if d, err = scanDelivery(db.QueryRow(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries d WHERE d.id = $1`, id)); err != nil {
			return store.MapError(err, "webhook delivery")
		}
		return attemptsLoad(ctx, db, []*Delivery{d})
	})
	return d, err
}

// deliveryList returns a page of an endpoint's deliveries, newest first,
// with their attempts.
func deliveryList(ctx context.Context, db store.Executor, endpoint uuid.UUID, p page.Request) ([]*Delivery, error) {
	var at, id any
	if p.After != nil {
		at, id = p.After.CreatedAt, p.After.ID
	}
	var out []*Delivery
	err := store.ReadSnapshot(ctx, db, func(db store.Executor) error {
		rows, err := db.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries d
			WHERE d.endpoint_id = $1 AND ($2::timestamptz IS NULL OR (d.created_at, d.id) < ($2, $3))
			ORDER BY d.created_at DESC, d.id DESC LIMIT $4`, endpoint, at, id, p.Limit)
		if err != nil {
			return store.MapError(err, "webhook deliveries")
		}
		if out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Delivery, error) { return scanDelivery(r) }); err != nil {
			return store.MapError(err, "webhook deliveries")
		}
		return attemptsLoad(ctx, db, out)
	})
	return out, err
}

func attemptsLoad(ctx context.Context, db store.Executor, ds []*Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(ds))
	byID := make(map[uuid.UUID]*Delivery, len(ds))
	for i, d := range ds {
		ids[i], byID[d.ID] = d.ID, d
	}
	rows, err := db.Query(ctx, `SELECT delivery_id, attempt, attempted_at, status_code, duration_ms, response_head, error
		FROM webhook_attempts WHERE delivery_id = ANY($1) ORDER BY delivery_id, attempt`, ids)
	if err != nil {
		return store.MapError(err, "webhook attempts")
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id uuid.UUID
			a  Attempt
		)
		if err := rows.Scan(&id, &a.Attempt, &a.AttemptedAt, &a.StatusCode, &a.DurationMS, &a.ResponseHead, &a.Error); err != nil {
			return store.MapError(err, "webhook attempts")
		}
		a.AttemptedAt = a.AttemptedAt.UTC()
		byID[id].Attempts = append(byID[id].Attempts, a)
	}
	return store.MapError(rows.Err(), "webhook attempts")
}

// attemptRecord records an attempt as the delivery's next and moves the
// delivery to status, in one statement (so atomically, without a
// transaction's extra round trips).
func attemptRecord(ctx context.Context, db store.Executor, d *Delivery, a Attempt, status string) error {
	var delivered any
	if status == StatusDelivered {
		delivered = a.AttemptedAt
	}
	_, err := db.Exec(ctx, `WITH attempt AS (
			INSERT INTO webhook_attempts (delivery_id, attempt, attempted_at, status_code, duration_ms, response_head, error)
			SELECT $1, coalesce(max(attempt), 0) + 1, $2, $3, $4, $5, $6 FROM webhook_attempts WHERE delivery_id = $1)
		UPDATE webhook_deliveries SET status = $7, attempts = attempts + 1, updated_at = $2,
			delivered_at = coalesce($8, delivered_at) WHERE id = $1`,
		d.ID, a.AttemptedAt, a.StatusCode, a.DurationMS, a.ResponseHead, a.Error, status, delivered)
	return store.MapError(err, "webhook attempt")
}

// deliveryFailTx marks a delivery failed without an attempt (its endpoint
// was disabled meanwhile).
func deliveryFailTx(ctx context.Context, db store.Executor, id uuid.UUID, now time.Time) error {
	_, err := db.Exec(ctx, `UPDATE webhook_deliveries SET status = 'failed', updated_at = $2 WHERE id = $1 AND status = 'pending'`, id, now)
	return store.MapError(err, "webhook delivery")
}

// deliveredSince reports whether any delivery to endpoint succeeded at or
// after since.
func deliveredSince(ctx context.Context, db store.Executor, endpoint uuid.UUID, since time.Time) (bool, error) {
	var ok bool
	err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1 AND delivered_at >= $2)`, endpoint, since).Scan(&ok)
	return ok, store.MapError(err, "webhook deliveries")
}

// deliveryResetTx puts a delivery back to pending for a manual redelivery.
func deliveryResetTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, now time.Time) error {
	tag, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET status = 'pending', updated_at = $2 WHERE id = $1`, id, now)
	if err == nil && tag.RowsAffected() == 0 {
		return problem.NotFound("webhook delivery")
	}
	return store.MapError(err, "webhook delivery")
}
