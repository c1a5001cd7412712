package httpaction

import "github.com/jobscheduler/scheduler/actions/netpolicy"

// AddressClass names the kind of address the address policy refused.
type AddressClass = netpolicy.Class

// The classes of address the policy refuses; see package netpolicy.
const (
	ClassMetadata    = netpolicy.ClassMetadata
	ClassLinkLocal   = netpolicy.ClassLinkLocal
	ClassUnspecified = netpolicy.ClassUnspecified
	ClassMulticast   = netpolicy.ClassMulticast
	ClassBroadcast   = netpolicy.ClassBroadcast
	ClassReserved    = netpolicy.ClassReserved
	ClassLoopback    = netpolicy.ClassLoopback
	ClassPrivate     = netpolicy.ClassPrivate
	ClassUnreadable  = netpolicy.ClassUnreadable
)

// PolicyError reports a connection the address policy refused. It is
// returned by the dialer before any packet is sent to the address, and
// Send reports it as "refused by the address policy: …".
type PolicyError = netpolicy.PolicyError
