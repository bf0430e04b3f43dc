package steploop

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// stopWait bounds how long the stop route waits for the run to end: a
// running tool finishes first (its effect must be recorded), and 15 s is
// more than any of ours takes.
const stopWait = 15 * time.Second

// StopResult is POST /v1/chat/{id}/stop's answer once the run has ended.
type StopResult struct {
	MessageID    string `json:"message_id"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// Stop answers POST /v1/chat/{id}/stop: the owner's running run of
// conversation id ends as a shutdown ends it (its model call cancelled, a
// running tool finishing and recorded, no later call run), its stream
// closes as ai@7 closes an aborted answer, and the stored answer is what a
// client that followed it holds. It works on any replica (the one running
// the run hears of it by NOTIFY, or at its next lease renewal) and answers
// once the run has ended, so the client's next message is not refused as
// CONVERSATION_BUSY: 200 naming the answer, 202 when it is still ending
// after stopWait, 204 when nothing runs (or the conversation is unknown or
// another owner's).
func (s *Service) Stop(c echo.Context) error {
	p, id, woken, unsubscribe, err := s.runRoute(c)
	if err != nil || id == "" {
		return err
	}
	defer unsubscribe()
	ctx := c.Request().Context()
	run, msgID, err := runStopRequest(ctx, s.cfg.DB, id, p.UserID)
	if err != nil {
		return err
	}
	if run == uuid.Nil {
		return c.NoContent(http.StatusNoContent)
	}
	s.runs.stop(run)
	ended, err := s.awaitEnd(ctx, run, woken)
	if err != nil {
		return err
	}
	if !ended {
		return c.JSON(http.StatusAccepted, StopResult{MessageID: msgID})
	}
	res := StopResult{MessageID: msgID}
	err = s.cfg.DB.QueryRow(ctx, `
		SELECT coalesce(metadata->>'finishReason', '') FROM conversation_messages
		 WHERE conversation_id = $1 AND id = $2`, id, msgID).Scan(&res.FinishReason)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

// awaitEnd waits up to stopWait for run to end, reaping it should its
// replica be dead; it reports whether it ended.
func (s *Service) awaitEnd(ctx context.Context, run uuid.UUID, woken <-chan struct{}) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, stopWait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := runRead(ctx, s.cfg.DB, run, 1<<30)
		if err != nil {
			return false, err
		}
		if st.ended {
			return true, nil
		}
		if !st.live {
			if err := s.reap(ctx, run); err != nil {
				return false, err
			}
			continue
		}
		select {
		case <-ctx.Done():
			return false, nil
		case <-woken:
		case <-tick.C:
		}
	}
}
