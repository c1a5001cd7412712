package netpolicy

import (
	"net"
	"net/netip"
	"slices"
	"syscall"
)

// Class names the kind of address the policy refused.
type Class string

// The classes of address the policy refuses.
const (
	// ClassMetadata is a cloud provider's instance metadata or host
	// agent address. Always refused.
	ClassMetadata Class = "cloud metadata"
	// ClassLinkLocal is 169.254.0.0/16 or fe80::/10. Always refused.
	ClassLinkLocal Class = "link-local"
	// ClassUnspecified is 0.0.0.0/8 or ::, which the kernel may route to
	// the host itself. Always refused.
	ClassUnspecified Class = "unspecified"
	// ClassMulticast is 224.0.0.0/4 or ff00::/8. Always refused.
	ClassMulticast Class = "multicast"
	// ClassBroadcast is 255.255.255.255. Always refused.
	ClassBroadcast Class = "broadcast"
	// ClassReserved is 240.0.0.0/4, reserved for future use. Always
	// refused.
	ClassReserved Class = "reserved"
	// ClassLoopback is 127.0.0.0/8 or ::1. Refused unless
	// Policy.AllowLoopback.
	ClassLoopback Class = "loopback"
	// ClassPrivate is 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16,
	// 100.64.0.0/10 (shared address space), fc00::/7 or fec0::/10.
	// Refused unless Policy.AllowPrivate.
	ClassPrivate Class = "private"
	// ClassUnreadable is a dialed address that could not be parsed as an
	// IP address. Always refused.
	ClassUnreadable Class = "unreadable"
)

// Policy decides which addresses a worker may connect to on a job's
// behalf. The zero Policy is the strictest: only public addresses.
type Policy struct {
	// AllowLoopback lets connections reach loopback addresses
	// (127.0.0.0/8 and ::1), "localhost" among them: a target, Azurite,
	// a Service Bus emulator or an OAuth authority on the worker's host.
	// Defaults to false.
	AllowLoopback bool
	// AllowPrivate lets connections reach private addresses (10.0.0.0/8,
	// 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, fc00::/7, fec0::/10),
	// for targets inside the operator's network. Defaults to false.
	AllowPrivate bool
}

var (
	// metadataAddrs are instance metadata and host agent endpoints: AWS,
	// GCP and Azure IMDS (IPv4 and AWS's IPv6), Alibaba Cloud, and the
	// Azure wire server.
	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"),
		netip.MustParseAddr("fd00:ec2::254"),
		netip.MustParseAddr("100.100.100.200"),
		netip.MustParseAddr("168.63.129.16"),
	}
	thisNetwork   = netip.MustParsePrefix("0.0.0.0/8")
	broadcast     = netip.MustParseAddr("255.255.255.255")
	reservedIPv4  = netip.MustParsePrefix("240.0.0.0/4")
	sharedAddress = netip.MustParsePrefix("100.64.0.0/10")
	siteLocalIPv6 = netip.MustParsePrefix("fec0::/10")
	// IPv6 prefixes that carry an IPv4 address in their last four bytes:
	// IPv4-compatible (::a.b.c.d, deprecated but still routed by some
	// stacks), IPv4-translated (RFC 2765's ::ffff:0:a.b.c.d), and NAT64,
	// well-known and local-use (RFC 6052 and 8215; the local-use /48 is
	// read in its usual /96 form). IPv4-mapped addresses are unmapped
	// before anything else.
	ipv4Compatible  = netip.MustParsePrefix("::/96")
	ipv4Translated  = netip.MustParsePrefix("::ffff:0:0:0/96")
	nat64           = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local      = netip.MustParsePrefix("64:ff9b:1::/48")
	ipv6Loopback    = netip.IPv6Loopback()
	ipv6Unspecified = netip.IPv6Unspecified()
	// sixToFour carries an IPv4 address in bytes 2 to 5.
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Check returns a *PolicyError when addr is refused, nil when it is
// allowed. An invalid addr is refused as unreadable.
func (p Policy) Check(addr netip.Addr) error {
	if !addr.IsValid() {
		return &PolicyError{Class: ClassUnreadable}
	}
	addr = addr.Unmap().WithZone("")
	if class, refused := p.classify(addr); refused {
		return &PolicyError{Addr: addr, Class: class}
	}
	if inner, ok := embeddedIPv4(addr); ok {
		if class, refused := p.classify(inner); refused {
			return &PolicyError{Addr: addr, Class: class}
		}
	}
	return nil
}

// Control is a net.Dialer Control function. It runs after name
// resolution, on the very address about to be connected to, so whatever
// a name resolved to is checked.
func (p Policy) Control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return &PolicyError{Class: ClassUnreadable}
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return &PolicyError{Class: ClassUnreadable}
	}
	return p.Check(addr)
}

// classify returns the class of addr and whether the policy refuses it.
func (p Policy) classify(addr netip.Addr) (Class, bool) {
	switch {
	case slices.Contains(metadataAddrs, addr):
		return ClassMetadata, true
	case addr.IsUnspecified() || thisNetwork.Contains(addr):
		return ClassUnspecified, true
	case addr == broadcast:
		return ClassBroadcast, true
	case addr.IsMulticast():
		return ClassMulticast, true
	case addr.IsLinkLocalUnicast():
		return ClassLinkLocal, true
	case reservedIPv4.Contains(addr):
		return ClassReserved, true
	case addr.IsLoopback():
		return ClassLoopback, !p.AllowLoopback
	case addr.IsPrivate() || sharedAddress.Contains(addr) || siteLocalIPv6.Contains(addr):
		return ClassPrivate, !p.AllowPrivate
	}
	return "", false
}

// embeddedIPv4 returns the IPv4 address an IPv6 address that carries one
// leads to.
func embeddedIPv4(addr netip.Addr) (netip.Addr, bool) {
	if !addr.Is6() {
		return netip.Addr{}, false
	}
	b := addr.As16()
	switch {
	case addr == ipv6Loopback || addr == ipv6Unspecified:
		// Within ::/96, but not IPv4-compatible (RFC 4291, 2.5.5.1).
		return netip.Addr{}, false
	case ipv4Compatible.Contains(addr) || ipv4Translated.Contains(addr) ||
		nat64.Contains(addr) || nat64Local.Contains(addr):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(addr):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}
