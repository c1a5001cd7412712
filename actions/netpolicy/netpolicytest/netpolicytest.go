// Package netpolicytest provides what tests of the senders need to show
// that they follow the address policy: a loopback listener that counts the
// connections it gets, and resolvers that answer as the tests want.
package netpolicytest

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
)

// Listener accepts connections on a loopback port and counts them.
type Listener struct {
	// Addr is where it listens, 127.0.0.1:<port>.
	Addr *net.TCPAddr
	// Port is Addr's port, as text.
	Port  string
	conns atomic.Int32
}

// Listen returns a Listener that closes when the test ends.
func Listen(t testing.TB) *Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	addr := l.Addr().(*net.TCPAddr)
	ln := &Listener{Addr: addr, Port: strconv.Itoa(addr.Port)}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			ln.conns.Add(1)
			c.Close()
		}
	}()
	return ln
}

// Conns returns how many connections the listener has accepted.
func (l *Listener) Conns() int { return int(l.conns.Load()) }

// ResolverAddress is the DNS server FailingResolver's errors name, which
// no outcome may show.
const ResolverAddress = "10.96.0.10:53"

// FailingResolver fails every lookup as a real resolver does when its
// server cannot be reached: its error names that server.
type FailingResolver struct{}

// LookupNetIP fails.
func (FailingResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "dial udp " + ResolverAddress + ": connect: network is unreachable", Name: host, Server: ResolverAddress}
}

// Names resolves the names it holds to their address, as a stack that
// takes inet_aton forms ("127.1") or a hostile DNS server would, and
// asks the system's resolver for the rest ("localhost" comes from the
// hosts file).
type Names map[string]string

// LookupNetIP resolves host.
func (n Names) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if addr, ok := n[host]; ok {
		return []netip.Addr{netip.MustParseAddr(addr)}, nil
	}
	return net.DefaultResolver.LookupNetIP(ctx, network, host)
}
