package netpolicy_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/actions/netpolicy"
	"github.com/jobscheduler/scheduler/actions/netpolicy/netpolicytest"
)

// fakeResolver answers from a map; a name it does not hold fails as a
// real resolver's failure does, naming its server.
type fakeResolver map[string][]netip.Addr

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if addrs, ok := r[host]; ok {
		return addrs, nil
	}
	return nil, &net.DNSError{Err: "dial udp 10.0.0.2:53: connect: network is unreachable", Name: host, Server: "10.0.0.2:53"}
}

func dial(t *testing.T, d *netpolicy.Dialer, address string) (net.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", address)
	if c != nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

func TestDialerRefusesBeforeConnecting(t *testing.T) {
	t.Parallel()
	l := netpolicytest.Listen(t)
	port := l.Port
	d := &netpolicy.Dialer{Resolver: fakeResolver{
		"loopback.example": {netip.MustParseAddr("127.0.0.1")},
		"mapped.example":   {netip.MustParseAddr("::ffff:127.0.0.1")},
		"localhost":        {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")},
	}}
	for _, host := range []string{"127.0.0.1", "::ffff:127.0.0.1", "::127.0.0.1", "::ffff:0:7f00:1", "loopback.example", "mapped.example", "localhost"} {
		_, err := dial(t, d, net.JoinHostPort(host, port))
		var pe *netpolicy.PolicyError
		if !errors.As(err, &pe) || pe.Class != netpolicy.ClassLoopback {
			t.Errorf("dialing %s: %v, want a loopback refusal", host, err)
		}
		if reason, ok := netpolicy.Reason(err); !ok || !strings.HasPrefix(reason, "refused by the address policy: ") || !strings.HasSuffix(reason, " is a loopback address") {
			t.Errorf("dialing %s: reason %q, %v", host, reason, ok)
		}
	}
	if n := l.Conns(); n != 0 {
		t.Errorf("the listener saw %d connections, want 0", n)
	}
}

func TestDialerRefusesLocalhostWithTheSystemResolver(t *testing.T) {
	t.Parallel()
	l := netpolicytest.Listen(t)
	_, err := dial(t, &netpolicy.Dialer{}, net.JoinHostPort("localhost", l.Port))
	var pe *netpolicy.PolicyError
	if !errors.As(err, &pe) || pe.Class != netpolicy.ClassLoopback {
		t.Errorf("dialing localhost: %v, want a loopback refusal", err)
	}
	if n := l.Conns(); n != 0 {
		t.Errorf("the listener saw %d connections, want 0", n)
	}
}

func TestDialerConnectsToTheAllowedAddressItChecked(t *testing.T) {
	t.Parallel()
	l := netpolicytest.Listen(t)
	// The private address comes first and is skipped without a packet
	// sent to it; the loopback one is allowed.
	d := &netpolicy.Dialer{Policy: netpolicy.Policy{AllowLoopback: true}, Resolver: fakeResolver{
		"mixed.example": {netip.MustParseAddr("10.255.255.1"), netip.MustParseAddr("127.0.0.1")},
	}}
	c, err := dial(t, d, net.JoinHostPort("mixed.example", l.Port))
	if err != nil {
		t.Fatalf("dialing: %v", err)
	}
	if got := c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr(); got != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("connected to %s, want 127.0.0.1", got)
	}
}

func TestDialerNamesNoResolver(t *testing.T) {
	t.Parallel()
	_, err := dial(t, &netpolicy.Dialer{Resolver: fakeResolver{}}, "nowhere.example:443")
	var re *netpolicy.ResolveError
	if !errors.As(err, &re) || re.Host != "nowhere.example" {
		t.Fatalf("err = %v, want a *ResolveError for nowhere.example", err)
	}
	if strings.Contains(err.Error(), "10.0.0.2") || strings.Contains(err.Error(), ":53") {
		t.Errorf("the error names the resolver: %q", err)
	}
	if reason, _ := netpolicy.Reason(err); reason != "the name nowhere.example could not be resolved" {
		t.Errorf("reason = %q", reason)
	}
	// A resolver's own error met elsewhere is described the same way.
	dnsErr := &net.DNSError{Err: "server misbehaving", Name: "x.example", Server: "10.0.0.2:53"}
	if reason, ok := netpolicy.Reason(dnsErr); !ok || reason != "the name x.example could not be resolved" {
		t.Errorf("Reason(DNSError) = %q, %v", reason, ok)
	}
}
