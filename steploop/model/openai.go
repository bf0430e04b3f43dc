package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
)

// OpenAIConfig points the openai provider at an endpoint.
type OpenAIConfig struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1 or
	// http://localhost:11434/v1 for a local OpenAI-compatible server.
	BaseURL string
	// APIKey is sent as a Bearer token; local servers often ignore it.
	APIKey string
	// Model is the model name the endpoint knows.
	Model string
	// MaxRetries is openai-go's retry count for failed requests before
	// the stream starts; 0 uses 2, negative disables retries.
	MaxRetries int
	// IdleTimeout ends a step whose endpoint sends nothing for this long,
	// before its first token or between two; 0 uses DefaultIdleTimeout.
	IdleTimeout time.Duration
	// NoStreamUsage leaves stream_options.include_usage out of requests,
	// for an endpoint that refuses it; steps then report no usage.
	NoStreamUsage bool
}

// DefaultIdleTimeout is how long a model step may go without a byte: long
// enough for a large prompt's first token on a slow local model, short
// enough that a stalled endpoint does not hold a conversation's lease for
// the request's whole 9.5 minutes.
const DefaultIdleTimeout = 60 * time.Second

// errIdle is the cause of a step cancelled by IdleTimeout.
var errIdle = errors.New("model endpoint idle")

// OpenAI streams Chat Completions with tool calls from any
// OpenAI-compatible endpoint.
type OpenAI struct {
	chat    openai.ChatCompletionService
	model   string
	idle    time.Duration
	noUsage bool
}

// DefaultBaseURL is the API root the openai provider uses when
// INVOICED_MODEL_BASE_URL is unset.
const DefaultBaseURL = "https://api.openai.com/v1"

// NewOpenAI returns the provider; Model is required, BaseURL must be an
// http(s) URL, and OpenAI's own endpoint needs an APIKey.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai provider: a model name is required (INVOICED_MODEL_NAME)")
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("INVOICED_MODEL_BASE_URL must be an http or https URL such as http://localhost:11434/v1 (no credentials in it), not %q", base)
	}
	if cfg.APIKey == "" && strings.TrimSuffix(base, "/") == DefaultBaseURL {
		return nil, fmt.Errorf("openai provider: %s needs a key (INVOICED_MODEL_API_KEY)", DefaultBaseURL)
	}
	retries := cfg.MaxRetries
	switch {
	case retries == 0:
		retries = 2
	case retries < 0:
		retries = 0
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithMaxRetries(retries),
		option.WithMiddleware(watchBody),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	idle := cfg.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	// Only the chat completions service, built from these options alone:
	// openai.NewClient would add openai-go's defaults from the environment
	// (OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_ORG_ID, OPENAI_PROJECT_ID,
	// OPENAI_CUSTOM_HEADERS, …), so a variable left over for another tool
	// could send the prompts, a key or any header somewhere else. Only the
	// INVOICED_MODEL_* settings count.
	return &OpenAI{chat: openai.NewChatCompletionService(opts...), model: cfg.Model, idle: idle, noUsage: cfg.NoStreamUsage}, nil
}

// Name implements Provider: the configured model name.
func (o *OpenAI) Name() string { return o.model }

// Stream implements Provider.
func (o *OpenAI) Stream(ctx context.Context, req Request, ev Events) (Step, error) {
	params, err := o.params(req)
	if err != nil {
		return Step{}, err
	}
	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := &streamWatch{idle: time.AfterFunc(o.idle, func() { cancel(errIdle) }), every: o.idle}
	defer w.idle.Stop()
	stream := o.chat.NewStreaming(context.WithValue(ctx, watchKey{}, w), params)
	defer stream.Close()
	a := assembly{byIndex: map[int64]*partialCall{}}
	for stream.Next() {
		// The time onText takes (the client's write) is not the
		// endpoint's idleness, even when every chunk came in one read.
		w.idle.Reset(o.idle)
		if err := a.add(stream.Current(), ev); err != nil {
			return Step{}, err
		}
	}
	if errors.Is(context.Cause(ctx), errIdle) && parent.Err() == nil {
		return Step{}, fmt.Errorf("model stream: the endpoint sent nothing for %s (INVOICED_MODEL_IDLE_TIMEOUT)", o.idle)
	}
	if err := stream.Err(); err != nil {
		if parent.Err() != nil {
			return Step{}, parent.Err()
		}
		return Step{}, streamError(err)
	}
	if a.step.FinishReason == "" && parent.Err() != nil {
		return Step{}, parent.Err()
	}
	return a.finish(w.done)
}

// params is req as a Chat Completions request.
func (o *OpenAI) params(req Request) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(o.model)}
	if !o.noUsage {
		// The totals then arrive in one last chunk without choices; ai's
		// own OpenAI provider asks for them the same way.
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	if req.System != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		case RoleTool:
			params.Messages = append(params.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		case RoleAssistant:
			params.Messages = append(params.Messages, assistantParam(m))
		}
	}
	for _, t := range req.Tools {
		var schema shared.FunctionParameters
		if err := json.Unmarshal(t.Parameters, &schema); err != nil {
			return params, fmt.Errorf("tool %s: schema: %w", t.Name, err)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        t.Name,
			Description: openai.String(t.Description),
			Parameters:  schema,
		}))
	}
	return params, nil
}

func assistantParam(m Message) openai.ChatCompletionMessageParamUnion {
	a := openai.ChatCompletionAssistantMessageParam{}
	if m.Content != "" {
		a.Content.OfString = openai.String(m.Content)
	}
	for _, tc := range m.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID:       tc.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments},
			},
		})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// assembly builds a step from its stream's chunks.
type assembly struct {
	step  Step
	text  []byte
	calls []*partialCall
	// byIndex is the call each index is assembling.
	byIndex map[int64]*partialCall
}

// partialCall is a tool call being assembled; started says whether its
// first fragment (with a name) was reported, pending holds arguments that
// came before its name did.
type partialCall struct {
	ToolCall
	index   int
	started bool
	pending string
}

// add takes one chunk: text, reasoning and tool call fragments go to ev
// as they arrive.
func (a *assembly) add(chunk openai.ChatCompletionChunk, ev Events) error {
	if chunk.JSON.Usage.Valid() {
		// The usage chunk comes last, with no choices (include_usage).
		u := chunk.Usage
		a.step.Usage = &Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens,
			CachedInputTokens: u.PromptTokensDetails.CachedTokens, ReasoningTokens: u.CompletionTokensDetails.ReasoningTokens}
	}
	if len(chunk.Choices) == 0 {
		return nil
	}
	ch := chunk.Choices[0]
	if r := reasoningDelta(ch.Delta); r != "" {
		if err := ev.Reasoning(r); err != nil {
			return err
		}
	}
	// A refusal is what the model says instead of an answer.
	for _, d := range []string{ch.Delta.Content, ch.Delta.Refusal} {
		if d == "" {
			continue
		}
		a.text = append(a.text, d...)
		if err := ev.Text(d); err != nil {
			return err
		}
	}
	for _, tc := range ch.Delta.ToolCalls {
		if err := a.toolFragment(tc, ev); err != nil {
			return err
		}
	}
	if ch.FinishReason != "" {
		a.step.FinishReason = ch.FinishReason
	}
	return nil
}

// toolFragment adds one fragment of a tool call. Tool calls arrive as
// fragments keyed by index: the first carries the id and name, later ones
// append to the arguments. Some servers split the name over fragments
// (joined), some repeat it on every fragment (kept once), and some send
// whole calls without an index (so all at 0): a new id at an index starts
// a new call.
func (a *assembly) toolFragment(tc openai.ChatCompletionChunkChoiceDeltaToolCall, ev Events) error {
	c, ok := a.byIndex[tc.Index]
	if !ok || (tc.ID != "" && c.ID != "" && tc.ID != c.ID) {
		c = &partialCall{index: len(a.calls)}
		a.byIndex[tc.Index] = c
		a.calls = append(a.calls, c)
	}
	if tc.ID != "" {
		c.ID = tc.ID
	}
	if n := tc.Function.Name; n != c.Name {
		c.Name += n
	}
	c.Arguments += tc.Function.Arguments
	if !c.started {
		if c.Name == "" {
			c.pending += tc.Function.Arguments
			return nil
		}
		c.started = true
		if err := ev.ToolInput(ToolInput{Index: c.index, Start: true, ID: c.ID, Name: c.Name}); err != nil {
			return err
		}
		args := c.pending + tc.Function.Arguments
		c.pending = ""
		if args == "" {
			return nil
		}
		return ev.ToolInput(ToolInput{Index: c.index, Arguments: args})
	}
	if tc.Function.Arguments == "" {
		return nil
	}
	return ev.ToolInput(ToolInput{Index: c.index, Arguments: tc.Function.Arguments})
}

// reasoningDelta is a chunk's reasoning text: DeepSeek and llama.cpp send
// it as reasoning_content, vLLM, OpenRouter and Ollama as reasoning (ai's
// openai-compatible provider reads both, in this order). openai-go has no
// field for either; an extra field's Valid is false, so its raw text is
// read instead.
func reasoningDelta(d openai.ChatCompletionChunkChoiceDelta) string {
	for _, k := range []string{"reasoning_content", "reasoning"} {
		f, ok := d.JSON.ExtraFields[k]
		if !ok || f.Raw() == "" || f.Raw() == "null" {
			continue
		}
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// finish is the assembled step once the stream ended without an error;
// sawDone says whether its closing [DONE] line was read.
func (a *assembly) finish(sawDone bool) (Step, error) {
	step := a.step
	// The SSE decoder takes a body that simply ends for a finished stream.
	// A step is complete when a chunk said why it finished, or when the
	// stream ended with its [DONE] line (some servers send no
	// finish_reason). Otherwise it was cut off (a dropped connection
	// mid-answer, half a tool call's arguments) or was never a stream (a
	// proxy's page, an endpoint ignoring stream=true): neither is an answer.
	if step.FinishReason == "" {
		if !sawDone {
			return Step{}, errors.New("model stream: it ended without a finish_reason or [DONE]: the connection was cut, or the endpoint does not stream Chat Completions")
		}
		step.FinishReason = "stop"
		if len(a.calls) > 0 {
			step.FinishReason = "tool_calls"
		}
	}
	step.Text = string(a.text)
	for _, c := range a.calls {
		if c.Name == "" {
			// Replayed to the model as a call to "", it would make every
			// later request in the conversation fail.
			return Step{}, errors.New("model stream: the endpoint sent a tool call without a function name")
		}
		step.ToolCalls = append(step.ToolCalls, c.ToolCall)
	}
	return step, nil
}

// streamError describes a failed stream for the log.
func streamError(err error) error {
	var se *ssestream.StreamError
	if !errors.As(err, &se) {
		return fmt.Errorf("model stream: %w", err)
	}
	// An error event inside the stream: its message is the endpoint's own
	// text, which may echo the request (the key, the prompt), so only its
	// type and code go to the log.
	var ev struct {
		Error struct {
			Type any `json:"type"`
			Code any `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(se.Event.Data, &ev)
	return fmt.Errorf("model stream: the endpoint sent an error event (type %v, code %v)", ev.Error.Type, ev.Error.Code)
}

// watchKey carries a step's streamWatch to watchBody.
type watchKey struct{}

// streamWatch sees every byte of a step's response body as it is read:
// each read puts off the idle timeout (SSE comments such as a proxy's
// keep-alive count, though the decoder drops them), and done records the
// stream's closing "data: [DONE]" line, which the decoder does not
// report. Reads happen on the goroutine that runs Stream.
type streamWatch struct {
	idle  *time.Timer
	every time.Duration
	// line holds the first bytes of the current line, enough to tell
	// [DONE]; long is set once it had more.
	line []byte
	long bool
	done bool
}

func (w *streamWatch) saw(p []byte) {
	w.idle.Reset(w.every)
	for _, c := range p {
		switch {
		case c == '\n':
			w.endLine()
		case len(w.line) < 16:
			w.line = append(w.line, c)
		default:
			w.long = true
		}
	}
}

// endLine ends the current line at a newline or the end of the body.
func (w *streamWatch) endLine() {
	l := strings.TrimSuffix(string(w.line), "\r")
	if !w.long && (l == "data: [DONE]" || l == "data:[DONE]") {
		w.done = true
	}
	w.line, w.long = w.line[:0], false
}

// watchBody is openai-go middleware: it shows a step's response body to
// the step's streamWatch as it is read.
func watchBody(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	if w, ok := req.Context().Value(watchKey{}).(*streamWatch); ok && err == nil && resp != nil && resp.Body != nil {
		resp.Body = &watchedBody{ReadCloser: resp.Body, w: w}
	}
	return resp, err
}

type watchedBody struct {
	io.ReadCloser
	w *streamWatch
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.w.saw(p[:n])
	}
	if err == io.EOF {
		b.w.endLine()
	}
	return n, err
}
