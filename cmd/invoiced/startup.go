package main

import (
	"log/slog"
	"strings"
)

// logWhatIsOff says once, at start, which parts of the service are off
// and why, in words, with the setting that turns each on: a newcomer's
// first `make run` has no model and no mail server, and should read so
// rather than find out from a refusal.
func logWhatIsOff(cfg config, log *slog.Logger) {
	var off, words []string
	for _, p := range []struct {
		part, why string
		isOff     bool
	}{
		{"chat", "no model, so no chat: /chat says the assistant is not set up and /v1/chat answers 503 (set INVOICED_MODEL_PROVIDER)", cfg.App.Model == nil},
		{"mail", "no SMTP server, so no mail: approvers see new requests in /inbox only (set INVOICED_SMTP_URL)", cfg.App.Notify.Sender == nil},
		{"documents", "no seller, so no PDFs of drafts or of invoices issued without one (set it with `invoiced seller set`)", cfg.NoSeller},
		{"metrics", "no metrics listener (set INVOICED_METRICS_ADDR)", cfg.MetricsAddr == ""},
	} {
		if p.isOff {
			off = append(off, p.part)
			words = append(words, p.why)
		}
	}
	if len(off) > 0 {
		log.Info("off: "+strings.Join(words, "; "), "off", off)
	}
}
