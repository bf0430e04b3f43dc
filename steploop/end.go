package steploop

import (
	"context"
	"errors"
	"time"

	"github.com/invoiced/invoiced/steploop/model"
	"github.com/prometheus/client_golang/prometheus"
)

// TokensTotal counts the tokens model endpoints reported, by model and
// kind (input, output, cached input, reasoning output); serve registers it.
var TokensTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "invoiced_chat_tokens_total",
	Help: "Tokens the chat's model endpoints reported, by model and kind (input, output, cached_input, reasoning).",
}, []string{"model", "kind"})

// addUsage adds a step's usage to the run's and to TokensTotal.
func (t *turn) addUsage(u *model.Usage) {
	if u == nil {
		return
	}
	name := t.s.cfg.Model.Name()
	for kind, n := range map[string]int64{"input": u.InputTokens, "output": u.OutputTokens, "cached_input": u.CachedInputTokens, "reasoning": u.ReasoningTokens} {
		if n > 0 {
			TokensTotal.WithLabelValues(name, kind).Add(float64(n))
		}
	}
	sum := *u
	if t.usage != nil {
		sum = t.usage.Add(*u)
	}
	t.usage = &sum
}

// settle says how a run that neither finished nor failed ended: its
// context was cancelled (a stop request, a shutdown, RunTimeout, its lease
// lost), and its client, still reading or not, learns that the answer was
// cut.
func (t *turn) settle() {
	if t.finishReason != "" || t.errorText != "" {
		return
	}
	cause := context.Cause(t.ctx)
	switch {
	case errors.Is(cause, errStopped):
		t.aborted = true
	case t.s.stopping.Err() != nil:
		t.errorText = "The server is restarting; what was done is stored. Send a message to continue."
	case errors.Is(cause, context.DeadlineExceeded):
		t.errorText = "The answer took longer than one request may run; what was done is stored. Send a message to continue."
	case errors.Is(cause, errLeaseLostCause):
		t.errorText = "This request lost its hold on the conversation; reload it before sending another message."
	default:
		t.errorText = "The answer ended unexpectedly; what was done is stored. Send a message to continue."
	}
}

// metadata is the answer's metadata at the run's end: the start's, with
// the run's usage added to the earlier runs' and how it ended.
func (t *turn) metadata() *Metadata {
	md := t.meta
	if t.usage != nil {
		u := usageOf(*t.usage)
		if md.Usage != nil {
			u = md.Usage.add(u)
		}
		md.Usage = &u
	}
	switch {
	case t.aborted:
		md.FinishReason = finishInterrupted
	case t.errorText != "" && t.ctx.Err() != nil:
		md.FinishReason = finishInterrupted
	case t.errorText != "":
		md.FinishReason = "error"
	default:
		md.FinishReason = t.finishReason
	}
	return &md
}

func usageOf(u model.Usage) Usage {
	return Usage{
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens,
		InputTokenDetails: InputTokenDetails{CacheReadTokens: u.CachedInputTokens}, OutputTokenDetails: OutputTokenDetails{ReasoningTokens: u.ReasoningTokens},
	}
}

func (u Usage) add(v Usage) Usage {
	return Usage{
		InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens, TotalTokens: u.TotalTokens + v.TotalTokens,
		InputTokenDetails:  InputTokenDetails{CacheReadTokens: u.InputTokenDetails.CacheReadTokens + v.InputTokenDetails.CacheReadTokens},
		OutputTokenDetails: OutputTokenDetails{ReasoningTokens: u.OutputTokenDetails.ReasoningTokens + v.OutputTokenDetails.ReasoningTokens},
	}
}

// closing is the run's last chunks, then [DONE]. A stopped run ends as
// ai@7 ends an aborted answer (abort), then with finish "interrupted":
// without it a client that followed the run would take the answer for
// complete and, its calls all answered, send it again at once.
func (t *turn) closing(md *Metadata) []byte {
	var b []byte
	switch {
	case t.aborted:
		b = append(frame(chunk{"type": "abort", "reason": "stopped"}), frame(chunk{"type": "finish", "finishReason": finishInterrupted, "messageMetadata": md})...)
	case t.errorText != "":
		b = append(frame(chunk{"type": "message-metadata", "messageMetadata": md}), frame(chunk{"type": "error", "errorText": t.errorText})...)
	default:
		b = frame(chunk{"type": "finish", "finishReason": t.finishReason, "messageMetadata": md})
	}
	return append(b, doneFrame...)
}

// couldNotSave ends a run whose answer could not be stored: the client's
// copy is then ahead of the server's and must be reloaded.
var couldNotSave = frame(chunk{"type": "error", "errorText": "The answer could not be saved; the error has been logged. " +
	"Reload the conversation before sending another message."})

// end stores the answer, releases the conversation and ends the run's log
// in one statement, then tells the client how the run ended. [DONE] thus
// reaches a client only once the transcript is stored and the
// conversation released: it may send its next message at once.
func (t *turn) end() {
	md := t.metadata()
	t.asst().Metadata = md
	tail := t.closing(md)
	t.out.end(func(buffered []byte) []byte {
		batch := append(buffered, tail...)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 5*time.Second)
		defer cancel()
		_, err := messagePutHeld(ctx, t.s.cfg.DB, t.lease, t.pos, *t.asst(), putReleasing,
			runWrite{run: t.log.run, seq: t.log.seq, batch: batch, end: true})
		if err == nil {
			return batch
		}
		t.s.cfg.Log.Error("steploop: save message", "conversation", t.lease.ID, "err", err)
		batch = append(append(buffered, couldNotSave...), doneFrame...)
		if err := runAbandon(ctx, t.s.cfg.DB, t.lease, runWrite{run: t.log.run, seq: t.log.seq, batch: batch}); err != nil {
			t.s.cfg.Log.Error("steploop: release conversation", "conversation", t.lease.ID, "err", err)
		}
		return batch
	})
}
