package invoices

import (
	"context"
	"net/http"

	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/problem"
	"github.com/jackc/pgx/v5"
)

// CodeApprovalRequired is the problem code of a consequential call that has
// no usable approval (ADR-0010).
const CodeApprovalRequired = "APPROVAL_REQUIRED"

// RefuseGate is the capability.Gate used until the approvals gate is wired:
// it refuses every consequential effect with 403 APPROVAL_REQUIRED, for
// every role, so no ungated issue or delete is possible. It records nothing.
type RefuseGate struct{}

// AuthorizeTx always refuses.
func (RefuseGate) AuthorizeTx(_ context.Context, _ pgx.Tx, call capability.Call, _ capability.Target) (capability.Grant, error) {
	return capability.Grant{}, problem.New(http.StatusForbidden, CodeApprovalRequired,
		call.Name+" needs an approval by an approver, and approvals are not enabled on this server")
}
