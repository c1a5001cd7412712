package health

import (
	"cmp"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// Limits bound what clients can hold of a listener, so that slow or idle
// connections cannot exhaust the process: every role's listener has them.
type Limits struct {
	// MaxConns is the most connections served at once; further clients
	// wait in the kernel's accept queue until one closes.
	MaxConns int
	// ReadHeaderTimeout is how long a client may take to send a request's
	// headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout is how long a client may take to send a whole request,
	// headers and body.
	ReadTimeout time.Duration
	// WriteTimeout is how long the server may take to answer, from the end
	// of the request's headers.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its
	// next request before it is closed.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes int
}

// DefaultLimits are the limits of a listener that sets none.
var DefaultLimits = Limits{
	MaxConns:          1024,
	ReadHeaderTimeout: 10 * time.Second,
	ReadTimeout:       30 * time.Second,
	WriteTimeout:      60 * time.Second,
	IdleTimeout:       2 * time.Minute,
	MaxHeaderBytes:    64 << 10,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	l.MaxConns = cmp.Or(l.MaxConns, d.MaxConns)
	l.ReadHeaderTimeout = cmp.Or(l.ReadHeaderTimeout, d.ReadHeaderTimeout)
	l.ReadTimeout = cmp.Or(l.ReadTimeout, d.ReadTimeout)
	l.WriteTimeout = cmp.Or(l.WriteTimeout, d.WriteTimeout)
	l.IdleTimeout = cmp.Or(l.IdleTimeout, d.IdleTimeout)
	l.MaxHeaderBytes = cmp.Or(l.MaxHeaderBytes, d.MaxHeaderBytes)
	return l
}

// server returns an http.Server for h with the limits' timeouts.
func (l Limits) server(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

// listener bounds the connections ln serves at once.
func (l Limits) listener(ln net.Listener) net.Listener {
	return netutil.LimitListener(ln, l.MaxConns)
}
