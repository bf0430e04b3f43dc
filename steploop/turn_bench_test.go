package steploop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/steploop"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/stretchr/testify/require"
)

// BenchmarkChatTurnAt measures one last-message turn (a read tool call,
// then text) on a conversation holding 2 and 400 messages, for profiling
// (`go test -run '^$' -bench ChatTurnAt -cpuprofile cpu.out ./steploop/`);
// make bench-chat-long is the benchmark of record.
func BenchmarkChatTurnAt(b *testing.B) {
	for _, at := range []int{2, 400} {
		b.Run(fmt.Sprint(at), func(b *testing.B) {
			bb := benchTurns(b, at, b.N)
			b.ResetTimer()
			for i := range b.N {
				res := bb.chatB(b, map[string]any{"id": fmt.Sprintf("bench-%d", i), "message": userMsg(fmt.Sprintf("q%d", i), "look it up")})
				if res != http.StatusOK {
					b.Fatalf("status %d", res)
				}
			}
		})
	}
}

// benchTurns is a service with n conversations bench-0… holding at
// messages each (one built turn by turn, the others its copies).
func benchTurns(b *testing.B, at, n int) *bundle {
	steps := 0
	m := funcModel(func(ctx context.Context, onText func(string) error) (model.Step, error) {
		steps++
		if steps%2 == 1 {
			return model.Step{FinishReason: "tool_calls", ToolCalls: []model.ToolCall{{Name: "lookup-thing", Arguments: `{"key":"alpha"}`}}}, nil
		}
		_ = onText("Found it.")
		return model.Step{Text: "Found it.", FinishReason: "stop"}, nil
	})
	bu := setupWithConfig(b, steploop.Config{Model: m, Tools: registryWith("lookup-thing", capability.RiskRead,
		func(context.Context, capability.Call) (any, error) {
			return map[string]any{"key": "alpha", "value": "v-alpha"}, nil
		}),
		Limits: steploop.Limits{ContextBudget: 8000}})
	for i := 0; i < at/2; i++ {
		if s := bu.chatB(b, map[string]any{"id": "seed", "message": userMsg(fmt.Sprintf("s%d", i), "look it up")}); s != http.StatusOK {
			b.Fatalf("seed: %d", s)
		}
	}
	_, err := bu.Pool.Exec(context.Background(), `
		WITH c AS (
			INSERT INTO conversations (id, owner_id) SELECT 'bench-' || g, owner_id FROM conversations, generate_series(0, $1 - 1) g WHERE id = 'seed'
			RETURNING id
		)
		INSERT INTO conversation_messages (conversation_id, position, id, role, parts, metadata, model_chars, chars_before)
		SELECT c.id, m.position, m.id, m.role, m.parts, m.metadata, m.model_chars, m.chars_before
		  FROM c, conversation_messages m WHERE m.conversation_id = 'seed'`, n)
	require.NoError(b, err)
	_, err = bu.Pool.Exec(context.Background(), `VACUUM ANALYZE conversations, conversation_messages`)
	require.NoError(b, err)
	return bu
}

// chatB posts body and reads the answer whole, returning its status.
func (b *bundle) chatB(tb testing.TB, body any) int {
	buf, err := json.Marshal(body)
	require.NoError(tb, err)
	req, err := http.NewRequest(http.MethodPost, b.URL+"/v1/chat", bytes.NewReader(buf))
	require.NoError(tb, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+b.Token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(tb, err)
	return resp.StatusCode
}
