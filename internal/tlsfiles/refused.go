package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
)

// Refused reports a TLS handshake that failed over certificates or
// versions: a server certificate not trusted or not for the address, a
// client certificate the server refused (its alert), or a server that
// does not speak TLS. Waiting does not cure it, unlike a
// connection that failed.
func Refused(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		host     x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
		alert    tls.AlertError
		netError *net.OpError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) ||
		errors.As(err, &record) || errors.As(err, &alert) ||
		errors.As(err, &netError) && netError.Op == "remote error"
}
