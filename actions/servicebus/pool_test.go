package servicebus

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
)

// newTestPool returns a pool of real SDK clients that are never used to
// send (they connect only on a first send), closed when the test ends.
func newTestPool(t *testing.T, maxSenders int) *pool {
	t.Helper()
	p := newPool(maxSenders, slog.New(slog.NewTextHandler(t.Output(), nil)), func(cs string) (*azservicebus.Client, error) {
		return azservicebus.NewClientFromConnectionString(cs, nil)
	})
	t.Cleanup(p.close)
	return p
}

// acquire takes the sender to entity of the client for key.
func acquire(t *testing.T, p *pool, key, entity string) *pooledSender {
	t.Helper()
	const endpoint = "sb://127.0.0.1:1/"
	s, err := p.acquire(endpoint, "send", key, "Endpoint="+endpoint+";SharedAccessKeyName=send;SharedAccessKey="+key+";UseDevelopmentEmulator=true", entity)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func assertLive(t *testing.T, p *pool, wantClients, wantSenders int) {
	t.Helper()
	if clients, senders := p.live(); clients != wantClients || senders != wantSenders {
		t.Errorf("pool holds %d clients and %d senders, want %d and %d", clients, senders, wantClients, wantSenders)
	}
}

func TestPool(t *testing.T) {
	t.Parallel()

	t.Run("reuses the sender of an entity and the client of a key", func(t *testing.T) {
		t.Parallel()
		p := newTestPool(t, 8)
		a := acquire(t, p, "key-1", "orders")
		p.release(a, intact, "")
		if again := acquire(t, p, "key-1", "orders"); again != a {
			t.Error("a second attempt got another sender")
		}
		b := acquire(t, p, "key-1", "invoices")
		c := acquire(t, p, "key-2", "orders")
		if b.client != a.client || c.client == a.client {
			t.Error("senders of one key must share a client, and of two keys not")
		}
		assertLive(t, p, 2, 3)
	})

	t.Run("evicts the least recently used sender beyond the bound, once it is released", func(t *testing.T) {
		t.Parallel()
		p := newTestPool(t, 2)
		first := acquire(t, p, "key", "first")
		second := acquire(t, p, "key", "second")
		p.release(second, intact, "")
		third := acquire(t, p, "key", "third")
		assertLive(t, p, 1, 2)
		if !first.evicted || first.closed {
			t.Errorf("the least recently used sender: evicted %v, closed %v; want evicted and, in use, not closed", first.evicted, first.closed)
		}
		p.release(first, intact, "")
		if !first.closed {
			t.Error("the evicted sender was not closed on release")
		}
		if second.evicted || third.evicted {
			t.Error("a more recently used sender was evicted")
		}
	})

	t.Run("a broken sender is closed and its client kept for its other senders", func(t *testing.T) {
		t.Parallel()
		p := newTestPool(t, 8)
		orders := acquire(t, p, "key", "orders")
		ghost := acquire(t, p, "key", "ghost")
		p.release(ghost, senderBroken, "amqp:not-found")
		if !ghost.closed || orders.client.evicted {
			t.Errorf("broken sender closed %v, client evicted %v; want closed and kept", ghost.closed, orders.client.evicted)
		}
		assertLive(t, p, 1, 1)
		p.release(orders, senderBroken, "unauthorized")
		if !orders.client.closed {
			t.Error("the client was not closed with its last sender")
		}
		assertLive(t, p, 0, 0)
	})

	t.Run("a broken client is closed when its last attempt ends", func(t *testing.T) {
		t.Parallel()
		p := newTestPool(t, 8)
		a := acquire(t, p, "key", "orders")
		b := acquire(t, p, "key", "invoices")
		p.release(a, clientBroken, "connlost")
		assertLive(t, p, 0, 0)
		if a.client.closed {
			t.Error("the client was closed while an attempt was using it")
		}
		if fresh := acquire(t, p, "key", "invoices"); fresh == b || fresh.client == a.client {
			t.Error("an attempt after the failure got the broken sender or client")
		}
		p.release(b, intact, "")
		if !a.client.closed {
			t.Error("the broken client was not closed when its last attempt ended")
		}
	})

	t.Run("close closes everything and refuses later attempts", func(t *testing.T) {
		t.Parallel()
		p := newTestPool(t, 8)
		a := acquire(t, p, "key", "orders")
		p.release(acquire(t, p, "other", "orders"), clientBroken, "deadline")
		p.close()
		if !a.client.closed {
			t.Error("close left a client in use open")
		}
		p.release(a, intact, "")
		if _, err := p.acquire("sb://127.0.0.1:1/", "send", "key", "", "orders"); !errors.Is(err, errPoolClosed) {
			t.Errorf("acquire after close: %v, want errPoolClosed", err)
		}
	})
}

func TestClientKeyTellsFieldsApart(t *testing.T) {
	t.Parallel()
	if newClientKey("sb://a/", "bc", "d") == newClientKey("sb://a/", "b", "cd") {
		t.Error("moving a character from the key name to the key kept the client key")
	}
	first, second := newClientKey("sb://a/", "b", "c"), newClientKey("sb://a/", "b", "c")
	if first != second {
		t.Error("the client key is not a function of its fields")
	}
}
