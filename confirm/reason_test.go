package confirm_test

import (
	"context"
	"testing"

	"github.com/invoiced/invoiced/confirm"
	"github.com/stretchr/testify/require"
)

// Evidence.Reason is the browser's free text: a NUL or invalid UTF-8 in it
// is no infrastructure failure: both registries answer with the typed
// result, the Postgres one too, whose text column cannot hold a NUL.
func TestAReasonWithNULOrBadUTF8IsStillATypedResult(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, im impl) {
		b := setup(t, im, confirm.ModeWait)
		conf, h := b.pause(t, input)
		out, err := b.ctl.Call(context.Background(), b.req("send-reminder", h, "call-1", &confirm.Evidence{ConfirmationID: conf.ID, Approved: false, Reason: "no\x00thanks\xff"}), b.run)
		require.NoError(t, err, "a user's reason is not an infrastructure failure")
		requireInvalid(t, out, confirm.ReasonDenied)
	})
}
