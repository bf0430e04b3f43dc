package steploop

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/invoiced/invoiced/jsondoc"
	"github.com/invoiced/invoiced/problem"
)

// ChatRequest is the body ai@7's DefaultChatTransport sends: the chat id,
// the client's whole message list, the trigger and the message id; or,
// from a client whose prepareSendMessagesRequest sends the last message
// only (the AI SDK's persistence guide), the chat id and that message.
type ChatRequest struct {
	ID        string            `json:"id"`
	Messages  []json.RawMessage `json:"messages"`
	Message   json.RawMessage   `json:"message"`
	Trigger   string            `json:"trigger"`
	MessageID *string           `json:"messageId"`
}

// clientMessage is a client's UIMessage, decoded leniently: clients add
// members (metadata, providerMetadata, …) that the server ignores.
type clientMessage struct {
	ID    string `json:"id"`
	Role  string `json:"role"`
	Parts []Part `json:"parts"`
}

// maxUserText bounds one user message (bytes): 64 KiB is pages of prose,
// far beyond a chat turn, and keeps one request from filling the context.
const maxUserText = 64 << 10

// Delta is what a reconciled request adds to the stored transcript: exactly
// one of a new user message, answers to pending tool calls, or a bare
// continuation of a loop that stopped at the step limit.
type Delta struct {
	NewUser   *Message
	Outputs   []FrontendOutput
	Approvals []ApprovalAnswer
	Continue  bool
}

// FrontendOutput is the browser's result for a frontend tool call the
// server issued.
type FrontendOutput struct {
	ToolCallID string
	Output     json.RawMessage
	ErrorText  string
	IsError    bool
}

// ApprovalAnswer is the browser's answer to a confirmation the server
// issued.
type ApprovalAnswer struct {
	ToolCallID string
	ApprovalID string
	Approved   bool
	Reason     string
}

func mismatch(format string, args ...any) error {
	return problem.New(http.StatusConflict, CodeTranscriptMismatch,
		fmt.Sprintf(format, args...)+"; GET /v1/conversations/{id} returns the server's transcript")
}

// maxParts bounds the parts of a conversation (all its messages): a turn
// stores at most a few per step and 8 steps, so 10,000 is well over a
// thousand turns, while a 1 MB body of empty parts ("{},") would be
// 333,000 of them, each decoded into a Part (about 1 KiB of garbage
// apiece: 375 MiB for one request). They are counted first, at no cost
// per part.
const maxParts = 10_000

// minPartBytes is the least a part takes in a message list ("{}" and a
// comma): a list shorter than maxParts of them cannot hold too many, and
// is not counted.
const minPartBytes = 3

// decodeMessages decodes the client's list leniently, part by part.
func decodeMessages(raw []json.RawMessage) ([]clientMessage, error) {
	if err := checkPartCount(raw); err != nil {
		return nil, err
	}
	out := make([]clientMessage, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			return nil, problem.Invalid(fmt.Sprintf("messages.%d", i), "is not a UIMessage: %v", err)
		}
	}
	return out, nil
}

// checkPartCount refuses a list of more than maxParts parts before any is
// decoded into a Part.
func checkPartCount(raw []json.RawMessage) error {
	size := 0
	for _, r := range raw {
		size += len(r)
	}
	if size < maxParts*minPartBytes {
		return nil
	}
	total := 0
	for _, r := range raw {
		// []struct{} holds a count and no memory; a part that is not an
		// object still counts, and the decode below names it.
		var shape struct {
			Parts []struct{} `json:"parts"`
		}
		_ = json.Unmarshal(r, &shape)
		if total += len(shape.Parts); total > maxParts {
			return problem.Invalid("messages", "a conversation holds at most %d parts; start a new conversation", maxParts)
		}
	}
	return nil
}

// Reconcile compares the client's list with the stored transcript
// (ADR-0002). It accepts one new user message; outputs for pending
// frontend tool calls; answers to pending confirmations; or, when the
// stored loop stopped at the step limit with results the model has not
// read, the unchanged list. Anything else is 409 TRANSCRIPT_MISMATCH and
// nothing of it is used. isFrontend says which tools run in the browser.
func Reconcile(stored []Message, client []clientMessage, isFrontend func(string) bool) (Delta, error) {
	n := len(stored)
	switch {
	case len(client) < n:
		return Delta{}, mismatch("the request holds %d messages but the conversation has %d", len(client), n)
	case len(client) > n+1:
		return Delta{}, mismatch("the request adds %d messages; only one new user message is accepted", len(client)-n)
	}
	for i := 0; i < n-1; i++ {
		if err := compareMessage(stored[i], client[i], nil, nil); err != nil {
			return Delta{}, err
		}
	}
	if len(client) == n+1 {
		var last *Message
		if n > 0 {
			last = &stored[n-1]
			if err := compareMessage(*last, client[n-1], nil, nil); err != nil {
				return Delta{}, err
			}
		}
		return reconcileNewUser(last, client[n], stored)
	}
	if n == 0 {
		return Delta{}, problem.Invalid("messages", "must hold the new user message")
	}
	return reconcileAnswers(stored[n-1], client[n-1], isFrontend)
}

// ReconcileLast is Reconcile for a request that sends only its last
// message (ChatRequest.Message), against the stored last message (nil
// for a new conversation): the same rules, applied to what the client
// sends. A new user message's id is checked against every stored one
// where it is stored (a unique constraint), not here.
func ReconcileLast(last *Message, c clientMessage, isFrontend func(string) bool) (Delta, error) {
	if last == nil || c.Role == "user" {
		var stored []Message
		if last != nil {
			stored = []Message{*last}
		}
		return reconcileNewUser(last, c, stored)
	}
	if c.ID != last.ID {
		return Delta{}, mismatch("message %q (%s) is not the conversation's last message", c.ID, c.Role)
	}
	return reconcileAnswers(*last, c, isFrontend)
}

// reconcileNewUser accepts c as a new user message after last (nil for
// none), unless a call of last still waits for the browser.
func reconcileNewUser(last *Message, c clientMessage, stored []Message) (Delta, error) {
	if last != nil {
		if pending := pendingCalls(*last); len(pending) > 0 {
			return Delta{}, mismatch("tool call %s is waiting for the browser's answer; answer it before sending a new message", pending[0])
		}
	}
	u, err := newUserMessage(c, stored)
	if err != nil {
		return Delta{}, err
	}
	return Delta{NewUser: u}, nil
}

// reconcileAnswers takes the browser's answers from c, the client's copy
// of the stored last message: outputs for pending frontend calls and
// answers to pending confirmations, or nothing when the loop stopped at
// the step limit.
func reconcileAnswers(last Message, c clientMessage, isFrontend func(string) bool) (Delta, error) {
	if last.Role != "assistant" {
		return Delta{}, mismatch("the request adds nothing to the conversation")
	}
	var d Delta
	if err := compareMessage(last, c, isFrontend, &d); err != nil {
		return Delta{}, err
	}
	if len(d.Outputs) == 0 && len(d.Approvals) == 0 {
		if !awaitsModel(last) {
			return Delta{}, mismatch("the request adds nothing to the conversation")
		}
		d.Continue = true
	}
	return d, nil
}

// pendingCalls lists the tool calls of m that wait for the browser.
func pendingCalls(m Message) []string {
	var ids []string
	for _, p := range m.Parts {
		if p.IsTool() && !p.Resolved() {
			ids = append(ids, p.ToolCallID)
		}
	}
	return ids
}

// awaitsModel reports whether m's last step ended in tool results the
// model has not read yet (the loop stopped at the step limit).
func awaitsModel(m Message) bool {
	sawTool := false
	for i := len(m.Parts) - 1; i >= 0; i-- {
		p := m.Parts[i]
		switch {
		case p.Type == "step-start":
			return sawTool
		case p.IsTool():
			if !p.Resolved() {
				return false
			}
			sawTool = true
		case p.Type == "text":
			return false
		}
	}
	return sawTool
}

func newUserMessage(c clientMessage, stored []Message) (*Message, error) {
	if c.Role != "user" {
		return nil, mismatch("the new message must have role user, not %q", c.Role)
	}
	if !idRE.MatchString(c.ID) {
		return nil, problem.Invalid("messages.id", "must be 1–128 letters, digits, '_' or '-'")
	}
	for _, s := range stored {
		if s.ID == c.ID {
			return nil, mismatch("message id %q is already used in this conversation", c.ID)
		}
	}
	var (
		parts []Part
		size  int
	)
	for _, p := range c.Parts {
		if p.Type != "text" || p.Text == nil {
			return nil, problem.Invalid("messages.parts", "a user message may hold text parts only, not %q", p.Type)
		}
		if err := textRefused("text", *p.Text); err != nil {
			return nil, err
		}
		size += len(*p.Text)
		parts = append(parts, Part{Type: "text", Text: strPtr(*p.Text)})
	}
	if len(parts) == 0 || size == 0 {
		return nil, problem.Invalid("messages.parts", "the new user message has no text")
	}
	if size > maxUserText {
		return nil, problem.Invalid("messages.parts.text", "is longer than %d bytes", maxUserText)
	}
	return &Message{ID: c.ID, Role: "user", Parts: parts}, nil
}

// textRefused refuses text of a client's message that PostgreSQL cannot
// store in jsonb (U+0000, invalid UTF-8): it could be acted on but never
// recorded.
func textRefused(field, s string) error {
	if r, bad := jsondoc.UnstorableText(s); bad {
		return problem.Invalid("messages.parts."+field, "%s", r.Message())
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
