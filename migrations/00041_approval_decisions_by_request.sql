-- +goose Up
-- The gate reads a request's decisions, voided ones included, in the
-- issue transaction; the only index on request_id is partial (live
-- decisions), so that read scanned the whole table: 4 ms at 6,000
-- decisions, growing with every approval ever decided.
CREATE INDEX approval_decisions_request_idx ON approval_decisions (request_id, decided_at, id);

-- +goose Down
DROP INDEX approval_decisions_request_idx;
