// Package health serves the /healthz and /readyz endpoints every role has:
// alive (or in need of a restart), and ready to do its work.
package health

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// Check returns what is wrong; nothing means all is well.
type Check func(ctx context.Context) []string

// Checks are what a role's /healthz and /readyz report.
type Checks struct {
	// Alive reports what makes the role need a restart, such as a NATS
	// connection lost for longer than NATSDownLimit. Defaults to nothing.
	Alive Check
	// Ready reports what keeps the role from doing its work now. Defaults
	// to nothing.
	Ready Check
}

// Register adds GET /healthz (200 while checks.Alive reports nothing, 503
// with the reasons otherwise: the liveness probe, whose failure asks the
// orchestrator for a restart) and GET /readyz (200 while checks.Ready
// reports nothing, 503 with the reasons otherwise: the readiness probe) to
// mux.
func Register(mux *http.ServeMux, checks Checks) {
	mux.HandleFunc("GET /healthz", serve(checks.Alive, "ok", "not alive"))
	mux.HandleFunc("GET /readyz", serve(checks.Ready, "ready", "not ready"))
}

func serve(check Check, good, bad string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if check != nil {
			if problems := check(ctx); len(problems) > 0 {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "%s: %s\n", bad, strings.Join(problems, "; "))
				return
			}
		}
		fmt.Fprintln(w, good)
	}
}

// Server serves a role's HTTP endpoints on one address.
type Server struct {
	listener net.Listener
	http     *http.Server
}

// Listen starts serving h on addr (host:port; port 0 picks a free one),
// within limits (zero fields take DefaultLimits' values). Each of wrap, in
// turn, wraps the listener, after the connection limit: to serve TLS.
func Listen(addr string, h http.Handler, limits Limits, wrap ...func(net.Listener) net.Listener) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	limits = limits.withDefaults()
	served := limits.listener(l)
	for _, w := range wrap {
		served = w(served)
	}
	s := &Server{listener: l, http: limits.server(h)}
	go func() { _ = s.http.Serve(served) }()
	return s, nil
}

// ListenRole serves /healthz, /readyz and, when metrics is not nil,
// GET /metrics on addr, with the listener limited and wrapped as Listen
// does.
func ListenRole(addr string, checks Checks, metrics http.Handler, limits Limits, wrap ...func(net.Listener) net.Listener) (*Server, error) {
	mux := http.NewServeMux()
	Register(mux, checks)
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	return Listen(addr, mux, limits, wrap...)
}

// Addr returns the address the server listens on; "" for a nil Server (a
// role that serves no endpoints).
func (s *Server) Addr() string {
	if s == nil {
		return ""
	}
	return s.listener.Addr().String()
}

// Shutdown stops accepting requests and lets those in progress finish
// until ctx ends. A nil Server has nothing to shut down.
func (s *Server) Shutdown(ctx context.Context) {
	if s != nil {
		_ = s.http.Shutdown(ctx)
	}
}
