package servicebus

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/coder/websocket"

	"github.com/jobscheduler/scheduler/actions/netpolicy"
)

// Ports of a namespace's AMQP listener, with TLS and (the emulator's)
// without.
const (
	amqpsPort = "5671"
	amqpPort  = "5672"
)

// webSocketProtocol is the WebSocket subprotocol of AMQP over WebSockets.
const webSocketProtocol = "AMQPWSB10"

// connector opens every connection a Sender's clients use, so that the
// Service Bus SDK never dials on its own: the SDK hands a connection
// function (ClientOptions.NewWebSocketConn) the namespace's address and
// speaks AMQP over whatever it returns. Each connection goes through the
// address policy's dialer, which resolves the namespace's host name
// itself and connects to the address it checked.
type connector struct {
	dialer *netpolicy.Dialer
	// emulator: plain TCP (and ws://) rather than TLS (and wss://).
	emulator bool
	// webSockets: AMQP over WebSockets on the HTTPS port rather than
	// AMQP's own port.
	webSockets bool
	// http carries WebSocket handshakes, through dialer.
	http *http.Client
}

func newConnector(dialer *netpolicy.Dialer, emulator, webSockets bool) *connector {
	return &connector{
		dialer:     dialer,
		emulator:   emulator,
		webSockets: webSockets,
		http: &http.Client{
			Transport: &http.Transport{
				// A proxy would dial the namespace out of the policy's sight.
				Proxy:               nil,
				DialContext:         dialer.DialContext,
				TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
				TLSHandshakeTimeout: 10 * time.Second,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// connect opens a connection to the namespace args.Host names
// (wss://<host>[:<port>]/$servicebus/websocket): a TLS connection to its
// AMQP port (a plain one to the emulator's), or a WebSocket connection.
// Its signature is ClientOptions.NewWebSocketConn's.
func (c *connector) connect(ctx context.Context, args azservicebus.NewWebSocketConnArgs) (net.Conn, error) {
	conn, err := c.open(ctx, args)
	if err != nil {
		noteRefusal(ctx, err)
	}
	return conn, err
}

func (c *connector) open(ctx context.Context, args azservicebus.NewWebSocketConnArgs) (net.Conn, error) {
	u, err := url.Parse(args.Host)
	if err != nil || u.Hostname() == "" {
		return nil, errors.New("the namespace's address cannot be read")
	}
	if c.webSockets {
		return c.webSocket(ctx, u)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = amqpsPort
		if c.emulator {
			port = amqpPort
		}
	}
	conn, err := c.dialer.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil || c.emulator {
		return conn, err
	}
	// The certificate is checked against the host name, whatever
	// address it resolved to.
	tlsConn := tls.Client(conn, &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12})
	if err := tlsConn.HandshakeContext(ctx); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return tlsConn, nil
}

// webSocket opens an AMQP over WebSockets connection to u.
func (c *connector) webSocket(ctx context.Context, u *url.URL) (net.Conn, error) {
	target := *u
	target.Scheme = "wss"
	if c.emulator {
		target.Scheme = "ws"
	}
	ws, _, err := websocket.Dial(ctx, target.String(), &websocket.DialOptions{
		HTTPClient:   c.http,
		Subprotocols: []string{webSocketProtocol},
	})
	if err != nil {
		return nil, err
	}
	// The connection outlives the attempt that opened it: it is bound to
	// no context, and closed with the client.
	return websocket.NetConn(context.Background(), ws, websocket.MessageBinary), nil
}

// closeIdle closes the idle connections of the WebSocket handshakes.
func (c *connector) closeIdle() { c.http.CloseIdleConnections() }

// refusalKey is the context key of an attempt's *refusal.
type refusalKey struct{}

// refusal keeps the first connection of an attempt that the address
// policy refused, or whose name could not be resolved. The SDK passes a
// connection error on as text only (its *azservicebus.Error does not
// unwrap), so the attempt learns of the refusal through its context.
type refusal struct {
	mu  sync.Mutex
	err error
}

// withRefusal returns ctx carrying a refusal that connect fills in.
func withRefusal(ctx context.Context) (context.Context, *refusal) {
	r := &refusal{}
	return context.WithValue(ctx, refusalKey{}, r), r
}

// noteRefusal keeps err in ctx's refusal when err is a refusal by the
// address policy or a failed name resolution.
func noteRefusal(ctx context.Context, err error) {
	r, ok := ctx.Value(refusalKey{}).(*refusal)
	if !ok || !isRefusal(err) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// get returns the refusal kept, nil when there was none.
func (r *refusal) get() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
