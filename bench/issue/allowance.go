package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/allowances"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/quantity"
)

// allowanceRun is `make bench-allowance`: per level and round, N drafts
// issued over HTTP with one approval each (prepare: requested and
// approved per draft, as bench-issue does) and N issued under one
// standing allowance (prepareAllowance: granted once through
// grant-allowance), alternating, timing the issues alone. It prints both
// sides' medians, CPU per issue and the allowance's ratio to approvals.
func (b *bench) allowanceRun(ctx context.Context) error {
	// A budget of N × 120.00 reaches the default tier of 10,000 major
	// units: its grant needs two approvers.
	second, err := identity.UserCreate(ctx, b.pool, identity.UserCreateParams{Username: "bench-approver-2", Role: identity.RoleApprover})
	if err != nil {
		return err
	}
	o := b.o
	fmt.Printf("bench-allowance: %d issues per round, level and side; %d alternating rounds (median shown); server pool %d conns; Idempotency-Key sent: %t\n",
		o.n, o.rounds, b.pool.Config().MaxConns, o.keys)
	fmt.Printf("approval: one approved request per invoice, consumed by its issue; allowance: one allowance for all N, drawn by each issue\n")
	fmt.Printf("CPU/issue is this process's (the service and its clients) while the issues ran\n\n")
	fmt.Printf("%-12s %14s %14s %8s %12s %12s   %s\n", "concurrency", "approval/s", "allowance/s", "ratio", "CPU approval", "CPU allow.", "rounds (approval/allowance)")
	for _, c := range o.levels {
		n := o.n - o.n%c
		var one, under, cpuOne, cpuUnder []float64
		var detail []string
		for range o.rounds {
			r1, cpu1, _, err := b.ours(ctx, c, n, b.prepare)
			if err != nil {
				return fmt.Errorf("approvals at %d: %w", c, err)
			}
			r2, cpu2, _, err := b.ours(ctx, c, n, func(ctx context.Context, n int) ([]item, error) {
				return b.prepareAllowance(ctx, n, second.Principal())
			})
			if err != nil {
				return fmt.Errorf("allowance at %d: %w", c, err)
			}
			one, under = append(one, r1), append(under, r2)
			cpuOne, cpuUnder = append(cpuOne, float64(cpu1)), append(cpuUnder, float64(cpu2))
			detail = append(detail, fmt.Sprintf("%.0f/%.0f", r1, r2))
		}
		m1, m2 := median(one), median(under)
		fmt.Printf("%-12d %14.0f %14.0f %7.0f%% %12s %12s   %s\n", c, m1, m2, 100*m2/m1,
			time.Duration(median(cpuOne)).Round(time.Microsecond), time.Duration(median(cpuUnder)).Round(time.Microsecond), strings.Join(detail, " "))
	}
	return nil
}

// prepareAllowance creates n drafts and one allowance to issue all of
// them, granted through the real grant-allowance capability: requested
// by the clerk, approved by the bench's two approvers.
func (b *bench) prepareAllowance(ctx context.Context, n int, second identity.Principal) ([]item, error) {
	lines, sub, tax, total, err := invoices.ComputeLines([]invoices.LineInput{{Description: "Consulting", Quantity: 2 * quantity.One, UnitAmount: 5000, TaxRateBPS: 2000}})
	if err != nil {
		return nil, err
	}
	items := make([]item, n)
	for i := range items {
		inv, err := invoices.InvoiceCreate(ctx, b.pool, &invoices.Invoice{
			ID: uuid.Must(uuid.NewV7()), CustomerID: b.customer.ID, Currency: "EUR",
			Lines: lines, Subtotal: sub, TaxTotal: tax, Total: total,
			CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
		})
		if err != nil {
			return nil, err
		}
		items[i] = item{invoice: inv.ID}
	}
	input, err := json.Marshal(map[string]any{"capability": "issue", "customer_ids": nil, "currency": "EUR",
		"max_total": int64(n) * total, "max_count": n, "valid_until": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		"reason": "bench round " + uuid.NewString()})
	if err != nil {
		return nil, err
	}
	reg := b.app.Capabilities()
	grant := func() (any, error) {
		call, err := reg.Prepare(allowances.CapGrant, input)
		if err != nil {
			return nil, err
		}
		call.Principal, call.Via = b.clerk, capability.PathREST
		return reg.Invoke(ctx, call)
	}
	_, err = grant()
	pe, ok := problem.As(err)
	if !ok || pe.Code != approvals.CodeApprovalRequired {
		return nil, fmt.Errorf("grant-allowance: want APPROVAL_REQUIRED, got %w", err)
	}
	aid := uuid.MustParse(pe.Extra["approval_id"].(string))
	for _, p := range []identity.Principal{b.approver, second} {
		if _, err := b.app.Approvals().Decide(ctx, p, capability.PathCLI, aid, etag.IfMatch{}, approvals.DecisionApprove, ""); err != nil {
			return nil, err
		}
	}
	if _, err := grant(); err != nil {
		return nil, fmt.Errorf("grant-allowance once approved: %w", err)
	}
	// As prepare does: the planner needs statistics of the new rows.
	if _, err := b.pool.Exec(ctx, `ANALYZE`); err != nil {
		return nil, err
	}
	return items, nil
}
