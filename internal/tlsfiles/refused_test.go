package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
)

func TestRefusedTellsCertificatesFromConnections(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"an untrusted server certificate", fmt.Errorf("connecting: %w", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), true},
		{"a certificate for another name", x509.HostnameError{Host: "x"}, true},
		{"an expired certificate", x509.CertificateInvalidError{Reason: x509.Expired}, true},
		{"a server that does not speak TLS", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, true},
		{"the server's alert: a client certificate required", &net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}, true},
		{"a refused connection", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, false},
		{"a connection closed half way", io.EOF, false},
		{"nothing", nil, false},
	} {
		if got := Refused(tt.err); got != tt.want {
			t.Errorf("%s: Refused = %v, want %v", tt.name, got, tt.want)
		}
	}
}
