package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/approvals"
	"github.com/invoiced/invoiced/capability"
	"github.com/invoiced/invoiced/page"
	"github.com/invoiced/invoiced/problem"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource URIs.
const (
	invoicesURI  = "invoiced://invoices"
	customersURI = "invoiced://customers"
	approvalsURI = "invoiced://approvals"
)

func approvalURI(id string) string { return approvalsURI + "/" + id }

const jsonMIME = "application/json"

// addResources offers invoices, customers and approval requests as
// read-only JSON resources: the lists' first pages, and each one by id.
// Invoices and customers are read through their capabilities (the same
// checks as every path); approvals as GET /v1/approvals/{id} shows them.
func (s *Service) addResources(srv *gomcp.Server) {
	srv.AddResource(&gomcp.Resource{URI: invoicesURI, Name: "invoices", Title: "Invoices",
		Description: "The oldest 20 invoices (list-invoices, first page); the list-invoices tool filters and pages.", MIMEType: jsonMIME},
		s.readCapability("list-invoices", ""))
	srv.AddResource(&gomcp.Resource{URI: customersURI, Name: "customers", Title: "Customers",
		Description: "The oldest 20 customers (list-customers, first page).", MIMEType: jsonMIME},
		s.readCapability("list-customers", ""))
	srv.AddResource(&gomcp.Resource{URI: approvalsURI, Name: "pending-approvals", Title: "Pending approval requests",
		Description: "The newest 20 approval requests waiting for a decision.", MIMEType: jsonMIME},
		s.readPending)
	srv.AddResourceTemplate(&gomcp.ResourceTemplate{URITemplate: invoicesURI + "/{invoice_id}", Name: "invoice", Title: "Invoice",
		Description: "One invoice with its lines, totals, status and number.", MIMEType: jsonMIME},
		s.readCapability("get-invoice", "invoice_id"))
	srv.AddResourceTemplate(&gomcp.ResourceTemplate{URITemplate: customersURI + "/{customer_id}", Name: "customer", Title: "Customer",
		Description: "One customer.", MIMEType: jsonMIME},
		s.readCapability("get-customer", "customer_id"))
	srv.AddResourceTemplate(&gomcp.ResourceTemplate{URITemplate: approvalsURI + "/{approval_id}", Name: "approval", Title: "Approval request",
		Description: "An approval request: the snapshot the approver decides on, its status and decisions. Subscribe to learn when it is decided.", MIMEType: jsonMIME},
		s.readApproval)
}

// readCapability reads a resource through a read capability: with idField
// set, the URI's last segment is that input member; otherwise the input is
// empty (a list's first page).
func (s *Service) readCapability(name, idField string) gomcp.ResourceHandler {
	return func(ctx context.Context, req *gomcp.ReadResourceRequest) (*gomcp.ReadResourceResult, error) {
		c, err := callerOf(req.Extra)
		if err != nil {
			return nil, err
		}
		input := map[string]any{}
		if idField != "" {
			input[idField] = lastSegment(req.Params.URI)
		}
		raw, err := json.Marshal(input)
		if err != nil {
			return nil, err
		}
		call, err := s.cfg.Registry.Prepare(name, raw)
		if err != nil {
			return nil, s.readError(req.Params.URI, err)
		}
		call.Principal, call.Via = c.Principal, capability.PathMCP
		out, err := s.invoke(ctx, call)
		if err != nil {
			return nil, s.readError(req.Params.URI, err)
		}
		return contents(req.Params.URI, out)
	}
}

// readApproval reads invoiced://approvals/{id}, first expiring it if due
// so a reader never sees a lapsed request as pending.
func (s *Service) readApproval(ctx context.Context, req *gomcp.ReadResourceRequest) (*gomcp.ReadResourceResult, error) {
	if _, err := callerOf(req.Extra); err != nil {
		return nil, err
	}
	a, err := s.approval(ctx, req.Params.URI)
	if err != nil {
		return nil, s.readError(req.Params.URI, err)
	}
	return contents(req.Params.URI, a)
}

func (s *Service) readPending(ctx context.Context, req *gomcp.ReadResourceRequest) (*gomcp.ReadResourceResult, error) {
	if _, err := callerOf(req.Extra); err != nil {
		return nil, err
	}
	list, err := s.cfg.Approvals.List(ctx, approvals.ListParams{Status: approvals.StatusPending, Page: page.Request{Limit: 20}})
	if err != nil {
		return nil, s.readError(req.Params.URI, err)
	}
	return contents(req.Params.URI, list)
}

// approval reads the approval request a URI names.
func (s *Service) approval(ctx context.Context, uri string) (*approvals.Approval, error) {
	rest, ok := strings.CutPrefix(uri, approvalsURI+"/")
	id, err := uuid.Parse(rest)
	if !ok || err != nil || strings.Contains(rest, "/") {
		return nil, problem.NotFound("approval request")
	}
	return s.cfg.Approvals.Get(ctx, id)
}

// readError is the protocol error of a failed read: what does not exist,
// or is not a valid id, is "resource not found"; the rest is logged.
func (s *Service) readError(uri string, err error) error {
	if pe, ok := problem.As(err); ok && pe.Status < 500 {
		if pe.Status == 404 || pe.Code == problem.CodeValidation {
			return gomcp.ResourceNotFoundError(uri)
		}
		return fmt.Errorf("%s: %s", pe.Code, pe.Detail)
	}
	s.cfg.Log.Error("mcp: resource read failed", "uri", uri, "err", err)
	return errInternal
}

var errInternal = errors.New("INTERNAL: the read failed with an internal error; it has been logged")

func contents(uri string, v any) (*gomcp.ReadResourceResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &gomcp.ReadResourceResult{Contents: []*gomcp.ResourceContents{{URI: uri, MIMEType: jsonMIME, Text: string(b)}}}, nil
}

func lastSegment(uri string) string { return uri[strings.LastIndexByte(uri, '/')+1:] }
