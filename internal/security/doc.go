// Package security holds the security suite: the attacks a review of the
// scheduler tried, each made against processes of the real binary
// configured as docs/security.md recommends (TLS on the API, mutual TLS to
// NATS, rediss:// with a CA, a token file of scoped tokens, workers
// without --allow-loopback), and the refusal each now meets.
package security
