package capability_test

import (
	"testing"

	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/stretchr/testify/require"
)

// Every answer of the approval gate tells the model what to do next; any
// other code keeps the problem's own sentence.
func TestApprovalGuidanceCoversTheGatesAnswers(t *testing.T) {
	t.Parallel()
	for _, code := range []string{approvals.CodeApprovalRequired, approvals.CodeApprovalDenied, approvals.CodeApprovalExpired, approvals.CodeApprovalStale} {
		msg := capability.ApprovalGuidance(code, "detail")
		require.NotEqual(t, "detail", msg, code)
	}
	require.Equal(t, "detail", capability.ApprovalGuidance(approvals.CodeNoEligibleApprover, "detail"))
	require.Equal(t, "detail", capability.ApprovalGuidance("VALIDATION_FAILED", "detail"))
}
