package netpolicy_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/jobscheduler/scheduler/actions/netpolicy"
)

func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	strict := netpolicy.Policy{}
	open := netpolicy.Policy{AllowLoopback: true, AllowPrivate: true}
	for _, tc := range []struct {
		addr  string
		class netpolicy.Class // "" when allowed by the strict policy
		// always says the address is refused even when loopback and
		// private addresses are allowed.
		always bool
	}{
		{"93.184.216.34", "", false},
		{"2606:2800:220:1:248:1893:25c8:1946", "", false},
		{"8.8.8.8", "", false},
		{"127.0.0.1", netpolicy.ClassLoopback, false},
		{"127.1.2.3", netpolicy.ClassLoopback, false},
		{"::1", netpolicy.ClassLoopback, false},
		{"::ffff:127.0.0.1", netpolicy.ClassLoopback, false},
		// IPv4-compatible and IPv4-translated spellings of loopback.
		{"::127.0.0.1", netpolicy.ClassLoopback, false},
		{"::ffff:0:7f00:1", netpolicy.ClassLoopback, false},
		{"::ffff:0:127.0.0.1", netpolicy.ClassLoopback, false},
		{"64:ff9b::7f00:1", netpolicy.ClassLoopback, false},   // NAT64 of 127.0.0.1
		{"64:ff9b:1::7f00:1", netpolicy.ClassLoopback, false}, // local-use NAT64
		{"2002:7f00:1::1", netpolicy.ClassLoopback, false},    // 6to4 of 127.0.0.1
		{"::1%lo", netpolicy.ClassLoopback, false},
		{"10.1.2.3", netpolicy.ClassPrivate, false},
		{"172.16.0.1", netpolicy.ClassPrivate, false},
		{"172.31.255.255", netpolicy.ClassPrivate, false},
		{"192.168.1.1", netpolicy.ClassPrivate, false},
		{"100.64.0.1", netpolicy.ClassPrivate, false},
		{"fd12:3456::1", netpolicy.ClassPrivate, false},
		{"fec0::1", netpolicy.ClassPrivate, false},
		{"::ffff:10.1.2.3", netpolicy.ClassPrivate, false},
		{"::10.1.2.3", netpolicy.ClassPrivate, false},
		{"::ffff:0:a01:203", netpolicy.ClassPrivate, false},
		{"64:ff9b::a01:203", netpolicy.ClassPrivate, false}, // NAT64 of 10.1.2.3
		{"2002:c0a8:101::1", netpolicy.ClassPrivate, false}, // 6to4 of 192.168.1.1
		{"64:ff9b::5db8:d822", "", false},                   // NAT64 of 93.184.216.34
		{"::93.184.216.34", "", false},                      // IPv4-compatible public
		{"172.32.0.1", "", false},                           // just past 172.16.0.0/12
		{"169.254.169.254", netpolicy.ClassMetadata, true},
		{"::ffff:169.254.169.254", netpolicy.ClassMetadata, true},
		{"::169.254.169.254", netpolicy.ClassMetadata, true},
		{"fd00:ec2::254", netpolicy.ClassMetadata, true},
		{"100.100.100.200", netpolicy.ClassMetadata, true},
		{"168.63.129.16", netpolicy.ClassMetadata, true},
		{"64:ff9b::a9fe:a9fe", netpolicy.ClassMetadata, true}, // NAT64 of 169.254.169.254
		{"169.254.1.1", netpolicy.ClassLinkLocal, true},
		{"fe80::1", netpolicy.ClassLinkLocal, true},
		{"fe80::1%eth0", netpolicy.ClassLinkLocal, true},
		{"0.0.0.0", netpolicy.ClassUnspecified, true},
		{"0.1.2.3", netpolicy.ClassUnspecified, true},
		{"::", netpolicy.ClassUnspecified, true},
		{"::ffff:0.0.0.0", netpolicy.ClassUnspecified, true},
		{"::0.0.0.2", netpolicy.ClassUnspecified, true},
		{"224.0.0.1", netpolicy.ClassMulticast, true},
		{"239.255.255.250", netpolicy.ClassMulticast, true},
		{"ff02::1", netpolicy.ClassMulticast, true},
		{"255.255.255.255", netpolicy.ClassBroadcast, true},
		{"240.0.0.1", netpolicy.ClassReserved, true},
	} {
		addr := netip.MustParseAddr(tc.addr)
		err := strict.Check(addr)
		var pe *netpolicy.PolicyError
		switch {
		case tc.class == "" && err != nil:
			t.Errorf("%s: refused (%v), want allowed", tc.addr, err)
		case tc.class != "" && (!errors.As(err, &pe) || pe.Class != tc.class):
			t.Errorf("%s: %v, want refused as %s", tc.addr, err, tc.class)
		}
		if err := open.Check(addr); (err != nil) != tc.always {
			t.Errorf("%s with loopback and private allowed: %v, want refused %v", tc.addr, err, tc.always)
		}
	}
	if err := strict.Check(netip.Addr{}); err == nil {
		t.Error("the zero Addr is allowed, want it refused as unreadable")
	}
}

func TestPolicyControl(t *testing.T) {
	t.Parallel()
	p := netpolicy.Policy{}
	for _, tc := range []struct{ address, want string }{
		{"127.0.0.1:80", "refused by the address policy: 127.0.0.1 is a loopback address"},
		{"[::ffff:10.1.2.3]:443", "refused by the address policy: 10.1.2.3 is a private address"},
		{"[::127.0.0.1]:80", "refused by the address policy: ::7f00:1 is a loopback address"},
		{"[::ffff:0:7f00:1]:80", "refused by the address policy: ::ffff:0:7f00:1 is a loopback address"},
		{"[fe80::1%eth0]:80", "refused by the address policy: fe80::1 is a link-local address"},
		{"0.0.0.0:80", "refused by the address policy: 0.0.0.0 is an unspecified address"},
		{"169.254.169.254:80", "refused by the address policy: 169.254.169.254 is a cloud metadata address"},
		{"not-an-address", "refused by the address policy: the dialed address could not be read"},
		{"example.com:80", "refused by the address policy: the dialed address could not be read"},
	} {
		err := p.Control("tcp", tc.address, nil)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Control(%q) = %v, want %q", tc.address, err, tc.want)
		}
	}
	if err := p.Control("tcp4", "93.184.216.34:443", nil); err != nil {
		t.Errorf("Control(public address) = %v, want nil", err)
	}
}
