// Package steploop is the step loop of ADR-0002: POST /v1/chat starts a
// run of model steps and tool calls for the chat user's principal and
// streams it as a UI message stream; the run goes on to its end whether or
// not its client stays (ADR-0017), GET /v1/chat/{id}/stream replays and
// follows it from any replica and POST /v1/chat/{id}/stop ends it.
// GET /v1/conversations lists the stored transcripts and
// GET /v1/conversations/{id} returns one.
package steploop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/steploop/model"
	"github.com/invoiced/invoiced/store"
)

// DefaultMaxSteps bounds the model steps of one request: 8 covers a lookup,
// a follow-up lookup and an answer with room to spare, and stops a model
// that loops on tool calls before it burns a budget.
const DefaultMaxSteps = 8

// DefaultLeaseTTL is how long a run's hold on its conversation lasts
// without a renewal. The replica running it renews it every third of that
// (one statement for all its runs), so a live run keeps it for as long as
// it runs, and a replica that dies frees its conversations within 30 s:
// the next message is then accepted, and what the dead run streamed is
// stored, marked interrupted.
const DefaultLeaseTTL = 30 * time.Second

// MinLeaseTTL is the shortest lease: renewed every third of it, a shorter
// one would be lost to one slow statement.
const MinLeaseTTL = time.Second

// DefaultRunTimeout bounds one run: ten minutes is far beyond a chat turn
// with slow tools, and stops one that never ends.
const DefaultRunTimeout = 10 * time.Minute

// DefaultReplayWindow is how long a finished run stays replayable: long
// enough for a page that loaded the transcript mid-run to get the end of
// the answer through GET /v1/chat/{id}/stream, short enough that a reload
// long after does not replay (and so re-run the browser's tools of) an
// old answer.
const DefaultReplayWindow = time.Minute

// DefaultContextBudget bounds what the model is sent of a conversation,
// in bytes of text, tool arguments and tool results: 200,000 is about
// 50,000 tokens, within every current model's context, with room for the
// answer. The oldest turns are left out first.
const DefaultContextBudget = 200_000

// DefaultMaxMessages bounds a conversation: past it a new message is
// refused (422) and the user starts a new conversation.
const DefaultMaxMessages = 1000

// Config is what the step loop is built from.
type Config struct {
	// DB holds conversations (a pool: the loop runs its own statements).
	DB store.Executor
	// Model runs model steps; nil makes /v1/chat answer 503 naming the
	// settings to set, while the rest of the service works.
	Model model.Provider
	// Tools are the capabilities offered to the model.
	Tools Tools
	// Frontend are the tools the browser runs (at least ShowInvoice).
	Frontend []FrontendTool
	// Confirm is the confirm controller for bound capabilities; required
	// when Tools has any. Its mode is the toolset's declared one,
	// confirm.AgentToolset (remote, wait: ADR-0005).
	Confirm Confirmer
	// System is the system prompt; empty uses DefaultSystemPrompt.
	System string
	// MaxSteps bounds model steps per request; 0 uses DefaultMaxSteps.
	MaxSteps int
	// Limits are the run and conversation limits; zero fields take the
	// defaults.
	Limits
	// Listener is the process's LISTEN connection, on which New registers
	// the run log's channel (start it after New); without it readers poll
	// the log and a stop reaches another replica's run at its next lease
	// renewal.
	Listener *store.Listener
	// CredentialMaxAge is how long ago the request's credential may have
	// been checked when a tool runs; older, it is checked again first.
	// 0 uses DefaultCredentialMaxAge.
	CredentialMaxAge time.Duration
	// Log receives errors that clients only see as safe messages.
	Log *slog.Logger
}

// DefaultSystemPrompt tells the model what it operates and how approvals
// and confirmations answer.
const DefaultSystemPrompt = `You are the assistant of an invoicing back office. Use the tools to look ` +
	`up and change customers and invoices; never invent ids or amounts. Some tools ask the user to confirm ` +
	`in their browser first. Issuing and deleting invoices need an approver's decision in the back office: ` +
	`when a tool answers APPROVAL_REQUIRED, tell the user it waits for approval. Tool results with an ` +
	`"error" member say what happened and what to do next; follow them.`

// DefaultCredentialMaxAge bounds how long a turn acts on a credential
// checked once: a turn may run for minutes (slow models, tools, up to the
// lease), and a revoked token, a disabled user or a changed role must stop
// its tool calls within the 15 s the approvals event stream allows too.
// A turn that ends sooner, most of them, pays no extra statement.
const DefaultCredentialMaxAge = 15 * time.Second

// Service is the step loop: POST /v1/chat and GET /v1/conversations/{id}.
type Service struct {
	cfg        Config
	frontend   *capability.Registry
	risks      map[string]capability.Risk
	modelTools []model.Tool
	// stopping is cancelled (cause errShuttingDown) when the server
	// begins to shut down: every running turn, and any tool in it, ends.
	stopping context.Context
	stop     context.CancelCauseFunc
	// runs are this replica's running turns; hub wakes readers and
	// carries stop requests (nil until Start).
	runs *runs
	hub  *hub
}

// errShuttingDown is why turns end when the server shuts down.
var errShuttingDown = errors.New("steploop: the server is shutting down")

// Shutdown ends every running turn: its model call and any running tool
// are cancelled, what completed is stored, its conversation is released
// and a client still connected is told to send its message again. Register
// it with http.Server.RegisterOnShutdown: Shutdown does not cancel request
// contexts, so a chat waiting on a slow model would otherwise hold the
// grace period and keep its conversation busy past a restart.
func (s *Service) Shutdown() { s.stop(errShuttingDown) }

// New checks cfg and builds the toolset offered to the model.
func New(cfg Config) (*Service, error) {
	if cfg.DB == nil || cfg.Tools == nil {
		return nil, errors.New("steploop: DB and Tools are required")
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if err := cfg.Limits.fill(); err != nil {
		return nil, err
	}
	if cfg.CredentialMaxAge <= 0 {
		cfg.CredentialMaxAge = DefaultCredentialMaxAge
	}
	if cfg.System == "" {
		cfg.System = DefaultSystemPrompt
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	fr, err := frontendRegistry(cfg.Frontend)
	if err != nil {
		return nil, fmt.Errorf("steploop: frontend tools: %w", err)
	}
	stopping, stop := context.WithCancelCause(context.Background())
	s := &Service{
		cfg:      cfg,
		stopping: stopping,
		stop:     stop,
		frontend: fr,
		risks:    map[string]capability.Risk{},
	}
	s.runs = newRuns(s)
	if cfg.Listener != nil {
		s.hub = newHub(func(run uuid.UUID) { s.runs.stop(run) })
		cfg.Listener.Handle(chatChannel, s.hub)
	}
	for _, d := range cfg.Tools.Descriptors() {
		if _, dup := fr.Lookup(d.Name); dup {
			return nil, fmt.Errorf("steploop: %q is both a capability and a frontend tool", d.Name)
		}
		if d.Risk == capability.RiskBound && cfg.Confirm == nil {
			return nil, fmt.Errorf("steploop: bound capability %q needs a confirm controller", d.Name)
		}
		s.risks[d.Name] = d.Risk
		s.modelTools = append(s.modelTools, model.Tool{Name: d.Name, Description: d.Description, Parameters: d.InputSchema})
	}
	for _, d := range fr.Descriptors() {
		s.modelTools = append(s.modelTools, model.Tool{Name: d.Name, Description: d.Description, Parameters: d.InputSchema})
	}
	return s, nil
}

func (s *Service) isFrontend(name string) bool {
	_, ok := s.frontend.Lookup(name)
	return ok
}
