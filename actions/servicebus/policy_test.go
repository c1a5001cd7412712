package servicebus

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"

	"github.com/jobscheduler/scheduler/actions/netpolicy/netpolicytest"
	"github.com/jobscheduler/scheduler/internal/testpeers"
)

func TestSendFollowsTheAddressPolicy(t *testing.T) {
	t.Parallel()
	for _, webSockets := range []bool{false, true} {
		name := "over AMQP"
		if webSockets {
			name = "over WebSockets"
		}
		t.Run("refuses a namespace on loopback unless allowed, "+name, func(t *testing.T) {
			t.Parallel()
			l := netpolicytest.Listen(t)
			s, err := New(Config{EndpointTemplate: "sb://" + l.Addr.String() + "/", Emulator: true, WebSockets: webSockets})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			o := send(t, s, queueAction("mynamespace", "orders"), attempt("0123456789abcdef0123456789abcdef"))
			want := "ServiceBusQueue Action - The message could not be sent to queue 'orders' of namespace 'mynamespace': " +
				"refused by the address policy: 127.0.0.1 is a loopback address"
			if o.Succeeded || o.Message != want {
				t.Errorf("message %q, want %q", o.Message, want)
			}
			assertNoKey(t, o)
			if n := l.Conns(); n != 0 {
				t.Errorf("the listener saw %d connections, want 0", n)
			}
		})
	}

	t.Run("names no resolver when the namespace cannot be resolved", func(t *testing.T) {
		t.Parallel()
		s, err := New(Config{Resolver: netpolicytest.FailingResolver{}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		o := send(t, s, queueAction("mynamespace", "orders"), attempt("0123456789abcdef0123456789abcdef"))
		want := "ServiceBusQueue Action - The message could not be sent to queue 'orders' of namespace 'mynamespace': " +
			"the name mynamespace.servicebus.windows.net could not be resolved"
		if o.Succeeded || o.Message != want {
			t.Errorf("message %q, want %q", o.Message, want)
		}
		if strings.Contains(o.Error, netpolicytest.ResolverAddress) {
			t.Errorf("the error names the resolver: %q", o.Error)
		}
	})
}

// A message sent over WebSockets reaches the namespace: the test's bridge
// takes AMQP over WebSockets in and passes it on to the peer over TCP.
func TestSendOverWebSockets(t *testing.T) {
	t.Parallel()
	peer := testpeers.ServiceBus(t)
	var paths, protocols atomic.Value
	bridge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths.Store(r.URL.Path)
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{webSocketProtocol}})
		if err != nil {
			return
		}
		protocols.Store(ws.Subprotocol())
		in := websocket.NetConn(context.Background(), ws, websocket.MessageBinary)
		defer in.Close()
		out, err := net.Dial("tcp", peer.Endpoint())
		if err != nil {
			return
		}
		defer out.Close()
		go func() { _, _ = io.Copy(out, in); out.Close() }()
		_, _ = io.Copy(in, out)
	}))
	t.Cleanup(bridge.Close)

	s := newSender(t, Config{EndpointTemplate: "sb://" + strings.TrimPrefix(bridge.URL, "http://") + "/", Emulator: true, WebSockets: true})
	if o := send(t, s, queueAction("mynamespace", "orders"), attempt("0123456789abcdef0123456789abcdef")); !o.Succeeded {
		t.Fatalf("outcome = %+v, want success", o)
	}
	if m := peer.Message(t, 1, within); m.Entity != "orders" || m.Body != "Some message" {
		t.Errorf("the peer got %+v", m)
	}
	if got := paths.Load(); got != "/$servicebus/websocket" {
		t.Errorf("the WebSocket path is %v, want /$servicebus/websocket", got)
	}
	if got := protocols.Load(); got != webSocketProtocol {
		t.Errorf("the WebSocket subprotocol is %v, want %s", got, webSocketProtocol)
	}
}
