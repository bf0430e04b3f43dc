package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
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
	client openai.Client
	model  string
	idle   time.Duration
}

// NewOpenAI returns the provider; Model is required.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai provider: a model name is required (INVOICED_MODEL_NAME)")
	}
	opts := []option.RequestOption{option.WithAPIKey(cfg.APIKey)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	retries := cfg.MaxRetries
	switch {
	case retries == 0:
		retries = 2
	case retries < 0:
		retries = 0
	}
	opts = append(opts, option.WithMaxRetries(retries))
	idle := cfg.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	return &OpenAI{client: openai.NewClient(opts...), model: cfg.Model, idle: idle}, nil
}

// Stream implements Provider.
func (o *OpenAI) Stream(ctx context.Context, req Request, onText func(string) error) (Step, error) {
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(o.model)}
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
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	for _, t := range req.Tools {
		var schema shared.FunctionParameters
		if err := json.Unmarshal(t.Parameters, &schema); err != nil {
			return Step{}, fmt.Errorf("tool %s: schema: %w", t.Name, err)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        t.Name,
			Description: openai.String(t.Description),
			Parameters:  schema,
		}))
	}

	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(o.idle, func() { cancel(errIdle) })
	defer idle.Stop()
	stream := o.client.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	var (
		step  Step
		text  []byte
		calls = map[int64]*ToolCall{}
	)
	for stream.Next() {
		idle.Reset(o.idle)
		chunk := stream.Current()
		if len(chunk.Choices) == 0 {
			continue
		}
		ch := chunk.Choices[0]
		if d := ch.Delta.Content; d != "" {
			text = append(text, d...)
			if err := onText(d); err != nil {
				return Step{}, err
			}
		}
		// Tool calls arrive as fragments keyed by index: the first carries
		// the id and name, later ones append to the arguments.
		for _, tc := range ch.Delta.ToolCalls {
			c, ok := calls[tc.Index]
			if !ok {
				c = &ToolCall{}
				calls[tc.Index] = c
			}
			if tc.ID != "" {
				c.ID = tc.ID
			}
			if tc.Function.Name != "" {
				c.Name += tc.Function.Name
			}
			c.Arguments += tc.Function.Arguments
		}
		if ch.FinishReason != "" {
			step.FinishReason = ch.FinishReason
		}
	}
	if errors.Is(context.Cause(ctx), errIdle) && parent.Err() == nil {
		return Step{}, fmt.Errorf("model stream: the endpoint sent nothing for %s (INVOICED_MODEL_IDLE_TIMEOUT)", o.idle)
	}
	if err := stream.Err(); err != nil {
		if parent.Err() != nil {
			return Step{}, parent.Err()
		}
		return Step{}, fmt.Errorf("model stream: %w", err)
	}
	// The SSE decoder takes a body that simply ends for a finished stream:
	// without a finish_reason the step is cut off (a dropped connection
	// mid-answer, half a tool call's arguments) or was never a stream (a
	// proxy's page, an endpoint ignoring stream=true). Neither is an answer.
	if step.FinishReason == "" {
		if parent.Err() != nil {
			return Step{}, parent.Err()
		}
		return Step{}, errors.New("model stream: it ended without a finish_reason: the connection was cut, or the endpoint does not stream Chat Completions")
	}
	step.Text = string(text)
	idx := make([]int64, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	for _, i := range idx {
		step.ToolCalls = append(step.ToolCalls, *calls[i])
	}
	return step, nil
}
