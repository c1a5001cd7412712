package netpolicy

import (
	"errors"
	"net"
	"net/netip"
)

// PolicyError reports a connection the policy refused. It is returned
// before any packet is sent to the address.
type PolicyError struct {
	// Addr is the address that was about to be dialed, with an
	// IPv4-mapped IPv6 address unmapped and any zone dropped. It is the
	// zero Addr when the dialed address could not be read.
	Addr netip.Addr
	// Class is why Addr is refused.
	Class Class
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

// ResolveError reports a host name that could not be resolved. Unlike a
// *net.DNSError, its text never names the resolver that was asked.
type ResolveError struct {
	// Host is the name that was looked up.
	Host string
	// NotFound says the name does not exist, as opposed to a resolver
	// that failed or did not answer.
	NotFound bool
}

func (e *ResolveError) Error() string {
	return "the name " + e.Host + " could not be resolved"
}

// Reason returns the text to report for err when it is, or wraps, a
// refusal by the policy or a failed name resolution, and false otherwise.
// The text names the address and its class, or the name, and nothing of
// the worker's own network: never the resolver's address.
func Reason(err error) (string, bool) {
	var (
		refused    *PolicyError
		unresolved *ResolveError
		dnsErr     *net.DNSError
	)
	switch {
	case errors.As(err, &refused):
		return refused.Error(), true
	case errors.As(err, &unresolved):
		return unresolved.Error(), true
	case errors.As(err, &dnsErr):
		return (&ResolveError{Host: dnsErr.Name}).Error(), true
	}
	return "", false
}
