package netpolicy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// Resolver looks up the addresses of a host name. *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer connects over TCP to the addresses its Policy allows. It resolves
// a host name itself and connects to each address it checked, in the
// resolver's order, until one answers; a refused address is skipped
// without a packet being sent to it. The zero Dialer applies the strictest
// policy with the system's resolver.
type Dialer struct {
	// Policy decides which addresses may be connected to.
	Policy Policy
	// Resolver looks up host names. Defaults to net.DefaultResolver.
	Resolver Resolver
	// Timeout bounds each connection attempt. Defaults to 30s.
	Timeout time.Duration
	// KeepAlive is the TCP keep-alive period. Defaults to 30s.
	KeepAlive time.Duration
}

// DialContext connects to address (host:port) on network "tcp", "tcp4" or
// "tcp6". It has the signature of http.Transport.DialContext. When no
// address is allowed it returns an error that wraps the first
// *PolicyError; when the name cannot be resolved, a *ResolveError.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	family, ok := map[string]string{"tcp": "ip", "tcp4": "ip4", "tcp6": "ip6"}[network]
	if !ok {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("network %q is not tcp, tcp4 or tcp6", network)}
	}
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: &PolicyError{Class: ClassUnreadable}}
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("the port %q is not a number", portText)}
	}
	addrs, err := d.resolve(ctx, family, host)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	dialer := net.Dialer{
		Timeout:   cmp.Or(d.Timeout, 30*time.Second),
		KeepAlive: cmp.Or(d.KeepAlive, 30*time.Second),
		// The check is made again on the very address handed to the
		// kernel, whatever path led to it.
		Control: d.Policy.Control,
	}
	var first error
	for _, addr := range addrs {
		if err := d.Policy.Check(addr); err != nil {
			first = cmp.Or(first, error(&net.OpError{Op: "dial", Net: network, Err: err}))
			continue
		}
		conn, err := dialer.DialContext(ctx, network, netip.AddrPortFrom(addr, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		first = cmp.Or(first, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

// resolve returns the addresses of host in family ("ip", "ip4" or "ip6"):
// host itself when it is an IP address.
func (d *Dialer) resolve(ctx context.Context, family, host string) ([]netip.Addr, error) {
	if addr, err := netip.ParseAddr(host); err == nil {
		if family == "ip4" && !addr.Unmap().Is4() || family == "ip6" && !addr.Is6() {
			return nil, fmt.Errorf("%s is not an address of network %s", addr, family)
		}
		return []netip.Addr{addr}, nil
	}
	var r Resolver = net.DefaultResolver
	if d.Resolver != nil {
		r = d.Resolver
	}
	addrs, err := r.LookupNetIP(ctx, family, host)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		var dnsErr *net.DNSError
		return nil, &ResolveError{Host: host, NotFound: errors.As(err, &dnsErr) && dnsErr.IsNotFound}
	}
	if len(addrs) == 0 {
		return nil, &ResolveError{Host: host, NotFound: true}
	}
	return addrs, nil
}
