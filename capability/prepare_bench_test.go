package capability_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/invoices"
)

// BenchmarkPrepare measures the validation every path pays before a
// capability runs: the issue-invoice input of the issue path, and a draft
// of 1,000 lines (the largest the schema allows).
func BenchmarkPrepare(b *testing.B) {
	r := capability.NewRegistry()
	r.MustRegister(invoices.Capabilities(invoices.NewService(nil, nil, nil, invoices.Config{}))...)
	lines := make([]string, 1000)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"description":"Consulting, day %d","quantity":%d,"unit_amount":125000,"tax_rate_bps":2000}`, i, i+1)
	}
	for _, bc := range []struct {
		name, capability, input string
	}{
		{"issue", invoices.CapIssue, `{"invoice_id":"0190A5A0-0000-7000-8000-000000000001"}`},
		{"draft-1000-lines", invoices.CapCreateDraft,
			`{"customer_id":"0190a5a0-0000-7000-8000-000000000002","memo":"March","lines":[` + strings.Join(lines, ",") + `]}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			in := json.RawMessage(bc.input)
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Prepare(bc.capability, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
