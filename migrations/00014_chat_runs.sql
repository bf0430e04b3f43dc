-- +goose Up
-- Chat runs that outlive their request (ADR-0017). A run's chunks go to a
-- log that GET /v1/chat/{id}/stream replays and follows from any replica.
-- The log is transient: the transcript (conversation_messages) is the
-- durable record, so both tables are UNLOGGED: no WAL, no disk flush per
-- batch; a PostgreSQL crash empties them (a reader then answers 204 and the
-- client shows the stored transcript) and standbys do not have them.
CREATE UNLOGGED TABLE chat_runs (
    id              uuid PRIMARY KEY,
    conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    -- The assistant message the run writes, and where.
    message_id      text NOT NULL,
    position        integer NOT NULL,
    -- The conversation's busy_token while the run holds it.
    lease_token     uuid NOT NULL,
    -- The SSE that rebuilds the message as it stood when the run began
    -- (a start chunk, then one chunk sequence per earlier part): a replay
    -- sends it first, the run's own batches after.
    head            text NOT NULL,
    started_at      timestamptz NOT NULL DEFAULT now(),
    ended_at        timestamptz,
    stop_requested  boolean NOT NULL DEFAULT false,
    -- Readers following the run now: its writes notify only when some do,
    -- since NOTIFY serialises committing transactions cluster-wide.
    followers       integer NOT NULL DEFAULT 0 CHECK (followers >= 0)
);
CREATE INDEX chat_runs_conversation_idx ON chat_runs (conversation_id, started_at DESC);

-- One row per flush of a run's stream: the exact SSE bytes its client was
-- sent, so a reader copies them to its socket unchanged.
CREATE UNLOGGED TABLE chat_run_batches (
    run_id uuid NOT NULL REFERENCES chat_runs (id) ON DELETE CASCADE,
    seq    integer NOT NULL,
    sse    text NOT NULL,
    PRIMARY KEY (run_id, seq)
);

-- Message metadata (createdAt, model, usage, finishReason), as ai@7's
-- messageMetadata carries it; null for user messages.
ALTER TABLE conversation_messages ADD COLUMN metadata jsonb;
-- What a message adds to the model's context (characters of its text,
-- tool arguments and results) and what every earlier message adds: the
-- context budget starts at a position found by an index range scan,
-- whatever the conversation's length.
ALTER TABLE conversation_messages
    ADD COLUMN model_chars  integer NOT NULL DEFAULT 0 CHECK (model_chars >= 0),
    ADD COLUMN chars_before bigint NOT NULL DEFAULT 0 CHECK (chars_before >= 0);
-- Stored messages count what jsonb holds: an upper bound of what the model
-- reads, which a budget errs on the safe side with.
UPDATE conversation_messages m SET model_chars = length(m.parts::text);
UPDATE conversation_messages m SET chars_before = s.before
  FROM (SELECT conversation_id, position,
               coalesce(sum(model_chars) OVER (PARTITION BY conversation_id ORDER BY position
                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
          FROM conversation_messages) s
 WHERE s.conversation_id = m.conversation_id AND s.position = m.position;
CREATE INDEX conversation_messages_budget_idx ON conversation_messages (conversation_id, chars_before);

-- +goose Down
DROP INDEX conversation_messages_budget_idx;
ALTER TABLE conversation_messages DROP COLUMN chars_before, DROP COLUMN model_chars, DROP COLUMN metadata;
DROP TABLE chat_run_batches;
DROP TABLE chat_runs;
