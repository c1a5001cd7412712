package httpaction

import (
	"container/list"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net/http"
	"strings"
	"sync"

	"software.sslmate.com/src/go-pkcs12"
)

// errUnreadableCertificate is the failure of a ClientCertificate action
// whose PFX does not decode. It says nothing of the PFX or its password.
var errUnreadableCertificate = errors.New("the client certificate could not be read (wrong password or not a PFX file)")

// basicCredentials returns the value of a Basic Authorization header after
// "Basic ": base64 of "username:password".
func basicCredentials(username, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(username + ":" + password))
}

// secretKey returns a cache key for a set of values that includes secrets:
// a SHA-256 of the values, each prefixed with its length so that no two
// sets hash alike by shifting a boundary. The secrets themselves are never
// kept as keys.
func secretKey(values ...string) [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	for _, v := range values {
		binary.BigEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// decodePFX reads a base64 PKCS#12 file into a TLS certificate with its
// chain. Any failure is errUnreadableCertificate: the library's own error
// text is not passed on.
func decodePFX(pfx, password string) (tls.Certificate, error) {
	// PFX files pasted from a terminal often carry line breaks.
	raw, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(pfx), ""))
	if err != nil {
		return tls.Certificate{}, errUnreadableCertificate
	}
	key, leaf, chain, err := pkcs12.DecodeChain(raw, password)
	if err != nil || key == nil || leaf == nil {
		return tls.Certificate{}, errUnreadableCertificate
	}
	cert := tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: key, Leaf: leaf}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return cert, nil
}

// certCache keeps one transport per client certificate, so that the
// connections made with a certificate are reused by the next execution
// that presents it. It holds at most limit certificates; the least recently
// used is dropped past that, and its idle connections closed.
type certCache struct {
	limit        int
	newTransport func(*tls.Config) *http.Transport
	baseTLS      *tls.Config

	mu      sync.Mutex
	order   *list.List // of *certEntry, most recently used first
	entries map[[sha256.Size]byte]*list.Element
	flight  flight[[sha256.Size]byte, *http.Client]
}

type certEntry struct {
	key       [sha256.Size]byte
	transport *http.Transport
	client    *http.Client
}

func newCertCache(limit int, baseTLS *tls.Config, newTransport func(*tls.Config) *http.Transport) *certCache {
	return &certCache{
		limit:        limit,
		newTransport: newTransport,
		baseTLS:      baseTLS,
		order:        list.New(),
		entries:      make(map[[sha256.Size]byte]*list.Element),
	}
}

// client returns the client that presents the certificate in pfx. Callers
// asking for the same certificate at once share one decoding.
func (c *certCache) client(ctx context.Context, pfx, password string) (*http.Client, error) {
	key := secretKey("pfx", pfx, password)
	if cl, ok := c.lookup(key); ok {
		return cl, nil
	}
	return c.flight.do(ctx, key, func(context.Context) (*http.Client, error) {
		if cl, ok := c.lookup(key); ok {
			return cl, nil
		}
		cert, err := decodePFX(pfx, password)
		if err != nil {
			return nil, err
		}
		cfg := c.baseTLS.Clone()
		// The certificate is presented whatever authorities the target
		// lists as acceptable, as the original service did; a target
		// that does not trust it refuses the handshake.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &cert, nil
		}
		t := c.newTransport(cfg)
		cl := newClient(t)
		c.add(&certEntry{key: key, transport: t, client: cl})
		return cl, nil
	})
}

func (c *certCache) lookup(key [sha256.Size]byte) (*http.Client, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*certEntry).client, true
}

func (c *certCache) add(e *certEntry) {
	var evicted []*certEntry
	c.mu.Lock()
	c.entries[e.key] = c.order.PushFront(e)
	for c.order.Len() > c.limit {
		old := c.order.Remove(c.order.Back()).(*certEntry)
		delete(c.entries, old.key)
		evicted = append(evicted, old)
	}
	c.mu.Unlock()
	for _, old := range evicted {
		old.transport.CloseIdleConnections()
	}
}

// closeIdle closes the idle connections of every cached transport.
func (c *certCache) closeIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.order.Front(); el != nil; el = el.Next() {
		el.Value.(*certEntry).transport.CloseIdleConnections()
	}
}
