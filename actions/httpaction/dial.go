package httpaction

import (
	"net"
	"net/netip"
	"slices"
	"syscall"
)

// AddressClass names the kind of address the address policy refused.
type AddressClass string

// The classes of address the policy refuses.
const (
	// ClassMetadata is a cloud provider's instance metadata or host
	// agent address. Always refused.
	ClassMetadata AddressClass = "cloud metadata"
	// ClassLinkLocal is 169.254.0.0/16 or fe80::/10. Always refused.
	ClassLinkLocal AddressClass = "link-local"
	// ClassUnspecified is 0.0.0.0/8 or ::, which the kernel may route to
	// the host itself. Always refused.
	ClassUnspecified AddressClass = "unspecified"
	// ClassMulticast is 224.0.0.0/4 or ff00::/8. Always refused.
	ClassMulticast AddressClass = "multicast"
	// ClassBroadcast is 255.255.255.255. Always refused.
	ClassBroadcast AddressClass = "broadcast"
	// ClassReserved is 240.0.0.0/4, reserved for future use. Always
	// refused.
	ClassReserved AddressClass = "reserved"
	// ClassLoopback is 127.0.0.0/8 or ::1. Refused unless
	// Config.AllowLoopback.
	ClassLoopback AddressClass = "loopback"
	// ClassPrivate is 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16,
	// 100.64.0.0/10 (shared address space), fc00::/7 or fec0::/10.
	// Refused unless Config.AllowPrivate.
	ClassPrivate AddressClass = "private"
	// ClassUnreadable is a dialed address that could not be parsed as an
	// IP address. Always refused.
	ClassUnreadable AddressClass = "unreadable"
)

// PolicyError reports a connection the address policy refused. It is
// returned by the dialer before any packet is sent to the address, and
// Send reports it as "refused by the address policy: …".
type PolicyError struct {
	// Addr is the address that was about to be dialed, with an
	// IPv4-mapped IPv6 address unmapped. It is the zero Addr when the
	// dialed address could not be read.
	Addr netip.Addr
	// Class is why Addr is refused.
	Class AddressClass
}

func (e *PolicyError) Error() string {
	if !e.Addr.IsValid() {
		return "refused by the address policy: the dialed address could not be read"
	}
	article := "a"
	if e.Class == ClassUnspecified {
		article = "an"
	}
	return "refused by the address policy: " + e.Addr.String() + " is " + article + " " + string(e.Class) + " address"
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
	// IPv6 prefixes that carry an IPv4 address a gateway translates to:
	// NAT64 (well-known and local-use, RFC 6052 and 8215) and 6to4. The
	// local-use prefix is read in its usual /96 form, with the IPv4
	// address in the last four bytes.
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour  = netip.MustParsePrefix("2002::/16")
)

// addressPolicy decides which addresses actions may connect to.
type addressPolicy struct {
	allowLoopback bool
	allowPrivate  bool
}

// control is a net.Dialer Control function. It runs after name resolution,
// on the very address about to be connected to, so a name that resolves
// (or rebinds) to a refused address is caught.
func (p addressPolicy) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return &PolicyError{Class: ClassUnreadable}
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return &PolicyError{Class: ClassUnreadable}
	}
	return p.check(addr)
}

// check returns a *PolicyError when addr is refused, nil when it is
// allowed.
func (p addressPolicy) check(addr netip.Addr) error {
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

// classify returns the class of addr and whether the policy refuses it.
func (p addressPolicy) classify(addr netip.Addr) (AddressClass, bool) {
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
		return ClassLoopback, !p.allowLoopback
	case addr.IsPrivate() || sharedAddress.Contains(addr) || siteLocalIPv6.Contains(addr):
		return ClassPrivate, !p.allowPrivate
	}
	return "", false
}

// embeddedIPv4 returns the IPv4 address an IPv6 translation address
// (NAT64 or 6to4) leads to.
func embeddedIPv4(addr netip.Addr) (netip.Addr, bool) {
	if !addr.Is6() {
		return netip.Addr{}, false
	}
	b := addr.As16()
	switch {
	case nat64.Contains(addr) || nat64Local.Contains(addr):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(addr):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}
