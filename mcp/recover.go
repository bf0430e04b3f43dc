package mcp

import (
	"context"
	"fmt"
	"runtime/debug"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// recoverer turns a panic in any handler into an error answer and a log
// line: the SDK runs handlers on goroutines of its own, where a panic
// would end the process. A tool call's panic is already a result (invoke).
func (s *Service) recoverer(next gomcp.MethodHandler) gomcp.MethodHandler {
	return func(ctx context.Context, method string, req gomcp.Request) (res gomcp.Result, err error) {
		defer func() {
			if r := recover(); r != nil {
				s.cfg.Log.Error("mcp: handler panicked", "method", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				res, err = nil, errInternal
			}
		}()
		return next(ctx, method, req)
	}
}
