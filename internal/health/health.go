// Package health serves the /healthz and /readyz endpoints every role has:
// alive, and ready to do its work.
package health

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Readiness returns what keeps a role from being ready; none means ready.
type Readiness func(ctx context.Context) []string

// Register adds GET /healthz (200 while the process serves) and GET /readyz
// (200 when ready reports nothing, 503 with the reasons otherwise) to mux.
func Register(mux *http.ServeMux, ready Readiness) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if problems := ready(ctx); len(problems) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %s\n", strings.Join(problems, "; "))
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
}

// Server serves a role's HTTP endpoints on one address.
type Server struct {
	listener net.Listener
	http     *http.Server
}

// Listen starts serving h on addr (host:port; port 0 picks a free one).
func Listen(addr string, h http.Handler) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	s := &Server{listener: l, http: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.http.Serve(l) }()
	return s, nil
}

// ListenReady serves /healthz, /readyz and, when metrics is not nil,
// GET /metrics on addr.
func ListenReady(addr string, ready Readiness, metrics http.Handler) (*Server, error) {
	mux := http.NewServeMux()
	Register(mux, ready)
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	return Listen(addr, mux)
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

// NATSReady reports a problem when the connection is not connected.
func NATSReady(nc *nats.Conn) []string {
	if st := nc.Status(); st != nats.CONNECTED {
		return []string{"NATS: " + st.String()}
	}
	return nil
}
