package steploop

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/invoiced/invoiced/store"
)

// modelChars is what m adds to the model's context: the bytes of its text,
// tool arguments and tool results as Transcript sends them (reasoning and
// data parts are not sent).
func modelChars(m Message) int {
	n := 0
	for _, p := range m.Parts {
		switch {
		case p.Type == "text" && p.Text != nil:
			n += len(*p.Text)
		case p.IsTool():
			n += len(arguments(p.Input)) + len(modelResult(p))
		}
	}
	return n
}

// budgetTail is the part of msgs the model is sent within budget bytes:
// whole turns (a user message and what answers it), newest first, as many
// as fit; the newest turn always, even past the budget. Cutting only
// before a user message never separates a tool call from its result
// (both live in one assistant message), and the model's transcript always
// begins with the user. The system prompt is sent besides.
func budgetTail(msgs []Message, budget int) []Message {
	start, sum := len(msgs), 0
	for i := len(msgs) - 1; i >= 0; i-- {
		sum += modelChars(msgs[i])
		if msgs[i].Role != "user" {
			continue
		}
		if sum > budget && start < len(msgs) {
			break
		}
		start = i
	}
	if start == len(msgs) {
		return msgs
	}
	return msgs[start:]
}

// contextTail is budgetTail read from the database: the messages from the
// oldest user message whose turn and every later one fit in budget (or
// the newest user message), found by an index range scan over the stored
// running totals, so its cost does not grow with the conversation.
func contextTail(ctx context.Context, db store.Executor, conversationID string, budget int) ([]Message, error) {
	return contextQuery(ctx, db, `
		WITH total AS (
			SELECT chars_before + model_chars AS n FROM conversation_messages
			 WHERE conversation_id = $1 ORDER BY position DESC LIMIT 1
		), fits AS (
			SELECT m.position FROM conversation_messages m, total
			 WHERE m.conversation_id = $1 AND m.chars_before >= total.n - $2 AND m.role = 'user'
			 ORDER BY m.chars_before, m.position LIMIT 1
		), newest AS (
			SELECT position FROM conversation_messages
			 WHERE conversation_id = $1 AND role = 'user' ORDER BY position DESC LIMIT 1
		)
		`+contextSelect+`
		 WHERE m.conversation_id = $1
		   AND m.position >= least((SELECT position FROM fits), (SELECT position FROM newest))
		 ORDER BY m.position, p.ord`, conversationID, budget)
}

// contextSelect reads messages for the model's context only: each part's
// members that Transcript reads, taken out of the stored jsonb by
// PostgreSQL, a row per part. Nothing is parsed as JSON here, whatever
// the context's size; the messages it gives are not a client's copy
// (confirmations and data parts are left out).
const contextSelect = `
		SELECT m.id, m.role, p.type, p.text, p."toolCallId", p.input::text, p.output::text, p.state, p."errorText", p.x_model_result::text
		  FROM conversation_messages m
		  LEFT JOIN LATERAL ROWS FROM (jsonb_to_recordset(m.parts) AS (type text, text text, "toolCallId" text, input jsonb,
		       output jsonb, state text, "errorText" text, x_model_result jsonb)) WITH ORDINALITY
		       AS p(type, text, "toolCallId", input, output, state, "errorText", x_model_result, ord) ON true`

// contextQuery runs a query of contextSelect's columns, ordered by message
// and part, and gathers its messages. Every column is text, so each row's
// values are taken as they arrive, without a scan plan per value: a
// context of a few hundred parts is read at a few µs a part.
func contextQuery(ctx context.Context, db store.Executor, sql string, args ...any) ([]Message, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, store.MapError(err, "messages")
	}
	defer rows.Close()
	var msgs []Message
	for rows.Next() {
		v := rows.RawValues()
		if len(v) != 10 {
			return nil, fmt.Errorf("context query: %d columns", len(v))
		}
		// A message's parts arrive together; ids are unique in a
		// conversation.
		if id := string(v[0]); len(msgs) == 0 || msgs[len(msgs)-1].ID != id {
			msgs = append(msgs, Message{ID: id, Role: string(v[1]), Parts: []Part{}})
		}
		if v[2] == nil {
			continue
		}
		m := &msgs[len(msgs)-1]
		p := Part{Type: string(v[2]), ToolCallID: string(v[4]), State: string(v[7]), ErrorText: string(v[8]),
			Input: rawOrNil(v[5]), Output: rawOrNil(v[6]), ModelResult: rawOrNil(v[9])}
		if v[3] != nil {
			p.Text = strPtr(string(v[3]))
		}
		m.Parts = append(m.Parts, p)
	}
	return msgs, store.MapError(rows.Err(), "messages")
}

// rawOrNil is a row value as JSON text (copied: pgx reuses its buffer),
// nil for NULL.
func rawOrNil(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(append([]byte(nil), b...))
}

// turnOpen stores user after last (of lease l's conversation), opens run
// and reads the stored messages within budget before user, in one
// statement whose commit does not wait for the disk.
func turnOpen(ctx context.Context, db store.Executor, l *Lease, last lastStored, user Message, run runStart, budget int) ([]Message, error) {
	parts, err := partsJSON(user)
	if err != nil {
		return nil, err
	}
	msgs, err := contextQuery(ctx, db, `
		WITH async AS (
			SELECT set_config('synchronous_commit', 'off', true)
		), u AS (
			INSERT INTO conversation_messages (conversation_id, position, id, role, parts, model_chars, chars_before)
			SELECT $1, $2, $3, 'user', $4, $5, $6 FROM async
		), r AS (
			INSERT INTO chat_runs (id, conversation_id, message_id, position, lease_token, head)
			SELECT $7, $1, $8, $2 + 1, $9, $10 FROM async
		), fits AS (
			SELECT m.position FROM conversation_messages m
			 WHERE m.conversation_id = $1 AND m.chars_before >= $6 + $5 - $11 AND m.role = 'user'
			 ORDER BY m.chars_before, m.position LIMIT 1
		)
		`+contextSelect+`
		 WHERE m.conversation_id = $1 AND m.position >= coalesce((SELECT position FROM fits), $2)
		 ORDER BY m.position, p.ord`,
		l.ID, last.pos+1, user.ID, parts, modelChars(user), last.end, run.ID, run.MessageID, l.token, string(run.Head), budget)
	if store.IsUniqueViolation(err, "conversation_messages_id_key") {
		return nil, mismatch("message id %q is already used in this conversation", user.ID)
	}
	return msgs, err
}
