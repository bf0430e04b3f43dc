package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// servePprof serves Go's profiler on its own listener (INVOICED_PPROF_ADDR),
// never on the API port: profiles expose internals, so ops bind it to
// loopback and reach it through a tunnel.
func servePprof(addr string, log *slog.Logger) (func(), error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("INVOICED_PPROF_ADDR must be host:port, not %q", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("INVOICED_PPROF_ADDR must be a loopback address (127.0.0.1:6060), not %q", addr)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return serveSide("INVOICED_PPROF_ADDR", addr, mux, log)
}

// serveSide serves h on a listener of its own beside the API (setting
// names the address's variable, for errors and the log) until the
// returned stop is called.
func serveSide(setting, addr string, h http.Handler, log *slog.Logger) (func(), error) {
	l, err := listen(setting, addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	log.Info("listening", "setting", setting, "addr", l.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
