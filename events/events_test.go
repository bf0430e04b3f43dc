package events_test

import (
	"testing"

	"github.com/invoiced/invoiced/events"
	"github.com/invoiced/invoiced/problem"
	"github.com/stretchr/testify/require"
)

// Every type parses as itself; anything else is a problem naming the
// field and listing the types.
func TestParseType(t *testing.T) {
	t.Parallel()
	types := events.Types()
	require.Contains(t, types, events.InvoiceIssued)
	for _, typ := range types {
		got, err := events.ParseType("events", string(typ))
		require.NoError(t, err)
		require.Equal(t, typ, got)
	}
	for _, bad := range []string{"", "invoice", "INVOICE.ISSUED", "invoice.issued "} {
		_, err := events.ParseType("events", bad)
		pe, ok := problem.As(err)
		require.True(t, ok, bad)
		require.Equal(t, "events", pe.Errors[0].Field)
		require.Contains(t, pe.Errors[0].Message, "invoice.issued, invoice.voided")
	}
}
