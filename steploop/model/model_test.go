package model

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// env is a settings source holding the key/value pairs kv.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestFromSettings(t *testing.T) {
	t.Parallel()
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
	on := TextOnly(func(d string) error { streamed.WriteString(d); return nil })

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

// Settings that cannot work are refused by name when serve starts, not at
// the first chat.
func TestFromSettingsRefusesWhatCannotWork(t *testing.T) {
	t.Parallel()
	openai := func(kv ...string) func(string) string {
		return env(append([]string{"INVOICED_MODEL_PROVIDER", "openai", "INVOICED_MODEL_NAME", "m", "INVOICED_MODEL_API_KEY", "k"}, kv...)...)
	}
	for _, u := range []string{"localhost:11434/v1", "127.0.0.1:11434", "api.openai.com/v1", "http://[::1", " http://127.0.0.1:11434/v1", "ftp://example.com/v1", "http://", "http://user:pw@127.0.0.1/v1"} {
		_, err := FromSettings(openai("INVOICED_MODEL_BASE_URL", u))
		require.ErrorContains(t, err, "INVOICED_MODEL_BASE_URL", u)
	}
	_, err := FromSettings(openai("INVOICED_MODEL_BASE_URL", "https://llm.internal:8443/v1/"))
	require.NoError(t, err)
	_, err = FromSettings(openai("INVOICED_MODEL_STREAM_USAGE", "no"))
	require.ErrorContains(t, err, "INVOICED_MODEL_STREAM_USAGE")
	p, err := FromSettings(openai("INVOICED_MODEL_STREAM_USAGE", "false"))
	require.NoError(t, err)
	require.True(t, p.(*OpenAI).noUsage)

	// OpenAI's own endpoint without a key can never answer.
	_, err = FromSettings(env("INVOICED_MODEL_PROVIDER", "openai", "INVOICED_MODEL_NAME", "gpt-x"))
	require.ErrorContains(t, err, "INVOICED_MODEL_API_KEY")

	// A provider's settings without the provider are a mistake, not "no
	// model configured".
	for _, k := range []string{"INVOICED_MODEL_NAME", "INVOICED_MODEL_API_KEY", "INVOICED_MODEL_BASE_URL", "INVOICED_MODEL_SCRIPT"} {
		_, err := FromSettings(env(k, "x"))
		require.NotErrorIs(t, err, ErrNotConfigured, k)
		require.ErrorContains(t, err, k)
		require.ErrorContains(t, err, "INVOICED_MODEL_PROVIDER")
	}
}

// A script that could not answer as written is refused when loaded.
func TestLoadScriptRefusesMalformedScripts(t *testing.T) {
	t.Parallel()
	for name, script := range map[string]string{
		"a second JSON value":        `{"default":[{"text":"Hi."}]} {"rules":[]}`,
		"null":                       `null`,
		"no rules and no default":    `{}`,
		"a step with nothing":        `{"rules":[{"match":"x","steps":[{}]}],"default":[{"text":"Hi."}]}`,
		"a tool call without a name": `{"default":[{"tool_calls":[{"input":{"a":1}}]}]}`,
		"a tool input not an object": `{"default":[{"tool_calls":[{"name":"list-invoices","input":"status=issued"}]}]}`,
		"a null tool input":          `{"default":[{"tool_calls":[{"name":"list-invoices","input":null}]}]}`,
		"a negative delay":           `{"default":[{"text":"Hi."}],"chunk_delay_ms":-5}`,
		"a rule without a match":     `{"rules":[{"steps":[{"text":"Hi."}]}]}`,
		"an unknown member":          `{"default":[{"txt":"Hi."}]}`,
	} {
		path := filepath.Join(t.TempDir(), "script.json")
		require.NoError(t, os.WriteFile(path, []byte(script), 0o600))
		_, err := LoadScript(path)
		require.Error(t, err, name)
		require.Contains(t, err.Error(), "script", name)
	}
	path := filepath.Join(t.TempDir(), "script.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"default":[{"tool_calls":[{"name":"list-invoices"}]},{"text":"Done."}]}`+"\n"), 0o600))
	_, err := LoadScript(path)
	require.NoError(t, err, "a tool call may leave its input out")
}
