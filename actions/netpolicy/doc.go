// Package netpolicy decides which network addresses a worker may connect to
// on a job's behalf, and enforces that decision at dial time for every
// sender: HTTP targets, the OAuth token endpoint, Storage queues and
// Service Bus namespaces.
//
// A Policy refuses cloud metadata, link-local, unspecified, multicast,
// broadcast and reserved addresses always, loopback addresses unless
// AllowLoopback, and private addresses unless AllowPrivate. It reads every
// spelling of an address: an IPv4 address written as IPv4-mapped
// (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) or IPv4-translated
// (::ffff:0:a.b.c.d) IPv6, or behind a NAT64 or 6to4 prefix, is judged as
// the IPv4 address it leads to, and a zone is ignored.
//
// A Dialer resolves a name itself, checks each address it resolves to, and
// connects to that very address, so a name that resolves (or rebinds) to a
// refused address is caught however it is spelled. Its errors never carry
// the resolver's address: a name that cannot be resolved is reported as
// "the name X could not be resolved".
package netpolicy
