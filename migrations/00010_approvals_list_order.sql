-- +goose Up
-- Every list of the API pages by the same (created_at, id) keyset; the
-- inbox reads it newest first, filtered by status or not.
DROP INDEX approval_requests_status_idx;
CREATE INDEX approval_requests_status_created_idx ON approval_requests (status, created_at DESC, id DESC);
CREATE INDEX approval_requests_created_idx ON approval_requests (created_at DESC, id DESC);

-- +goose Down
DROP INDEX approval_requests_created_idx;
DROP INDEX approval_requests_status_created_idx;
CREATE INDEX approval_requests_status_idx ON approval_requests (status, id DESC);
