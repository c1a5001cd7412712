// Package httpaction performs Http and Https actions: it sends a job's
// request to its target with the scheduler's headers and the job's
// authentication (Basic, a TLS client certificate or an Azure AD OAuth
// token), refuses addresses the operator has not allowed, and reports the
// answer as the original service recorded it in job history.
//
// A Sender is built once per worker and shared by every execution. It keeps
// one transport for requests without a client certificate and one per
// client certificate, so that connections to a target are reused across
// executions, and it caches OAuth tokens until shortly before they expire.
//
// The address policy is enforced when a connection is dialed, on the
// address actually dialed after name resolution: link-local, cloud metadata,
// unspecified, multicast and broadcast addresses are always refused, and
// loopback and private ranges unless the configuration allows them.
// Redirects are never followed.
//
// Secrets (a Basic password, a PFX and its password, an OAuth client secret,
// an access token) never appear in an Outcome: messages are built from the
// target's host, not its URI, and any text that could hold a secret is
// scrubbed.
package httpaction
