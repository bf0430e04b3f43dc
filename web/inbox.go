package web

import (
	"context"
	"encoding/json"
	"github.com/invoiced/invoiced/oauth"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/allowances"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/etag"
	"github.com/invoiced/invoiced/identity"
	"github.com/invoiced/invoiced/invoices"
	"github.com/invoiced/invoiced/money"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/party"
	"github.com/invoiced/invoiced/problem"
	"github.com/invoiced/invoiced/quantity"
	"github.com/invoiced/invoiced/server"
	"github.com/invoiced/invoiced/vat"
	"github.com/labstack/echo/v4"
)

// Deps are the services the pages call; app wires them.
type Deps struct {
	// Approvals lists, reads and decides approval requests; the refusal
	// rules (role, own request, expiry) are its, not the pages'.
	Approvals *approvals.Service
	// Allowances lists the standing allowances the inbox shows in force.
	Allowances *allowances.Service
	// NumberPrefix is the invoice number series issuing assigns from
	// (empty means invoices.DefaultNumberPrefix); the request page shows it
	// for drafts, which have no number yet.
	NumberPrefix string
	// OAuth is the authorization server whose requests the consent page
	// decides.
	OAuth *oauth.Service
}

// recentDecisions is how many decided requests the inbox shows under the
// pending ones: a screenful, enough to see what colleagues just did.
const recentDecisions = 20

// pendingLimit bounds the pending list; a backlog beyond 100 is a problem
// no page layout solves, and the list says when it is cut.
const pendingLimit = 100

// requestRow is one line of the inbox.
type requestRow struct {
	ID          string
	Capability  string
	Status      string
	Subject     string
	Amount      int64
	Currency    string
	TargetURL   string
	RequestedBy string
	Via         via
	CreatedAt   time.Time
	ExpiresAt   time.Time
	DecidedAt   *time.Time
	Approvals   int
	Required    int
	Number      string
}

type inboxView struct {
	Pending    []requestRow
	Allowances []*allowances.Allowance
	Recent     []requestRow
	Truncated  bool
	EventsURL  string
	CanDecide  bool
	// CanRevoke shows a revoke form on each allowance: the roles
	// allowances.Service.Revoke lets revoke, which are the deciders'.
	CanRevoke  bool
	ViewerName string
}

// people names users by their display names, read once per page for
// every requester and approver it shows.
type people map[uuid.UUID]string

func (p people) name(u approvals.UserRef) string {
	if n := p[u.ID]; n != "" {
		return n
	}
	return u.Username
}

// peopleOf reads the display names of the requesters and approvers of as.
func (h *Handler) peopleOf(ctx context.Context, as ...*approvals.Approval) (people, error) {
	var ids []uuid.UUID
	for _, a := range as {
		ids = append(ids, a.RequestedBy.ID)
		for _, d := range a.Decisions {
			ids = append(ids, d.Approver.ID)
		}
	}
	return identity.UserDisplayNames(ctx, h.db, ids)
}

func rowOf(a *approvals.Approval, names people) requestRow {
	r := requestRow{
		ID: a.ID.String(), Capability: a.Capability, Status: string(a.Status), Amount: a.Amount, Currency: a.Currency,
		RequestedBy: names.name(a.RequestedBy), Via: viaOf(a.RequestedVia),
		CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt, DecidedAt: a.DecidedAt,
		Approvals: a.Approvals, Required: a.RequiredApprovals,
	}
	customer := ""
	if a.Target.Type == "invoice" {
		r.TargetURL = "/invoices/" + a.Target.ID
		var snap snapshotView
		if json.Unmarshal(a.Snapshot, &snap) == nil {
			customer = snap.Customer.Name
			if snap.Number != nil {
				r.Number = *snap.Number
			}
		}
	}
	r.Subject = requestSubject(a, customer)
	return r
}

// Title is the row's subject and amount: "Issue invoice for Globex
// Corporation — 16,237.50 USD".
func (r requestRow) Title() string { return r.Subject + " — " + money.Display(r.Amount, r.Currency) }

// Inbox is the page GET /inbox: pending requests oldest first (the one
// waiting longest is the one to decide next), the standing allowances in
// force, then the most recent decisions.
func (h *Handler) Inbox(c echo.Context, s *Session) error {
	return h.inboxPage(c, s, http.StatusOK, nil)
}

// inboxPage renders the inbox with status, and refusal's sentence when a
// form on it was refused.
func (h *Handler) inboxPage(c echo.Context, s *Session, status int, refusal *problem.Error) error {
	ctx := c.Request().Context()
	pending, err := h.deps.Approvals.List(ctx, approvals.ListParams{Status: approvals.StatusPending, Page: page.Request{Limit: pendingLimit}})
	if err != nil {
		return err
	}
	slices.Reverse(pending.Data)
	recent, err := h.deps.Approvals.List(ctx, approvals.ListParams{Page: page.Request{Limit: recentDecisions + pendingLimit}})
	if err != nil {
		return err
	}
	names, err := h.peopleOf(ctx, append(pending.Data, recent.Data...)...)
	if err != nil {
		return err
	}
	v := inboxView{Truncated: pending.HasMore, EventsURL: "/v1/approvals/events", CanDecide: s.User.Role.CanDecide(),
		CanRevoke: s.User.Role.CanDecide(), ViewerName: s.User.Username}
	if v.Allowances, err = h.allowancesInForce(ctx); err != nil {
		return err
	}
	for _, a := range pending.Data {
		v.Pending = append(v.Pending, rowOf(a, names))
	}
	for _, a := range recent.Data {
		if a.Status == approvals.StatusPending {
			continue
		}
		if len(v.Recent) == recentDecisions {
			break
		}
		v.Recent = append(v.Recent, rowOf(a, names))
	}
	d := h.data(c, s, "Inbox")
	if c.QueryParam("done") == "revoked" {
		d.Notice = "The allowance is revoked: calls it covered ask for an approval again."
	}
	if refusal != nil {
		d.Error = refusalText(refusal)
	}
	d.Data = v
	return h.render(c, status, "inbox", d)
}

// AllowanceRevoke answers the form POST /allowances/{id}/revoke: the
// allowances service revokes it as the API does (its role rule, its audit
// event), with the form's optional reason. A role it refuses gets the 403
// page; an allowance no longer in force is the inbox again, saying so.
func (h *Handler) AllowanceRevoke(c echo.Context, s *Session) error {
	id, err := server.PathID(c, "allowance")
	if err != nil {
		return err
	}
	_, err = h.deps.Allowances.Revoke(c.Request().Context(), s.User.Principal(), capability.PathWeb, id, c.FormValue("reason"))
	if err != nil {
		pe, ok := problem.As(err)
		if !ok || pe.Status >= 500 || pe.Status == http.StatusNotFound || pe.Status == http.StatusForbidden {
			return err
		}
		return h.inboxPage(c, s, pe.Status, pe)
	}
	return c.Redirect(http.StatusSeeOther, "/inbox?done=revoked")
}

// allowancesInForce are the standing allowances calls may draw now, of
// the newest 100: what approvers let through without asking them again.
func (h *Handler) allowancesInForce(ctx context.Context) ([]*allowances.Allowance, error) {
	if h.deps.Allowances == nil {
		return nil, nil
	}
	list, err := h.deps.Allowances.List(ctx, allowances.ListParams{Page: page.Request{Limit: page.MaxLimit}})
	if err != nil {
		return nil, err
	}
	var out []*allowances.Allowance
	for _, a := range list.Data {
		if a.Status == allowances.StatusActive {
			out = append(out, a)
		}
	}
	return out, nil
}

// snapshotView is the invoice as the approver decides on it, read from the
// request's snapshot JSON (the invoice representation of the invoices
// package: DESIGN.md issue 3 names these fields).
type snapshotView struct {
	ID         string  `json:"id"`
	Status     string  `json:"status"`
	Number     *string `json:"number"`
	Series     string  `json:"series"`
	CustomerID string  `json:"customer_id"`
	Customer   struct {
		ID             string        `json:"id"`
		Name           string        `json:"name"`
		Email          string        `json:"email"`
		Address        party.Address `json:"address"`
		VATID          party.VATID   `json:"vat_id"`
		TaxNumber      string        `json:"tax_number"`
		BuyerReference string        `json:"buyer_reference"`
		PaymentTerms   *int          `json:"payment_terms_days"`
	} `json:"customer"`
	Currency string `json:"currency"`
	DueDate  string `json:"due_date"`
	Memo     string `json:"memo"`
	// The facts of the legal invoice an approver checks before it is
	// issued: when it was supplied, its terms and references.
	SupplyDate       string           `json:"supply_date"`
	ServicePeriod    *invoices.Period `json:"service_period"`
	PaymentTermsDays *int             `json:"payment_terms_days"`
	PurchaseOrder    string           `json:"purchase_order"`
	BuyerReference   string           `json:"buyer_reference"`
	Lines            []struct {
		Description     string            `json:"description"`
		Quantity        quantity.Quantity `json:"quantity"`
		Unit            string            `json:"unit"`
		UnitAmount      int64             `json:"unit_amount"`
		VATCategory     vat.Category      `json:"vat_category"`
		TaxRateBPS      int64             `json:"tax_rate_bps"`
		ExemptionReason string            `json:"exemption_reason"`
		Amount          int64             `json:"amount"`
		TaxAmount       int64             `json:"tax_amount"`
	} `json:"lines"`
	VATBreakdown   []invoices.VATGroup `json:"vat_breakdown"`
	Subtotal       int64               `json:"subtotal"`
	TaxTotal       int64               `json:"tax_total"`
	Total          int64               `json:"total"`
	AmountPaid     int64               `json:"amount_paid"`
	AmountCredited int64               `json:"amount_credited"`
	BalanceDue     int64               `json:"balance_due"`
	Version        int64               `json:"version"`
	// CreditNote is, for issue-credit-note, what it would credit.
	CreditNote *invoices.CreditPreview `json:"credit_note"`
}

// Terms is the payment terms in days net the invoice will be issued with
// when it names no due date: its own, else its customer's; nil when the
// seller's apply.
func (s *snapshotView) Terms() *int {
	if s.PaymentTermsDays != nil {
		return s.PaymentTermsDays
	}
	return s.Customer.PaymentTerms
}

// Reference is the buyer reference the invoice will quote: its own, else
// its customer's.
func (s *snapshotView) Reference() string {
	if s.BuyerReference != "" {
		return s.BuyerReference
	}
	return s.Customer.BuyerReference
}

type approvalView struct {
	Row   requestRow
	names people
	// Lets says what approving does, for a viewer who may decide; Done
	// what happened once the approval was used.
	Lets string
	Done string
	// Admin may read the conversation an agent asked in.
	Admin      bool
	A          *approvals.Approval
	Snapshot   *snapshotView
	RawSnap    string
	Stale      bool
	StaleNote  string
	CanDecide  bool
	WhyNot     string
	Decisions  []approvals.Decision
	NumberNote string
	Reason     string
}

// whyNotDecide says why viewer may not decide a; "" means they may. The
// server refuses the same cases in approvals; this only hides buttons.
func whyNotDecide(viewer *identity.User, a *approvals.Approval) string {
	switch {
	case !viewer.Role.CanDecide():
		return "Your role (" + string(viewer.Role) + ") may not decide approval requests."
	case viewer.ID == a.RequestedBy.ID:
		return "You asked for this approval, so someone else must decide it."
	case a.Status != approvals.StatusPending:
		return "This request is " + string(a.Status) + "; it can no longer be decided."
	}
	for _, d := range a.Decisions {
		if d.Approver.ID == viewer.ID && d.Counts {
			return "You have already decided this request; it waits for another approver."
		}
	}
	return ""
}

// approvalData is the request page's data for the approval the path
// names, as viewer s.User sees it.
func (h *Handler) approvalData(c echo.Context, s *Session) (*pageData, error) {
	id, err := server.PathID(c, "approval")
	if err != nil {
		return nil, err
	}
	ctx := c.Request().Context()
	a, err := h.deps.Approvals.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	v, err := h.viewApproval(ctx, s.User, a)
	if err != nil {
		return nil, err
	}
	d := h.data(c, s, v.Row.Title())
	d.Data = v
	return d, nil
}

// viewApproval is what the request page shows of a to viewer: the
// snapshot, whether the request is stale, and whether viewer may decide.
func (h *Handler) viewApproval(ctx context.Context, viewer *identity.User, a *approvals.Approval) (*approvalView, error) {
	names, err := h.peopleOf(ctx, a)
	if err != nil {
		return nil, err
	}
	v := &approvalView{Row: rowOf(a, names), names: names, A: a, Decisions: a.Decisions, Done: actionOf(a.Capability).done,
		Admin: viewer.Role == identity.RoleAdmin}
	var snap snapshotView
	if len(a.Snapshot) > 0 && json.Unmarshal(a.Snapshot, &snap) == nil && snap.Currency != "" {
		if snap.Series == "" {
			snap.Series = h.deps.NumberPrefix
			if snap.Series == "" {
				snap.Series = invoices.DefaultNumberPrefix
			}
		}
		v.Snapshot = &snap
	} else {
		v.RawSnap = string(a.Snapshot)
	}
	v.Stale, v.StaleNote = h.staleness(ctx, a)
	v.WhyNot = whyNotDecide(viewer, a)
	v.CanDecide = v.WhyNot == "" && !v.Stale
	if v.WhyNot == "" && v.Stale {
		v.WhyNot = "This request is stale; it cannot be decided."
	}
	if v.CanDecide {
		v.Lets = approvingLets(a, v.Row.RequestedBy, h.deps.Approvals.Policy().ApprovedTTL)
	}
	return v, nil
}

// Name is u's display name, for the page's history.
func (v *approvalView) Name(u approvals.UserRef) string { return v.names.name(u) }

// staleness says whether a no longer matches its target, and why: it was
// superseded, or the invoice changed while the request is still open.
func (h *Handler) staleness(ctx context.Context, a *approvals.Approval) (bool, string) {
	if a.Status == approvals.StatusSuperseded {
		return true, "The invoice changed after this request was made, so this request is superseded. What is shown is the old version; a new request is created when the invoice is issued again."
	}
	if cur, ok := h.currentVersion(ctx, a); ok && cur != a.Target.Version && a.Status.Open() {
		effect := "issued"
		if a.Capability == invoices.CapIssueCreditNote {
			effect = "credited"
		}
		return true, "The invoice has changed since this request was made (version " +
			itoa(a.Target.Version) + " then, " + itoa(cur) + " now). Approving it will not let the changed invoice be " + effect + "."
	}
	return false, ""
}

// Approval is the page GET /approvals/{id}: one request, the snapshot the
// approver decides on, its state, the decisions so far, and the decide
// forms where the viewer may decide.
func (h *Handler) Approval(c echo.Context, s *Session) error {
	d, err := h.approvalData(c, s)
	if err != nil {
		return err
	}
	switch c.QueryParam("done") {
	case "approve":
		d.Notice = "You approved this request."
	case "deny":
		d.Notice = "You denied this request."
	}
	return h.render(c, http.StatusOK, "approval", d)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Decide is the form POST /approvals/{id}/approve or /deny (decision is
// approvals.DecisionApprove or DecisionDeny): it records the viewer's
// decision through the approvals service, which refuses what the viewer
// may not do whatever the page showed. A refusal is shown on the request
// page with the form as it was sent.
func (h *Handler) Decide(decision string) PageFunc {
	return func(c echo.Context, s *Session) error {
		id, err := server.PathID(c, "approval")
		if err != nil {
			return err
		}
		reason := c.FormValue("reason")
		_, err = h.deps.Approvals.Decide(c.Request().Context(), s.User.Principal(), capability.PathWeb, id, etag.IfMatch{}, decision, reason)
		if err != nil {
			pe, ok := problem.As(err)
			if !ok || pe.Status >= 500 || pe.Status == http.StatusNotFound {
				return err
			}
			d, derr := h.approvalData(c, s)
			if derr != nil {
				return derr
			}
			d.Error = refusalText(pe)
			d.Data.(*approvalView).Reason = reason
			return h.render(c, pe.Status, "approval", d)
		}
		return c.Redirect(http.StatusSeeOther, "/approvals/"+id.String()+"?done="+decision)
	}
}

// refusalText turns a problem into one sentence for the page.
func refusalText(pe *problem.Error) string {
	msg := pe.Detail
	for _, f := range pe.Errors {
		msg = "The " + f.Field + " " + f.Message + "."
	}
	if msg == "" {
		msg = pe.Title
	}
	return strings.ToUpper(msg[:1]) + msg[1:]
}
