-- +goose Up
-- An MCP client's tool call is a path of its own (capability.PathMCP), so
-- the approvals it requests record requested_via 'mcp'.
ALTER TABLE approval_requests DROP CONSTRAINT approval_requests_via;
ALTER TABLE approval_requests ADD CONSTRAINT approval_requests_via
    CHECK (requested_via IN ('rest', 'binding', 'mcp') OR requested_via LIKE 'agent:%');

-- +goose Down
-- Requests made over MCP stay as they were (they are history the audit
-- chain refers to); NOT VALID keeps them while refusing new ones.
ALTER TABLE approval_requests DROP CONSTRAINT approval_requests_via;
ALTER TABLE approval_requests ADD CONSTRAINT approval_requests_via
    CHECK (requested_via IN ('rest', 'binding') OR requested_via LIKE 'agent:%') NOT VALID;
