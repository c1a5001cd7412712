package httpaction

import (
	"errors"
	"net/netip"
	"testing"
)

func TestAddressPolicy(t *testing.T) {
	t.Parallel()
	strict := addressPolicy{}
	open := addressPolicy{allowLoopback: true, allowPrivate: true}
	for _, tc := range []struct {
		addr  string
		class AddressClass // "" when allowed by the strict policy
		// always says the address is refused even when loopback and
		// private addresses are allowed.
		always bool
	}{
		{"93.184.216.34", "", false},
		{"2606:2800:220:1:248:1893:25c8:1946", "", false},
		{"8.8.8.8", "", false},
		{"127.0.0.1", ClassLoopback, false},
		{"127.1.2.3", ClassLoopback, false},
		{"::1", ClassLoopback, false},
		{"::ffff:127.0.0.1", ClassLoopback, false},
		{"10.1.2.3", ClassPrivate, false},
		{"172.16.0.1", ClassPrivate, false},
		{"172.31.255.255", ClassPrivate, false},
		{"192.168.1.1", ClassPrivate, false},
		{"100.64.0.1", ClassPrivate, false},
		{"fd12:3456::1", ClassPrivate, false},
		{"fec0::1", ClassPrivate, false},
		{"::ffff:10.1.2.3", ClassPrivate, false},
		{"64:ff9b::a01:203", ClassPrivate, false}, // NAT64 of 10.1.2.3
		{"2002:c0a8:101::1", ClassPrivate, false}, // 6to4 of 192.168.1.1
		{"64:ff9b::5db8:d822", "", false},         // NAT64 of 93.184.216.34
		{"172.32.0.1", "", false},                 // just past 172.16.0.0/12
		{"169.254.169.254", ClassMetadata, true},
		{"::ffff:169.254.169.254", ClassMetadata, true},
		{"fd00:ec2::254", ClassMetadata, true},
		{"100.100.100.200", ClassMetadata, true},
		{"168.63.129.16", ClassMetadata, true},
		{"64:ff9b::a9fe:a9fe", ClassMetadata, true}, // NAT64 of 169.254.169.254
		{"169.254.1.1", ClassLinkLocal, true},
		{"fe80::1", ClassLinkLocal, true},
		{"fe80::1%eth0", ClassLinkLocal, true},
		{"0.0.0.0", ClassUnspecified, true},
		{"0.1.2.3", ClassUnspecified, true},
		{"::", ClassUnspecified, true},
		{"224.0.0.1", ClassMulticast, true},
		{"239.255.255.250", ClassMulticast, true},
		{"ff02::1", ClassMulticast, true},
		{"255.255.255.255", ClassBroadcast, true},
		{"240.0.0.1", ClassReserved, true},
	} {
		addr := netip.MustParseAddr(tc.addr)
		err := strict.check(addr)
		var pe *PolicyError
		switch {
		case tc.class == "" && err != nil:
			t.Errorf("%s: refused (%v), want allowed", tc.addr, err)
		case tc.class != "" && (!errors.As(err, &pe) || pe.Class != tc.class):
			t.Errorf("%s: %v, want refused as %s", tc.addr, err, tc.class)
		}
		if err := open.check(addr); (err != nil) != tc.always {
			t.Errorf("%s with loopback and private allowed: %v, want refused %v", tc.addr, err, tc.always)
		}
	}
}

func TestAddressPolicyControl(t *testing.T) {
	t.Parallel()
	p := addressPolicy{}
	for _, tc := range []struct{ address, want string }{
		{"127.0.0.1:80", "refused by the address policy: 127.0.0.1 is a loopback address"},
		{"[::ffff:10.1.2.3]:443", "refused by the address policy: 10.1.2.3 is a private address"},
		{"[fe80::1%eth0]:80", "refused by the address policy: fe80::1 is a link-local address"},
		{"0.0.0.0:80", "refused by the address policy: 0.0.0.0 is an unspecified address"},
		{"169.254.169.254:80", "refused by the address policy: 169.254.169.254 is a cloud metadata address"},
		{"not-an-address", "refused by the address policy: the dialed address could not be read"},
		{"example.com:80", "refused by the address policy: the dialed address could not be read"},
	} {
		err := p.control("tcp", tc.address, nil)
		if err == nil || err.Error() != tc.want {
			t.Errorf("control(%q) = %v, want %q", tc.address, err, tc.want)
		}
	}
	if err := p.control("tcp4", "93.184.216.34:443", nil); err != nil {
		t.Errorf("control(public address) = %v, want nil", err)
	}
}
