package netpolicy_test

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"github.com/jobscheduler/scheduler/actions/netpolicy"
)

// FuzzPolicyRefusesEveryRefusedAddress reads random bytes and text as IP
// addresses in every way the standard library does, and checks that the
// strict policy refuses exactly the addresses an independent, byte-level
// reading of the refused ranges refuses, through Check and Control alike.
// Seeds are in testdata/fuzz/FuzzPolicyRefusesEveryRefusedAddress.
func FuzzPolicyRefusesEveryRefusedAddress(f *testing.F) {
	for _, text := range []string{"127.0.0.1", "::1", "::127.0.0.1", "::ffff:0:7f00:1", "::ffff:127.0.0.1",
		"64:ff9b::7f00:1", "64:ff9b:1::a9fe:a9fe", "2002:a00:1::", "fe80::1%eth0", "93.184.216.34", "2606:4700::1111"} {
		f.Add([]byte(nil), text)
	}
	f.Add([]byte{127, 0, 0, 1}, "")
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 127, 0, 0, 1}, "")
	f.Fuzz(func(t *testing.T, raw []byte, text string) {
		var addrs []netip.Addr
		if len(raw) >= 16 {
			addrs = append(addrs, netip.AddrFrom16([16]byte(raw[:16])))
		}
		if len(raw) >= 4 {
			addrs = append(addrs, netip.AddrFrom4([4]byte(raw[:4])))
		}
		if a, err := netip.ParseAddr(text); err == nil {
			addrs = append(addrs, a)
		}
		if ip := net.ParseIP(text); ip != nil {
			a, _ := netip.AddrFromSlice(ip)
			addrs = append(addrs, a)
		}
		strict := netpolicy.Policy{}
		for _, a := range addrs {
			want := refusedByReference(a.As16())
			if got := strict.Check(a) != nil; got != want {
				t.Errorf("Check(%s) refused = %v, the reference says %v", a, got, want)
			}
			if a.Is6() {
				a = a.WithZone("eth0")
			}
			if got := strict.Control("tcp", netip.AddrPortFrom(a, 443).String(), nil) != nil; got != want {
				t.Errorf("Control(%s) refused = %v, the reference says %v", a, got, want)
			}
		}
	})
}

// refusedByReference says whether an address, as 16 bytes (an IPv4
// address in its IPv4-mapped form), is in a range the strict policy
// refuses. It reads the prefixes of the RFCs byte by byte, without the
// netip predicates the policy uses.
func refusedByReference(b [16]byte) bool {
	zero := func(s []byte) bool { return bytes.Count(s, []byte{0}) == len(s) }
	switch {
	case zero(b[:15]) && b[15] <= 1: // :: and ::1
		return true
	case b[0] == 0xff: // multicast
		return true
	case b[0] == 0xfe && b[1]&0xc0 == 0x80: // link-local
		return true
	case b[0] == 0xfe && b[1]&0xc0 == 0xc0: // site-local
		return true
	case b[0]&0xfe == 0xfc: // unique local, the AWS metadata address among them
		return true
	}
	var v4 []byte
	switch {
	case zero(b[:10]) && b[10] == 0xff && b[11] == 0xff: // IPv4-mapped
		v4 = b[12:]
	case zero(b[:12]): // IPv4-compatible
		v4 = b[12:]
	case zero(b[:8]) && b[8] == 0xff && b[9] == 0xff && zero(b[10:12]): // IPv4-translated
		v4 = b[12:]
	case bytes.Equal(b[:4], []byte{0, 0x64, 0xff, 0x9b}) && zero(b[4:12]): // NAT64
		v4 = b[12:]
	case bytes.Equal(b[:6], []byte{0, 0x64, 0xff, 0x9b, 0, 1}): // local-use NAT64
		v4 = b[12:]
	case b[0] == 0x20 && b[1] == 0x02: // 6to4
		v4 = b[2:6]
	default:
		return false
	}
	switch {
	case v4[0] == 0, v4[0] == 10, v4[0] == 127, v4[0] >= 224:
		return true
	case v4[0] == 169 && v4[1] == 254:
		return true
	case v4[0] == 172 && v4[1] >= 16 && v4[1] <= 31:
		return true
	case v4[0] == 192 && v4[1] == 168:
		return true
	case v4[0] == 100 && v4[1] >= 64 && v4[1] <= 127:
		return true
	case bytes.Equal(v4, []byte{100, 100, 100, 200}), bytes.Equal(v4, []byte{168, 63, 129, 16}):
		return true
	}
	return false
}
