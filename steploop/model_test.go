package steploop_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/fakeopenai"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/stretchr/testify/require"
)

// slowText is streamed word by word with a pause, for cancellation and
// busy tests.
var slowText = strings.Repeat("slow ", 200)

// fakeModel is the fake OpenAI-compatible endpoint (internal/fakeopenai)
// answering from a model.Script, so the real openai-go path runs. A
// latest user message with "slow" in it streams slowText a word every
// 5 ms (started and cancelled tell when it begins and when its client
// went away before the end); fail refuses every request with 400.
type fakeModel struct {
	*fakeopenai.Server
	scripted           *model.Scripted
	fail               atomic.Bool
	started, cancelled chan struct{}
}

func newFakeModel(t *testing.T) *fakeModel { return newFakeModelWith(t, script) }

// newFakeModelWith is a fake model answering from sc.
func newFakeModelWith(t *testing.T, sc model.Script) *fakeModel {
	t.Helper()
	scripted, err := model.NewScripted(sc)
	require.NoError(t, err)
	f := &fakeModel{scripted: scripted, started: make(chan struct{}, 16), cancelled: make(chan struct{}, 16)}
	f.Server = fakeopenai.New(t, f.answer)
	return f
}

func (f *fakeModel) answer(req fakeopenai.Request) fakeopenai.Reply {
	if f.fail.Load() {
		return fakeopenai.Reply{Error: "secret internal detail"}
	}
	if strings.Contains(req.LastUser(), "slow") {
		f.started <- struct{}{}
		return fakeopenai.Reply{Text: slowText, WordDelay: 5 * time.Millisecond, OnCancel: func() { f.cancelled <- struct{}{} }}
	}
	var msgs []model.Message
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			msgs = append(msgs, model.Message{Role: model.RoleUser, Content: m.Text()})
		case "assistant":
			msgs = append(msgs, model.Message{Role: model.RoleAssistant, Content: m.Text()})
		case "tool":
			msgs = append(msgs, model.Message{Role: model.RoleTool, Content: m.Text(), ToolCallID: m.ToolCallID})
		}
	}
	var reasoning strings.Builder
	step, err := f.scripted.Stream(context.Background(), model.Request{Messages: msgs}, scriptEvents{&reasoning})
	if err != nil {
		return fakeopenai.Reply{Error: err.Error()}
	}
	reply := fakeopenai.Reply{Reasoning: reasoning.String(), Text: step.Text}
	for _, tc := range step.ToolCalls {
		reply.ToolCalls = append(reply.ToolCalls, fakeopenai.ToolCall{Name: tc.Name, Arguments: tc.Arguments})
	}
	return reply
}

// scriptEvents keeps a scripted step's reasoning; its text and tool calls
// come back in the step.
type scriptEvents struct{ reasoning *strings.Builder }

func (e scriptEvents) Text(string) error               { return nil }
func (e scriptEvents) Reasoning(d string) error        { e.reasoning.WriteString(d); return nil }
func (e scriptEvents) ToolInput(model.ToolInput) error { return nil }
