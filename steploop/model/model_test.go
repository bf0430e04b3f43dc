package model

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFromSettings(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	_, err := FromSettings(env())
	require.ErrorIs(t, err, ErrNotConfigured)
	_, err = FromSettings(env("INVOICED_MODEL_PROVIDER", "openai"))
	require.ErrorContains(t, err, "INVOICED_MODEL_NAME")
	_, err = FromSettings(env("INVOICED_MODEL_PROVIDER", "scripted"))
	require.ErrorContains(t, err, "INVOICED_MODEL_SCRIPT")
	_, err = FromSettings(env("INVOICED_MODEL_PROVIDER", "magic"))
	require.ErrorContains(t, err, "openai or scripted")
	p, err := FromSettings(env("INVOICED_MODEL_PROVIDER", "openai", "INVOICED_MODEL_NAME", "gpt-x", "INVOICED_MODEL_BASE_URL", "http://127.0.0.1:1/v1"))
	require.NoError(t, err)
	require.NotNil(t, p)
}

func TestScriptedPlaysStepsInOrder(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "script.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"rules":[{"match":"Overdue","steps":[
		{"tool_calls":[{"name":"list-invoices","input":{"status":"issued"}}]},
		{"text":"Two are overdue."}]}],"default":[{"text":"Hi."}]}`), 0o600))
	s, err := LoadScript(path)
	require.NoError(t, err)
	ctx := context.Background()
	var streamed strings.Builder
	on := func(d string) error { streamed.WriteString(d); return nil }

	step, err := s.Stream(ctx, Request{Messages: []Message{{Role: RoleUser, Content: "which are overdue?"}}}, on)
	require.NoError(t, err)
	require.Len(t, step.ToolCalls, 1)
	require.Equal(t, "list-invoices", step.ToolCalls[0].Name)
	require.JSONEq(t, `{"status":"issued"}`, step.ToolCalls[0].Arguments)

	msgs := []Message{{Role: RoleUser, Content: "which are overdue?"}, {Role: RoleAssistant, ToolCalls: step.ToolCalls}, {Role: RoleTool, Content: "[]"}}
	step, err = s.Stream(ctx, Request{Messages: msgs}, on)
	require.NoError(t, err)
	require.Empty(t, step.ToolCalls)
	require.Equal(t, "Two are overdue.", step.Text)
	require.Equal(t, "Two are overdue.", streamed.String())

	step, err = s.Stream(ctx, Request{Messages: append(msgs, Message{Role: RoleAssistant, Content: "Two are overdue."})}, on)
	require.NoError(t, err)
	require.Empty(t, step.Text, "past the last step the script answers nothing, so it cannot loop")

	step, err = s.Stream(ctx, Request{Messages: []Message{{Role: RoleUser, Content: "hello"}}}, on)
	require.NoError(t, err)
	require.Equal(t, "Hi.", step.Text)

	_, err = LoadScript(filepath.Join(t.TempDir(), "missing.json"))
	require.Error(t, err)
}
